"""The registry of graph clients: what builds the clients of a search's graph visitor
(``checker.core.visitor``). kmc's own are the always-possibly and liveness properties'
(``checker.graph.properties``); a client of one's own is a factory registered here
(``register``), asked for its clients by every search that is assembled afterwards."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ..contract.protocol import LIVENESS, POSSIBLY, Model, Property
from ..core.options import Options
from ..core.visitor import GraphClient
from .properties import LivenessClient, PossiblyClient

__all__ = ["ClientFactory", "graph_clients", "register", "unregister"]

# ``factory(model, properties, options)`` -> the clients it adds to a search (none: [])
ClientFactory = Callable[[Model, Sequence[Property], Options], Sequence[GraphClient]]


def possibly_clients(model: Model, properties: Sequence[Property], options: Options) -> list[GraphClient]:
    """A client per always-possibly property, in order."""
    return [PossiblyClient(p) for p in properties if p.kind == POSSIBLY]


def liveness_clients(model: Model, properties: Sequence[Property], options: Options) -> list[GraphClient]:
    """A client per liveness property, in order."""
    live = [p for p in properties if p.kind in LIVENESS]
    if not live:
        return []
    instances = len(tuple(model.fair_instances()))
    return [LivenessClient(model, p, instances) for p in live]


FACTORIES: list[ClientFactory] = [possibly_clients, liveness_clients]


def register(factory: ClientFactory) -> None:
    """Add ``factory``'s clients to every search assembled from now on (after kmc's own)."""
    FACTORIES.append(factory)


def unregister(factory: ClientFactory) -> None:
    FACTORIES.remove(factory)


def graph_clients(model: Model, properties: Sequence[Property], options: Options | None = None) -> list[GraphClient]:
    """The graph clients of a search of ``model`` checking ``properties``: every registered
    factory's, in registration order (the always-possibly properties', then the liveness
    ones', then those registered)."""
    options = options or Options()
    return [client for factory in FACTORIES for client in factory(model, properties, options)]
