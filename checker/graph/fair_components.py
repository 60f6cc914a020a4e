"""The fair components of a liveness property's kept graph, and the lasso of a violated
obligation built in them (``checker.graph.liveness`` keeps the graph while a search runs and
builds it at the end; the module there says what a fair component is and why the lasso is
deterministic)."""

from __future__ import annotations

import attrs
import numpy as np

from ..stores.frontier import CHUNK

WORD = 64  # fair instances a uint64 word holds


def word_bit(codes: np.ndarray) -> np.ndarray:
    """Each instance code's bit in its uint64 word."""
    return np.left_shift(np.uint64(1), (codes % WORD).astype(np.uint64))


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


class Finder:
    """The positions of keys in a sorted array of distinct uint64 fingerprints that holds
    them all. Fingerprints are spread evenly over the 64-bit range, so a directory of
    their high bits (about one entry per fingerprint) leaves a few candidates per key,
    tried in a few vectorised rounds; the keys still unplaced after those are searched
    for by bisection (so any distribution of fingerprints gives the right answer)."""

    _ROUNDS = 8

    def __init__(self, fps: np.ndarray) -> None:
        self.fps = fps
        bits = max(1, min(30, int(len(fps)).bit_length() - 1))
        self.shift = np.uint64(64 - bits)
        index = np.int32 if len(fps) < 2**31 else np.int64
        self.first = np.searchsorted(fps, np.arange(1 << bits, dtype=np.uint64) << self.shift).astype(index)

    def __call__(self, keys: np.ndarray) -> np.ndarray:
        at: np.ndarray = self.first[keys >> self.shift]  # a copy
        last = len(self.fps) - 1
        todo = np.arange(len(keys))
        for _ in range(self._ROUNDS):
            hit = self.fps[np.minimum(at[todo], last)] == keys[todo]
            todo = todo[~hit]
            if not len(todo):
                return at
            at[todo] += 1
        at[todo] = np.searchsorted(self.fps, keys[todo])
        return at


def _components(m: int, starts: np.ndarray, to: np.ndarray) -> np.ndarray:
    """The strongly connected component of each of ``m`` nodes whose edges go to
    ``to[starts[a] .. starts[a + 1] - 1]`` (a target may repeat), by
    ``scipy.sparse.csgraph``. Its search needs rows without repeats, so it is given a copy
    of the targets with each row's repeats dropped (sorted), made a chunk of edges at a
    time; it reads no weights, so the weights are one float64 seen through a zero stride
    rather than an array of the edges' size."""
    from scipy import sparse
    from scipy.sparse import csgraph

    index = np.int32 if max(m, len(to)) < 2**31 else np.int64
    targets = np.empty(len(to), dtype=index)
    rows = np.zeros(m + 1, dtype=index)
    k = lo = 0
    while lo < m:
        hi = int(np.searchsorted(starts, starts[lo] + CHUNK, side="right")) - 1
        hi = min(max(hi, lo + 1), m)  # about a chunk of edges, at least one row
        a, b = int(starts[lo]), int(starts[hi])
        row = np.repeat(np.arange(hi - lo, dtype=np.int64), np.diff(starts[lo : hi + 1]))
        key = np.unique(row * m + to[a:b])
        del row
        targets[k : k + len(key)] = key % m
        rows[lo + 1 : hi + 1] = k + np.cumsum(np.bincount(key // m, minlength=hi - lo))
        k += len(key)
        lo = hi
    weights = np.broadcast_to(np.float64(1), (k,))
    g = sparse.csr_matrix((weights, targets[:k], rows), shape=(m, m), copy=False)
    labels: np.ndarray = csgraph.connected_components(g, directed=True, connection="strong")[1]
    return labels


def or_rows(words: np.ndarray, rows: np.ndarray, bits: np.ndarray) -> None:
    """``words[rows[i]] |= bits[i]`` for every ``i`` (rows in increasing order in the usual
    case: one reduction per run of a row)."""
    if not len(rows):
        return
    if (np.diff(rows) >= 0).all():
        starts = np.flatnonzero(np.concatenate(([True], rows[1:] != rows[:-1])))
        words[rows[starts]] |= np.bitwise_or.reduceat(bits, starts)
    else:
        np.bitwise_or.at(words, rows, bits)


@attrs.frozen
class _Components:
    """The strongly connected components of a region of the kept graph (``KeptGraph``).

    Attributes:
        members: the region's nodes, increasing.
        label: each member's component.
        internal: per region edge, whether it stays inside its component.
        at_label: per region edge, its source's component.
        region_edges: the region's edges' positions in the graph (None: every edge).
        region_at: the region's edges' sources, as positions in ``members`` (None: every edge).
        fair_cycle: per node of the graph, whether it lies in a fair component.
    """

    members: np.ndarray
    label: np.ndarray
    internal: np.ndarray
    at_label: np.ndarray
    region_edges: np.ndarray | None
    region_at: np.ndarray | None
    fair_cycle: np.ndarray


@attrs.frozen
class KeptGraph:
    """The kept graph over the waiting states, numbered ``0 .. n - 1`` in state number
    order, as compressed rows: the edges leaving node ``a`` are ``starts[a] ..
    starts[a + 1] - 1`` (in the order the search gave them), those whose target is no
    waiting state dropped (the enabled instances already count them)."""

    numbers: np.ndarray  # node -> state number
    starts: np.ndarray  # node -> its first edge (n + 1 entries)
    dst: np.ndarray  # edge -> target node
    choice: np.ndarray
    fair: np.ndarray
    enabled: np.ndarray  # (n, words) uint64
    # the strongly connected components the last ``violation`` decided (for progress)
    decided: list[int] = attrs.field(factory=lambda: [0], eq=False)

    def _out(self, nodes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The edges leaving ``nodes``, grouped by node in the order of ``nodes``: their
        positions, and the position in ``nodes`` of each one's source."""
        first = self.starts[nodes].astype(np.int64)
        counts = self.starts[nodes + 1] - first
        index = self.dst.dtype
        at = np.repeat(np.arange(len(nodes), dtype=index), counts)
        first -= np.cumsum(counts) - counts
        edges = np.arange(int(counts.sum()), dtype=index)
        edges += np.repeat(first.astype(index), counts)
        return edges, at

    def violation(self, j: int, opened: np.ndarray, waits: np.ndarray) -> Lasso | None:
        """Obligation ``j``'s lasso, or ``None`` when it holds."""
        self.decided[0] = 0
        if not opened.any():
            return None
        level, pred = self._region(opened, waits)
        region = level >= 0
        stutter = region & ~self.enabled.any(axis=1)
        parts = self._fair_components(region)
        bad = np.flatnonzero(stutter | parts.fair_cycle)
        if not len(bad):
            return None
        # the violating state nearest to an opened one (then the least number): the
        # cycle's first state, or the stuttering one
        near = level[bad]
        first_bad = int(bad[near == near.min()][0])
        return self._lasso(j, first_bad, pred, bool(stutter[first_bad]), parts)

    def _region(self, opened: np.ndarray, waits: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The waiting states reachable from an opened one through waiting states, one level
        at a time: the opened states in increasing number, then each level's new states
        in the order of their first discovery (the level before in its order, each
        state's successors in increasing number). Returns each node's level (-1: not
        reached) and its discoverer (``pred``, -1: opened)."""
        n = len(self.numbers)
        level = np.full(n, -1, dtype=np.int32)
        pred = np.full(n, -1, dtype=self.dst.dtype)
        frontier = np.flatnonzero(opened).astype(self.dst.dtype)
        depth = 0
        level[frontier] = 0
        while len(frontier):
            depth += 1
            found = []
            for lo in range(0, len(frontier), CHUNK):  # a part of the level at a time, in its order
                part = frontier[lo : lo + CHUNK]
                edges, at = self._out(part)
                to = self.dst[edges]
                del edges
                new = waits[to] & (level[to] < 0)  # (a state found by an earlier part is not new)
                to, at = to[new], at[new]
                if not len(to):
                    continue
                order = np.lexsort((to, at))
                to, at = to[order], at[order]
                first = np.sort(np.unique(to, return_index=True)[1])  # each one's first discovery
                pred[to[first]] = part[at[first]]
                level[to[first]] = depth
                found.append(to[first])
            frontier = np.concatenate(found) if found else frontier[:0]
        return level, pred

    def _fair_components(self, region: np.ndarray) -> _Components:
        """The strongly connected components of ``region``; a fair one holds every instance
        enabled in all its states taken on an edge inside it. When the region is the whole
        graph (the usual case when nothing is violated), the graph's own rows are handed
        over and no edge's ends are gathered again."""
        n = len(self.numbers)
        members = np.flatnonzero(region).astype(self.dst.dtype)
        m = len(members)
        whole = m == n
        region_edges: np.ndarray | None  # the region's edges' positions and sources (None: every edge)
        region_at: np.ndarray | None
        if whole:
            region_edges = region_at = None
            to = self.dst
            label = _components(m, self.starts, to)
        else:
            where = np.full(n, -1, dtype=self.dst.dtype)
            where[members] = np.arange(m, dtype=self.dst.dtype)
            region_edges, region_at = self._out(members)
            to = where[self.dst[region_edges]]
            del where
            inner = to >= 0
            region_edges, region_at, to = region_edges[inner], region_at[inner], to[inner]
            del inner
            label = _components(m, np.concatenate(([0], np.cumsum(np.bincount(region_at, minlength=m)))), to)
        # each edge's source's component
        at_label = np.repeat(label, np.diff(self.starts)) if region_at is None else label[region_at]
        internal = at_label == label[to]
        labels = int(label.max()) + 1 if m else 0
        self.decided[0] = labels
        nontrivial = np.zeros(labels, dtype=np.bool_)
        nontrivial[at_label[internal]] = True
        words = self.enabled.shape[1]
        everywhere = np.full((labels, words), ~np.uint64(0), dtype=np.uint64)
        np.bitwise_and.at(everywhere, label, self.enabled if whole else self.enabled[members])
        taken = np.zeros_like(everywhere)
        fair_codes = self.fair if region_edges is None else self.fair[region_edges]
        for lo in range(0, len(fair_codes), CHUNK):  # the instances taken inside, a chunk at a time
            codes = fair_codes[lo : lo + CHUNK]
            hit = internal[lo : lo + CHUNK] & (codes >= 0)
            codes = codes[hit].astype(np.int64)
            np.bitwise_or.at(taken, (at_label[lo : lo + CHUNK][hit], codes // WORD), word_bit(codes))
        del fair_codes
        np.invert(taken, out=taken)  # in place: the instances enabled throughout and never taken
        np.bitwise_and(taken, everywhere, out=taken)
        del everywhere
        fair = nontrivial & ~taken.any(axis=1)
        fair_cycle = np.zeros(n, dtype=np.bool_)
        fair_cycle[members] = fair[label]
        return _Components(members, label, internal, at_label, region_edges, region_at, fair_cycle)

    def _lasso(self, j: int, first_bad: int, pred: np.ndarray, stutters: bool, parts: _Components) -> Lasso:
        """Obligation ``j``'s lasso to the violating node ``first_bad``: the prefix from an
        opened state through the region (``pred``), then, unless ``first_bad`` stutters, a
        fair cycle in its component."""
        chain = [first_bad]
        while pred[chain[-1]] >= 0:
            chain.append(int(pred[chain[-1]]))
        chain.reverse()
        steps = [(a, self._edge_choice(a, b)) for a, b in zip(chain, chain[1:])]
        to_loop = len(steps)
        if not stutters:
            members, label = parts.members, parts.label
            comp = label[np.searchsorted(members, first_bad)]
            inside = np.flatnonzero(parts.internal & (parts.at_label == comp))
            if parts.region_edges is None or parts.region_at is None:
                # positions in the whole graph: the source is the row holding one
                src = np.searchsorted(self.starts, inside, side="right") - 1
                steps += self._cycle(first_bad, members[label == comp], members[src], inside)
            else:
                src = members[parts.region_at[inside]]
                steps += self._cycle(first_bad, members[label == comp], src, parts.region_edges[inside])
        return Lasso(
            obligation=j,
            start=int(self.numbers[chain[0]]),
            steps=tuple((int(self.numbers[a]), c) for a, c in steps),
            to_loop=to_loop,
            loop_state=int(self.numbers[first_bad]),
        )

    def _edge_choice(self, a: int, b: int) -> int:
        """The least choice of an edge ``a -> b``."""
        lo, hi = int(self.starts[a]), int(self.starts[a + 1])
        return int(self.choice[lo:hi][self.dst[lo:hi] == b].min())

    def _cycle(self, first: int, members: np.ndarray, src: np.ndarray, edges: np.ndarray) -> list[tuple[int, int]]:
        """A fair cycle from ``first`` back to it inside its (fair) component (``members``,
        its states; ``src`` and ``edges``, the sources and positions of the edges inside
        it): breadth-first paths through one edge of each fair instance enabled in all the
        component's states (in code order; one already taken is skipped), then back; while
        some instance is enabled in every state the cycle visits and never taken on it, a
        detour through an edge that takes it, or else through a state of the component
        where it is disabled (there is one: the component is fair)."""
        from scipy import sparse
        from scipy.sparse import csgraph

        # the edges inside the component in (source, choice) order, on its own numbering
        order = np.lexsort((self.choice[edges], src))
        edges = edges[order]
        es, ed = src[order], self.dst[edges].astype(np.int64)
        ef, ec = self.fair[edges].astype(np.int64), self.choice[edges].astype(np.int64)
        m = len(members)
        local = np.searchsorted(members, es), np.searchsorted(members, ed)
        g = sparse.csr_matrix((np.ones(len(es), dtype=np.int8), local), shape=(m, m))

        def bits(words: np.ndarray) -> list[int]:
            return [c for c in range(len(words) * WORD) if int(words[c // WORD]) >> (c % WORD) & 1]

        def walk(start: int, to: int) -> list[tuple[int, int]]:
            """A shortest path ``start -> to`` inside the component, as ``(node, edge)``."""
            if start == to:
                return []
            s, t = int(np.searchsorted(members, start)), int(np.searchsorted(members, to))
            _, pred = csgraph.breadth_first_order(g, s, directed=True, return_predecessors=True)
            chain = [t]
            while chain[-1] != s:
                chain.append(int(pred[chain[-1]]))
            chain.reverse()
            nodes = [int(members[c]) for c in chain]
            return [(a, self._inner_edge(es, ed, a, b)) for a, b in zip(nodes, nodes[1:])]

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
            found = np.flatnonzero(ef == code)
            if len(found):
                take(int(found[0]))
            else:  # a state of the component where it is disabled, the least by number
                off = members[(self.enabled[members, code // WORD] >> np.uint64(code % WORD)) & np.uint64(1) == 0]
                to = int(off[0])
                steps.extend(walk(here, to))
                here = to

    @staticmethod
    def _inner_edge(es: np.ndarray, ed: np.ndarray, a: int, b: int) -> int:
        lo, hi = np.searchsorted(es, a), np.searchsorted(es, a, side="right")
        return int(lo + np.flatnonzero(ed[lo:hi] == b)[0])
