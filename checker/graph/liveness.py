"""Liveness under weak fairness: the kept subgraph and the fair components in it.

A liveness property (``checker.contract.protocol``'s ``"always-eventually"`` and ``"leads-to"``) is
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
violated obligation and a lasso for it once every reachable state was explored, with
numpy array operations (a breadth-first search one level at a time) and
``scipy.sparse.csgraph``'s components, never a Python loop per state.

What is kept, per item, in append-only columns written to unnamed temporary files as they
fill (``Column``: the search's memory holds only the last few megabytes of each, and one
byte per state number, whether some obligation waits there):

- the *waiting* states (where some obligation waits): their number (4 bytes, 8 past 2**32
  states) and the obligations' opened and waiting bits (two bits an obligation, packed);
- the edges that leave a waiting state: source number (4 or 8), the successor's
  fingerprint (8), the choice (1) and the fair instance code (2, or 4 past 32,767
  instances): 15 bytes.

A successor's number is only known once it is stored, which may be later than its edge is
computed, so the edges' targets are looked up at the end (as ``checker.graph.possibly`` does),
once per distinct fingerprint, in sorted order. The fair instances enabled in a waiting
state are those of the edges leaving it, also computed at the end. The graph the verdict
is computed on holds, per edge whose target waits too, the target's position (4 bytes),
the choice and the fair code, and per waiting state its first edge's position and its
enabled instances; each obligation's search looks only at the edges its own region
reaches.

The lasso is deterministic (the same on every run, engine and partition count): every
path is a breadth-first one that visits a state's successors in increasing number (the
edge of a step is the least choice between the two states), the component chosen is the
one holding the violating state nearest to an opened state (the least number among the
nearest), and an edge of a fair instance the cycle must take is the least by
``(source, choice)``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..stores.frontier import CHUNK, Column
from .fair_components import WORD, Finder, KeptGraph, Lasso, or_rows, word_bit
from .possibly import NARROW_LIMIT, grown

__all__ = ["Column", "Lasso", "LivenessLog"]


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
        self._words = max(1, -(-self.instances // WORD))
        self._states = 0
        self._waiting = np.empty(0, dtype=np.bool_)  # per state number: some obligation waits
        self._number = Column(np.uint32)  # the waiting states' numbers, increasing
        self._flags = Column(np.uint8, 2 * self._bits)  # their opened bits, then waiting bits
        self._src = Column(np.uint32)
        self._dst = Column(np.uint64)
        self._choice = Column(np.uint8)
        self._fair = Column(np.int16 if self.instances < 2**15 else np.int32)

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
        waiting = waits.any(axis=1)
        self._waiting = grown(self._waiting, self._states, end)
        self._waiting[self._states : end] = waiting
        self._states = end
        keep = np.flatnonzero(waiting)
        if not len(keep):
            return
        if end > NARROW_LIMIT and self._number.dtype != np.int64:
            for column in (self._number, self._src):
                column.replace(column.read(), np.int64)
        self._number.append(first + keep)
        both = np.concatenate([opened[keep], waits[keep]], axis=1).reshape(-1, 2, self.obligations)
        self._flags.append(np.packbits(both, axis=2))

    def add_edges(self, src: np.ndarray, dst_fp: np.ndarray, choices: np.ndarray, fair: np.ndarray) -> None:
        """Every successor computed from some expanded states: ``src[i]`` the parent's
        number, ``dst_fp[i]`` the successor's stored fingerprint, ``choices[i]`` the
        action's position among the parent's, ``fair[i]`` the step's fair instance code
        (-1: not fair). Every edge of a parent comes in the same call. The edges leaving
        waiting states are kept.

        Raises:
            ValueError: the arrays differ in length, or a source is not a stored state.
        """
        src = np.asarray(src, dtype=np.int64).ravel()
        dst_fp = np.asarray(dst_fp, dtype=np.uint64).ravel()
        choices = np.asarray(choices, dtype=np.int64).ravel()
        fair = np.asarray(fair, dtype=np.int64).ravel()
        if not len(src) == len(dst_fp) == len(choices) == len(fair):
            raise ValueError("LivenessLog.add_edges: the edge arrays differ in length")
        if not len(src) or not len(self._number):
            return
        if src.min() < 0 or src.max() >= self._states:
            raise ValueError("LivenessLog.add_edges: an edge leaves a state that was not added")
        kept = self._waiting[src]
        if not kept.any():
            return
        src, dst_fp, choices, fair = src[kept], dst_fp[kept], choices[kept], fair[kept]
        if fair.max(initial=-1) >= self.instances or choices.min() < 0 or choices.max() > 255:
            raise ValueError("LivenessLog.add_edges: a fair instance code or a choice is out of range")
        self._src.append(src)
        self._dst.append(dst_fp)
        self._choice.append(choices)
        self._fair.append(fair)

    def rollback(self, n_states: int) -> None:
        """Forget the states numbered ``n_states`` or more, and the edges leaving them."""
        if n_states >= self._states:
            return
        n_states = max(int(n_states), 0)
        self._states = n_states
        count = int(np.searchsorted(self._number.read(), n_states))
        self._number.truncate(count)
        self._flags.truncate(count)
        kept = self._src.read() < n_states
        count = int(np.count_nonzero(kept))
        if count == len(kept):
            return
        columns = (self._src, self._dst, self._choice, self._fair)
        if kept[:count].all():  # the usual case: the forgotten edges are the last ones
            for column in columns:
                column.truncate(count)
        else:
            for column in columns:
                column.replace(column.read()[kept])

    # -- sizes --------------------------------------------------------------------------

    @property
    def edges(self) -> int:
        """The number of edges kept (those leaving waiting states)."""
        return len(self._src)

    @property
    def kept_states(self) -> int:
        """The number of waiting states kept."""
        return len(self._number)

    @property
    def states(self) -> int:
        return self._states

    def nbytes(self) -> int:
        """Bytes the log holds: its columns (in their files and in memory) and the flag of
        every state number."""
        columns = (self._number, self._flags, self._src, self._dst, self._choice, self._fair)
        return int(sum(c.nbytes for c in columns) + self._states)

    def memory_bytes(self) -> int:
        """Bytes of the log in memory: the flag of every state number and the columns' items
        not yet written to their files."""
        columns = (self._number, self._flags, self._src, self._dst, self._choice, self._fair)
        return int(self._waiting.nbytes + sum(c.memory_bytes for c in columns))

    # -- pickling (checkpoints): the used part of the flags; the columns' items ---------

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_waiting"] = state["_waiting"][: self._states].copy()
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)

    def __repr__(self) -> str:
        return f"LivenessLog(states={self._states}, waiting={self.kept_states}, edges={self.edges})"

    # -- the verdict ----------------------------------------------------------------------

    def decide(
        self, numbers_of: Callable[[np.ndarray], np.ndarray], progress: Callable[[str], Any] | None = None
    ) -> Lasso | None:
        """The first violated obligation and its lasso, after a search that explored every
        reachable state; ``None`` when every obligation holds.

        Args:
            numbers_of: ``numbers_of(fps)`` -> int64 array: the stored number of each
                fingerprint of the uint64 array ``fps`` (every one is stored).
            progress: called with a short sentence at each step of the decision (the graph
                being built, each obligation's components decided), for a progress display.
        """
        if not self.kept_states:
            return None
        say = progress or (lambda _text: None)
        waiting = f"{self.kept_states:,} states waiting, {self.edges:,} edges"
        say(f"{waiting}: building the graph")
        graph = self._graph(numbers_of)
        flags = self._flags.read()
        components = 0
        for j in range(self.obligations):
            say(f"{waiting}: obligation {j + 1:,} of {self.obligations:,}, {components:,} components decided")
            byte, shift = j // 8, 7 - j % 8  # packbits: the first obligation is the high bit
            opened = (flags[:, byte] >> shift) & 1 == 1
            waits = (flags[:, self._bits + byte] >> shift) & 1 == 1
            lasso = graph.violation(j, opened, waits)
            components += graph.decided[0]
            if lasso is not None:
                return lasso
        say(f"{waiting}: {self.obligations:,} obligations, {components:,} components decided")
        return None

    def _targets(self, numbers_of: Callable[[np.ndarray], np.ndarray], index: Any) -> tuple[np.ndarray, np.ndarray]:
        """Each kept edge's target as a waiting state's position (-1 where no obligation
        waits), and the position of each state number (-1 likewise): ``numbers_of`` asked
        for the distinct fingerprints in increasing order (in a few parts), then each
        chunk of edges looked up."""
        fps = self._dst.read()
        fps.sort()
        distinct = np.empty(len(fps), dtype=np.bool_)
        distinct[:1] = True
        np.not_equal(fps[1:], fps[:-1], out=distinct[1:])
        fps = fps[distinct]
        del distinct
        numbers = np.empty(len(fps), dtype=np.uint32 if self._states <= NARROW_LIMIT else np.int64)
        # in parts of at most a quarter of the states (a search's lookup may need a few
        # arrays of its argument's size beside its own index of every state)
        part = max(self._states // 4, CHUNK)
        for lo in range(0, len(fps), part):
            asked = fps[lo : lo + part]
            got = np.asarray(numbers_of(asked), dtype=np.int64)
            if len(got) != len(asked):
                raise ValueError(f"LivenessLog.decide: numbers_of returned {len(got)} numbers for {len(asked)}")
            if len(got) and (got.min() < 0 or got.max() >= self._states):
                raise ValueError("LivenessLog.decide: a successor is not a stored state")
            numbers[lo : lo + len(got)] = got
            del got
        position = self._positions(index)  # built once the search's lookup is done
        node = position[numbers]
        del numbers
        find = Finder(fps)
        out = np.empty(self.edges, dtype=position.dtype)
        for lo, chunk in self._dst.chunks():
            out[lo : lo + len(chunk)] = node[find(chunk)]
        return out, position

    def _positions(self, index: Any) -> np.ndarray:
        """The position of each state number among the waiting states (-1: not waiting)."""
        waiting = self._waiting[: self._states]
        position = np.cumsum(waiting, dtype=index)
        np.subtract(position, 1, out=position)
        position[~waiting] = -1
        return position

    def _graph(self, numbers_of: Callable[[np.ndarray], np.ndarray]) -> KeptGraph:
        """The kept graph over the waiting states, numbered ``0 .. n - 1`` in state number
        order (see ``KeptGraph``), built a chunk of edges at a time: the targets first, then
        the edges whose target waits moved to the front in place."""
        numbers = self._number.read()
        n, e = len(numbers), self.edges
        index = np.int32 if max(n, e) < 2**31 else np.int64
        dst, position = self._targets(numbers_of, index)
        ordered, last = True, -1
        for _, chunk in self._src.chunks():  # the searches hand edges over by source in order
            ordered = ordered and int(chunk[0]) >= last and bool((np.diff(chunk.astype(np.int64)) >= 0).all())
            last = int(chunk[-1])
        enabled = np.zeros((n, self._words), dtype=np.uint64)
        counts = np.zeros(n, dtype=np.int64)
        kept = int(np.count_nonzero(dst >= 0))
        choice = np.empty(kept, dtype=self._choice.dtype)
        fair = np.empty(kept, dtype=self._fair.dtype)
        sources = []  # the kept edges' sources, when they must be sorted
        at = 0
        for lo, chunk in self._src.chunks():
            hi = lo + len(chunk)
            s = position[chunk]
            f = self._fair.read(lo, hi)
            hit = f >= 0
            codes = f[hit].astype(np.int64)
            for w in range(self._words):
                mine = codes // WORD == w
                or_rows(enabled[:, w], s[hit][mine], word_bit(codes[mine]))
            inside = dst[lo:hi] >= 0
            s = s[inside]
            if ordered and len(s):  # runs of a source: one count each
                run = np.flatnonzero(np.concatenate(([True], s[1:] != s[:-1])))
                counts[s[run]] += np.diff(np.append(run, len(s)))
            elif not ordered:
                counts += np.bincount(s, minlength=n)
                sources.append(s)
            k = len(s)
            dst[at : at + k] = dst[lo:hi][inside]  # in place: at <= lo
            choice[at : at + k] = self._choice.read(lo, hi)[inside]
            fair[at : at + k] = f[inside]
            at += k
        del position
        dst = dst[:kept].copy() if kept < e else dst
        if not ordered:
            by = np.argsort(np.concatenate(sources), kind="stable")
            dst, choice, fair = dst[by], choice[by], fair[by]
        starts = np.zeros(n + 1, dtype=index)
        np.cumsum(counts, out=starts[1:])
        return KeptGraph(numbers, starts, dst, choice, fair, enabled)
