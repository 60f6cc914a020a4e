"""The local engine on the per-state path: the rows search (``checker.local.rows``) over
the model's own Python states (``checker.core.states_kernel.StatesKernel``).

One search serves both paths: a frontier chunk is a one-dimensional array of Python
states, its successors are the model's own (``successors``), in the model's action
order, and its fingerprints are ``fingerprint_bytes(model.encode(state))`` (of the
orbit's least encoding under symmetry reduction). So the per-state path stores the same
states in the same order as the batch path, with the same parents, and finds the same
counterexamples; the stores, the frontier queues, the worker processes and the
checkpoints are the batch path's.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, cast

import attrs
import numpy as np

from ..base.fingerprint import fingerprint_bytes
from ..checkpoints.file import CheckpointError
from ..checkpoints.schema import OLD_STATES, STATES_ROWS_FORMAT, upgrade
from ..contract.protocol import BatchKernel, Model, Property, batch_path, with_defaults
from ..core.driver import OnLevel, Progress
from ..core.kernel import canonical_encoder, expand
from ..core.options import Options
from ..core.parts import Store
from ..core.result import CheckResult
from ..core.states_kernel import StatesKernel
from ..stores.seen import CompactSeenSet
from .rows import BatchEngine, RowsSearch

__all__ = ["LocalEngine", "Options", "check", "states_kernel"]

# A visitor of the per-state search: called with an expanded state's fingerprint, the
# state and its edges (``checker.core.kernel.expand``'s), in the search's order.
Visitor = Callable[[int, Any, list[Any]], None]


class _ActionCodes(dict[str, int]):
    """Action codes given in the order the names are met, for a model that declares no
    ``action_names()`` and has no batch kernel: a name gets the next code the first
    time ``get`` asks for it, and joins ``names``."""

    def __init__(self, names: list[str]) -> None:
        super().__init__((name, code) for code, name in enumerate(names))
        self.names = names

    def get(self, name: str, default: Any = None) -> int:
        code = dict.get(self, name)
        if code is None:
            code = self[name] = len(self.names)
            self.names.append(name)
        return code


class _VisitedStatesKernel(StatesKernel):
    """The states kernel that also gives every expanded state, with its fingerprint and
    its edges, to ``visit`` (``checker.graph.export`` builds the state graph so)."""

    def __init__(self, model: Model, action_names: Sequence[str] | None, visit: Visitor, symmetry: bool) -> None:
        super().__init__(model, action_names)
        self._visit = visit
        self._symmetry = symmetry
        self._encode: Callable[[Any], bytes] | None = None  # made at the first expansion

    def expand(self, rows: Sequence[Any]) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        if self._encode is None:
            self._encode = canonical_encoder(self.model) if self._symmetry else self.model.encode
        encode = self._encode
        for state in rows:
            self._visit(fingerprint_bytes(encode(state)), state, expand(self.model, state, encode))
        return super().expand(rows)


def states_kernel(model: Model, visit: Visitor | None = None, symmetry: bool = False) -> StatesKernel:
    """The kernel of the per-state path: ``model``'s Python states as rows. A model that
    declares no action names (and has no batch kernel) gets its action codes in the
    order its actions are first met; ``visit`` is given every expanded state."""
    model = with_defaults(model)
    declared = model.action_names() is not None or batch_path(model)[0] is not None
    names = None if declared else ()
    kernel = StatesKernel(model, names) if visit is None else _VisitedStatesKernel(model, names, visit, symmetry)
    if not declared:
        kernel._codes = _ActionCodes(kernel.action_names)
    return kernel


class LocalEngine(BatchEngine):
    """Breadth-first exploration of a model, on its Python states (see
    ``checker.core.driver.LevelDriver`` for the arguments): the rows search over
    ``states_kernel(model)``, its states in memory unless ``store`` is another
    ``checker.core.parts.Store`` (``checker.stores.disk.DiskStore``). ``visit`` is
    called with every expanded state's fingerprint, the state and its edges."""

    name = "local"
    path = "per-state"

    def __init__(
        self,
        model: Model,
        properties: Sequence[Property] | None = None,
        options: Options | None = None,
        progress: Progress | None = None,
        *,
        on_level: OnLevel | None = None,
        visit: Visitor | None = None,
        store: Store | None = None,
    ):
        options = options or Options()
        kernel = states_kernel(model, visit, bool(options.symmetry))
        super().__init__(
            model,
            properties,
            options,
            progress,
            on_level=on_level,
            kernel=cast(BatchKernel, kernel),  # (the rows search reads neither its encode nor its width)
            store=CompactSeenSet() if store is None else store,
            snapshot_format=STATES_ROWS_FORMAT,
        )
        # The per-state path expands in its own process (--workers is the batch path's):
        # action codes met as they come, states visited in order.
        assert isinstance(self.search, RowsSearch)
        self.search.workers = 1
        if options.symmetry:  # the orbits' encoder now: a model that declares no symmetries is refused here
            kernel.fingerprints((), symmetry=True)
        self._visit = visit

    def restore(self, snapshot: dict[str, Any], directory: Any = None) -> None:
        """Continue from a ``snapshot()``; one of the per-state search of an older kmc
        (``OLD_STATES``: its states by fingerprint, without the choices this search keeps)
        is explored again to its level boundary, which gives the same states in the same
        order, and continues from there."""
        if upgrade(snapshot)["format"] == OLD_STATES:
            snapshot = self._explored_again(snapshot)
        super().restore(snapshot, directory)

    def _explored_again(self, old: dict[str, Any]) -> dict[str, Any]:
        stats = old["stats"]
        options = attrs.evolve(self.options, max_depth=stats["depth"], max_states=None, max_memory=None)
        again = LocalEngine(self.model, self.properties, options, visit=self._visit)
        again.run()
        new = again.snapshot()
        if new["stats"]["distinct"] != stats["distinct"] or new["stats"]["levels"] != stats["levels"]:
            raise CheckpointError(
                "the checkpoint's states are not this model's (explored again, its levels differ); start a new run"
            )
        new["stats"] = {**new["stats"], "seconds": stats["seconds"]}
        return new


def check(
    model: Model,
    properties: Sequence[Property] | None = None,
    options: Options | None = None,
    progress: Progress | None = None,
) -> CheckResult:
    """Run the local engine once; see ``LocalEngine``."""
    return LocalEngine(model, properties, options, progress).run()
