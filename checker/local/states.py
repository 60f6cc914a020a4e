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

from collections.abc import Sequence
from typing import Any, cast

import attrs

from ..checkpoints.file import CheckpointError
from ..checkpoints.schema import OLD_STATES, STATES_ROWS_FORMAT, upgrade
from ..contract.protocol import BatchKernel, Model, Property, batch_path, with_defaults
from ..core.driver import OnLevel, Progress
from ..core.options import Options
from ..core.parts import Store
from ..core.result import CheckResult
from ..core.states_kernel import StatesKernel
from ..core.visitor import GraphClient
from ..stores.seen import CompactSeenSet
from .rows import BatchEngine, RowsSearch

__all__ = ["LocalEngine", "Options", "check", "states_kernel"]


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


def states_kernel(model: Model) -> StatesKernel:
    """The kernel of the per-state path: ``model``'s Python states as rows. A model that
    declares no action names (and has no batch kernel) gets its action codes in the
    order its actions are first met."""
    model = with_defaults(model)
    declared = model.action_names() is not None or batch_path(model)[0] is not None
    names = None if declared else ()
    kernel = StatesKernel(model, names)
    if not declared:
        kernel._codes = _ActionCodes(kernel.action_names)
    return kernel


class LocalEngine(BatchEngine):
    """Breadth-first exploration of a model, on its Python states (see
    ``checker.core.driver.LevelDriver`` for the arguments): the rows search over
    ``states_kernel(model)``, its states in memory unless ``store`` is another
    ``checker.core.parts.Store`` (``checker.stores.disk.DiskStore``). ``clients`` are graph
    clients (``checker.core.visitor.GraphClient``) given every stored state and expanded
    edge after the properties' own (``checker.graph.export`` builds the state graph so)."""

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
        clients: Sequence[GraphClient] = (),
        store: Store | None = None,
    ):
        options = options or Options()
        kernel = states_kernel(model)
        super().__init__(
            model,
            properties,
            options,
            progress,
            on_level=on_level,
            kernel=cast(BatchKernel, kernel),  # (the rows search reads neither its encode nor its width)
            store=CompactSeenSet() if store is None else store,
            snapshot_format=STATES_ROWS_FORMAT,
            clients=clients,
        )
        # The per-state path expands in its own process (--workers is the batch path's):
        # action codes met as they come, states visited in order.
        assert isinstance(self.search, RowsSearch)
        self.search.workers = 1
        if options.symmetry:  # the orbits' encoder now: a model that declares no symmetries is refused here
            kernel.fingerprints((), symmetry=True)
        self._clients = clients

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
        again = LocalEngine(self.model, self.properties, options, clients=self._clients)
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
