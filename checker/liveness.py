"""Liveness under weak fairness: the kept subgraph and the fair components in it.

A liveness property (``checker.protocol``'s ``"always-eventually"`` and ``"leads-to"``) is
a family of obligations; obligation ``j`` *waits* in a state where its ``Q_j`` fails and
is *opened* in a state where its ``P_j`` holds and its ``Q_j`` fails (``[]<>P`` is one
obligation, ``true ~> P``: it waits and opens wherever ``P`` fails). It is violated by a
weakly fair behaviour that reaches a state where it is opened and stays for ever in
states where it waits. Such a behaviour ends, from some point on, in one of

- a *stuttering* state: one where no fair instance is enabled, so a fair behaviour may
  stop there for ever;
- a strongly connected component ``C`` of the waiting states (one with at least one edge
  inside it) that is *fair*: every fair instance enabled in all states of ``C`` is taken
  on some edge inside ``C`` (a behaviour that goes round every edge of ``C`` for ever is
  then weakly fair; a cycle through a part of ``C`` is never fairer, since it has fewer
  edges to take instances on and no fewer instances enabled throughout),

reachable from an opened state through waiting states. ``LivenessLog`` keeps what
deciding it needs while a search runs, and ``LivenessLog.decide`` finds the first
violated obligation and a lasso for it once every reachable state was explored: the
components are computed with ``scipy.sparse.csgraph`` over numpy arrays, never a Python
loop per state.

What is kept (bytes a kept item, in numpy arrays):

- the *waiting* states (where some obligation waits): their number (4 or 8), the
  obligations' opened and waiting bits (two bits an obligation, packed), and the fair
  instances enabled there (a bit an instance, 8 bytes a 64);
- the edges that leave a waiting state: source number (4 or 8), the successor's
  fingerprint (8), the choice (1) and the fair instance code (2, or 4 past 32,767
  instances): 15 bytes.

A successor's number is only known once it is stored, which may be later than its edge is
computed, so the edges' targets are looked up at the end (as ``checker.possibly`` does).

The lasso is deterministic (the same on every run, engine and partition count): the
edges are sorted by ``(source, choice)`` before anything is computed, the component chosen
is the one holding the violating state nearest to an opened state (the least number among
the nearest), and every path is a breadth-first one over that sorted graph.
"""

from __future__ import annotations

from collections.abc import Callable

import attrs
import numpy as np

from .possibly import NARROW_LIMIT, grown

_WORD = 64  # fair instances a uint64 word holds


def _bit(codes: np.ndarray) -> np.ndarray:
    """Each instance code's bit in its uint64 word."""
    return np.left_shift(np.uint64(1), (codes % _WORD).astype(np.uint64))


@attrs.frozen
class Lasso:
    """A violation of one obligation, as state numbers and choices.

    Attributes:
        obligation: the obligation's position (0 for ``[]<>P``).
        start: the number of the opened state the path goes through (the prefix is a
            shortest path to it).
        steps: ``(state number, choice)`` pairs: from ``start``, take the enabled action
            ``choice`` of that state; the first ``to_loop`` of them lead to the cycle's
            first state, the rest go round the cycle and end back there.
        to_loop: how many of ``steps`` lead from ``start`` to the cycle's first state.
        loop_state: the number of the cycle's first state (the stuttering state when
            ``steps`` has no cycle step).
    """

    obligation: int
    start: int
    steps: tuple[tuple[int, int], ...]
    to_loop: int
    loop_state: int

    @property
    def stutters(self) -> bool:
        return len(self.steps) == self.to_loop


class LivenessLog:
    """The kept subgraph of one liveness property while a search runs (see the module).

    Args:
        obligations: how many obligations the property has (1 for ``[]<>P``).
        instances: how many fair instances the model declares.

    States are numbered by the search in the order it stores them; ``add_states`` is
    called with consecutive numbers; every edge of a source state comes in one
    ``add_edges`` call (the enabled instances of a state are those of its edges).
    """

    def __init__(self, obligations: int, instances: int) -> None:
        self.obligations, self.instances = int(obligations), int(instances)
        self._bits = max(1, -(-self.obligations // 8))  # bytes of one packed row of bits
        self._words = max(1, -(-self.instances // _WORD))
        self._states = 0
        self._n = 0  # waiting states kept
        self._number = np.empty(0, dtype=np.uint32)
        self._opened = np.empty((0, self._bits), dtype=np.uint8)
        self._waits = np.empty((0, self._bits), dtype=np.uint8)
        self._enabled = np.empty((0, self._words), dtype=np.uint64)
        self._e = 0  # edges kept
        self._src = np.empty(0, dtype=np.uint32)
        self._dst = np.empty(0, dtype=np.uint64)
        self._choice = np.empty(0, dtype=np.uint8)
        self._fair = np.empty(0, dtype=np.int16 if self.instances < 2**15 else np.int32)

    # -- recording ----------------------------------------------------------------------

    def add_states(self, first: int, opened: np.ndarray, waits: np.ndarray) -> None:
        """States ``first ..`` were just stored, in number order; ``opened[i, j]`` and
        ``waits[i, j]`` say whether obligation ``j`` is opened and waits in state
        ``first + i`` (arrays of shape ``(n, obligations)``).

        Raises:
            ValueError: ``first`` is not the next state number, or the shapes are wrong.
        """
        waits = np.asarray(waits, dtype=np.bool_).reshape(-1, self.obligations)
        opened = np.asarray(opened, dtype=np.bool_).reshape(-1, self.obligations) & waits
        if first != self._states:
            raise ValueError(f"LivenessLog.add_states: expected state {self._states} next, got {first}")
        end = self._states + len(waits)
        self._states = end
        keep = np.flatnonzero(waits.any(axis=1))
        if not len(keep):
            return
        if end > NARROW_LIMIT and self._number.dtype != np.int64:
            self._number, self._src = self._number.astype(np.int64), self._src.astype(np.int64)
        n, m = self._n, self._n + len(keep)
        self._number = grown(self._number, n, m)
        self._opened = grown(self._opened, n, m)
        self._waits = grown(self._waits, n, m)
        self._enabled = grown(self._enabled, n, m)
        self._number[n:m] = first + keep
        self._opened[n:m] = np.packbits(opened[keep], axis=1)
        self._waits[n:m] = np.packbits(waits[keep], axis=1)
        self._enabled[n:m] = 0
        self._n = m

    def add_edges(self, src: np.ndarray, dst_fp: np.ndarray, choices: np.ndarray, fair: np.ndarray) -> None:
        """Every successor computed from some expanded states: ``src[i]`` the parent's
        number, ``dst_fp[i]`` the successor's stored fingerprint, ``choices[i]`` the
        action's position among the parent's, ``fair[i]`` the step's fair instance code
        (-1: not fair). Every edge of a parent comes in the same call. The edges leaving
        waiting states are kept, and their parents' enabled instances recorded.

        Raises:
            ValueError: the arrays differ in length, or a source is not a stored state.
        """
        src = np.asarray(src, dtype=np.int64).ravel()
        dst_fp = np.asarray(dst_fp, dtype=np.uint64).ravel()
        choices = np.asarray(choices, dtype=np.int64).ravel()
        fair = np.asarray(fair, dtype=np.int64).ravel()
        if not len(src) == len(dst_fp) == len(choices) == len(fair):
            raise ValueError("LivenessLog.add_edges: the edge arrays differ in length")
        if not len(src) or not self._n:
            return
        if src.min() < 0 or src.max() >= self._states:
            raise ValueError("LivenessLog.add_edges: an edge leaves a state that was not added")
        numbers = self._number[: self._n]
        at = np.searchsorted(numbers, src)
        at_ok = np.minimum(at, self._n - 1)
        kept = numbers[at_ok] == src
        if not kept.any():
            return
        at = at_ok[kept]
        src, dst_fp, choices, fair = src[kept], dst_fp[kept], choices[kept], fair[kept]
        if fair.max(initial=-1) >= self.instances or choices.min() < 0 or choices.max() > 255:
            raise ValueError("LivenessLog.add_edges: a fair instance code or a choice is out of range")
        is_fair = fair >= 0
        if is_fair.any():
            codes = fair[is_fair]
            np.bitwise_or.at(self._enabled, (at[is_fair], codes // _WORD), _bit(codes))
        e, f = self._e, self._e + len(src)
        self._src = grown(self._src, e, f)
        self._dst = grown(self._dst, e, f)
        self._choice = grown(self._choice, e, f)
        self._fair = grown(self._fair, e, f)
        self._src[e:f] = src
        self._dst[e:f] = dst_fp
        self._choice[e:f] = choices
        self._fair[e:f] = fair
        self._e = f

    def rollback(self, n_states: int) -> None:
        """Forget the states numbered ``n_states`` or more, and the edges leaving them."""
        if n_states >= self._states:
            return
        n_states = max(int(n_states), 0)
        self._states = n_states
        self._n = int(np.searchsorted(self._number[: self._n], n_states))
        kept = self._src[: self._e] < n_states
        count = int(np.count_nonzero(kept))
        if count < self._e:
            for name in ("_src", "_dst", "_choice", "_fair"):
                a = getattr(self, name)
                a[:count] = a[: self._e][kept]
            self._e = count

    # -- sizes --------------------------------------------------------------------------

    @property
    def edges(self) -> int:
        """The number of edges kept (those leaving waiting states)."""
        return self._e

    @property
    def kept_states(self) -> int:
        """The number of waiting states kept."""
        return self._n

    @property
    def states(self) -> int:
        return self._states

    def nbytes(self) -> int:
        """Bytes held by the log's arrays."""
        return int(
            sum(
                getattr(self, a).nbytes
                for a in ("_number", "_opened", "_waits", "_enabled", "_src", "_dst", "_choice", "_fair")
            )
        )

    # -- pickling (checkpoints): the used parts only -------------------------------------

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        for a in ("_number", "_opened", "_waits", "_enabled"):
            state[a] = state[a][: self._n].copy()
        for a in ("_src", "_dst", "_choice", "_fair"):
            state[a] = state[a][: self._e].copy()
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)

    def __repr__(self) -> str:
        return f"LivenessLog(states={self._states}, waiting={self._n}, edges={self._e})"

    # -- the verdict ----------------------------------------------------------------------

    def decide(self, numbers_of: Callable[[np.ndarray], np.ndarray]) -> Lasso | None:
        """The first violated obligation and its lasso, after a search that explored every
        reachable state; ``None`` when every obligation holds.

        Args:
            numbers_of: ``numbers_of(fps)`` -> int64 array: the stored number of each
                fingerprint of the uint64 array ``fps`` (every one is stored).
        """
        n, e = self._n, self._e
        if not n:
            return None
        numbers = self._number[:n].astype(np.int64)
        dst_number = np.asarray(numbers_of(self._dst[:e].copy()), dtype=np.int64)
        if len(dst_number) != e:
            raise ValueError(f"LivenessLog.decide: numbers_of returned {len(dst_number)} numbers for {e}")
        if e and (dst_number.min() < 0 or dst_number.max() >= self._states):
            raise ValueError("LivenessLog.decide: a successor is not a stored state")
        graph = _Graph.of(
            numbers,
            self._src[:e].astype(np.int64),
            dst_number,
            self._choice[:e].astype(np.int64),
            self._fair[:e].astype(np.int64),
            self._enabled[:n],
        )
        opened = np.unpackbits(self._opened[:n], axis=1, count=self.obligations).astype(np.bool_)
        waits = np.unpackbits(self._waits[:n], axis=1, count=self.obligations).astype(np.bool_)
        for j in range(self.obligations):
            lasso = graph.violation(j, opened[:, j], waits[:, j])
            if lasso is not None:
                return lasso
        return None


@attrs.frozen
class _Graph:
    """The kept graph over the waiting states, renumbered ``0 .. n - 1`` in state number
    order; edges sorted by ``(source, choice)``, those whose target is no waiting state
    dropped (the enabled instances already count them)."""

    numbers: np.ndarray  # node -> state number
    src: np.ndarray  # node numbers
    dst: np.ndarray
    choice: np.ndarray
    fair: np.ndarray
    enabled: np.ndarray  # (n, words) uint64

    @classmethod
    def of(cls, numbers, src_number, dst_number, choice, fair, enabled) -> _Graph:
        order = np.lexsort((choice, src_number))
        src_number, dst_number, choice, fair = src_number[order], dst_number[order], choice[order], fair[order]
        n = len(numbers)
        src = np.searchsorted(numbers, src_number)
        dst = np.searchsorted(numbers, dst_number)
        inside = (dst < n) & (numbers[np.minimum(dst, n - 1)] == dst_number)
        return cls(numbers, src[inside], dst[inside], choice[inside], fair[inside], enabled)

    def violation(self, j: int, opened: np.ndarray, waits: np.ndarray) -> Lasso | None:
        """Obligation ``j``'s lasso, or ``None`` when it holds."""
        from scipy import sparse
        from scipy.sparse import csgraph

        if not opened.any():
            return None
        n = len(self.numbers)
        inside = waits[self.src] & waits[self.dst]
        src, dst = self.src[inside], self.dst[inside]
        # The waiting states reachable from an opened one through waiting states: a
        # breadth-first search from a node ``n`` joined to every opened state.
        roots = np.flatnonzero(opened)
        g = sparse.csr_matrix(
            (np.ones(len(src) + len(roots), dtype=np.int8), (np.r_[src, np.full(len(roots), n)], np.r_[dst, roots])),
            shape=(n + 1, n + 1),
        )
        order, pred = csgraph.breadth_first_order(g, n, directed=True, return_predecessors=True)
        region = np.zeros(n + 1, dtype=np.bool_)
        region[order] = True
        region = region[:n] & waits
        stutter = region & ~self.enabled.any(axis=1)
        keep = region[src] & region[dst]
        fair_cycle = np.zeros(n, dtype=np.bool_)
        label = np.arange(n)
        if keep.any():
            ks, kd, kf = src[keep], dst[keep], self.fair[inside][keep]
            sub = sparse.csr_matrix((np.ones(len(ks), dtype=np.int8), (ks, kd)), shape=(n, n))
            _, label = csgraph.connected_components(sub, directed=True, connection="strong")
            internal = label[ks] == label[kd]
            labels = label.max() + 1
            nontrivial = np.zeros(labels, dtype=np.bool_)
            nontrivial[label[ks[internal]]] = True
            # enabled in every state of a component: the AND of its members' sets
            members = np.flatnonzero(region)
            everywhere = np.full((labels, self.enabled.shape[1]), ~np.uint64(0), dtype=np.uint64)
            np.bitwise_and.at(everywhere, label[members], self.enabled[members])
            taken = np.zeros_like(everywhere)
            hit = internal & (kf >= 0)
            codes = kf[hit]
            np.bitwise_or.at(taken, (label[ks[hit]], codes // _WORD), _bit(codes))
            fair = nontrivial & ~(everywhere & ~taken).any(axis=1)
            fair_cycle = region & fair[label]
        bad = np.flatnonzero(stutter | fair_cycle)
        if not len(bad):
            return None
        # the violating state nearest to an opened one (then the least number): the
        # cycle's first state, or the stuttering one
        dist = csgraph.shortest_path(g, directed=True, unweighted=True, indices=n)[bad]
        first = int(bad[np.lexsort((bad, dist))[0]])
        # the prefix: from an opened state (the BFS root's child) to `first`, in the region
        chain = [first]
        while pred[chain[-1]] != n:
            chain.append(int(pred[chain[-1]]))
        chain.reverse()
        steps = [(a, self._edge_choice(a, b)) for a, b in zip(chain, chain[1:])]
        to_loop = len(steps)
        if not stutter[first]:
            steps += self._cycle(first, label)
        return Lasso(
            obligation=j,
            start=int(self.numbers[chain[0]]),
            steps=tuple((int(self.numbers[a]), c) for a, c in steps),
            to_loop=to_loop,
            loop_state=int(self.numbers[first]),
        )

    def _edge_choice(self, a: int, b: int) -> int:
        """The least choice of an edge ``a -> b`` (edges are sorted by source and choice)."""
        lo, hi = np.searchsorted(self.src, a), np.searchsorted(self.src, a, side="right")
        hits = np.flatnonzero(self.dst[lo:hi] == b)
        return int(self.choice[lo + hits[0]])

    def _cycle(self, first: int, label) -> list[tuple[int, int]]:
        """A fair cycle from ``first`` back to it inside its (fair) component: breadth-first
        paths through one edge of each fair instance enabled in all the component's states
        (in code order; one already taken is skipped), then back; while some instance is
        enabled in every state the cycle visits and never taken on it, a detour through an
        edge that takes it, or else through a state of the component where it is disabled
        (there is one: the component is fair)."""
        from scipy import sparse
        from scipy.sparse import csgraph

        comp = label[first]
        members = np.flatnonzero(label == comp)
        # the edges inside the component with their choices, in (source, choice) order
        sel = np.flatnonzero((label[self.src] == comp) & (label[self.dst] == comp))
        es, ed, ef, ec = self.src[sel], self.dst[sel], self.fair[sel], self.choice[sel]
        n = len(self.numbers)
        g = sparse.csr_matrix((np.ones(len(es), dtype=np.int8), (es, ed)), shape=(n, n))

        def bits(words: np.ndarray) -> list[int]:
            return [c for c in range(len(words) * _WORD) if int(words[c // _WORD]) >> (c % _WORD) & 1]

        def walk(start: int, to: int) -> list[tuple[int, int]]:
            """A shortest path ``start -> to`` inside the component, as ``(node, edge)``."""
            if start == to:
                return []
            _, pred = csgraph.breadth_first_order(g, start, directed=True, return_predecessors=True)
            chain = [to]
            while chain[-1] != start:
                chain.append(int(pred[chain[-1]]))
            chain.reverse()
            return [(a, self._inner_edge(es, ed, a, b)) for a, b in zip(chain, chain[1:])]

        steps: list[tuple[int, int]] = []  # (node, index of the inner edge taken)
        here = first

        def take(k: int) -> None:
            nonlocal here
            steps.extend(walk(here, int(es[k])))
            steps.append((int(es[k]), k))
            here = int(ed[k])

        for code in bits(np.bitwise_and.reduce(self.enabled[members], axis=0)):
            if code not in {int(ef[k]) for _, k in steps}:
                take(int(np.flatnonzero(ef == code)[0]))  # the least (source, choice) edge of it
        if not steps:  # nothing to take: any cycle through `first`, by its least edge
            take(int(np.flatnonzero(es == first)[0]))
        while True:
            cycle = steps + walk(here, first)
            visited = np.array([a for a, _ in cycle])
            taken = {int(ef[k]) for _, k in cycle if ef[k] >= 0}
            missing = [c for c in bits(np.bitwise_and.reduce(self.enabled[visited], axis=0)) if c not in taken]
            if not missing:
                return [(a, int(ec[k])) for a, k in cycle]
            code = missing[0]
            edges = np.flatnonzero(ef == code)
            if len(edges):
                take(int(edges[0]))
            else:  # a state of the component where it is disabled, the least by number
                off = members[(self.enabled[members, code // _WORD] >> np.uint64(code % _WORD)) & np.uint64(1) == 0]
                to = int(off[0])
                steps.extend(walk(here, to))
                here = to

    def _inner_edge(self, es, ed, a: int, b: int) -> int:
        lo, hi = np.searchsorted(es, a), np.searchsorted(es, a, side="right")
        return int(lo + np.flatnonzero(ed[lo:hi] == b)[0])
