"""A batch kernel over Python states: the per-state model as rows, so that the rows
search (``checker.local.rows.RowsSearch``) and the Spark engine run any model, one with no
batch kernel of its own included.

A row is a state (a one-dimensional ``object`` array holds a chunk of them), its
successors are the model's own (``checker.contract.protocol.successors``), and its fingerprint is
the one the per-state search gives it (``fingerprint_bytes(model.encode(state))``, or of
the orbit's least encoding under symmetry reduction), so every engine stores the same
states in the same order. No property has an array form here: the rows search then asks
each property of each state, as the per-state search does.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np

from ..base.errors import UsageError
from ..base.fingerprint import fingerprint_bytes
from ..contract.protocol import KernelBase, Model, action_name, batch_path, with_defaults
from .kernel import canonical_encoder
from .keys import CHOICES


class StatesKernel(KernelBase):
    """The ``checker.contract.protocol.BatchKernel`` of a per-state model.

    Args:
        model: the model.
        action_names: every action name the model can fire, in a fixed order (the
            counters are kept per name code): the model's ``action_names()`` when it has
            one, else its batch kernel's names.
    """

    arrays = False  # rows of Python states: no property has an array form over them

    def __init__(self, model: Model, action_names: Iterable[str] | None = None) -> None:
        self._setup(model, action_names)

    def _setup(self, model: Any, action_names: Iterable[str] | None) -> None:
        self.model = model = with_defaults(model)
        if action_names is None:
            action_names = _declared_names(model)
        self.action_names = list(action_names)
        self._codes = {name: code for code, name in enumerate(self.action_names)}
        self._canonical: Callable[[Any], bytes] | None = None
        # the rows the last ``expand`` expanded and each one's (action, successor) pairs,
        # which the rules of a level ask again (step properties, coverage kinds, fairness)
        self._last: tuple[Sequence[Any], list[list[tuple[Any, Any]]]] | None = None

    def __getstate__(self) -> dict[str, Any]:
        return {"model": self.model, "action_names": self.action_names}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self._setup(state["model"], state["action_names"])

    def init_rows(self, states: Sequence[Any]) -> np.ndarray:
        return _objects(states)

    def decode(self, row: Any) -> Any:
        return row

    def expand(self, rows: Sequence[Any]) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        parents: list[int] = []
        choices: list[int] = []
        codes: list[int] = []
        out: list[Any] = []
        model, code_of = self.model, self._codes
        every: list[list[tuple[Any, Any]]] = []
        add_code, add_state = codes.append, out.append
        for i, state in enumerate(rows):
            succ = model.successors(state)
            every.append(succ)
            if len(succ) > CHOICES:
                raise UsageError(
                    f"a state has more than {CHOICES} enabled actions: the rows search "
                    "cannot keep its choices; run with --engine local --per-state"
                )
            for action, nxt in succ:
                name = action_name(action)
                code = code_of.get(name)
                if code is None:
                    raise UsageError(f"the action {name!r} is not among the model's action_names()")
                add_code(code)
                add_state(nxt)
            parents.extend([i] * len(succ))
            choices.extend(range(len(succ)))
        self._last = (rows, every)
        return (
            np.array(parents, dtype=np.int64),
            np.array(choices, dtype=np.int64),
            np.array(codes, dtype=np.int64),
            _objects(out),
        )

    def successors_of(self, rows: Sequence[Any], parent: int) -> list[tuple[Any, Any]]:
        """The ``(action, successor)`` pairs of row ``parent`` of ``rows``: those the last
        ``expand`` computed when it expanded ``rows``, else the model's."""
        last = self._last
        if last is not None and last[0] is rows:
            return last[1][parent]
        succ: list[tuple[Any, Any]] = self.model.successors(rows[parent])
        return succ

    def fingerprints(self, rows: Sequence[Any], symmetry: bool = False) -> np.ndarray:
        """The fingerprints of ``rows``: of their orbits under symmetry reduction."""
        if symmetry:
            if self._canonical is None:
                self._canonical = canonical_encoder(self.model)
            encode = self._canonical
        else:
            encode = self.model.encode
        return np.fromiter((fingerprint_bytes(encode(s)) for s in rows), dtype=np.uint64, count=len(rows))

    @staticmethod
    def invariant_mask(_name: str, _rows: Any) -> None:
        return None

    @staticmethod
    def step_mask(_name: str, _rows: Any, _parents: Any, _after: Any) -> None:
        return None


def _declared_names(model: Model) -> Sequence[str]:
    names = model.action_names()
    if names is not None:
        return names
    kernel = batch_path(model)[0]
    if kernel is not None:
        return kernel.action_names
    raise UsageError(
        "this model has no batch kernel and declares no action_names(): "
        "the rows search needs one of them (run with --engine local --per-state)"
    )


def _objects(values: Sequence[Any]) -> np.ndarray:
    out = np.empty(len(values), dtype=object)
    for i, v in enumerate(values):
        out[i] = v
    return out


def successors_of(model: Model, kernel: Any, chunk: Any, parent: int) -> list[tuple[Any, Any]]:
    """The ``(action, successor)`` pairs of row ``parent`` of ``chunk``, expanded by
    ``kernel``: the states kernel's own, when it has just expanded ``chunk``, else the
    model's of the decoded row."""
    if isinstance(kernel, StatesKernel):
        return kernel.successors_of(chunk, parent)
    succ: list[tuple[Any, Any]] = model.successors(kernel.decode(chunk[parent]))
    return succ
