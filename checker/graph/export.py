"""The reachable state graph of a model: the graph client that keeps it while a search runs,
and its export to files.

Nodes are states, keyed by their fingerprint written as 16 hex digits (the fingerprint is
a state's identity for every engine); edges are transitions. The graph is kept by a
client of the search's graph visitor (``StateGraphClient``, ``checker.core.visitor``), so
it has exactly the search's distinct states, in its order, and one edge per generated
transition: since a state's enabled actions are all different, that is also the number
of distinct ``(from, to, action)`` triples. ``checker.local.state_graph`` runs the local
search with it and makes the networkx graph.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # (imported where a graph is built or written: it is a sixth of kmc's start-up)
    import networkx as nx

import attrs
import numpy as np

from ..base.errors import UsageError
from ..base.fingerprint import fingerprint
from ..contract.protocol import Property
from ..core.kernel import expand
from ..core.level import LevelStep, step_failures
from ..core.visitor import Explored

FORMATS = (".dot", ".graphml", ".gexf")
GENERATOR = "kmc state graph"  # names kmc in every file it writes (kmc.app.outputs)
DEFAULT_MAX_STATES = 20_000


class GraphTooLarge(UsageError):
    """The reachable state graph has more states than the limit allows."""


def node_id(fp: int) -> str:
    """The node key of a state with fingerprint ``fp``."""
    return f"{fp:016x}"


@attrs.frozen
class _StatesTask:
    """The state graph's record of stored states: the states themselves (a local search's
    only)."""

    width = 1

    def flags(self, rows: Any, level: LevelStep) -> list[Any]:
        return [level.kernel.decode(row) for row in rows]

    def keeps(self, flags: list[Any], count: int) -> np.ndarray:
        return np.ones(count, dtype=np.bool_)


class StateGraphClient:
    """A graph client that keeps the nodes and edges of the state graph (``state_graph``):
    nodes by fingerprint in the order the search stores them (``(state, depth, initial)``),
    edges as ``(source number, source fp, successor fp, choice, action, failed step
    properties)``. An edge's action and successor are the parent's expansion's (asked
    again of the model: a graph is at most ``max_states`` states).

    Raises (from the search):
        GraphTooLarge: more than ``max_states`` states are reachable.
    """

    task = _StatesTask()
    fairness = False
    saved_as = None

    def __init__(self, model: Any, step_props: Sequence[Property], max_states: int | None) -> None:
        self.model, self.step_props, self.max_states = model, step_props, max_states
        self.nodes: dict[int, tuple[Any, int, bool]] = {}  # insertion order = the search's
        self.edges: list[tuple[int, int, int, int, Any, list[tuple[str, str]]]] = []
        self.states: list[Any] = []  # by number
        self.fps: list[int] = []

    def add_flags(self, first: int, flags: list[Any]) -> None:
        for state in flags:
            fp = fingerprint(self.model, state)
            self.states.append(state)
            self.fps.append(fp)
            if not first:  # the initial states
                self.nodes.setdefault(fp, (state, 1, True))
        _limit(self.nodes, self.max_states)

    def add_edges(self, src: np.ndarray, dst_fp: np.ndarray, choices: np.ndarray, fair: np.ndarray | None) -> None:
        model, nodes = self.model, self.nodes
        out: dict[int, dict[int, tuple[Any, Any]]] = {}  # parent -> choice -> (action, successor)
        for number, sfp, choice in zip(src.tolist(), dst_fp.tolist(), choices.tolist()):
            if number not in out:
                out[number] = {c: (action, succ) for c, action, succ, _ in expand(model, self.states[number])}
            action, succ = out[number][choice]
            state, fp = self.states[number], self.fps[number]
            bad = step_failures(model, state, action, succ, self.step_props)
            self.edges.append((number, fp, sfp, choice, action, bad))
            if sfp not in nodes:
                nodes[sfp] = (succ, nodes[fp][1] + 1, False)
        _limit(nodes, self.max_states)

    def rollback(self, n_states: int) -> None:
        del self.states[n_states:], self.fps[n_states:]
        self.nodes = dict(list(self.nodes.items())[:n_states])
        self.edges = [e for e in self.edges if e[0] < n_states]

    def save(self) -> None:
        return None

    def restore(self, saved: object) -> None:
        pass

    def decide(self, explored: Explored) -> None:
        return None


def _limit(nodes: dict[int, tuple[Any, int, bool]], max_states: int | None) -> None:
    if max_states is not None and len(nodes) > max_states:
        raise GraphTooLarge(
            f"the state graph has more than {max_states:,} states; raise --max-states or shrink the spec's constants"
        )


def write_graph(g: nx.MultiDiGraph, path: str | os.PathLike[str], *, exclusive: bool = False) -> None:
    """Write ``g`` to ``path`` in the format its suffix names (``.dot``, ``.graphml``,
    ``.gexf``), whole: the document is made in memory and written through a temporary
    file renamed over ``path`` (``checker.base.files``), so a full disk leaves no truncated
    graph.

    DOT is ``dot_text``'s.

    Args:
        exclusive: fail rather than replace a file at ``path``.

    Raises:
        UsageError: the suffix is not one of ``FORMATS``.
        OSError: the file cannot be written.
    """
    import io

    from ..base.files import write_file

    suffix = Path(path).suffix.lower()
    if suffix not in FORMATS:
        raise UsageError(f"{path}: unknown graph format {suffix or '(no suffix)'!r} (use one of {', '.join(FORMATS)})")
    if suffix == ".dot":
        data = dot_text(g).encode("utf-8", "backslashreplace")
    else:
        buffer = io.BytesIO()
        import networkx as nx

        (nx.write_graphml if suffix == ".graphml" else nx.write_gexf)(g, buffer)
        data = buffer.getvalue()
    write_file(path, data, exclusive=exclusive)


def dot_text(g: nx.MultiDiGraph) -> str:
    """``g`` as Graphviz DOT text, written by pydot through networkx: every node and edge
    attribute is kept, initial states get a double border and violating states and
    transitions are drawn red."""
    h = g.copy()
    for _, data in h.nodes(data=True):
        if data.get("initial"):
            data["peripheries"] = 2
        if data.get("violates"):
            data["color"] = "red"
    for *_, data in h.edges(data=True):
        if data.get("violates"):
            data["color"] = "red"
    h.graph["node"] = {"shape": "box", "fontname": "monospace", "fontsize": "10"}
    h.graph["edge"] = {"fontname": "monospace", "fontsize": "9"}
    import networkx as nx

    text: str = nx.nx_pydot.to_pydot(h).to_string()
    return text
