"""The conditions several guards of the Kafka model share, in the user's words."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .config import KAFKA_13916
from .state import Ids, State

if TYPE_CHECKING:
    from .views import ModelView

Condition = tuple[str, bool]
"""One condition of a guard: its words and whether it holds."""


def set_words(model: ModelView, ids: Ids) -> str:
    """Replicas as a set of their names: ``{A,B}``."""
    return "{" + ",".join(model.name(r) for r in ids) + "}"


def has_leader_condition(lead: int | None) -> Condition:
    """The partition has a leader (``leader_of`` is ``lead``)."""
    return ("the partition has a leader (a live replica the controller elected, in its epoch)", lead is not None)


def not_shutting(model: ModelView, state: State, r: int, what: str) -> list[Condition]:
    """KIP-841's condition on ``r`` (with controlled shutdowns, unless KAFKA-13916)."""
    if not model.config.max_controlled_shutdowns or model.config.has_bug(KAFKA_13916):
        return []
    text = f"{model.name(r)} is not in controlled shutdown (a replica in controlled shutdown may not {what})"
    return [(text, not state.replicas[r].shutting)]
