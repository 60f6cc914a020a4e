"""What a step of the Kafka model did, in words: the sentence a trace shows under each
action's name (``KafkaModel.describe_step``, the protocol's ``describe_step`` hook).

It says what the rules of ``model.kafka`` did in one transition, reading the two states
(which records moved, what was truncated, why a follower may not re-join the ISR), so it
lives next to them. Each action has its describer, by action family: the data path
(``describe_data``), failure and leadership (``describe_leadership``), the ISR
(``describe_isr``) and the operator's actions (``describe_operators``); ``DESCRIBERS``
is the table that names them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from . import describe_data, describe_isr, describe_leadership, describe_operators
from .actions import (
    ALTER_PARTITION,
    APPLY_MIN_ISR,
    BECOME_FOLLOWER,
    CHANGE_MIN_ISR,
    CONTROLLED_SHUTDOWN,
    CRASH,
    DISK_FAILURE,
    ELECT_LEADER,
    EXPAND_ISR,
    FETCH_REQUEST,
    FETCH_RESPONSE,
    PRODUCE,
    RESTART,
    SHRINK_ISR,
    SHUTDOWN_COMPLETE,
    Action,
)
from .describe_data import acks_note
from .describe_words import plural, replica_set
from .state import State

if TYPE_CHECKING:
    from .views import ModelView

__all__ = ["DESCRIBERS", "Describer", "acks_note", "describe_step", "plural", "replica_set"]

Describer = Callable[["ModelView", State, Action, State], str]
"""One action's sentence: ``(model, before, action, after) -> str``."""

DESCRIBERS: dict[str, Describer] = {
    PRODUCE: describe_data.produce,
    FETCH_REQUEST: describe_data.fetch_request,
    FETCH_RESPONSE: describe_data.fetch_response,
    CRASH: describe_leadership.crash,
    RESTART: describe_leadership.restart,
    ELECT_LEADER: describe_leadership.elect_leader,
    BECOME_FOLLOWER: describe_leadership.become_follower,
    SHRINK_ISR: describe_isr.change_isr,
    EXPAND_ISR: describe_isr.change_isr,
    ALTER_PARTITION: describe_isr.alter_partition,
    CONTROLLED_SHUTDOWN: describe_operators.controlled_shutdown,
    SHUTDOWN_COMPLETE: describe_operators.shutdown_complete,
    CHANGE_MIN_ISR: describe_operators.change_min_isr,
    APPLY_MIN_ISR: describe_operators.apply_min_isr,
    DISK_FAILURE: describe_operators.disk_failure,
}
"""The describer of every action the Kafka model takes, by the action's name."""


def describe_step(model: ModelView, before: State, action: Action, after: State) -> str:
    """One sentence saying what ``action`` did between two states (for a trace header;
    ``KafkaModel.describe_step``, the protocol's ``describe_step`` hook).

    Returns an empty string for an action this module does not know.
    """
    describer = DESCRIBERS.get(action.name)
    return "" if describer is None else describer(model, before, action, after)
