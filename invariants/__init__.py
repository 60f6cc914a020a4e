"""The properties kmc checks on the Kafka replication model."""

from .kafka import (
    ALL,
    BY_NAME,
    CommittedNeverLost,
    HighWatermarkBelowLogEnd,
    LeaderEpochMonotonic,
    LogsNeverDiverge,
    committed_never_lost,
    high_watermark_below_log_end,
    leader_epoch_monotonic,
    logs_never_diverge,
)

__all__ = [
    "ALL", "BY_NAME", "CommittedNeverLost", "HighWatermarkBelowLogEnd",
    "LeaderEpochMonotonic", "LogsNeverDiverge", "committed_never_lost",
    "high_watermark_below_log_end", "leader_epoch_monotonic", "logs_never_diverge",
]
