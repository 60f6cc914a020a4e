"""The Kafka model's covers: "this can happen" predicates, one for each scenario of
docs/model.md that a state shows (``checker.protocol``'s ``"cover"`` kind).

A spec names the ones it wants reached (``[check] covers = [...]``): each is answered with
a shortest behaviour to its first witness, or "never reached", which fails the run (exit
1), as a vacuity check: a scenario a configuration is meant to exercise that it never
reaches makes every "holds" of that run say less than it seems to. Each cover needs the
options its scenario runs on (``NEEDS``); a spec naming one without them is refused.
They have no array form: the batch path asks each new state until the cover is reached
(on the small specs covers are for, a fraction of the run).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kmc.checker.protocol import COVER, Property


def record_committed(model, state) -> bool:
    """A record is committed: some leader's high watermark passed it."""
    return bool(state.committed)


def record_acknowledged(model, state) -> bool:
    """The producer was told a record is written."""
    return bool(state.acked)


def isr_shrunk(model, state) -> bool:
    """The controller's ISR has fewer members than there are replicas."""
    return len(state.quorum.isr) < len(state.replicas)


def new_leader_elected(model, state) -> bool:
    """A replica leads in a leader epoch after the first: an election happened."""
    leader = state.leader()
    return leader is not None and state.quorum.epoch >= 1


def lossy_crash(model, state) -> bool:
    """A replica is down after a crash that lost the unflushed tail of its log."""
    return any(r.lossy for r in state.replicas)


def eligible_leader_replica(model, state) -> bool:
    """The controller holds an eligible leader replica (KIP-966)."""
    return bool(state.quorum.elr)


def alter_partition_in_flight(model, state) -> bool:
    """A leader's AlterPartition request waits for the controller's answer."""
    return state.quorum.alter is not None


def diverging_fetch_answer(model, state) -> bool:
    """A leader's diverging answer (a diverging epoch, no records) is on its way to a
    follower."""
    return any(r.inflight is not None and r.inflight.diverging is not None for r in state.replicas)


def high_watermark_before_truncation(model, state) -> bool:
    """KAFKA-14704: a follower took a diverging answer's high watermark and has still to
    truncate."""
    return any(r.inflight is not None and r.inflight.applied for r in state.replicas)


def _cover(name: str, check: Callable[[Any, Any], bool], description: str) -> Property:
    return Property(name, COVER, check, description, symmetric=True)


RecordCommitted = _cover("RecordCommitted", record_committed, "a record is committed (a leader's HW passes it)")
RecordAcknowledged = _cover(
    "RecordAcknowledged", record_acknowledged, "the producer is told a record is written (needs model.acks)"
)
IsrShrunk = _cover("IsrShrunk", isr_shrunk, "the ISR loses a member (ShrinkIsr)")
NewLeaderElected = _cover(
    "NewLeaderElected", new_leader_elected, "a replica leads in a later leader epoch (an election after the first)"
)
LossyCrash = _cover("LossyCrash", lossy_crash, "a crash loses the unflushed tail of a log (needs model.unflushed_loss)")
EligibleLeaderReplica = _cover(
    "EligibleLeaderReplica",
    eligible_leader_replica,
    "the controller keeps an eligible leader replica (KIP-966; needs model.eligible_leader_replicas)",
)
AlterPartitionInFlight = _cover(
    "AlterPartitionInFlight",
    alter_partition_in_flight,
    "an AlterPartition request waits for the controller (needs model.alter_partition)",
)
DivergingFetchAnswer = _cover(
    "DivergingFetchAnswer",
    diverging_fetch_answer,
    "a leader answers a fetch with a diverging epoch (needs model.truncate_on_fetch)",
)
HighWatermarkBeforeTruncation = _cover(
    "HighWatermarkBeforeTruncation",
    high_watermark_before_truncation,
    "a follower takes a diverging answer's HW before truncating (KAFKA-14704; needs it in model.fetch_bugs)",
)

COVERS = (
    RecordCommitted,
    RecordAcknowledged,
    IsrShrunk,
    NewLeaderElected,
    LossyCrash,
    EligibleLeaderReplica,
    AlterPartitionInFlight,
    DivergingFetchAnswer,
    HighWatermarkBeforeTruncation,
)
COVERS_BY_NAME = {c.name: c for c in COVERS}

# cover name -> (what its scenario needs, in words; whether a configuration has it)
NEEDS: dict[str, tuple[str, Callable[[Any], bool]]] = {
    "RecordAcknowledged": ('model.acks ("all" or "1")', lambda c: c.acks is not None),
    "LossyCrash": ("model.unflushed_loss = true", lambda c: c.unflushed_loss),
    "EligibleLeaderReplica": ("model.eligible_leader_replicas = true", lambda c: c.eligible_leader_replicas),
    "AlterPartitionInFlight": ("model.alter_partition = true", lambda c: c.alter_partition),
    "DivergingFetchAnswer": ("model.truncate_on_fetch = true", lambda c: c.truncate_on_fetch),
    "HighWatermarkBeforeTruncation": (
        'model.fetch_bugs = ["KAFKA-14704"]',
        lambda c: "KAFKA-14704" in c.fetch_bugs,
    ),
}


def missing_option(name: str, config) -> str | None:
    """What the cover ``name`` needs that ``config`` lacks (``None``: nothing)."""
    need = NEEDS.get(name)
    if need is None or need[1](config):
        return None
    return need[0]
