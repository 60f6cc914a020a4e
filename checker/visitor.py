"""The graph visitor: what every search hands its stored states and expanded edges to.

A property that needs the whole reachable graph (an always-possibly property,
``checker.possibly``; a liveness property, ``checker.liveness``) is a *client* of the
visitor; the searches (per-state ``checker.local``, rows ``checker.batch``) know nothing
of the properties: they call

- ``add_states(first, rows, level)`` with every state they store, in number order (the
  rows of a kernel, or Python states with the per-state rules of a level), so each client
  asks its property there through the level's rules (``checker.level.LevelStep``);
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

from collections.abc import Sequence
from typing import Any

import numpy as np

from .liveness import LivenessLog
from .possibly import EdgeLog
from .protocol import LIVENESS, POSSIBLY, Property, fair_instances


class GraphVisitor:
    """The clients of the properties among ``properties`` that need the graph.

    Attributes:
        possibly: ``(property, EdgeLog)`` of every always-possibly property, in order.
        liveness: ``(property, LivenessLog, obligations)`` of every liveness property, in
            order (``obligations``: the property's obligation indices, ``(None,)`` for one).
        instances: the model's fair instances, in code order.
    """

    def __init__(self, model: Any = None, properties: Sequence[Property] = ()):
        self.instances = fair_instances(model) if model is not None else ()
        self._code = {instance: i for i, instance in enumerate(self.instances)}
        self.possibly = [(p, EdgeLog()) for p in properties if p.kind == POSSIBLY]
        self.liveness = []
        for p in properties:
            if p.kind in LIVENESS:
                obligations = tuple(p.obligations(model)) if p.obligations is not None else (None,)
                self.liveness.append((p, LivenessLog(len(obligations), len(self.instances)), obligations))

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
        for prop, log in self.possibly:
            log.add_states(first, level.goal_flags(prop, rows))
        for prop, llog, obligations in self.liveness:
            opened, waits = level.liveness_flags(prop, rows, obligations)
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
        """The code of a fair instance (``-1`` for ``None``: a step that is not fair).

        Raises:
            ValueError: the model named an instance that ``fair_instances()`` does not list.
        """
        if instance is None:
            return -1
        code = self._code.get(instance)
        if code is None:
            raise ValueError(f"fair_instance returned {instance!r}, which fair_instances() does not list")
        return code

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
