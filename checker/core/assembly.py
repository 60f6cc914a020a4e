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

from collections.abc import Callable, Iterable, Sequence

import attrs

from ..contract.protocol import ALWAYS, COVER, LIVENESS, POSSIBLY, STEP, STEP_COVER, Model, Property, with_defaults
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


def split_properties(properties: Iterable[Property]) -> tuple[tuple[Property, ...], tuple[Property, ...]]:
    """Split properties into (state invariants, step properties), keeping their order. A
    cover is asked as the state invariants are (its first witness of the breadth-first
    order is recorded as an invariant's first violation is; ``checker.core.level``), a step
    cover as the step properties are."""
    props = list(properties)
    return (
        tuple(p for p in props if p.kind in (ALWAYS, COVER)),
        tuple(p for p in props if p.kind in (STEP, STEP_COVER)),
    )


def require_symmetric(properties: Iterable[Property]) -> None:
    """Refuse symmetry reduction for a liveness property (weak fairness per action instance
    is not preserved by the quotient), and for a state invariant not declared symmetric."""
    from ..base.errors import UsageError

    properties = list(properties)
    for p in properties:
        if p.kind in LIVENESS:
            raise UsageError(
                f"--symmetry: {p.name} is a liveness property, and weak fairness per action instance "
                "is not preserved by the symmetry quotient; check it without --symmetry"
            )
    for p in properties:
        if p.kind in (ALWAYS, POSSIBLY, COVER, STEP_COVER) and not p.symmetric:  # a goal predicate too
            raise UsageError(
                f"--symmetry: the invariant {p.name} is not declared symmetric "
                "(Property(symmetric=True)); check it without symmetry reduction"
            )
