"""Always-possibly (AG EF) properties: the edge log and the trap computation.

A ``possibly`` property holds when, from every reachable state, some path reaches a goal
state. A *trap* is a reachable state from which no goal state can be reached; the property
is violated exactly when a trap is reachable. Deciding it needs the whole reachable graph,
so the engine records the graph's edges while it searches (``EdgeLog``) and, once the search
has explored every reachable state, computes the traps by backward reachability from the
goal states (``EdgeLog.traps``).

Only edges that leave a non-goal state are kept: a goal state is never a trap, and whether
a non-goal state can reach a goal depends only on the edges leaving non-goal states up to
the first goal state of a path. In a model where most states are goal states (in the Kafka
model almost every state has a leader), the log stays small.

Everything is kept in plain numpy arrays indexed by state number (the order in which the
engine stored the states), so that the log pickles into a checkpoint and the computation
is vectorised: no Python loop per state or per edge.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

_MIN_CAPACITY = 1024
# Source state numbers are kept in 4 bytes while every state number fits (the engines store
# far fewer than 2**32 states), in 8 beyond.
_NARROW = np.uint32
NARROW_LIMIT = 2**32


def grown(array: np.ndarray, used: int, needed: int) -> np.ndarray:
    """``array`` with room for ``needed`` entries, its first ``used`` entries kept
    (capacity grows by half, so appending is amortised constant time and at most a third
    of the array is slack)."""
    if needed <= len(array):
        return array
    capacity = max(_MIN_CAPACITY, len(array))
    while capacity < needed:
        capacity += capacity // 2
    bigger = np.empty((capacity, *array.shape[1:]), dtype=array.dtype)
    bigger[:used] = array[:used]
    return bigger


class EdgeLog:
    """Edges of the reachable graph that leave non-goal states, kept compactly (numpy).

    States are numbered by the engine in the order it stores them (0, 1, 2, ...; the
    breadth-first order). Edges are kept as pairs (source state number, successor
    fingerprint): a successor's number is only known once it is stored, which may be later
    than the edge is computed, so numbers are looked up once, at the end (``traps``).
    """

    def __init__(self) -> None:
        self._goal = np.empty(0, dtype=np.bool_)  # goal[i]: state i is a goal state
        self._states = 0
        self._src = np.empty(0, dtype=_NARROW)  # a kept edge's source state number
        self._dst = np.empty(0, dtype=np.uint64)  # the successor's stored fingerprint
        self._edges = 0

    # -- recording ----------------------------------------------------------------------

    def add_states(self, first: int, goal: np.ndarray) -> None:
        """States ``first .. first + len(goal) - 1`` were just stored, in number order;
        ``goal[i]`` says whether state ``first + i`` is a goal state.

        Raises:
            ValueError: ``first`` is not the next state number (states must be added in
                order, without gaps).
        """
        goal = np.asarray(goal, dtype=np.bool_).ravel()
        if first != self._states:
            raise ValueError(
                f"EdgeLog.add_states: states must be added in order; expected state {self._states} next, got {first}"
            )
        end = self._states + len(goal)
        if end > NARROW_LIMIT and self._src.dtype != np.int64:
            self._src = self._src.astype(np.int64)
        self._goal = grown(self._goal, self._states, end)
        self._goal[self._states : end] = goal
        self._states = end

    def add_edges(self, src: np.ndarray, dst_fp: np.ndarray) -> None:
        """Record the successors computed from expanded states (duplicates included):
        ``src[i]`` is the parent's state number, ``dst_fp[i]`` the successor's stored
        fingerprint (the canonical one under symmetry reduction). Only the edges whose
        source is not a goal state are kept.

        Raises:
            ValueError: the arrays differ in length, or a source is not a stored state.
        """
        src = np.asarray(src, dtype=np.int64).ravel()
        dst_fp = np.asarray(dst_fp, dtype=np.uint64).ravel()
        if len(src) != len(dst_fp):
            raise ValueError(f"EdgeLog.add_edges: {len(src)} sources but {len(dst_fp)} successors")
        if not len(src):
            return
        if src.min() < 0 or src.max() >= self._states:
            raise ValueError(
                "EdgeLog.add_edges: an edge leaves a state that was not added "
                f"(sources {src.min()}..{src.max()}, {self._states} states)"
            )
        keep = ~self._goal[src]
        count = int(np.count_nonzero(keep))
        if not count:
            return
        end = self._edges + count
        self._src = grown(self._src, self._edges, end)
        self._dst = grown(self._dst, self._edges, end)
        self._src[self._edges : end] = src[keep]  # fits: every source is a stored state's number
        self._dst[self._edges : end] = dst_fp[keep]
        self._edges = end

    def rollback(self, n_states: int) -> None:
        """Forget the states numbered ``n_states`` or more, and the edges leaving them
        (a run stopped inside a level goes back to the level's start)."""
        if n_states >= self._states:
            return
        n_states = max(int(n_states), 0)
        self._states = n_states
        kept = self._src[: self._edges] < n_states
        count = int(np.count_nonzero(kept))
        if count < self._edges:
            self._src[:count] = self._src[: self._edges][kept]
            self._dst[:count] = self._dst[: self._edges][kept]
            self._edges = count

    # -- the verdict ----------------------------------------------------------------------

    def traps(self, numbers_of: Callable[[np.ndarray], np.ndarray]) -> tuple[int, int | None]:
        """The trap states, after a search that explored every reachable state.

        Args:
            numbers_of: ``numbers_of(fps)`` -> int64 array: the stored state number of
                each fingerprint of the uint64 array ``fps`` (every one is stored).

        Returns:
            ``(count, least)``: the number of trap states (states from which no goal state
            can be reached) and the least trap state number, or ``None`` when there is none.

        Raises:
            ValueError: ``numbers_of`` returned a number that is not a stored state.
        """
        # scipy costs a tenth of a second to import: only a run with an always-possibly
        # property that explored every state pays it.
        from scipy import sparse
        from scipy.sparse import csgraph

        n = self._states
        goal = self._goal[:n]
        candidates = np.flatnonzero(~goal)  # non-goal states, ascending
        k = len(candidates)
        if not k:
            return 0, None
        src = self._src[: self._edges]
        dst = np.asarray(numbers_of(self._dst[: self._edges].copy()), dtype=np.int64)
        if len(dst) != self._edges:
            raise ValueError(f"EdgeLog.traps: numbers_of returned {len(dst)} numbers for {self._edges} fingerprints")
        if len(dst) and (dst.min() < 0 or dst.max() >= n):
            raise ValueError("EdgeLog.traps: a successor is not a stored state")
        # Work on the non-goal states only, renumbered 0..k-1; node k stands for "a goal".
        # Every kept edge leaves a non-goal state (add_edges dropped the others), so the
        # reversed graph has an edge dst -> src, and a goal successor becomes node k.
        index = np.int32 if k < 2**31 - 1 else np.int64  # the graph's node numbers
        compact = np.searchsorted(candidates, src).astype(index)
        target = np.searchsorted(candidates, dst).astype(index)
        target[goal[dst]] = k
        del dst
        reversed_graph = sparse.csr_matrix((np.ones(len(src), dtype=np.int8), (target, compact)), shape=(k + 1, k + 1))
        del target, compact
        reached = csgraph.breadth_first_order(reversed_graph, k, directed=True, return_predecessors=False)
        can_reach = np.zeros(k + 1, dtype=np.bool_)
        can_reach[reached] = True
        trapped = candidates[~can_reach[:k]]
        if not len(trapped):
            return 0, None
        return int(len(trapped)), int(trapped[0])

    # -- sizes --------------------------------------------------------------------------

    @property
    def edges(self) -> int:
        """The number of edges kept (those leaving non-goal states)."""
        return self._edges

    @property
    def states(self) -> int:
        """The number of states added (after rollbacks)."""
        return self._states

    def nbytes(self) -> int:
        """Bytes held by the log's arrays (for ``kmc bench``: bytes per stored edge)."""
        return int(self._goal.nbytes + self._src.nbytes + self._dst.nbytes)

    # -- pickling (checkpoints): save the used part of each array only --------------------

    def __getstate__(self) -> dict[str, Any]:
        return {
            "goal": self._goal[: self._states].copy(),
            "src": self._src[: self._edges].copy(),
            "dst": self._dst[: self._edges].copy(),
        }

    def __setstate__(self, state: dict[str, Any]) -> None:
        self._goal = np.asarray(state["goal"], dtype=np.bool_)
        self._states = len(self._goal)
        src = np.asarray(state["src"])
        wide = src.dtype == np.int64 or self._states > NARROW_LIMIT
        self._src = src.astype(np.int64 if wide else _NARROW)
        self._dst = np.asarray(state["dst"], dtype=np.uint64)
        self._edges = len(self._src)

    def __repr__(self) -> str:
        return f"EdgeLog(states={self._states}, edges={self._edges})"
