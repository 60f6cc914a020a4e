"""The truncation rules a replica applies when it becomes a follower (docs/model.md).

Each rule is a plain function of the follower's log and high watermark and the leader's
log, returning the offset the follower truncates its log to.
"""

from __future__ import annotations

from typing import Final

from .config import HIGH_WATERMARK, LEADER_EPOCH, LEADER_EPOCH_21, LEADER_EPOCH_KIP279

UNDEFINED: Final = None  # OffsetsForLeaderEpoch had no answer


def end_offset(log, epoch) -> int:
    """The first offset whose record has an epoch above ``epoch``, or the log end."""
    for offset, (e, _) in enumerate(log):
        if e > epoch:
            return offset
    return len(log)


def offsets_for_leader_epoch(leader_log, epoch) -> int | None:
    """The 0.11 leader's answer to OffsetsForLeaderEpoch(epoch): an offset, or UNDEFINED.

    The leader's epoch cache holds only epochs it has records of, so it cannot answer
    for an epoch below its first one, nor (in 0.11–1.1) for one it has no later epoch
    after.
    """
    if not leader_log:
        return UNDEFINED
    if leader_log[-1][0] == epoch:
        return len(leader_log)
    if epoch < leader_log[0][0] or all(e <= epoch for e, _ in leader_log):
        return UNDEFINED
    return end_offset(leader_log, epoch)


def truncate_high_watermark(log, hw, leader_log) -> int:
    """Pre-0.11: truncate to the high watermark."""
    return hw


def truncate_leader_epoch(log, hw, leader_log) -> int:
    """KIP-101 (0.11): ask the leader for the end of the follower's latest epoch.

    The answer is an offset without an epoch; on no answer, fall back to the HW.
    """
    if not log:
        return 0
    answer = offsets_for_leader_epoch(leader_log, log[-1][0])
    if answer is UNDEFINED:
        return hw
    return min(answer, len(log))


def truncate_kip279(log, hw, leader_log) -> int:
    """KIP-279 (2.0): truncate to the longest prefix on which offsets and epochs agree."""
    n = min(len(log), len(leader_log))
    for offset in range(n):
        if log[offset] != leader_log[offset]:
            return offset
    return n


RULES = {
    HIGH_WATERMARK: truncate_high_watermark,
    LEADER_EPOCH: truncate_leader_epoch,
    LEADER_EPOCH_KIP279: truncate_kip279,
    # 2.1 truncates as KIP-279; it differs only in ExpandIsr's guard (model/kafka.py).
    LEADER_EPOCH_21: truncate_kip279,
}


def truncation_offset(rule, log, hw, leader_log) -> int:
    """The offset a follower with ``log`` and ``hw`` truncates to under ``rule``."""
    return RULES[rule](log, hw, leader_log)
