"""The graph visitor: what every search hands its stored states and expanded edges to.

A property that needs the whole reachable graph (an always-possibly property, a liveness
property), or anything else that wants to see the graph (the state graph's export), is a
*client* of the visitor (``GraphClient``); the visitor fans every call out to its clients,
in order, and knows none of them. The searches (per-state ``checker.local.states``, rows
``checker.local.rows``, the partitioned levels) know nothing of the clients: they call

- ``add_states(first, rows, level)`` with every state they store, in number order (the
  rows of a kernel, or Python states, with the rules of a level,
  ``checker.core.level.LevelStep``), so each client records what it needs of them
  (``ClientTask.flags``);
- ``add_edges(src, dst_fp, choices, fair)`` with every successor they compute, duplicates
  included: the parent's number, the successor's stored fingerprint, the action's
  position among the parent's actions and the step's fair instance code (``fair_code``,
  only when ``fairness`` says some client needs it); every edge of a parent in one call;
- ``rollback(n_states)`` when a stop takes the run back to a level boundary.

The driver saves and restores the clients with a checkpoint (``snapshot``, ``restore``)
and, once the search is over, asks each for its verdict (``GraphClient.decide``) with what
the search knows (``Explored``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

import attrs
import numpy as np

from ..contract.protocol import Model
from .level import LevelStep
from .result import Path, Violation

__all__ = ["ClientTask", "Decision", "Explored", "GraphClient", "GraphTask", "GraphVisitor"]

# What a client records of a run of stored states: an array, or a tuple of arrays, a row a
# state (a client that runs only locally may record any object).
Flags = Any


class ClientTask(Protocol):
    """What a client records of stored states, computed where the states are: small and
    picklable, so that a Spark task computes the same records as a local search."""

    @property
    def width(self) -> int:
        """How many arrays one record of ``flags`` is (1: an array; k: a k-tuple)."""

    def flags(self, rows: Any, level: LevelStep) -> Flags:
        """The record of ``rows`` (a kernel's rows, or Python states, with the rules of
        ``level``)."""

    def keeps(self, flags: Flags, count: int) -> np.ndarray:
        """Per row of ``flags`` (``count`` of them): whether the client needs the edges
        leaving it."""


@attrs.frozen
class Explored:
    """What a client's verdict may ask of the search that ended.

    Attributes:
        model: the model searched.
        unexplored: why some reachable state was left unexplored (None: every one was).
        numbers_of: ``numbers_of(fps)`` -> int64 array: the stored number of each
            fingerprint of the uint64 array ``fps`` (every one is stored).
        path: the breadth-first path to a stored state, by its number.
        progress: ``progress(name)`` -> a callback that shows a sentence about deciding
            ``name`` on the progress display, or None.
    """

    model: Model
    unexplored: str | None
    numbers_of: Callable[[np.ndarray], np.ndarray]
    path: Callable[[int], Path]
    progress: Callable[[str], Callable[[str], None] | None]


@attrs.frozen
class Decision:
    """A client's verdict on one property: a violation, or unknown with the reason (a
    property that holds gives no decision)."""

    name: str
    violation: Violation | None = None
    unknown: str | None = None


class GraphClient(Protocol):
    """A client of the graph visitor (see the module)."""

    @property
    def task(self) -> ClientTask:
        """What it records of stored states (computed in a Spark task too)."""

    @property
    def fairness(self) -> bool:
        """Whether it needs the edges' fair instance codes."""

    def add_flags(self, first: int, flags: Flags) -> None:
        """States ``first ..`` were stored; ``flags`` is ``task.flags`` of them."""

    def add_edges(self, src: np.ndarray, dst_fp: np.ndarray, choices: np.ndarray, fair: np.ndarray | None) -> None:
        """Edges were computed (``fair``: None unless ``fairness``)."""

    def rollback(self, n_states: int) -> None:
        """Forget the states numbered ``n_states`` or more, and the edges leaving them."""

    @property
    def saved_as(self) -> tuple[str, str] | None:
        """Where a checkpoint keeps it: ``(section, name)``, or None (never saved)."""

    def save(self) -> object:
        """What a checkpoint keeps of it (picklable)."""

    def restore(self, saved: object) -> None:
        """Continue from ``save()``'s object."""

    def decide(self, explored: Explored) -> Decision | None:
        """Its verdict once the search is over (None: nothing to report)."""


@attrs.frozen
class GraphTask:
    """The clients' tasks and the fair instance codes: what computing the visitor's records
    needs, without the clients' logs (picklable; ``checker.partitioned.tasks``).

    Attributes:
        clients: each client's ``ClientTask``, in order.
        codes: fair instance -> its code.
        fairness: whether some client needs the fair codes.
    """

    clients: tuple[ClientTask, ...] = ()
    codes: Mapping[Any, int] = attrs.field(factory=dict)
    fairness: bool = False

    @property
    def active(self) -> bool:
        return bool(self.clients)

    # The record layout of ``checker.partitioned.tasks``: the one-array records first, then
    # the two-array ones (the always-possibly properties', then the liveness ones').
    @property
    def possibly(self) -> tuple[ClientTask, ...]:
        return tuple(c for c in self.clients if c.width == 1)

    @property
    def liveness(self) -> tuple[ClientTask, ...]:
        return tuple(c for c in self.clients if c.width == 2)

    def flags(self, rows: Any, level: LevelStep) -> list[Flags]:
        """Per client, in order, its record of ``rows``."""
        return [c.flags(rows, level) for c in self.clients]

    def kept(self, flags: list[Flags], count: int) -> np.ndarray:
        """Per row: whether some client keeps the edges leaving it."""
        keep = np.zeros(count, dtype=np.bool_)
        for client, f in zip(self.clients, flags):
            keep |= client.keeps(f, count)
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
    """Hands every stored state and expanded edge to ``clients``, in order.

    Args:
        clients: the graph clients (``checker.graph.clients.graph_clients`` builds kmc's).
        model: the model, whose fair instances are numbered when some client needs them.
    """

    def __init__(self, clients: Sequence[GraphClient] = (), model: Model | None = None) -> None:
        self.clients = list(clients)
        self.fairness = any(c.fairness for c in self.clients)
        self.instances: tuple[Any, ...] = tuple(model.fair_instances()) if model is not None and self.fairness else ()
        self.task = GraphTask(
            tuple(c.task for c in self.clients), {x: i for i, x in enumerate(self.instances)}, self.fairness
        )

    @property
    def active(self) -> bool:
        """Whether some client needs the graph (else the searches hand nothing over)."""
        return bool(self.clients)

    def add_states(self, first: int, rows: Any, level: LevelStep) -> None:
        self.add_flags(first, self.task.flags(rows, level))

    def add_flags(self, first: int, flags: list[Flags]) -> None:
        """States ``first ..`` were stored; ``flags`` are ``task.flags`` of them."""
        for client, f in zip(self.clients, flags):
            client.add_flags(first, f)

    def add_edges(self, src: np.ndarray, dst_fp: np.ndarray, choices: np.ndarray, fair: np.ndarray | None) -> None:
        if self.fairness and fair is None:
            raise ValueError("GraphVisitor.add_edges: a client needs the edges' fair instance codes")
        for client in self.clients:
            client.add_edges(src, dst_fp, choices, fair if client.fairness else None)

    def fair_code(self, instance: Any) -> int:
        return self.task.fair_code(instance)

    def rollback(self, n_states: int) -> None:
        for client in self.clients:
            client.rollback(n_states)

    # -- checkpoints ----------------------------------------------------------------------

    def snapshot(self) -> dict[str, dict[str, object]]:
        """What the clients save, by section and name (only the sections present: a
        checkpoint without graph properties keeps its old form)."""
        out: dict[str, dict[str, object]] = {}
        for client in self.clients:
            if client.saved_as is not None:
                section, name = client.saved_as
                out.setdefault(section, {})[name] = client.save()
        return out

    def restore(self, snapshot: Mapping[str, Any]) -> None:
        for client in self.clients:
            if client.saved_as is not None:
                section, name = client.saved_as
                saved = snapshot.get(section, {})
                if name in saved:
                    client.restore(saved[name])

    def saved(self, section: str) -> list[tuple[str, object]]:
        """``(name, saved object)`` of the clients a checkpoint keeps in ``section`` (the
        logs ``kmc bench`` measures)."""
        return [(c.saved_as[1], c.save()) for c in self.clients if c.saved_as is not None and c.saved_as[0] == section]
