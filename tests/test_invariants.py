"""The properties of docs/model.md ("Invariants") on hand-built states, with
the exact sentence each prints when it fails."""

from __future__ import annotations

import numpy as np
import pytest

from kmc.checker.contract.properties import state_mask, step_mask
from kmc.checker.contract.protocol import ALWAYS, POSSIBLY, STEP
from kmc.invariants import (
    ALL,
    BY_NAME,
    committed_never_lost,
    high_watermark_below_log_end,
    leader_epoch_monotonic,
    logs_never_diverge,
)
from kmc.model import Action

A, B, C = range(3)


@pytest.fixture
def model(build):
    return build.model(replicas=("A", "B", "C"))


def test_the_properties_in_order():
    assert [p.name for p in ALL] == [
        "HighWatermarkBelowLogEnd", "CommittedNeverLost", "LogsNeverDiverge", "LeaderEpochMonotonic",
        "LeaderCandidateCompleteness", "AcknowledgedNeverLost", "UncommittedNeverExposed", "PartitionRecoverable"]
    assert [p.kind for p in ALL] == [ALWAYS, ALWAYS, ALWAYS, STEP, ALWAYS, ALWAYS, ALWAYS, POSSIBLY]
    # the liveness properties come after ALL (tests/test_liveness_kafka.py), so that what
    # the matrix's grids check stays as it was
    from kmc.invariants import EVERY, LIVENESS

    assert EVERY == ALL + LIVENESS and set(BY_NAME) == {p.name for p in EVERY}
    assert all(p.description for p in EVERY)


def test_every_property_carries_its_mask_and_the_engine_reads_it(model):
    # One value per property: its check and its array form side by side. The engine reads
    # the property's own mask (checker.contract.properties); the kernel answers no property by name.
    (s,) = model.init_states()
    kernel = model.batch_kernel()
    rows = kernel.init_rows([s])
    assert all(p.mask is not None and p.mask.__module__ == p.check.__module__ for p in ALL)
    for p in ALL:
        if p.kind == STEP:
            assert step_mask(kernel, p, rows, np.array([0]), rows).tolist() == p.mask(kernel, rows, np.array([0]), rows).tolist()
        else:
            assert state_mask(kernel, p, rows).tolist() == p.mask(kernel, rows).tolist()
        assert kernel.invariant_mask(p.name, rows) is None and kernel.goal_mask(p.name, rows) is None
        assert kernel.step_mask(p.name, rows, [0], rows) is None


def test_initial_state_satisfies_every_invariant(model):
    (s,) = model.init_states()
    for p in ALL:
        if p.kind == ALWAYS:
            assert p.check(model, s) is None, p.name


# -- HighWatermarkBelowLogEnd ----------------------------------------------------------


def test_hw_below_log_end_holds_at_equality(model, build):
    reps = [build.replica(3, log=[(0, 0)], hw=1), build.replica(3, log=[(0, 0)], hw=1),
            build.replica(3)]
    assert high_watermark_below_log_end(model, build.state(reps)) is None


def test_hw_below_log_end_violated(model, build):
    reps = [build.replica(3, log=[(0, 0)], hw=1), build.replica(3, log=[(0, 0)], hw=2),
            build.replica(3, hw=1)]
    assert high_watermark_below_log_end(model, build.state(reps)) == (
        "replica B's high watermark 2 is past its log end 1")


def test_hw_below_log_end_checks_dead_replicas_too(model, build):
    reps = [build.replica(3), build.replica(3), build.replica(3, alive=False, hw=3)]
    assert high_watermark_below_log_end(model, build.state(reps)) == (
        "replica C's high watermark 3 is past its log end 0")


# -- CommittedNeverLost -------------------------------------------------------------------


def test_committed_never_lost_holds(model, build):
    reps = [build.replica(3, log=[(0, 0), (0, 1), (0, 2)], hw=2), build.replica(3), build.replica(3)]
    s = build.state(reps, committed=[(0, 0, 0), (1, 0, 1)])
    assert committed_never_lost(model, s) is None


def test_committed_never_lost_log_too_short(model, build):
    reps = [build.replica(3, alive=False, log=[(0, 0)]),
            build.replica(3, log=[], epoch=1, leader=B), build.replica(3)]
    s = build.state(reps, leader=B, epoch=1, committed=[(0, 0, 0)])
    assert committed_never_lost(model, s) == (
        "record 0 (epoch 0) at offset 0 was committed but leader B's log ends at 0")


def test_committed_never_lost_other_record_at_offset(model, build):
    reps = [build.replica(3, log=[(0, 0), (1, 2)], epoch=1), build.replica(3), build.replica(3)]
    s = build.state(reps, epoch=1, committed=[(0, 0, 0), (1, 0, 1)])
    assert committed_never_lost(model, s) == (
        "record 1 (epoch 0) at offset 1 was committed but leader A holds record 2 (epoch 1) there")


def test_committed_never_lost_only_judged_while_someone_leads(model, build):
    lost = [(0, 0, 0)]
    # The quorum leader is dead / restarted / on another epoch / nobody: no judgement.
    for a in (build.replica(3, alive=False), build.replica(3, epoch=-1, leader=None),
              build.replica(3, epoch=0, leader=B)):
        s = build.state([a, build.replica(3), build.replica(3)], committed=lost)
        assert committed_never_lost(model, s) is None
    s = build.state([build.replica(3)] * 3, leader=None, committed=lost)
    assert committed_never_lost(model, s) is None
    # The same logs with A leading: violated.
    s = build.state([build.replica(3)] * 3, committed=lost)
    assert committed_never_lost(model, s) is not None


def test_committed_never_lost_ignores_followers(model, build):
    reps = [build.replica(3, log=[(0, 0)]), build.replica(3, log=[(5, 5)]), build.replica(3)]
    assert committed_never_lost(model, build.state(reps, committed=[(0, 0, 0)])) is None


# -- LogsNeverDiverge -------------------------------------------------------------------


def _pair(build, a_log, a_hw, b_log, b_hw, **b_kw):
    a = build.replica(3, log=a_log, hw=a_hw, epoch=1)
    b = build.replica(3, log=b_log, hw=b_hw, **{"epoch": 1, **b_kw})
    return build.state([a, b, build.replica(3, alive=False, epoch=1)], epoch=1)


def test_logs_never_diverge_violated(model, build):
    s = _pair(build, [(0, 0), (1, 2)], 2, [(0, 0), (0, 1)], 2)
    assert logs_never_diverge(model, s) == (
        "replicas A and B disagree at offset 1, below both high watermarks (A 2, B 2): "
        "A holds record 2 (epoch 1), B holds record 1 (epoch 0)")


def test_logs_never_diverge_only_below_the_smaller_hw(model, build):
    # They disagree at offset 1, but B's HW is 1: fine.
    assert logs_never_diverge(model, _pair(build, [(0, 0), (1, 2)], 2, [(0, 0), (0, 1)], 1)) is None
    # Disagreement at offset 0 with HWs 2 and 1: reported, with both HWs.
    s = _pair(build, [(1, 3), (1, 4)], 2, [(0, 0), (0, 1)], 1)
    assert logs_never_diverge(model, s) == (
        "replicas A and B disagree at offset 0, below both high watermarks (A 2, B 1): "
        "A holds record 3 (epoch 1), B holds record 0 (epoch 0)")


def test_logs_never_diverge_ignores_dead_and_other_epochs(model, build):
    diverged = dict(a_log=[(1, 3)], a_hw=1, b_log=[(0, 0)], b_hw=1)
    assert logs_never_diverge(model, _pair(build, **diverged, alive=False)) is None
    assert logs_never_diverge(model, _pair(build, **diverged, epoch=0)) is None
    assert logs_never_diverge(model, _pair(build, **diverged, epoch=-1)) is None
    assert logs_never_diverge(model, _pair(build, **diverged)) is not None


def test_logs_never_diverge_checks_every_pair(model, build):
    a = build.replica(3, log=[(0, 0)], hw=1, epoch=1)
    b = build.replica(3, log=[(0, 0)], hw=1, epoch=1)
    c = build.replica(3, log=[(0, 7)], hw=1, epoch=1)
    assert logs_never_diverge(model, build.state([a, b, c], epoch=1)) == (
        "replicas A and C disagree at offset 0, below both high watermarks (A 1, C 1): "
        "A holds record 0 (epoch 0), C holds record 7 (epoch 0)")


# -- LeaderEpochMonotonic (a step property) -----------------------------------------------


def test_epoch_monotonic_accepts_restart_to_minus_one(model, build):
    before = build.state([build.replica(3, alive=False, epoch=2), build.replica(3, epoch=2),
                          build.replica(3, epoch=2)], epoch=2)
    after = build.state([build.replica(3, epoch=-1, leader=None), build.replica(3, epoch=2),
                         build.replica(3, epoch=2)], epoch=2)
    assert leader_epoch_monotonic(model, before, Action("Restart", A), after) is None


def test_epoch_monotonic_accepts_rises_and_crashes(model, build):
    before = build.state([build.replica(3, epoch=1)] * 3, epoch=1)
    after = build.state([build.replica(3, epoch=2), build.replica(3, alive=False, epoch=1),
                         build.replica(3, epoch=1)], epoch=2)
    assert leader_epoch_monotonic(model, before, Action("ElectLeader", A), after) is None


def test_epoch_monotonic_rejects_replica_decrease(model, build):
    before = build.state([build.replica(3, epoch=2)] * 3, epoch=2)
    after = build.state([build.replica(3, epoch=2), build.replica(3, epoch=1),
                         build.replica(3, epoch=2)], epoch=2)
    assert leader_epoch_monotonic(model, before, Action("BecomeFollower", B), after) == (
        "replica B's leader epoch went down from 2 to 1 by BecomeFollower(B)")


def test_epoch_monotonic_rejects_live_replica_to_minus_one(model, build):
    """Going to -1 is a restart only if the replica was dead before the step."""
    before = build.state([build.replica(3, epoch=2)] * 3, epoch=2)
    after = build.state([build.replica(3, epoch=2), build.replica(3, epoch=2),
                         build.replica(3, epoch=-1, leader=None)], epoch=2)
    assert leader_epoch_monotonic(model, before, Action("Restart", C), after) == (
        "replica C's leader epoch went down from 2 to -1 by Restart(C)")


def test_epoch_monotonic_rejects_quorum_decrease(model, build):
    before = build.state([build.replica(3, epoch=1)] * 3, epoch=2)
    after = build.state([build.replica(3, epoch=1)] * 3, epoch=1)
    assert leader_epoch_monotonic(model, before, Action("Crash", A, 0), after) == (
        "the controller's leader epoch went down from 2 to 1 by Crash(A, keeps 0)")


def test_epoch_monotonic_holds_on_every_step_from_the_start(model):
    """Every transition of a few levels of the real model keeps epochs monotonic."""
    frontier = list(model.init_states())
    for _ in range(4):
        nxt = []
        for s in frontier:
            for a, t in model.successors(s):
                assert leader_epoch_monotonic(model, s, a, t) is None
                nxt.append(t)
        frontier = nxt[:200]


@pytest.mark.parametrize(
    "name, some",
    [
        ("hw-data-loss", {"CommittedNeverLost", "LogsNeverDiverge", "LeaderCandidateCompleteness"}),
        ("acks1-data-loss", {"AcknowledgedNeverLost"}),
        ("acks-all-two-replicas-min-isr", {"AcknowledgedNeverLost", "CommittedNeverLost"}),
    ],
)
def test_every_state_mask_reads_rows_laid_out_by_column_alike(name, some):
    """The batch engine gives the Kafka kernel's array forms the new rows a column at a
    time (``checker.contract.protocol.columns``): on every reachable state of three shipped specs
    with violations, each state property's mask is the same over either layout and
    equals its per-state check; ``some`` are violated in some states, not none or all."""
    from pathlib import Path

    from helpers import reachable
    from kmc.app.specs import load_spec
    from kmc.checker.contract.protocol import columns

    model = load_spec(Path(__file__).parent.parent / "specs" / f"{name}.toml").model()
    kernel = model.batch_kernel()
    states = reachable(model, 10**5)
    rows = np.stack([kernel.encode(s) for s in states])
    by_column = columns(rows)
    assert by_column.flags.f_contiguous and not rows.flags.f_contiguous and (by_column == rows).all()
    assert kernel.by_columns
    violated = set()
    for p in (p for p in ALL if p.kind == ALWAYS):
        want = [p.check(model, s) is not None for s in states]
        assert state_mask(kernel, p, rows).tolist() == want, p.name
        assert state_mask(kernel, p, by_column).tolist() == want, p.name
        if 0 < sum(want) < len(want):
            violated.add(p.name)
    assert some <= violated, violated
