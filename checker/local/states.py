"""The local engine: the level driver (``checker.core.driver``) over Python states.

Within a level, states are expanded in the order they were discovered and successors in
the model's action order, so the first path found to a state is the lexicographically
least of its shortest paths. The seen-set (``checker.stores.seen.SeenSet``) keeps a fingerprint
and a parent number a state; the frontier keeps the states of the level being expanded.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from operator import add
from typing import Any

import numpy as np

from ..base.fingerprint import fingerprint_bytes
from ..contract.protocol import Model, Property, action_name, with_defaults
from ..core.driver import LevelDriver, OnLevel, Progress, Search
from ..core.kernel import canonical_encoder, expand, require_symmetric, split_properties
from ..core.keys import tally
from ..core.level import LevelStep, decided, record_first
from ..core.options import Options
from ..core.parts import Found
from ..core.result import CheckResult, Path, Stats
from ..core.states_kernel import StatesKernel
from ..core.trace import path_by_fingerprints
from ..core.visitor import GraphClient, GraphVisitor
from ..graph.clients import graph_clients
from ..stores.seen import SeenSet

__all__ = ["LocalEngine", "Options", "PerStateSearch", "SeenSet", "check"]

_PROGRESS_EVERY = 2048  # states expanded between two looks at the clock


class PerStateSearch(Search):
    """The per-state search object of ``checker.core.driver.LevelDriver``: one state a piece."""

    every = _PROGRESS_EVERY

    def __init__(
        self,
        model: Model,
        invariants: Sequence[Property],
        step_props: Sequence[Property],
        symmetry: bool = False,
        store: SeenSet | None = None,
        visitor: GraphVisitor | None = None,
    ):
        self.model = model
        # The graph visitor (``checker.core.visitor``): every stored state and expanded edge
        # goes to it when some client needs the graph.
        self.visitor = GraphVisitor() if visitor is None else visitor
        self.invariants, self.step_props = invariants, step_props
        self.encode = canonical_encoder(model) if symmetry else model.encode
        # The rules of a level (checker.core.level), here over rows of one Python state.
        self.level = LevelStep(model, StatesKernel(model, action_names=()), invariants, step_props)
        # The store: fingerprint -> parent number, in the order the states are met.
        self.seen = SeenSet() if store is None else store
        # The states of the level being expanded. They are the newest entries of `seen`,
        # in order, so frontier[i] is state number len(seen) - len(frontier) + i there:
        # keeping no (fingerprint, state) pair per state saves two objects a state.
        self.frontier: list = []
        self.next: list = []
        self._stored = 0
        self._branching = 1  # the most successors a state has had: new states between two looks at the memory

    def start(self, stats: Stats, found: Found) -> None:
        for state in self.model.init_states():
            fp = fingerprint_bytes(self.encode(state))
            stats.generated += 1
            if not self.seen.add(fp, -1):
                continue
            self.frontier.append(state)
            bad = self.level.state_violations((state,), None, found)
            # an initial state's violation is the run's first: recorded in ``found`` itself
            record_first(found, {}, "always", bad, partial(add, len(self.seen) - 1))
        if self.visitor.active:
            self.visitor.add_states(0, self.frontier, self.level)
        stats.coverage.add_initial(self.frontier)

    def size(self) -> int:
        return len(self.frontier)

    def pieces(self) -> list:
        return self.frontier

    @staticmethod
    def piece_len(_piece) -> int:
        return 1

    def begin_level(self, depth: int) -> None:
        self.next = []
        self._stored = len(self.seen)

    def next_size(self) -> int:
        return len(self.next)

    def expand(self, state: Any, parent: int, stats: Stats, level_found: Found, found: Found) -> None:
        model, seen, fired, new, nxt = self.model, self.seen, stats.fired, stats.new, self.next
        invariants = self.level.state_violations
        edges = expand(model, state, self.encode)
        if len(edges) > self._branching:
            self._branching = len(edges)
        visitor = self.visitor
        if visitor.active:
            stored, before = len(seen), len(nxt)
        if not edges:
            stats.terminal += 1
        skip = decided(level_found, found)  # (a property decided by this state is asked again: no harm)
        if self.step_props:
            bad = self.level.transition_violations(state, [(e[1], e[2]) for e in edges], skip)
            if bad:
                record_first(level_found, found, "step", bad, lambda choice: (parent, choice))
        fresh, names = [], []
        for _choice, action, succ, sfp in edges:
            stats.generated += 1
            name = action_name(action)
            names.append(name)
            tally(fired, name)
            if not seen.add(sfp, parent):
                fresh.append(False)
                continue
            fresh.append(True)
            tally(new, name)
            nxt.append(succ)
            bad = invariants((succ,), None, skip)
            if bad:
                record_first(level_found, found, "always", bad, partial(add, len(seen) - 1))  # its number
        stats.coverage.add_state(model, state, edges, fresh, names)
        if visitor.active:
            visitor.add_states(stored, nxt[before:], self.level)
            count = len(edges)
            fair = None
            if visitor.fairness:
                fair = np.array([visitor.fair_code(model.fair_instance(state, e[1])) for e in edges], dtype=np.int64)
            visitor.add_edges(
                np.full(count, parent, dtype=np.int64),
                np.array([e[3] for e in edges], dtype=np.uint64),
                np.arange(count, dtype=np.int64),
                fair,
            )

    def memory_reserve(self) -> int:
        """The seen-set's next table, when the states stored before the next look at the
        memory may bring its rehash (a table twice as large, allocated at once)."""
        return self.seen.rehash_bytes(self.every * self._branching)

    def numbers_of(self, fps: np.ndarray) -> np.ndarray:
        number = self.seen.number
        return np.fromiter((number(fp) for fp in fps.tolist()), dtype=np.int64, count=len(fps))

    def end_level(self) -> None:
        self.frontier, self.next = self.next, []

    def rollback(self) -> None:
        self.seen.truncate(self._stored)
        self.next = []

    def path(self, number: int) -> Path:
        seen = self.seen
        return path_by_fingerprints(self.model, number, lambda i: (seen.parent_number(i), seen.fps[i]), self.encode)

    # -- checkpoints: states and violations by fingerprint --------------------------

    def snapshot_parts(self) -> dict:
        fps = self.seen.fps
        first = len(fps) - len(self.frontier)
        return {
            "frontier": [(fps[first + i], state) for i, state in enumerate(self.frontier)],
            "seen": self.seen,  # a SeenSet: fingerprint -> parent fingerprint
        }

    def restore_parts(self, snapshot: dict, directory: Any = None) -> None:
        front = snapshot["frontier"]
        seen = snapshot["seen"]
        last = [fp for fp, _ in front]
        # The frontier must be the newest states of the seen-set, in order. A checkpoint
        # of an older kmc holds a dict instead of a SeenSet.
        if not isinstance(seen, SeenSet) or list(seen.fps[len(seen) - len(last) :]) != last:
            seen = SeenSet.from_mapping(seen, last)
        self.seen = seen
        self.frontier = [state for _, state in front]

    def found_out(self, found) -> dict:
        fps = self.seen.fps
        return {
            prop: (kind, why, (fps[where[0]], where[1]) if kind == "step" else fps[where])
            for prop, (kind, why, where) in found.items()
        }

    def found_in(self, found) -> dict:
        number = self.seen.number
        return {
            prop: (kind, why, (number(where[0]), where[1]) if kind == "step" else number(where))
            for prop, (kind, why, where) in found.items()
        }


class LocalEngine(LevelDriver):
    """Breadth-first exploration of a model, a Python state at a time (see
    ``checker.core.driver.LevelDriver`` for the arguments)."""

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
    ):
        options = options or Options()
        model = with_defaults(model)
        props = list(model.properties() if properties is None else properties)
        invariants, step_props = split_properties(props)
        if options.symmetry:
            require_symmetric(props)  # before the search asks the model for its symmetries
        visitor = GraphVisitor([*graph_clients(model, props, options), *clients], model)
        search = PerStateSearch(model, invariants, step_props, options.symmetry, SeenSet(), visitor)
        super().__init__(model, search, props, options, progress, on_level=on_level)
        self.encode = search.encode


def check(
    model: Model,
    properties: Sequence[Property] | None = None,
    options: Options | None = None,
    progress: Progress | None = None,
) -> CheckResult:
    """Run the local engine once; see ``LocalEngine``."""
    return LocalEngine(model, properties, options, progress).run()
