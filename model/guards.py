"""The Kafka model's guards as named conditions (``checker.contract.protocol.Guard``): for every
action the model may take in a state, enabled or not, each condition of its guard in the
user's words and whether it holds. ``KafkaModel.guards`` answers with them; ``kmc why-not``
and the explorer show the ones that fail.

The conditions are docs/model.md's guards, written a second time, condition by condition,
beside ``KafkaModel.successors`` (which computes the same guards as one expression each):
``tests/test_why_not.py`` checks on every reachable state of small specs of every
truncation rule and option that an action is enabled exactly when each of its conditions
holds. An action added to the model needs its guard here too, in the module of its
action family (``guards_data``, ``guards_leadership``, ``guards_isr``,
``guards_operators``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kmc.checker.contract.protocol import Guard

from .guards_data import data_guards
from .guards_isr import isr_guards
from .guards_leadership import election_guards, failure_guards, follower_guards
from .guards_operators import operator_guards
from .state import State

if TYPE_CHECKING:
    from .views import ModelView


def kafka_guards(model: ModelView, state: State) -> list[Guard]:
    """Every action of ``model`` (a ``KafkaModel``) in ``state``, in docs/model.md's order,
    with its guard's conditions: the data path, Crash and Restart, ElectLeader,
    BecomeFollower, the ISR, then the operator's actions."""
    return [
        *data_guards(model, state),
        *failure_guards(model, state),
        *election_guards(model, state),
        *follower_guards(model, state),
        *isr_guards(model, state),
        *operator_guards(model, state),
    ]
