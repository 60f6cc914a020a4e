"""The reachable state graph of a model, as a networkx graph, and its export to files.

Nodes are states, keyed by their fingerprint written as 16 hex digits (the fingerprint is
a state's identity for every engine); edges are transitions. The graph is built by
visiting the local engine's search (``checker.local.states``), so it has exactly the engine's
distinct states, in its order, and one edge per generated transition: since a state's enabled actions are all
different, that is also the number of distinct ``(from, to, action)`` triples.

Generic: the model supplies the texts through the ``label`` and ``action_text``
functions the caller passes in.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # (imported where a graph is built or written: it is a sixth of kmc's start-up)
    import networkx as nx

from ..base.errors import UsageError
from ..base.fingerprint import fingerprint
from ..contract.protocol import action_name, with_defaults
from ..core.kernel import split_properties
from ..core.level import state_failures, step_failures

FORMATS = (".dot", ".graphml", ".gexf")
GENERATOR = "kmc state graph"  # names kmc in every file it writes (kmc.app.outputs)
DEFAULT_MAX_STATES = 20_000


class GraphTooLarge(UsageError):
    """The reachable state graph has more states than the limit allows."""


def node_id(fp: int) -> str:
    """The node key of a state with fingerprint ``fp``."""
    return f"{fp:016x}"


def state_graph(
    model, properties=None, *, max_states=DEFAULT_MAX_STATES, label=None, action_text=None
) -> nx.MultiDiGraph:
    """Explore every reachable state of ``model`` and return its state graph.

    Args:
        model: an object following ``checker.contract.protocol.Model``.
        properties: the properties to mark violations of (default: the model's).
        max_states: refuse graphs with more distinct states than this.
        label: ``label(state) -> str``, a node's readable text (default: ``repr``).
        action_text: ``action_text(action) -> str``, an edge's text (default: the
            protocol's ``format_action``).

    Returns:
        A ``networkx.MultiDiGraph``. Node attributes: ``label``, ``depth`` (the initial
        state has depth 1), ``initial`` (bool), ``violates`` (the names of the state
        invariants the state violates, comma-separated, ``""`` for none), ``terminal``
        (no enabled action). Edge attributes: ``label`` (the action's text), ``action``
        (its name, ``checker.contract.protocol.action_name``), ``choice`` (its position among the
        enabled actions), ``violates``
        (the step properties the transition violates, comma-separated). The graph's own
        attributes hold ``distinct_states`` and ``transitions``.

    Raises:
        GraphTooLarge: more than ``max_states`` states are reachable. The exploration
            stops as soon as the limit is passed, before any graph is built.
    """
    label = label or repr
    model = with_defaults(model)
    action_text = action_text or (lambda action: model.format_action(action))
    props = list(model.properties() if properties is None else properties)
    invariants, step_props = split_properties(props)
    nodes: dict[int, tuple] = {}  # fp -> (state, depth, initial); insertion order = BFS order
    edges: list[tuple] = []
    for state in model.init_states():
        nodes.setdefault(fingerprint(model, state), (state, 1, True))
    _limit(nodes, max_states)

    def visit(fp: int, state: Any, out: list) -> None:  # the local engine's search, visited (checker.local.states)
        depth = nodes[fp][1] + 1
        for choice, action, succ, sfp in out:
            bad = step_failures(model, state, action, succ, step_props)
            edges.append((fp, sfp, choice, action, bad))
            if sfp not in nodes:
                nodes[sfp] = (succ, depth, False)
        _limit(nodes, max_states)

    from ..core.options import Options
    from ..local.states import LocalEngine

    LocalEngine(model, props, Options(keep_going=True), visit=visit).run()
    import networkx as nx

    g = nx.MultiDiGraph(name=GENERATOR, distinct_states=len(nodes), transitions=len(edges))
    expanded = {e[0] for e in edges}
    for fp, (state, d, initial) in nodes.items():
        bad = state_failures(model, state, invariants)
        g.add_node(
            node_id(fp),
            label=label(state),
            depth=d,
            initial=initial,
            violates=",".join(name for name, _ in bad),
            terminal=fp not in expanded,
        )
    for src, dst, choice, action, bad in edges:
        g.add_edge(
            node_id(src),
            node_id(dst),
            key=choice,
            label=action_text(action),
            action=action_name(action),
            choice=choice,
            violates=",".join(name for name, _ in bad),
        )
    return g


def _limit(nodes: dict, max_states: int | None) -> None:
    if max_states is not None and len(nodes) > max_states:
        raise GraphTooLarge(
            f"the state graph has more than {max_states:,} states; raise --max-states or shrink the spec's constants"
        )


def write_graph(g, path, *, exclusive: bool = False) -> None:
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


def dot_text(g) -> str:
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

    return nx.nx_pydot.to_pydot(h).to_string()
