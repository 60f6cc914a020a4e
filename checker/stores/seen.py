"""The batch engine's seen-set: 64-bit fingerprints in sorted runs, and a parent pointer
and choice per state.

States are numbered in the order they are stored (a breadth-first level is a run of
consecutive numbers). For state ``i`` the set keeps its parent's number (``uint32``) and
its choice, the position of the action that led to it among its parent's enabled
actions (``uint8``; for an initial state, its index in ``init_states()``): 5 bytes. A
trace is rebuilt from these alone, by re-executing the choices from the initial state,
as TLC rebuilds one from its trace file.

Membership is answered by the fingerprints, kept in a few sorted ``uint64`` arrays
(runs) and looked up with a binary search per run (``numpy.searchsorted``): 8 bytes a
state, so 13 bytes a stored state in all, with no hash-table slack. A level's new
fingerprints become a run; runs are merged while a newer run is at least half the size
of the one before it, so there are only about log2(states / level) runs. A merge is a
concatenation sorted with numpy's stable sort, which is a timsort that merges two
sorted runs in linear time. The runs of the level being expanded are kept apart from
the older ones until the level ends, so that a run stopped inside a level can drop
exactly that level's states (``rollback``).
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from ..core.trace import parent_chain


class CompactSeenSet:
    """Fingerprints, parent numbers and choices of every stored state."""

    def __init__(self) -> None:
        self._runs: list[np.ndarray] = []  # of completed levels
        self._level_runs: list[np.ndarray] = []  # of the level being generated
        self._parents: list[np.ndarray] = []  # chunks, in numbering order
        self._choices: list[np.ndarray] = []
        self._starts: list[int] = []  # the number of each chunk's first state
        self._len = 0
        self._level_start = 0
        self._level_chunks = 0

    def __len__(self) -> int:
        return self._len

    def add(self, fps: ArrayLike, parents: ArrayLike, choices: ArrayLike) -> np.ndarray:
        """Store the states with fingerprints ``fps`` (``uint64``, in the order they are
        numbered) unless stored already; return the mask of those that were new (of a
        fingerprint repeated in ``fps``, the first).

        Args:
            fps: fingerprints.
            parents: each state's parent number (-1 for an initial state).
            choices: each state's choice.
        """
        fps = np.asarray(fps, dtype=np.uint64)
        new = ~self.contains(fps)
        _, first = np.unique(fps, return_index=True)
        if len(first) < len(fps):
            once = np.zeros(len(fps), dtype=bool)
            once[first] = True
            new &= once
        if new.any():
            kept = fps[new]
            self._level_runs.append(np.sort(kept))
            merge_tail(self._level_runs)
            self._starts.append(self._len)
            self._parents.append(np.asarray(parents, dtype=np.int64)[new].astype(np.uint32))
            self._choices.append(np.asarray(choices)[new].astype(np.uint8))
            self._len += len(kept)
        return new

    def add_sorted(self, fps: np.ndarray, parents: ArrayLike, choices: ArrayLike) -> None:
        """Store new states: ``fps`` sorted and none of them stored yet (see
        ``contains_sorted``); ``parents`` and ``choices`` are given in the order the
        states are numbered in (their discovery order), which need not be the order of
        ``fps``: membership needs only the fingerprints."""
        if not len(fps):
            return
        self._level_runs.append(fps)
        merge_tail(self._level_runs)
        self._starts.append(self._len)
        self._parents.append(np.asarray(parents, dtype=np.int64).astype(np.uint32))
        self._choices.append(np.asarray(choices).astype(np.uint8))
        self._len += len(fps)

    def contains(self, fps: ArrayLike) -> np.ndarray:
        """Which of ``fps`` are stored."""
        fps = np.asarray(fps, dtype=np.uint64)
        order = np.argsort(fps, kind="stable")
        found = np.zeros(len(fps), dtype=bool)
        found[order] = self.contains_sorted(fps[order])
        return found

    def contains_sorted(self, fps: np.ndarray) -> np.ndarray:
        """Which of the sorted ``fps`` are stored (sorted queries make each binary search
        cheaper than the one before)."""
        return runs_contain(self._runs + self._level_runs, fps)

    def begin_level(self) -> None:
        """The runs of completed levels are replaced only at ``end_level``."""

    def contains_older_sorted(self, fps: np.ndarray) -> np.ndarray:
        return runs_contain(self._runs, fps)

    def contains_level_sorted(self, fps: np.ndarray) -> np.ndarray:
        return runs_contain(self._level_runs, fps)

    def end_level(self) -> None:
        """Close the level: its states are kept for good."""
        if len(self._level_runs) > 1:  # one run a level: fewer binary searches later
            merged = np.concatenate(self._level_runs)
            merged.sort(kind="stable")
            self._level_runs = [merged]
        self._runs.extend(self._level_runs)
        self._level_runs = []
        merge_tail(self._runs)
        self._level_start = self._len
        self._level_chunks = len(self._starts)

    def rollback(self) -> None:
        """Forget every state added since the last ``end_level``."""
        self._level_runs = []
        del self._starts[self._level_chunks :]
        del self._parents[self._level_chunks :]
        del self._choices[self._level_chunks :]
        self._len = self._level_start

    def parent_and_choice(self, i: int) -> tuple[int, int]:
        """State ``i``'s parent number (-1 for an initial state) and choice."""
        k = bisect.bisect_right(self._starts, i) - 1
        j = i - self._starts[k]
        parent = int(self._parents[k][j])
        return (-1 if parent == 0xFFFFFFFF else parent), int(self._choices[k][j])

    def path_to(self, i: int) -> tuple[int, list[int]]:
        """The initial state's index and the choices that lead to state ``i``."""
        init, *choices = parent_chain(i, self.parent_and_choice)
        return init, choices

    def fingerprints(self) -> np.ndarray:
        """Every stored fingerprint, in no particular order (a new array)."""
        runs = self._runs + self._level_runs
        return np.concatenate(runs) if runs else np.zeros(0, dtype=np.uint64)

    def merge_reserve(self) -> int:
        """The most a merge of runs may allocate (``end_level``): the merged array and
        the sort's buffer, up to 12 bytes a stored state when every run merges."""
        return 12 * self._len

    def nbytes(self) -> int:
        """The bytes held by the arrays."""
        arrays = self._runs + self._level_runs + self._parents + self._choices
        return sum(a.nbytes for a in arrays)

    def parents_and_choices(self) -> tuple[np.ndarray, np.ndarray]:
        parents = np.concatenate(self._parents) if self._parents else np.zeros(0, dtype=np.uint32)
        choices = np.concatenate(self._choices) if self._choices else np.zeros(0, dtype=np.uint8)
        return np.where(parents == 0xFFFFFFFF, -1, parents.astype(np.int64)), choices

    # -- a checkpoint pickles the set itself; it keeps no file ---------------------------

    kind = "memory"
    chunk_factor = 1

    def saved(self) -> dict[str, CompactSeenSet]:
        return {"seen": self}

    def reopen(self, directory: Any = None) -> CompactSeenSet:
        return self

    def restored(self, saved: Any, directory: Any = None) -> Any:
        """A checkpoint's store as it is (a disk store stays on disk: it may not fit)."""
        return saved.reopen(directory)

    def disk_bytes(self) -> int:
        return 0

    def peak_disk_bytes(self) -> int:
        return 0

    def written_bytes(self) -> int:
        return 0


def runs_contain(runs: Sequence[np.ndarray], fps: np.ndarray) -> np.ndarray:
    """Which of the sorted ``fps`` are in the sorted ``runs`` (arrays, or memory maps of
    a store's files): one binary search a run."""
    hit = np.zeros(len(fps), dtype=bool)
    if not len(fps):
        return hit
    for run in runs:
        if not len(run):
            continue
        at = np.searchsorted(run, fps)
        at[at == len(run)] = 0
        hit |= run[at] == fps
    return hit


def block_index(run: np.ndarray, stride: int) -> np.ndarray:
    """The index ``block_contains`` searches first: every ``stride``-th fingerprint of the
    sorted ``run``, copied into memory."""
    return np.array(run[::stride])


def block_contains(run: np.ndarray, index: np.ndarray, stride: int, fps: np.ndarray) -> np.ndarray:
    """Which of the sorted ``fps`` are in the sorted ``run`` (an array, or a memory map of
    a store's file), whose every ``stride``-th fingerprint is ``index`` (held in memory):
    each key finds its block in the index, then the block is searched, all keys a step at
    a time (``stride`` a power of two). A key reads one block of the run, where a binary
    search of the whole run would read one place a step, each far from the last."""
    lo = np.searchsorted(index, fps, side="right").astype(np.int64)
    lo -= 1
    np.maximum(lo, 0, out=lo)  # a key below the run's first fingerprint is not in it
    lo *= stride
    last = len(run) - 1
    step = stride // 2
    while step:
        mid = np.minimum(lo + step, last)
        lo = np.where(run[mid] <= fps, mid, lo)
        step //= 2
    hit: np.ndarray = run[lo] == fps
    return hit


class PrefixFilter:
    """A bitmap of the high bits of the fingerprints added (they are uniformly spread, so
    their high bits are a hash): a key whose bit is clear was never added, and only the
    others are searched for in the sorted runs. Its size doubles while more than one bit
    in ``LOAD`` is set, up to ``2**MAX_BITS`` bits (``2**MAX_BITS / 8`` bytes), after
    which it only grows fuller."""

    MIN_BITS, MAX_BITS, LOAD = 20, 30, 8

    def __init__(self) -> None:
        self.bits = self.MIN_BITS
        self.words = np.zeros(1 << (self.bits - 6), dtype=np.uint64)
        self.count = 0

    def _positions(self, fps: ArrayLike) -> np.ndarray:
        return np.asarray(fps, dtype=np.uint64) >> np.uint64(64 - self.bits)

    def add(self, fps: np.ndarray, runs: Iterable[np.ndarray] = ()) -> None:
        """Set the bits of the sorted ``fps``; ``runs`` (every fingerprint added so far,
        these included) fill a larger bitmap when this one is too full."""
        self.count += len(fps)
        if self.count * self.LOAD > (1 << self.bits) and self.bits < self.MAX_BITS:
            while self.count * self.LOAD > (1 << self.bits) and self.bits < self.MAX_BITS:
                self.bits += 1
            self.words = np.zeros(1 << (self.bits - 6), dtype=np.uint64)
            for run in runs:
                self._set(self._positions(run))
            return
        self._set(self._positions(fps))

    def _set(self, at: np.ndarray) -> None:
        if not len(at):
            return
        word = at >> np.uint64(6)
        mask = np.left_shift(np.uint64(1), at & np.uint64(63))
        starts = np.flatnonzero(np.r_[True, word[1:] != word[:-1]])  # the positions are sorted
        self.words[word[starts]] |= np.bitwise_or.reduceat(mask, starts)

    def maybe(self, fps: ArrayLike) -> np.ndarray:
        """Which of ``fps`` may have been added (the others certainly were not)."""
        at = self._positions(fps)
        bit: np.ndarray = (self.words[at >> np.uint64(6)] >> (at & np.uint64(63))) & np.uint64(1) == 1
        return bit

    @property
    def nbytes(self) -> int:
        return self.words.nbytes


def merges(newer: int, older: int) -> bool:
    """Whether the newest run (``newer`` fingerprints) is merged into the one before it
    (``older``): while it is at least half that size, so that run sizes stay geometric
    and a lookup makes a logarithmic number of binary searches."""
    return 2 * newer >= older


def merge_runs(older: np.ndarray, newer: np.ndarray) -> np.ndarray:
    """Two sorted runs as one (a linear merge)."""
    merged = np.concatenate((older, newer))
    merged.sort(kind="stable")
    return merged


def merge_tail(runs: list[np.ndarray]) -> None:
    """Merge the newest of ``runs`` (sorted arrays, oldest first) into the one before it
    while ``merges`` says so."""
    while len(runs) > 1 and merges(len(runs[-1]), len(runs[-2])):
        newer = runs.pop()
        runs[-1] = merge_runs(runs[-1], newer)
