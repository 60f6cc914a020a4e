"""What a search is made of: an expander, a store, a frontier queue, and the search
object that joins them for the level driver (``checker.core.driver``).

Every engine is the level driver over one search object, and every search object is
composed of parts passed in at construction:

=====================  ==========================================  =====================
search                 expander                                    store
=====================  ==========================================  =====================
``RowsSearch``         a ``BatchKernel``: the model's own, or      a ``Store``:
(``checker.local.rows``)    ``StatesKernel`` (rows of Python states)    ``CompactSeenSet``
                                                                   (13 bytes a state) or
                                                                   ``DiskStore`` (files,
                                                                   ``--store disk``)
the partitioned        the same kernel, in a cluster's tasks       the rows store
levels (``checker.     (Spark's, ``checker.spark``)                (``checker.
partitioned``)                                                     partitioned.rows``)
=====================  ==========================================  =====================

and each of them asks the rules of a level (``checker.core.level.LevelStep``) on every piece.
The rows search keeps its frontier in a ``FrontierQueue`` (``checker.stores.frontier``) that
goes with its store: in memory with ``CompactSeenSet``, files in the store's directory
with ``DiskStore``; the partitioned levels keep theirs in their rows store. The per-state
path is the rows search over ``StatesKernel`` (``checker.local.states``).

The determinism contract, which makes every engine report the same counts and the same
counterexamples on every run and partition count:

- an **expander** gives a state's successors in one fixed order (``choice`` is an
  action's position among the state's enabled actions), and a fingerprint that depends on
  the state's encoding only (``checker.base.fingerprint``): the same in every process;
- a **store** numbers states in the order they are added, a number never changes, and a
  rollback drops exactly the states added since the last level boundary;
- a **search** expands its frontier in number order and keeps, of the successors with
  one fingerprint, the first in ``(parent number, choice)`` order, so its first path to a
  state is the least of its shortest paths; a property's first violation of a level is
  the one of least key (``checker.core.level``).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sized
from typing import Any, Protocol, TypeVar, runtime_checkable

import numpy as np

from .result import Path, Stats

# The violation records: property -> (kind, explanation, where); ``where`` is a state's
# number (``"always"``) or ``(parent number, choice)`` (``"step"``), or what the search
# records instead (the Spark levels: fingerprints by depth).
Found = dict[str, tuple[Any, ...]]


@runtime_checkable
class Store(Protocol):
    """The states a rows search has seen, numbered in the order they were added: the one
    interface every store gives (``checker.stores.seen.CompactSeenSet`` in memory,
    ``checker.stores.disk.DiskStore`` on disk), and all that a search calls of it.

    A state is stored as its 64-bit fingerprint (membership), its parent's number (-1 for
    an initial state) and its choice (the path back to it). Numbers are given in the order
    states are added and never change; ``end_level`` closes a level and ``rollback``
    forgets every state added since the last ``end_level``. The contract test of every
    store is ``tests/test_stores.py``.
    """

    kind: str  # "memory" or "disk": what ``--store`` calls it
    # How many times ``checker.local.rows.CHUNK_ROWS`` the frontier rows a search expands (and
    # so looks up) together: a disk store's lookup maps pages of its files, at a cost per
    # lookup that grows with the store and that larger chunks spread over more states.
    chunk_factor: int

    def __len__(self) -> int:
        """How many states are stored (the next state's number)."""
        ...

    def add(self, fps: np.ndarray, parents: np.ndarray, choices: np.ndarray) -> np.ndarray:
        """Store a block of states unless stored already, numbered in the block's order;
        the mask of those that were new (of fingerprints repeated in the block, the first
        is the one stored)."""
        ...

    def contains_sorted(self, fps: np.ndarray) -> np.ndarray:
        """Which of the sorted ``fps`` (``uint64``) are stored."""
        ...

    def begin_level(self) -> None:
        """A level is about to be expanded: from here to its ``end_level`` (or
        ``rollback``) the states stored before it do not change, in memory or on disk."""
        ...

    def contains_older_sorted(self, fps: np.ndarray) -> np.ndarray:
        """Which of the sorted ``fps`` were stored before the level being expanded (since
        ``begin_level`` they do not change, so a process forked after it may ask too:
        ``checker.local.workers``)."""
        ...

    def contains_level_sorted(self, fps: np.ndarray) -> np.ndarray:
        """Which of the sorted ``fps`` were stored since the level began."""
        ...

    def add_sorted(self, fps: np.ndarray, parents: np.ndarray, choices: np.ndarray) -> None:
        """Store new states: ``fps`` sorted, distinct, none stored yet (``contains_sorted``);
        ``parents`` and ``choices`` in the order the states are numbered, which need not
        be the order of ``fps``."""
        ...

    def parent_and_choice(self, number: int) -> tuple[int, int]:
        """State ``number``'s parent number (-1 for an initial state) and choice (for an
        initial state, its index among the initial states)."""
        ...

    def end_level(self) -> None:
        """Close the level: its states are kept for good (a level boundary)."""
        ...

    def rollback(self) -> None:
        """Forget every state added since the last ``end_level``."""
        ...

    def fingerprints(self) -> np.ndarray:
        """Every stored fingerprint, in no particular order (a new array)."""
        ...

    def parents_and_choices(self) -> tuple[np.ndarray, np.ndarray]:
        """Every stored state's parent number (-1 for an initial state) and choice, in
        number order (new arrays)."""
        ...

    def merge_reserve(self) -> int:
        """The most bytes of memory the store may allocate at the next level boundary."""
        ...

    def restored(self, saved: SavedStore, directory: Any = None) -> Store:
        """The store of a checkpoint's ``saved()["seen"]`` part, of this store's kind: the
        part reopened, or its states moved into a store of this kind."""
        ...

    def saved(self) -> dict[str, Any]:
        """The store as checkpoint parts: ``{"seen": picklable}``, plus ``"data"`` (the
        name of a directory of the checkpoint that holds its files) for a store on disk.
        Valid at a level boundary; ``reopen`` of the ``"seen"`` part gives it back."""
        ...

    def nbytes(self) -> int:
        """The bytes the store holds in memory."""
        ...

    def disk_bytes(self) -> int:
        """The bytes of its files on disk now."""
        ...

    def peak_disk_bytes(self) -> int:
        """The most bytes its files held on disk at once."""
        ...

    def written_bytes(self) -> int:
        """The bytes written to its files in all."""
        ...


class SavedStore(Protocol):
    """A store's checkpoint part (``Store.saved()["seen"]``)."""

    kind: str  # the kind of the store it stands for

    def reopen(self, directory: Any = None) -> Store:
        """The store this part stands for, its files (if any) found in the checkpoint
        ``directory`` (else where they were saved)."""
        ...


@runtime_checkable
class FrontierQueue(Protocol):
    """The frontier of a rows search: the level being expanded (the *current* level) and
    the next one, as rows, and all that a search calls of it (``checker.stores.frontier``:
    ``MemoryQueue``, lists of row blocks; ``DiskQueue``, one file of rows a level in the
    disk store's directory, the queue of every run with ``--store disk``).

    Rows are appended to the next level in discovery order and read back in the same
    order; ``swap`` at a level boundary makes the next level the current one (the
    finished level is dropped) and ``rollback`` drops the next level. The contract test
    of every queue is ``tests/test_queues.py``.
    """

    kind: str  # the kind of the store it goes with: "memory" or "disk"

    def append(self, rows: np.ndarray) -> None:
        """Add a block of rows at the end of the next level."""
        ...

    def __len__(self) -> int:
        """How many rows the current level holds."""
        ...

    def next_len(self) -> int:
        """How many rows the next level holds so far."""
        ...

    def chunks(self, size: int) -> Iterator[np.ndarray]:
        """The current level's rows in order, in chunks of ``size`` rows (the last one
        shorter), whatever the blocks they were appended in."""
        ...

    def swap(self) -> None:
        """At a level boundary: the next level becomes the current one, the finished
        level is dropped, and the next level starts empty."""
        ...

    def rollback(self) -> None:
        """Drop the next level (the current one stands)."""
        ...

    def clear(self) -> None:
        """Drop both levels (their rows now live elsewhere)."""
        ...

    def saved(self, beside: dict[str, Any]) -> dict[str, Any]:
        """The current level as checkpoint parts, ``{"queue": SavedQueue}``, at a level
        boundary; ``beside`` is the store's parts (``Store.saved()``): a queue on disk
        links its level file where the store's files went."""
        ...

    def restored(self, saved: SavedQueue, directory: Any = None) -> FrontierQueue:
        """The queue of a checkpoint's ``"queue"`` part, of this queue's kind: its level
        file linked in (the same kind) or its rows moved in (another kind); the next
        level empty."""
        ...

    def nbytes(self) -> int:
        """The bytes the queue holds in memory."""
        ...

    def disk_bytes(self) -> int:
        """The bytes of its files on disk now."""
        ...

    def peak_disk_bytes(self) -> int:
        """The most bytes its files held on disk at once."""
        ...

    def written_bytes(self) -> int:
        """The bytes written to its files in all."""
        ...


class SavedQueue(Protocol):
    """A queue's checkpoint part (``FrontierQueue.saved()["queue"]``)."""

    kind: str  # the kind of the queue it stands for

    def blocks(self, directory: Any = None) -> Iterator[np.ndarray]:
        """The saved level's rows in order, a block at a time, its files (if any) found
        in the checkpoint ``directory`` (else where they were saved)."""
        ...


def path_to(store: Store, number: int) -> tuple[int, list[int]]:
    """The initial state's index and the choices that lead to state ``number``."""
    from .trace import parent_chain

    init, *choices = parent_chain(number, store.parent_and_choice)
    return init, choices


# What a search binds: its pieces (``PieceT``: a state of the per-state search, a chunk of
# rows with what was prepared of it in the rows search, a count in the partitioned levels),
# its frontier (``FrontierT_co``: the level being expanded as that search holds it) and the
# locations of its stored states (``WhereT_contra``: a state's number, or what a search
# records instead, the partitioned levels' fingerprints by depth).
PieceT = TypeVar("PieceT")
FrontierT_co = TypeVar("FrontierT_co", covariant=True)
WhereT_contra = TypeVar("WhereT_contra", contravariant=True)


@runtime_checkable
class LevelSearch(Protocol[PieceT, FrontierT_co, WhereT_contra]):
    """The search object the level driver runs (see ``checker.core.driver`` for the loop),
    generic in its pieces, its frontier and the locations of its states: each search binds
    its own (``RowsSearch``: chunks of rows, of the model's or of Python states; the
    partitioned levels: counts of rows held elsewhere).

    Attributes:
        seen: the store (``len(seen)`` states), or a stand-in with its size.
        every: how many pieces go between two looks at the clock and at the memory (0:
            never inside a level).
        visitor: the graph visitor (``checker.core.visitor.GraphVisitor``) the search hands
            every stored state and every expanded edge to (when it is ``active``).
    """

    visitor: Any
    # set when the run is asked to stop (a signal): a search that waits on other
    # processes looks at it while it waits (``checker.local.workers``)
    stop_asked: bool

    @property
    def every(self) -> int: ...

    @property
    def seen(self) -> Sized: ...

    @property
    def frontier(self) -> FrontierT_co:
        """The level being expanded (``None`` where it is not in this process)."""
        ...

    def start(self, stats: Stats, found: Found) -> None:
        """Store the initial states, record their violations in ``found``."""
        ...

    def size(self) -> int:
        """The frontier's size."""
        ...

    def pieces(self) -> Iterable[PieceT]:
        """The frontier in pieces, in order."""
        ...

    def piece_len(self, piece: PieceT) -> int: ...

    def begin_level(self, depth: int) -> None:
        """A level of states at ``depth`` is about to be expanded."""
        ...

    def end_run(self) -> None:
        """The run returned: release what only a run needs (worker processes)."""
        ...

    def expand(self, piece: PieceT, first: int, stats: Stats, level_found: Found, found: Found) -> bool | None:
        """Store the new successors of ``piece`` (whose first state is number ``first``),
        count them in ``stats``, record the level's first violations in ``level_found``
        (unless in ``found``); ``False`` when a stop request cancelled the piece."""
        ...

    def next_size(self) -> int:
        """The next level's size so far."""
        ...

    def end_level(self) -> None: ...

    def rollback(self) -> None:
        """Go back to the last level boundary."""
        ...

    def memory_reserve(self) -> int: ...

    def path(self, where: WhereT_contra | int) -> Path:
        """The path from an initial state to the stored state ``where`` (a stored state's
        number is a location in every search: the graph clients ask paths by number)."""
        ...

    def numbers_of(self, fps: np.ndarray) -> np.ndarray:
        """The stored numbers of fingerprints (for the graph visitor's verdicts)."""
        ...

    def snapshot_parts(self) -> dict[str, Any]: ...

    def restore_parts(self, snapshot: dict[str, Any], directory: Any = None) -> None: ...

    def found_out(self, found: Found) -> Found: ...

    def found_in(self, found: Found) -> Found: ...


class Search:
    """What every search object may inherit: violation records that keep state numbers,
    which a checkpoint keeps as they are (a search whose numbers do not survive a restore
    overrides ``found_out``/``found_in``), and no memory to reserve."""

    stop_asked = False

    def found_out(self, found: Found) -> Found:
        return found

    def found_in(self, found: Found) -> Found:
        return found

    def memory_reserve(self) -> int:
        """Bytes the search may still allocate at the next level boundary (the memory
        ceiling counts them as already resident)."""
        return 0

    def end_run(self) -> None:
        """Nothing to release."""


class ResourceStop(Exception):
    """Raised by a search inside a level when a resource it needs is short (the Spark
    store's disk): the driver stops the run there, as at the memory ceiling: the level is
    dropped, the last one stands (and a checkpoint of it can be written and resumed).

    Args:
        reason: the result's ``stopped`` value (``"disk-full"``).
        detail: one line saying what was short.
    """

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(detail)
        self.reason, self.detail = reason, detail
