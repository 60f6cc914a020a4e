"""The effects of the Kafka model's actions on a state (docs/model.md, "Actions"), and the
election guard: what ``model.kafka.KafkaModel`` builds successors with.

Each effect takes a state and returns the successor; ``KafkaModel.successors`` decides
which are enabled. The effects live by action family: the data path
(``effects_data``), failure and leadership (``effects_leadership``), the ISR
(``effects_isr``) and the operator's actions (``effects_operators``), on the common
ground of ``effects``.
"""

from __future__ import annotations

from .effects_data import DataEffects
from .effects_isr import IsrEffects
from .effects_leadership import LeadershipEffects
from .effects_operators import OperatorEffects


class KafkaEffects(DataEffects, LeadershipEffects, IsrEffects, OperatorEffects):
    """The action effects of ``KafkaModel`` for one configuration, and its election guard.

    Args:
        config: the model's ``Config``.
    """

    __slots__ = ()
