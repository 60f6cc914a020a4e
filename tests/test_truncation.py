"""The three truncation rules of docs/model.md ("Truncation rules"), on hand-built logs.

A record is ``(epoch, id)``; offset = index. The follower's HW is given separately; the
rules return the offset the follower truncates its log to.
"""

from __future__ import annotations

import pytest

from kmc.model import (
    HIGH_WATERMARK,
    LEADER_EPOCH,
    LEADER_EPOCH_KIP279,
    end_offset,
    offsets_for_leader_epoch,
    truncate_high_watermark,
    truncate_kip279,
    truncate_leader_epoch,
    truncation_offset,
)
from kmc.model.truncation import UNDEFINED

# -- end_offset: the first offset whose epoch is above e, else LEO ---------------------


@pytest.mark.parametrize("log, epoch, want", [
    ((), 0, 0),
    (((0, 0),), 0, 1),
    (((0, 0), (0, 1), (1, 2)), 0, 2),
    (((0, 0), (0, 1), (1, 2)), 1, 3),
    (((0, 0), (2, 1), (2, 2)), 1, 1),
    (((1, 0), (1, 1)), 0, 0),   # every record is above epoch 0
    (((0, 0), (3, 1)), 5, 2),   # nothing above 5: the log end
])
def test_end_offset(log, epoch, want):
    assert end_offset(log, epoch) == want


# -- the 0.11 leader's answer to OffsetsForLeaderEpoch ---------------------------------


def test_answer_undefined_when_leader_log_empty():
    assert offsets_for_leader_epoch((), 0) is UNDEFINED
    assert offsets_for_leader_epoch((), 3) is UNDEFINED


def test_answer_is_leader_leo_when_last_epochs_match():
    assert offsets_for_leader_epoch(((0, 0), (1, 1), (1, 2)), 1) == 3
    assert offsets_for_leader_epoch(((0, 0),), 0) == 1


def test_answer_undefined_below_leader_first_epoch():
    # The leader's cache starts at epoch 1: it knows nothing of epoch 0.
    assert offsets_for_leader_epoch(((1, 0), (2, 1)), 0) is UNDEFINED


def test_answer_undefined_when_no_later_epoch_on_leader():
    # The follower's epoch 2 is above everything the leader has (0.11-1.1, before KAFKA-7415).
    assert offsets_for_leader_epoch(((0, 0), (1, 1)), 2) is UNDEFINED


def test_answer_is_end_of_epoch_when_a_later_epoch_exists():
    assert offsets_for_leader_epoch(((0, 0), (0, 1), (2, 2)), 0) == 2
    # An epoch the leader has no record of, between two it has: the start of the next.
    assert offsets_for_leader_epoch(((0, 0), (2, 1)), 1) == 1


# -- high-watermark: t := hw --------------------------------------------------------------


@pytest.mark.parametrize("log, hw, leader_log, want", [
    ((), 0, (), 0),
    (((0, 0), (0, 1)), 1, ((0, 0), (0, 1)), 1),   # equal logs: still only to the HW
    (((0, 0), (0, 1)), 2, (), 2),                  # ignores the leader entirely
    (((0, 0),), 0, ((0, 0), (0, 1), (0, 2)), 0),
])
def test_high_watermark_rule_truncates_to_hw(log, hw, leader_log, want):
    assert truncate_high_watermark(log, hw, leader_log) == want
    assert truncation_offset(HIGH_WATERMARK, log, hw, leader_log) == want


# -- leader-epoch (KIP-101) ------------------------------------------------------------


def test_leader_epoch_empty_follower_log_is_zero():
    assert truncate_leader_epoch((), 0, ((0, 0), (1, 1))) == 0
    assert truncate_leader_epoch((), 0, ()) == 0


def test_leader_epoch_equal_logs_keep_everything():
    log = ((0, 0), (1, 1))
    assert truncate_leader_epoch(log, 0, log) == 2


def test_leader_epoch_follower_longer_same_epoch_cut_to_leader_leo():
    # The follower has a record of epoch 0 the leader (also last epoch 0) does not have.
    assert truncate_leader_epoch(((0, 0), (0, 1), (0, 2)), 1, ((0, 0),)) == 1


def test_leader_epoch_leader_longer_keeps_follower_log():
    # Answer = LEO(l) = 3, capped by the follower's own log end 1.
    assert truncate_leader_epoch(((0, 0),), 0, ((0, 0), (0, 1), (0, 2))) == 1


def test_leader_epoch_cuts_at_end_of_follower_epoch():
    # The follower's epoch-0 tail at offset 1 was overwritten by the leader's epoch 1.
    assert truncate_leader_epoch(((0, 0), (0, 1)), 0, ((0, 0), (1, 2))) == 1


@pytest.mark.parametrize("log, hw, leader_log", [
    (((0, 0), (0, 1)), 1, ()),                   # leader log empty
    (((0, 0), (0, 1)), 1, ((1, 2), (1, 3))),     # follower epoch 0 below the leader's first (1)
    (((0, 0), (2, 1)), 1, ((0, 0), (1, 2))),     # no epoch above 2 on the leader
])
def test_leader_epoch_undefined_falls_back_to_hw(log, hw, leader_log):
    assert truncate_leader_epoch(log, hw, leader_log) == hw == 1
    assert truncation_offset(LEADER_EPOCH, log, hw, leader_log) == 1


def test_leader_epoch_undefined_fallback_uses_the_given_hw():
    # The same logs with HW 0 and 2: the fallback follows the HW, not the logs.
    log, leader_log = ((0, 0), (0, 1)), ()
    assert truncate_leader_epoch(log, 0, leader_log) == 0
    assert truncate_leader_epoch(log, 2, leader_log) == 2


# -- leader-epoch-kip279: longest common prefix ---------------------------------------


@pytest.mark.parametrize("log, leader_log, want", [
    ((), (), 0),
    ((), ((0, 0),), 0),
    (((0, 0),), (), 0),
    (((0, 0), (1, 1)), ((0, 0), (1, 1)), 2),                 # equal
    (((0, 0), (0, 1), (0, 2)), ((0, 0),), 1),                # follower longer
    (((0, 0),), ((0, 0), (0, 1), (0, 2)), 1),                # leader longer
    (((0, 0), (0, 1)), ((0, 0), (1, 2)), 1),                 # diverge at offset 1
    (((1, 1),), ((0, 0), (2, 2)), 0),                        # diverge at offset 0
])
def test_kip279_longest_common_prefix(log, leader_log, want):
    assert truncate_kip279(log, 5, leader_log) == want        # the HW plays no part
    assert truncation_offset(LEADER_EPOCH_KIP279, log, 0, leader_log) == want


def test_kip279_ignores_hw_where_leader_epoch_falls_back():
    # Leader log empty: leader-epoch falls back to hw = 2, KIP-279 truncates everything.
    log = ((0, 0), (0, 1))
    assert truncate_leader_epoch(log, 2, ()) == 2
    assert truncate_kip279(log, 2, ()) == 0


# -- the fast leader change (docs/model.md, last row) ----------------------------------------


def test_fast_leader_change_leader_epoch_keeps_what_kip279_truncates():
    """Leadership moves A->B while A holds the unreplicated record 0 (epoch 0); B writes
    record 1 in epoch 1 at offset 0; leadership goes straight back to A, which writes
    record 2 in epoch 2. B becomes follower and asks for the end of its epoch 1."""
    b_log = ((1, 1),)
    a_log = ((0, 0), (2, 2))
    b_hw = 0
    # A's first offset above epoch 1 is 1: equal to B's own log end, so B keeps its record.
    assert offsets_for_leader_epoch(a_log, 1) == 1 == len(b_log)
    assert truncate_leader_epoch(b_log, b_hw, a_log) == 1
    assert b_log[:1] != a_log[:1]  # ... a record A never had
    # KIP-279 compares epochs too: nothing in common, B drops everything.
    assert truncate_kip279(b_log, b_hw, a_log) == 0
    # And the pre-0.11 rule goes to the HW, 0 here.
    assert truncate_high_watermark(b_log, b_hw, a_log) == 0


def test_unknown_rule_is_rejected():
    with pytest.raises(KeyError):
        truncation_offset("no-such-rule", (), 0, ())
