"""How a run explores: the one options value every engine takes."""

from __future__ import annotations

import attrs


@attrs.frozen
class Options:
    """How a run explores (frozen: an engine never changes them).

    Attributes:
        max_depth: do not expand states at this depth (the initial state has depth 1).
        keep_going: after a property fails, keep exploring (like TLC's ``-continue``): the
            run then explores every reachable state and reports the shortest
            counterexample of every property that fails, with the full counts.
        max_states: stop cleanly once this many distinct states are stored.
        max_memory: stop cleanly once the process's resident memory passes this many
            bytes (looked at every few thousand states and at every level boundary).
        progress_seconds: how often ``progress`` is called during a level.
        symmetry: store one state per orbit under the model's replica symmetries.
        verify_kernel: compare a batch kernel with its model on every state expanded,
            not only on a sample of every level (``checker.contract.kernel_check``).
        coverage: count the coverage (``checker.core.coverage``); off only to measure its cost.
        store: where the seen states are kept: ``"memory"`` or ``"disk"``
            (``checker.stores.disk``; the search then runs on rows, ``checker.local.rows``).
        store_dir: the directory the disk store makes its own directory in (default: the
            checkpoint directory, else the temporary directory).
        workers: processes that expand the frontier on the batch path (``checker.local.workers``):
            1 expands it in the search's own process.
    """

    max_depth: int | None = None
    keep_going: bool = False
    max_states: int | None = None
    max_memory: int | None = None
    progress_seconds: float = 0.25
    symmetry: bool = False
    verify_kernel: bool = False
    coverage: bool = True
    store: str = "memory"
    store_dir: str | None = None
    workers: int = 1
