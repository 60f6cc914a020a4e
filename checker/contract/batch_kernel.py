"""The contract between a model's batch kernel and the engines: ``BatchKernel``, the fast
path over arrays of rows a model may offer with ``batch_kernel()``; ``Expander``, what the
rules of a level use of any kernel; and ``KernelBase``, the defaults of a kernel's optional
members."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np

from ..base.fingerprint import fingerprint_rows
from .adapted import Adapted


class Expander(Protocol):
    """What the rules of a level (``checker.core.level``) and the searches over rows use of a
    kernel: a ``BatchKernel``, or ``checker.core.states_kernel.StatesKernel``'s rows of Python
    states. The contract of each member is ``BatchKernel``'s."""

    @property
    def action_names(self) -> Sequence[str]:
        """Every action name the kernel's codes stand for, in code order."""
        ...

    def init_rows(self, states: Sequence[Any]) -> Any: ...

    def decode(self, row: Any) -> Any: ...

    def expand(self, rows: Any) -> tuple[Any, Any, Any, Any]: ...

    def invariant_mask(self, name: str, rows: Any) -> Any: ...

    def step_mask(self, name: str, rows: Any, parents: Any, after: Any) -> Any: ...

    def goal_mask(self, name: str, rows: Any) -> Any: ...

    def fingerprints(self, rows: Any, symmetry: bool) -> Any: ...

    def fair_codes(self, rows: Any, parents: Any, choices: Any, codes: Any, succ: Any) -> Any: ...

    # Whether rows are arrays that properties' array forms read (``KernelBase``: true).
    arrays: bool
    # Whether the array forms (and the coverage) may be given the new rows laid out a
    # column at a time (``columns`` below: same values, Fortran order), which
    # suits forms that read a few columns of every row (``KernelBase``: false, the rows
    # as ``expand`` made them).
    by_columns: bool


class BatchKernel(Expander, Protocol):
    """The fast path a model may offer with ``batch_kernel()``: its states as fixed-width
    rows of bytes (a two-dimensional ``uint8`` array, one row a state, the width a multiple
    of 8), expanded a chunk at a time with array operations.

    Determinism contract (what makes every engine store the same states in the same
    order, and so report the same counts and counterexamples):

    - ``expand(rows)`` returns ``(parents, choices, codes, successors)``: for every
      successor, its parent's position in ``rows``, its *choice* (the position of the
      action among the parent's enabled actions, as ``Model.actions`` orders them, less
      than 256), the code of its action's name in ``action_names``, and its row; every
      enabled action of every parent once, and ``decode`` of a successor's row is exactly
      ``successors(model, decode(parent row))[choice][1]``. Successor order is ``(parent,
      choice)``: the engines sort by that key (the order in which the per-state search
      meets the successors), so a kernel may return them in any order, but the pair
      must be exact.
    - ``encode``/``decode`` are inverse, and two rows are equal exactly when their states
      are: a row's bytes are its fingerprint's input. A column never wraps: a kernel
      whose integers may pass their type's range must use a wider type.
    - ``canonical(rows)`` maps every row to one row of its orbit under the model's
      symmetries, the same for every member of the orbit.
    - ``invariant_mask``/``step_mask``/``goal_mask`` agree with the properties' own
      checks; ``None`` means no array form (the engine asks the property state by
      state). A property's own ``mask`` (``Property.mask``) is read first, by the engine.
    - ``fingerprints(rows, symmetry)``: the 64-bit fingerprints of rows (of their orbits'
      canonical rows under symmetry reduction).

    The engines compare a kernel with its model (``checker.contract.kernel_check``): on every
    state of every run, or, for a kernel that sets ``sampled_comparison``, on a sample of
    every level (and on every state with ``--verify-kernel``).
    ``KernelBase`` gives the optional members (``canonical``, the masks, ``fingerprints``,
    ``fair_codes``) their defaults; a kernel that does not inherit it may leave them out
    (``batch_path`` gives it the defaults once).
    """

    width: int
    # compared with its model on a sample of each level only (``KernelBase``)
    sampled_comparison: bool

    def init_rows(self, states: Sequence[Any]) -> Any: ...

    def encode(self, state: Any) -> Any: ...

    def decode(self, row: Any) -> Any: ...

    def expand(self, rows: Any) -> tuple[Any, Any, Any, Any]: ...

    def canonical(self, rows: Any) -> Any: ...

    def invariant_mask(self, name: str, rows: Any) -> Any: ...

    def step_mask(self, name: str, rows: Any, parents: Any, after: Any) -> Any: ...

    def goal_mask(self, name: str, rows: Any) -> Any: ...

    def fingerprints(self, rows: Any, symmetry: bool) -> Any: ...


class KernelBase:
    """The defaults of a batch kernel's optional members: no array form of any property
    (the engine asks the properties, or reads ``Property.mask``), no symmetries, the
    fingerprints of the rows' bytes, and no array form of the fair instances. A kernel
    that does not inherit it is given them once, when the engines take it
    (``batch_path``)."""

    __slots__ = ()

    arrays = True  # rows are arrays (``checker.core.states_kernel``'s rows of Python states are not)
    by_columns = False  # the array forms are given the rows as expand made them
    # Whether the engines may compare the kernel with its model on a sample of each level
    # only (``checker.contract.kernel_check``). False: on every state, so that a kernel wrong on a
    # single state stops the run rather than turn into a wrong verdict. Only a kernel
    # compared with its model on every state of many configurations by tests of its own
    # (the Kafka kernel: the suite's differential tests) sets it.
    sampled_comparison = False

    def canonical(self, rows: Any) -> Any:
        return rows

    def invariant_mask(self, name: str, rows: Any) -> Any:
        return None

    def step_mask(self, name: str, rows: Any, parents: Any, after: Any) -> Any:
        return None

    def goal_mask(self, name: str, rows: Any) -> Any:
        return None

    def fingerprints(self, rows: Any, symmetry: bool = False) -> Any:
        return fingerprint_rows(self.canonical(rows) if symmetry else rows)

    def fair_codes(self, rows: Any, parents: Any, choices: Any, codes: Any, succ: Any) -> Any:
        """The fair instance code of every successor of ``expand(rows)`` (the module's
        "Fairness"), or ``None``: no array form, the model is asked state by state."""
        return None


# Rows transposed this many at a time: a block and its transpose stay in the cache.
_COLUMN_BLOCK = 512


def columns(rows: Any) -> Any:
    """``rows`` (a 2-d array) laid out a column at a time (Fortran order), the same
    array to every reader: an array form reads a few columns of every row, and a column
    read whole is a pass over its own bytes, not over every row's. Other rows (states of
    a Python model's kernel) are returned as they are."""
    if not isinstance(rows, np.ndarray) or rows.ndim != 2 or rows.flags.f_contiguous:
        return rows
    out = np.empty(rows.shape[::-1], dtype=rows.dtype)
    for i in range(0, len(rows), _COLUMN_BLOCK):
        out[:, i : i + _COLUMN_BLOCK] = rows[i : i + _COLUMN_BLOCK].T
    return out.T


_KERNEL_MEMBERS = tuple(name for name, v in vars(KernelBase).items() if not name.startswith("_") and callable(v))


class KernelDefaults(Adapted, KernelBase):
    """A batch kernel that does not inherit ``KernelBase``, with its defaults."""

    def __init__(self, kernel: Any) -> None:
        super().__init__(kernel, _KERNEL_MEMBERS)
