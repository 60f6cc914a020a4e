"""The properties kmc checks on the Kafka replication model."""

from .kafka import (
    ALL,
    BY_NAME,
    MODERN,
    AcknowledgedNeverLost,
    acknowledged_never_lost,
    CLASSIC,
    CommittedNeverLost,
    HighWatermarkBelowLogEnd,
    LeaderCandidateCompleteness,
    LeaderEpochMonotonic,
    LogsNeverDiverge,
    committed_never_lost,
    default_properties,
    high_watermark_below_log_end,
    leader_candidate_completeness,
    leader_epoch_monotonic,
    logs_never_diverge,
)
from .availability import PartitionRecoverable, available, explain_trap

__all__ = [
    "ALL", "AcknowledgedNeverLost", "BY_NAME", "CLASSIC", "CommittedNeverLost", "HighWatermarkBelowLogEnd",
    "LeaderCandidateCompleteness", "LeaderEpochMonotonic", "LogsNeverDiverge",
    "MODERN", "acknowledged_never_lost", "committed_never_lost", "default_properties", "high_watermark_below_log_end",
    "leader_candidate_completeness", "leader_epoch_monotonic", "logs_never_diverge",
    "PartitionRecoverable", "available", "explain_trap",
]
