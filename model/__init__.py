"""The Kafka replication model (see MODEL.md)."""

from .config import (
    HIGH_WATERMARK,
    LEADER_EPOCH,
    LEADER_EPOCH_KIP279,
    TRUNCATION_RULES,
    Config,
)
from .kafka import ACTION_NAMES, Action, KafkaModel
from .state import Fetch, Quorum, Replica, State, encode, leader_of, leads
from .truncation import (
    end_offset,
    offsets_for_leader_epoch,
    truncate_high_watermark,
    truncate_kip279,
    truncate_leader_epoch,
    truncation_offset,
)

__all__ = [
    "ACTION_NAMES", "Action", "Config", "Fetch", "HIGH_WATERMARK", "KafkaModel",
    "LEADER_EPOCH", "LEADER_EPOCH_KIP279", "Quorum", "Replica", "State",
    "TRUNCATION_RULES", "encode", "end_offset", "leader_of", "leads",
    "offsets_for_leader_epoch", "truncate_high_watermark", "truncate_kip279",
    "truncate_leader_epoch", "truncation_offset",
]
