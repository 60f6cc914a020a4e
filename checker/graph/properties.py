"""The graph clients of kmc's own properties (``checker.core.visitor.GraphClient``): an
always-possibly property's (its ``EdgeLog``, ``checker.graph.possibly``) and a liveness
property's (its ``LivenessLog``, ``checker.graph.liveness``). A checkpoint keeps their logs
under ``"possibly"`` and ``"liveness"``, by property name."""

from __future__ import annotations

from typing import Any

import attrs
import numpy as np

from ..contract.protocol import POSSIBLY, Model, Property
from ..core.level import LevelStep
from ..core.result import Violation
from ..core.trace import extend
from ..core.visitor import Decision, Explored
from .explain import liveness_explanation
from .liveness import LivenessLog
from .possibly import EdgeLog


def unknown(prop: Property, explored: Explored) -> Decision | None:
    """``prop`` unknown when the search left states unexplored (it needs them all)."""
    if explored.unexplored is None:
        return None
    return Decision(prop.name, unknown=f"{prop.name} needs every reachable state; {explored.unexplored}")


@attrs.frozen
class GoalTask:
    """An always-possibly property's record of stored states: whether its goal holds."""

    prop: Property
    width = 1

    def flags(self, rows: Any, level: LevelStep) -> np.ndarray:
        return level.goal_flags(self.prop, rows)

    def keeps(self, flags: np.ndarray, count: int) -> np.ndarray:
        return ~np.asarray(flags, dtype=np.bool_)  # the edges leaving a non-goal state


class PossiblyClient:
    """An always-possibly property: its edge log, and its traps once the search is over."""

    fairness = False

    def __init__(self, prop: Property) -> None:
        self.prop, self.log = prop, EdgeLog()
        self.task = GoalTask(prop)
        self.saved_as = ("possibly", prop.name)

    def add_flags(self, first: int, flags: np.ndarray) -> None:
        self.log.add_states(first, flags)

    def add_edges(self, src: np.ndarray, dst_fp: np.ndarray, choices: np.ndarray, fair: np.ndarray | None) -> None:
        self.log.add_edges(src, dst_fp)

    def rollback(self, n_states: int) -> None:
        self.log.rollback(n_states)

    def save(self) -> EdgeLog:
        return self.log

    def restore(self, saved: object) -> None:
        assert isinstance(saved, EdgeLog)
        self.log = saved

    def decide(self, explored: Explored) -> Decision | None:
        """A violation when a trap is reachable (its least one's path), else it holds."""
        prop = self.prop
        undecided = unknown(prop, explored)
        if undecided is not None:
            return undecided
        count, least = self.log.traps(explored.numbers_of)
        if not count or least is None:
            return None
        path = explored.path(least)
        state = path.steps[-1].state
        explained = prop.explain(explored.model, state) if prop.explain is not None else None
        trapped = explained or f"no state where {prop.name} holds can be reached from this state"
        return Decision(prop.name, Violation(prop.name, POSSIBLY, trapped, path, traps=count))


@attrs.frozen
class ObligationsTask:
    """A liveness property's record of stored states: per obligation, whether it is opened
    and whether it waits (``(opened, waits)``)."""

    prop: Property
    obligations: tuple[Any, ...]
    width = 2

    def flags(self, rows: Any, level: LevelStep) -> tuple[np.ndarray, np.ndarray]:
        return level.liveness_flags(self.prop, rows, self.obligations)

    def keeps(self, flags: tuple[np.ndarray, np.ndarray], count: int) -> np.ndarray:
        waits = np.asarray(flags[1], dtype=np.bool_).reshape(count, -1)
        return np.asarray(waits.any(axis=1), dtype=np.bool_)  # the edges leaving a state where one waits


class LivenessClient:
    """A liveness property: its kept subgraph, and its lasso once the search is over."""

    fairness = True

    def __init__(self, model: Model, prop: Property, instances: int) -> None:
        obligations = tuple(prop.obligations(model)) if prop.obligations is not None else (None,)
        self.prop, self.obligations, self.instances = prop, obligations, instances
        self.log = LivenessLog(len(obligations), instances)
        self.task = ObligationsTask(prop, obligations)
        self.saved_as = ("liveness", prop.name)

    def add_flags(self, first: int, flags: tuple[np.ndarray, np.ndarray]) -> None:
        self.log.add_states(first, *flags)

    def add_edges(self, src: np.ndarray, dst_fp: np.ndarray, choices: np.ndarray, fair: np.ndarray | None) -> None:
        if fair is None:
            raise ValueError("a liveness property needs the edges' fair instance codes")
        self.log.add_edges(src, dst_fp, choices, fair)

    def rollback(self, n_states: int) -> None:
        self.log.rollback(n_states)

    def save(self) -> LivenessLog:
        return self.log

    def restore(self, saved: object) -> None:
        assert isinstance(saved, LivenessLog)
        self.log = saved

    def decide(self, explored: Explored) -> Decision | None:
        """Its lasso when some obligation is violated, else it holds."""
        prop, model = self.prop, explored.model
        undecided = unknown(prop, explored)
        if undecided is not None:
            return undecided
        lasso = self.log.decide(explored.numbers_of, explored.progress(prop.name))
        if lasso is None:
            return None
        path = explored.path(lasso.start)
        for _number, choice in lasso.steps:
            path = extend(model, path, choice)
        loop = len(path) - 1 - (len(lasso.steps) - lasso.to_loop)
        obligation = self.obligations[lasso.obligation]
        why = liveness_explanation(model, prop, path, loop, obligation, self.instances)
        violation = Violation(
            prop.name, prop.kind, why, path, loop=loop, obligation=obligation, fair_instances=self.instances
        )
        return Decision(prop.name, violation)
