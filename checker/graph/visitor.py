"""The graph visitor: what every search hands its stored states and expanded edges to.

A property that needs the whole reachable graph (an always-possibly property,
``checker.graph.possibly``; a liveness property, ``checker.graph.liveness``) is a *client* of the
visitor; the searches (per-state ``checker.local.states``, rows ``checker.local.rows``) know nothing
of the properties: they call

- ``add_states(first, rows, level)`` with every state they store, in number order (the
  rows of a kernel, or Python states with the per-state rules of a level), so each client
  asks its property there through the level's rules (``checker.core.level.LevelStep``);
- ``add_edges(src, dst_fp, choices, fair)`` with every successor they compute, duplicates
  included: the parent's number, the successor's stored fingerprint, the action's
  position among the parent's actions and the step's fair instance code (``fair_codes``,
  only when ``fairness`` says some client needs it); every edge of a parent in one call;
- ``rollback(n_states)`` when a stop takes the run back to a level boundary.

Each client keeps only the edges it needs (an always-possibly property: those leaving
non-goal states; ``[]<>P``: those leaving states where ``P`` fails), in numpy arrays; the
driver asks them for their verdicts once every reachable state was explored.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import attrs
import numpy as np

from ..contract.protocol import LIVENESS, POSSIBLY, Property
from .liveness import LivenessLog
from .possibly import EdgeLog


@attrs.frozen
class GraphTask:
    """What computing a visitor's records needs, without its logs: small and picklable, so
    that a Spark task computes the same flags and fair codes as a local search
    (``checker.partitioned.tasks``).

    Attributes:
        possibly: the always-possibly properties, in order.
        liveness: ``(property, obligations)`` of the liveness properties, in order.
        codes: fair instance -> its code.
    """

    possibly: tuple = ()
    liveness: tuple = ()
    codes: Mapping[Any, int] = attrs.field(factory=dict)

    @property
    def active(self) -> bool:
        return bool(self.possibly or self.liveness)

    @property
    def fairness(self) -> bool:
        return bool(self.liveness)

    def flags(self, rows: Any, level: Any) -> list:
        """Per client, in order, what its log records of ``rows`` (a kernel's rows, or
        Python states, with the rules of a level ``level``): an always-possibly
        property's goal flags, a liveness property's ``(opened, waits)``."""
        out: list = [level.goal_flags(prop, rows) for prop in self.possibly]
        out += [level.liveness_flags(prop, rows, obligations) for prop, obligations in self.liveness]
        return out

    def kept(self, flags: list, count: int) -> np.ndarray:
        """Per row: whether some client keeps the edges leaving it (a non-goal state of an
        always-possibly property, a state where a liveness obligation waits)."""
        keep = np.zeros(count, dtype=np.bool_)
        for goal in flags[: len(self.possibly)]:
            keep |= ~np.asarray(goal, dtype=np.bool_)
        for _opened, waits in flags[len(self.possibly) :]:
            keep |= np.asarray(waits, dtype=np.bool_).reshape(count, -1).any(axis=1)
        return keep

    def fair_code(self, instance: Any) -> int:
        """The code of a fair instance (``-1`` for ``None``: a step that is not fair).

        Raises:
            ValueError: the model named an instance that ``fair_instances()`` does not list.
        """
        if instance is None:
            return -1
        code = self.codes.get(instance)
        if code is None:
            raise ValueError(f"fair_instance returned {instance!r}, which fair_instances() does not list")
        return code


class GraphVisitor:
    """The clients of the properties among ``properties`` that need the graph.

    Attributes:
        possibly: ``(property, EdgeLog)`` of every always-possibly property, in order.
        liveness: ``(property, LivenessLog, obligations)`` of every liveness property, in
            order (``obligations``: the property's obligation indices, ``(None,)`` for one).
        instances: the model's fair instances, in code order.
        task: the ``GraphTask`` that computes what the logs record.
    """

    def __init__(self, model: Any = None, properties: Sequence[Property] = ()):
        self.instances = tuple(model.fair_instances()) if model is not None else ()
        self.possibly = [(p, EdgeLog()) for p in properties if p.kind == POSSIBLY]
        self.liveness = []
        for p in properties:
            if p.kind in LIVENESS:
                obligations = tuple(p.obligations(model)) if p.obligations is not None else (None,)
                self.liveness.append((p, LivenessLog(len(obligations), len(self.instances)), obligations))
        self.task = GraphTask(
            tuple(p for p, _ in self.possibly),
            tuple((p, obligations) for p, _, obligations in self.liveness),
            {instance: i for i, instance in enumerate(self.instances)},
        )

    @property
    def active(self) -> bool:
        """Whether some property needs the graph (else the searches hand nothing over)."""
        return bool(self.possibly or self.liveness)

    @property
    def fairness(self) -> bool:
        """Whether the edges' fair instance codes are needed."""
        return bool(self.liveness)

    # -- what the searches call -------------------------------------------------------------

    def add_states(self, first: int, rows: Any, level: Any) -> None:
        self.add_flags(first, self.task.flags(rows, level))

    def add_flags(self, first: int, flags: list) -> None:
        """States ``first ..`` were stored; ``flags`` are ``task.flags`` of them."""
        k = len(self.possibly)
        for (_prop, log), goal in zip(self.possibly, flags[:k]):
            log.add_states(first, goal)
        for (_prop, llog, _obligations), (opened, waits) in zip(self.liveness, flags[k:]):
            llog.add_states(first, opened, waits)

    def add_edges(self, src: np.ndarray, dst_fp: np.ndarray, choices: np.ndarray, fair: np.ndarray | None) -> None:
        for _prop, log in self.possibly:
            log.add_edges(src, dst_fp)
        if self.liveness:
            if fair is None:
                raise ValueError("GraphVisitor.add_edges: a liveness property needs the edges' fair instance codes")
            for _prop, llog, _obligations in self.liveness:
                llog.add_edges(src, dst_fp, choices, fair)

    def fair_code(self, instance: Any) -> int:
        """``task.fair_code``."""
        return self.task.fair_code(instance)

    def rollback(self, n_states: int) -> None:
        for _prop, log in self.possibly:
            log.rollback(n_states)
        for _prop, llog, _obligations in self.liveness:
            llog.rollback(n_states)

    # -- checkpoints ----------------------------------------------------------------------

    def snapshot(self) -> dict:
        """The logs by property name, under the keys a checkpoint keeps them (only those
        present: a checkpoint without graph properties keeps its old form)."""
        out: dict[str, dict] = {}
        if self.possibly:
            out["possibly"] = {prop.name: log for prop, log in self.possibly}
        if self.liveness:
            out["liveness"] = {prop.name: log for prop, log, _ in self.liveness}
        return out

    def restore(self, snapshot: dict) -> None:
        logs = snapshot.get("possibly", {})
        self.possibly = [(prop, logs.get(prop.name, log)) for prop, log in self.possibly]
        logs = snapshot.get("liveness", {})
        self.liveness = [(prop, logs.get(prop.name, log), obl) for prop, log, obl in self.liveness]
