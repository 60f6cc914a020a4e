"""The Kafka model's covers: "this can happen" predicates, one for each scenario of
docs/model.md that a state shows (``checker.contract.protocol``'s ``"cover"`` kind), and one for
each that a step shows (``"step-cover"``: an ELR or an unclean election, a refused
AlterPartition, a follower's truncation, the operators' steps).

A spec names the ones it wants reached (``[check] covers = [...]``): each is answered with
a shortest behaviour to its first witness, or "never reached", which fails the run (exit
1), as a vacuity check: a scenario a configuration is meant to exercise that it never
reaches makes every "holds" of that run say less than it seems to. Each cover needs the
options its scenario runs on (``NEEDS``); a spec naming one without them is refused.
The state covers have no array form: the batch path asks each new state until the cover is
reached (on the small specs covers are for, a fraction of the run). The step covers of an
action's kind (an election's, AlterPartition's) read the kinds coverage counts
(the model's ``kind_of`` a step, the batch kernel's ``kind_mask`` its rows);
``FollowerTruncates`` has no array form (the batch path asks each transition, a parent's
together, until it is reached); the operators' steps run on the per-state path only.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from kmc.checker.contract.protocol import COVER, STEP_COVER, Property


def record_committed(model: Any, state: Any) -> bool:
    """A record is committed: some leader's high watermark passed it."""
    return bool(state.committed)


def record_acknowledged(model: Any, state: Any) -> bool:
    """The producer was told a record is written."""
    return bool(state.acked)


def isr_shrunk(model: Any, state: Any) -> bool:
    """The controller's ISR has fewer members than there are replicas."""
    return len(state.quorum.isr) < len(state.replicas)


def new_leader_elected(model: Any, state: Any) -> bool:
    """A replica leads in a leader epoch after the first: an election happened."""
    leader = state.leader()
    return leader is not None and state.quorum.epoch >= 1


def lossy_crash(model: Any, state: Any) -> bool:
    """A replica is down after a crash that lost the unflushed tail of its log."""
    return any(r.lossy for r in state.replicas)


def eligible_leader_replica(model: Any, state: Any) -> bool:
    """The controller holds an eligible leader replica (KIP-966)."""
    return bool(state.quorum.elr)


def alter_partition_in_flight(model: Any, state: Any) -> bool:
    """A leader's AlterPartition request waits for the controller's answer."""
    return state.quorum.alter is not None


def diverging_fetch_answer(model: Any, state: Any) -> bool:
    """A leader's diverging answer (a diverging epoch, no records) is on its way to a
    follower."""
    return any(r.inflight is not None and r.inflight.diverging is not None for r in state.replicas)


def high_watermark_before_truncation(model: Any, state: Any) -> bool:
    """KAFKA-14704: a follower took a diverging answer's high watermark and has still to
    truncate."""
    return any(r.inflight is not None and r.inflight.applied for r in state.replicas)


# -- step covers: ``check(model, before, action, after)`` is true for a witness step --------


def _kind_of(model: Any, before: Any, action: Any, after: Any) -> str | None:
    kind: str | None = model.kind_of(before, action, after)
    return kind


def _kind_mask(
    action: str, kind: str, kernel: Any, rows: np.ndarray, parents: np.ndarray, codes: np.ndarray, after: np.ndarray
) -> np.ndarray:
    """Per step of the batch kernel's rows: whether it is a step of ``action`` of ``kind``
    (one of the action's kinds, as coverage names them)."""
    mask: np.ndarray = kernel.kind_mask(action, kind, rows, parents, codes, after)
    return mask


def elr_election(model: Any, before: Any, action: Any, after: Any) -> bool:
    """ElectLeader elects an eligible leader replica (KIP-966): the candidate is in the
    controller's ELR, not in its ISR."""
    return action.name == "ElectLeader" and _kind_of(model, before, action, after) == "ELR"


def _elr_election_mask(
    kernel: Any, rows: np.ndarray, parents: np.ndarray, codes: np.ndarray, after: np.ndarray
) -> np.ndarray:
    return _kind_mask("ElectLeader", "ELR", kernel, rows, parents, codes, after)


def unclean_election(model: Any, before: Any, action: Any, after: Any) -> bool:
    """ElectLeader elects a replica outside the ISR and the ELR (not the last known leader)."""
    return action.name == "ElectLeader" and _kind_of(model, before, action, after) == "unclean"


def _unclean_election_mask(
    kernel: Any, rows: np.ndarray, parents: np.ndarray, codes: np.ndarray, after: np.ndarray
) -> np.ndarray:
    return _kind_mask("ElectLeader", "unclean", kernel, rows, parents, codes, after)


def alter_partition_refused(model: Any, before: Any, action: Any, after: Any) -> bool:
    """The controller answers a leader's AlterPartition request by refusing it (the ISR
    stays as it was)."""
    return action.name == "AlterPartition" and _kind_of(model, before, action, after) == "refused"


def _alter_partition_refused_mask(
    kernel: Any, rows: np.ndarray, parents: np.ndarray, codes: np.ndarray, after: np.ndarray
) -> np.ndarray:
    return _kind_mask("AlterPartition", "refused", kernel, rows, parents, codes, after)


def follower_truncates(model: Any, before: Any, action: Any, after: Any) -> bool:
    """A follower cuts records off its log: at BecomeFollower (the truncation rule), or at
    a FetchResponse (a diverging answer's truncation, or a response that starts below its
    log end). A crash's or a failed directory's loss is not a truncation."""
    if action.name not in ("BecomeFollower", "FetchResponse"):
        return False
    old, new = before.replicas[action.replica].log, after.replicas[action.replica].log
    return bool(new[: len(old)] != old)


def controlled_shutdown_moves_leader(model: Any, before: Any, action: Any, after: Any) -> bool:
    """A controlled shutdown of the quorum's leader: the controller elects another replica
    in its place."""
    return action.name == "ControlledShutdown" and before.quorum.leader == action.replica and action.to is not None


def min_isr_change_applied(model: Any, before: Any, action: Any, after: Any) -> bool:
    """The leader's broker takes a new min ISR: ApplyMinIsr with ``min_isr_lag``, else the
    controller's ChangeMinIsr, which the leader's broker takes at once."""
    if action.name == "ApplyMinIsr":
        return True
    return action.name == "ChangeMinIsr" and not model.config.min_isr_lag


def log_directory_failed(model: Any, before: Any, action: Any, after: Any) -> bool:
    """A replica's log directory fails (DiskFailure)."""
    return bool(action.name == "DiskFailure")


def _step_cover(
    name: str, check: Callable[..., bool], description: str, mask: Callable[..., np.ndarray] | None = None
) -> Property:
    return Property(name, STEP_COVER, check, description, symmetric=True, mask=mask)


ElrElection = _step_cover(
    "ElrElection",
    elr_election,
    "an election of an eligible leader replica (KIP-966; needs model.eligible_leader_replicas)",
    _elr_election_mask,
)
UncleanElection = _step_cover(
    "UncleanElection",
    unclean_election,
    "an election of a replica outside the ISR and the ELR (needs model.unclean_leader_election)",
    _unclean_election_mask,
)
AlterPartitionRefused = _step_cover(
    "AlterPartitionRefused",
    alter_partition_refused,
    "the controller refuses a leader's AlterPartition (needs model.alter_partition)",
    _alter_partition_refused_mask,
)
FollowerTruncates = _step_cover(
    "FollowerTruncates",
    follower_truncates,
    "a follower truncates its log (BecomeFollower, or a fetch answer)",
)
ControlledShutdownMovesLeader = _step_cover(
    "ControlledShutdownMovesLeader",
    controlled_shutdown_moves_leader,
    "a controlled shutdown of the leader elects another (needs model.max_controlled_shutdowns)",
)
MinIsrChangeApplied = _step_cover(
    "MinIsrChangeApplied",
    min_isr_change_applied,
    "the leader's broker takes a new min ISR (needs model.min_isr_changes)",
)
LogDirectoryFailed = _step_cover(
    "LogDirectoryFailed",
    log_directory_failed,
    "a replica's log directory fails (needs model.max_disk_failures)",
)


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
STEP_COVERS = (
    ElrElection,
    UncleanElection,
    AlterPartitionRefused,
    FollowerTruncates,
    ControlledShutdownMovesLeader,
    MinIsrChangeApplied,
    LogDirectoryFailed,
)
COVERS_BY_NAME = {c.name: c for c in COVERS + STEP_COVERS}  # every cover, of a state or of a step

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
    "ElrElection": ("model.eligible_leader_replicas = true", lambda c: c.eligible_leader_replicas),
    "UncleanElection": ("model.unclean_leader_election = true", lambda c: c.unclean_leader_election),
    "AlterPartitionRefused": ("model.alter_partition = true", lambda c: c.alter_partition),
    "ControlledShutdownMovesLeader": ("model.max_controlled_shutdowns > 0", lambda c: c.max_controlled_shutdowns > 0),
    "MinIsrChangeApplied": ("model.min_isr_changes (a non-empty list)", lambda c: bool(c.min_isr_changes)),
    "LogDirectoryFailed": ("model.max_disk_failures > 0", lambda c: c.max_disk_failures > 0),
}


def missing_option(name: str, config: Any) -> str | None:
    """What the cover ``name`` needs that ``config`` lacks (``None``: nothing)."""
    need = NEEDS.get(name)
    if need is None or need[1](config):
        return None
    return need[0]
