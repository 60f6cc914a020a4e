"""The words every sentence of a step uses: replicas as a set, counts, an AlterPartition
request, and why a step dropped the request in flight."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .config import KAFKA_15221
from .state import EXPAND, Alter, Ids, State

if TYPE_CHECKING:
    from .views import ModelView


def replica_set(model: ModelView, members: Ids) -> str:
    """Replicas as a set of their names: ``{A,B}``."""
    return "{" + ",".join(model.name(r) for r in members) + "}"


def plural(n: int, word: str) -> str:
    """``1 record``, ``2 records``, ``2 crashes``."""
    if n == 1:
        return f"{n} {word}"
    return f"{n} {word}es" if word.endswith(("s", "sh", "ch", "x")) else f"{n} {word}s"


def request_words(model: ModelView, alter: Alter) -> str:
    """An AlterPartition request in words: ``A's request to add B``."""
    p, change, r = alter
    verb = "add" if change == EXPAND else "remove"
    return f"{model.name(p)}'s request to {verb} {model.name(r)}"


def dropped_note(model: ModelView, before: State, after: State, r: int) -> str:
    """Why a Restart or an ElectLeader dropped the AlterPartition request in flight (the
    controller would refuse it now); that it survived a lossy Restart that wrote no change
    (the KAFKA-14139 window); else ``""``."""
    alter = before.quorum.alter
    if alter is None:
        return ""
    if after.quorum.alter is not None:  # a Restart that wrote no change: the request survives
        if model.config.broker_epochs and model.config.has_bug(KAFKA_15221) and alter[1] == EXPAND and alter[2] == r:
            return (
                f"; {request_words(model, alter)} stays in flight although it was decided on {model.name(r)}'s "
                f"previous incarnation (KAFKA-15221: once {model.name(r)} follows {model.name(alter[0])} "
                f"again, the request carries its new broker epoch)"
            )
        return f"; {request_words(model, alter)} stays in flight" if before.replicas[r].lossy else ""
    text = f"; {request_words(model, alter)} is dropped: "
    qb, qa = before.quorum, after.quorum
    if qa.epoch != qb.epoch:
        return text + "the request carries the old leader epoch"
    if model.config.broker_epochs and alter[1] == EXPAND and alter[2] == r:
        return text + f"{model.name(r)} restarted, its broker epoch is stale"
    return text + "the partition changed: the request is stale"
