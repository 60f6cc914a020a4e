"""One assembly of a search: what every engine builds its search from, computed once.

An engine is given a model, its properties (or ``None``: the model's own) and the options;
before it builds its search it gives the model its defaults (``with_defaults``), splits the
properties into state invariants and step properties (``split_properties``), refuses a
symmetry reduction the properties do not allow (``require_symmetric``) and builds the graph
visitor that the properties needing the state graph are decided from. ``assemble`` does
these steps in that order, and the ``Assembly`` it returns is what the engine constructors
and the level driver read.

The graph properties are clients of the core's visitor (``checker.core.visitor``) and live
in a higher wing: the engine gives ``assemble`` the function that lists them (called with
the model, the properties and the options; ``checker.graph.clients.graph_clients`` for
every engine of kmc).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import attrs

from ..contract.protocol import Model, Property, with_defaults
from .kernel import require_symmetric, split_properties
from .options import Options
from .visitor import GraphClient, GraphVisitor

# Lists the graph clients of a search from the model, its properties and the options.
ClientsFactory = Callable[[Model, list[Property], Options], Sequence[GraphClient]]


@attrs.frozen
class Assembly:
    """What a search is built from.

    Attributes:
        model: the model, with its defaults (``with_defaults``).
        properties: every property checked, in order.
        invariants: the state invariants and covers among them (``split_properties``).
        step_props: the step properties among them.
        options: how the run explores.
        visitor: the graph visitor every stored state and expanded edge goes to.
    """

    model: Model
    properties: list[Property]
    invariants: tuple[Property, ...]
    step_props: tuple[Property, ...]
    options: Options
    visitor: GraphVisitor


def assemble(
    model: Model,
    properties: Sequence[Property] | None,
    options: Options | None,
    clients: ClientsFactory,
    extra: Sequence[GraphClient] = (),
) -> Assembly:
    """The assembly of a search of ``model`` for ``properties`` (``None``: the model's
    own) under ``options`` (``None``: the defaults), its graph visitor handing every state
    and edge to the clients ``clients`` lists, then to ``extra``."""
    options = options or Options()
    model = with_defaults(model)
    props = list(model.properties() if properties is None else properties)
    invariants, step_props = split_properties(props)
    if options.symmetry:
        require_symmetric(props)  # before the search asks the model for its symmetries
    visitor = GraphVisitor([*clients(model, props, options), *extra], model)
    return Assembly(model, props, invariants, step_props, options, visitor)
