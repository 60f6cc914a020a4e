"""The reachable state graph of a model, built by the local engine's search
(``checker.local.states``) with a client of its graph visitor
(``checker.graph.export.StateGraphClient``), as a networkx graph; its export to files is
``checker.graph.export``'s."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # (imported where a graph is built: it is a sixth of kmc's start-up)
    import networkx as nx

from ..contract.protocol import Property, action_name, with_defaults
from ..core.assembly import split_properties
from ..core.level import state_failures
from ..core.options import Options
from ..graph.export import DEFAULT_MAX_STATES, GENERATOR, StateGraphClient, node_id
from .states import LocalEngine

__all__ = ["state_graph"]


def state_graph(
    model: Any,
    properties: Sequence[Property] | None = None,
    *,
    max_states: int | None = DEFAULT_MAX_STATES,
    label: Callable[[Any], str] | None = None,
    action_text: Callable[[Any], str] | None = None,
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
    client = StateGraphClient(model, step_props, max_states)
    LocalEngine(model, props, Options(keep_going=True), clients=[client]).run()
    nodes, edges = client.nodes, client.edges
    import networkx as nx

    g = nx.MultiDiGraph(name=GENERATOR, distinct_states=len(nodes), transitions=len(edges))
    expanded = {e[1] for e in edges}
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
    for _number, src, dst, choice, action, bad in edges:
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
