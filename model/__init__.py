"""The Kafka replication model (see docs/model.md)."""

from .config import (
    HIGH_WATERMARK,
    INITIAL_LEADERS,
    LEADER_EPOCH,
    LEADER_EPOCH_21,
    LEADER_EPOCH_KIP279,
    Config,
)
from .kafka import ACTION_NAMES, Action, KafkaModel
from .state import Fetch, Quorum, Replica, State, elr_after, encode, leader_of, leads, leso
from .truncation import (
    LEADER_EPOCH_RULES,
    TRUNCATION_RULES,
    end_offset,
    offsets_for_leader_epoch,
    truncate_high_watermark,
    truncate_kip279,
    truncate_leader_epoch,
    truncation_offset,
)

__all__ = [
    "ACTION_NAMES",
    "Action",
    "Config",
    "Fetch",
    "HIGH_WATERMARK",
    "INITIAL_LEADERS",
    "KafkaModel",
    "LEADER_EPOCH",
    "LEADER_EPOCH_21",
    "LEADER_EPOCH_KIP279",
    "LEADER_EPOCH_RULES",
    "Quorum",
    "Replica",
    "State",
    "TRUNCATION_RULES",
    "elr_after",
    "encode",
    "end_offset",
    "leader_of",
    "leads",
    "leso",
    "offsets_for_leader_epoch",
    "truncate_high_watermark",
    "truncate_kip279",
    "truncate_leader_epoch",
    "truncation_offset",
]
