"""The operator's min ISR changes and failed log directories (docs/model.md, "Operator actions:
changing min.insync.replicas at run time and a failed log directory"): ChangeMinIsr, DiskFailure,
ApplyMinIsr, and the bugs KAFKA-16540 (the controller keeps the ELR across a min ISR change) and
KAFKA-16234 (a failed directory's partition re-created empty and serving).

The rows are the known verdicts of that section, computed by TLC on an independent rendering of
the model: distinct states where every property holds, the length (in states, initial included)
of each shortest counterexample, and PartitionRecoverable's trap counts. Rows of at most 60,000
states run in every suite on both paths (the per-state engine and the batch kernel, which
tests/test_operators_kernel.py compares with the model on every parent); the larger ones with
KMC_SLOW=1. The naive oracle (tests/oracle.py)
recomputes the small ones from the text alone.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path

import oracle
import pytest
from kmc.checker.engines import make_engine
from kmc.checker.local.states import LocalEngine, Options
from kmc.invariants import BY_NAME
from kmc.invariants.kafka import committed_never_lost, leader_epoch_monotonic
from kmc.model import Config
from kmc.model.actions import Action
from kmc.model.kafka import KafkaModel

SLOW = pytest.mark.skipif(os.environ.get("KMC_SLOW") != "1",
                          reason="100,000 to 7 million states on the per-state path: set KMC_SLOW=1")
CNL, LND, LCC, LEM = "CommittedNeverLost", "LogsNeverDiverge", "LeaderCandidateCompleteness", "LeaderEpochMonotonic"
ANL, PR = "AcknowledgedNeverLost", "PartitionRecoverable"
SAFETY = (CNL, LND, LCC, LEM)
B16540, B16234 = ("KAFKA-16540",), ("KAFKA-16234",)
A, B, C = 0, 1, 2


def config(group, options="", **kw) -> Config:
    """The section's configurations, all under leader-epoch-2.1 with epochs <= 2 and 2 records:
    C1 = 2 replicas, min ISR 1, 2 crashes; C2 = C1 + unflushed_loss; C5 = 3 replicas, min ISR 2,
    1 crash; LRS2 = C5 with 2 crashes and unflushed_loss; LRS = LRS2 with 1 crash. ``options``:
    "ELR" (the HW gate and the eligible leader replicas), "AP" (alter_partition with
    broker_epochs)."""
    base: dict = dict(truncation="leader-epoch-2.1", max_leader_epoch=2, max_messages=2)
    if group in ("C1", "C2"):
        base.update(replicas=("A", "B"), min_insync_replicas=1, max_crashes=2, unflushed_loss=group == "C2")
    else:
        base.update(replicas=("A", "B", "C"), min_insync_replicas=2, max_crashes=2 if group == "LRS2" else 1,
                    unflushed_loss=group in ("LRS", "LRS2"))
    if "ELR" in options:
        base.update(hw_requires_min_isr=True, eligible_leader_replicas=True)
    if "AP" in options:
        base.update(alter_partition=True, broker_epochs=True)
    base.update(kw)
    return Config(**base)


def explore(cfg, properties, keep_going=True, max_depth=None, path="batch"):
    from kmc.checker.local.rows import BatchEngine

    model = KafkaModel(cfg)
    options = Options(keep_going=keep_going, max_depth=max_depth)
    engine = LocalEngine if path == "per-state" else BatchEngine
    result = engine(model, [BY_NAME[p] for p in properties], options).run()
    return model, result


def traces(result) -> dict:
    return {p: len(v.path) for p, v in result.violations.items()}


def assert_traces_replay(model, result):
    """Every counterexample replays from its choices; an invariant's last state is the first of
    its path the invariant rejects, with the reported explanation; a trap is explained."""
    from kmc.checker.core.trace import replay_choices

    for prop, v in result.violations.items():
        path = v.path
        assert replay_choices(model, path.init_index, path.choices) == path
        p = BY_NAME[prop]
        if p.kind == "always":
            assert p.check(model, path.states[-1]) == v.explanation
            assert all(p.check(model, s) is None for s in path.states[:-1])
        elif p.kind == "possibly":
            assert v.explanation == p.explain(model, path.states[-1])


# -- the known verdicts: (configuration, properties checked, distinct, {property: trace length}) --

MIN_ISR = dict(min_isr_changes=(2, 1))  # the 2-replica groups: raise, then lower back
LOWER = dict(min_isr_changes=(1,))  # the 3-replica groups: lower
DISK = dict(max_disk_failures=1)
ROWS = {
    # min ISR changes
    "c1-min-isr": (config("C1", **MIN_ISR), SAFETY, 12_801, {}),
    "c1-min-isr-elr": (config("C1", "ELR", **MIN_ISR), SAFETY, 19_886, {}),
    "c1-min-isr-elr-16540": (config("C1", "ELR", bugs=B16540, **MIN_ISR), SAFETY, 22_405, {CNL: 8, LCC: 6}),
    "c2-min-isr": (config("C2", **MIN_ISR), SAFETY, 31_956, {CNL: 6, LCC: 5}),
    "c2-min-isr-elr": (config("C2", "ELR", **MIN_ISR), SAFETY, 34_965, {}),
    "c2-min-isr-elr-16540": (config("C2", "ELR", bugs=B16540, **MIN_ISR), SAFETY, 39_852, {CNL: 8, LCC: 6}),
    "c2-min-isr-elr-ap": (config("C2", "ELR AP", **MIN_ISR), SAFETY, 54_674, {}),
    "c2-min-isr-elr-ap-16540": (config("C2", "ELR AP", bugs=B16540, **MIN_ISR), SAFETY, 63_165, {CNL: 9, LCC: 7}),
    "c5-min-isr": (config("C5", **LOWER), SAFETY, 98_948, {}),
    "c5-min-isr-elr": (config("C5", "ELR", **LOWER), SAFETY, 127_358, {}),
    "c5-min-isr-elr-16540": (config("C5", "ELR", bugs=B16540, **LOWER), SAFETY, 160_780, {CNL: 8, LCC: 6}),
    "c5-min-isr-elr-acks": (config("C5", "ELR", acks="all", **LOWER), (ANL,), 145_978, {}),
    "c5-min-isr-elr-acks-16540": (config("C5", "ELR", acks="all", bugs=B16540, **LOWER), SAFETY + (ANL,), 183_997,
                                  {CNL: 8, LCC: 6, ANL: 8}),
    "c5-min-isr-elr-ap": (config("C5", "ELR AP", **LOWER), SAFETY, 283_275, {}),
    "c5-min-isr-elr-ap-16540": (config("C5", "ELR AP", bugs=B16540, **LOWER), SAFETY, 348_587, {CNL: 10, LCC: 8}),
    "lrs2-min-isr-elr": (config("LRS2", "ELR", **LOWER), SAFETY, 2_401_113, {}),
    "lrs-min-isr-elr": (config("LRS", "ELR", **LOWER), SAFETY, 184_415, {}),
    "lrs-min-isr-elr-16540": (config("LRS", "ELR", bugs=B16540, **LOWER), SAFETY, 233_822, {CNL: 8, LCC: 6}),
    # disk failures
    "c1-disk": (config("C1", **DISK), SAFETY, 20_259, {CNL: 6, LCC: 5}),
    "c1-disk-16234": (config("C1", bugs=B16234, **DISK), SAFETY, 17_938, {CNL: 5, LCC: 4}),
    "c1-disk-elr": (config("C1", "ELR", **DISK), SAFETY, 19_058, {}),
    "c1-disk-elr-16234": (config("C1", "ELR", bugs=B16234, **DISK), SAFETY, 18_333, {CNL: 5, LCC: 4}),
    "c2-disk": (config("C2", **DISK), SAFETY, 39_804, {CNL: 6, LCC: 5}),
    "c2-disk-16234": (config("C2", bugs=B16234, **DISK), SAFETY, 36_940, {CNL: 5, LCC: 4}),
    "c2-disk-elr": (config("C2", "ELR", **DISK), SAFETY, 28_332, {}),
    "c2-disk-elr-16234": (config("C2", "ELR", bugs=B16234, **DISK), SAFETY, 29_020, {CNL: 5, LCC: 4}),
    "c2-disk-elr-ap": (config("C2", "ELR AP", **DISK), SAFETY, 43_406, {}),
    "c2-disk-elr-ap-16234": (config("C2", "ELR AP", bugs=B16234, **DISK), SAFETY, 48_976, {CNL: 6, LCC: 5}),
    "c5-disk": (config("C5", **DISK), SAFETY, 469_976, {CNL: 7, LCC: 6}),
    "c5-disk-16234": (config("C5", bugs=B16234, **DISK), SAFETY, 423_022, {CNL: 6, LCC: 5}),
    "c5-disk-elr": (config("C5", "ELR", **DISK), SAFETY, 644_853, {}),
    "c5-disk-elr-16234": (config("C5", "ELR", bugs=B16234, **DISK), SAFETY, 586_323, {CNL: 9, LCC: 7}),
    "c5-disk-elr-acks": (config("C5", "ELR", acks="all", **DISK), (ANL,), 843_220, {}),
    "c5-disk-elr-ap": (config("C5", "ELR AP", **DISK), SAFETY, 1_250_329, {}),
    "lrs2-disk-elr": (config("LRS2", "ELR", **DISK), SAFETY, 6_919_023, {}),
    "lrs-disk-elr": (config("LRS", "ELR", **DISK), SAFETY, 848_816, {}),
    # min_isr_lag: a raise to 3 of C5's min ISR 2
    "c5-raise-elr": (config("C5", "ELR", min_isr_changes=(3,)), SAFETY, 168_151, {}),
    "c5-raise-elr-lag": (config("C5", "ELR", min_isr_changes=(3,), min_isr_lag=True), SAFETY, 312_016,
                         {CNL: 11, LCC: 7}),
    "c5x2-raise-elr": (config("C5", "ELR", min_isr_changes=(3,), max_crashes=2), SAFETY, 1_775_769, {}),
}
# Rows TLC ran with CommittedNeverLost and LeaderCandidateCompleteness alone, stopping at the
# violation: only the trace lengths are known.
VIOLATION_ONLY = {
    "lrs2-min-isr-elr-16540": (config("LRS2", "ELR", bugs=B16540, **LOWER), (CNL, LCC), {CNL: 8, LCC: 6}),
    "lrs2-min-isr-elr-acks-16540": (config("LRS2", "ELR", acks="all", bugs=B16540, **LOWER), (ANL,), {ANL: 8}),
    "c5-disk-elr-acks-16234": (config("C5", "ELR", acks="all", bugs=B16234, **DISK), (ANL,), {ANL: 9}),
    "c5-disk-elr-ap-16234": (config("C5", "ELR AP", bugs=B16234, **DISK), (CNL, LCC), {CNL: 10, LCC: 8}),
    "lrs2-disk-elr-16234": (config("LRS2", "ELR", bugs=B16234, **DISK), (CNL, LCC), {CNL: 9, LCC: 7}),
    "c5x2-raise-elr-lag": (config("C5", "ELR", min_isr_changes=(3,), min_isr_lag=True, max_crashes=2), (CNL, LCC),
                           {CNL: 10, LCC: 7}),
}
FAST = 60_000


def _row(name, distinct):
    return pytest.param(name, id=name, marks=[] if distinct <= FAST else [pytest.mark.slow, SLOW])


# the per-state path in every suite only where a test says so (tests/test_operators_kernel.py
# compares the two paths on every parent of small configurations)
@pytest.mark.parametrize("path", [pytest.param("per-state", marks=pytest.mark.skipif(
    os.environ.get("KMC_SLOW") != "1", reason="the per-state path on the tables' rows: set KMC_SLOW=1")), "batch"])
@pytest.mark.parametrize("name", [_row(n, row[2]) for n, row in ROWS.items()])
def test_known_verdict(name, path):
    """A row of the table, on both paths; a row of PartitionRecoverable's table (below) of the
    same configuration is checked in the same run."""
    cfg, properties, distinct, want = ROWS[name]
    recoverable = RECOVERABLE.get(name)
    model, result = explore(cfg, properties + ((PR,) if recoverable else ()), path=path)
    assert result.complete and result.stats.distinct == distinct
    assert {p: n for p, n in traces(result).items() if p != PR} == want
    assert_traces_replay(model, result)
    if recoverable:
        _, distinct_too, traps, length = recoverable
        v = result.violations.get(PR)
        assert distinct_too == distinct
        assert (0 if v is None else v.traps, None if v is None else len(v.path)) == (traps, length)


@pytest.mark.parametrize("name", [pytest.param(n, id=n, marks=[pytest.mark.slow, SLOW]) for n in VIOLATION_ONLY])
def test_known_violation(name):
    cfg, properties, want = VIOLATION_ONLY[name]
    model, result = explore(cfg, properties, max_depth=max(want.values()))  # each found, at its depth
    assert traces(result) == want
    assert_traces_replay(model, result)


# -- PartitionRecoverable: (configuration, distinct, traps, trace length or None) --------------

RECOVERABLE = {
    "c1-disk-elr": (config("C1", "ELR", **DISK), 19_058, 3_300, 4),
    "c1-disk-elr-16234": (config("C1", "ELR", bugs=B16234, **DISK), 18_333, 0, None),
    "c2-disk-elr": (config("C2", "ELR", **DISK), 28_332, 8_692, 4),
    "c2-disk-elr-16234": (config("C2", "ELR", bugs=B16234, **DISK), 29_020, 5_402, 4),
    "c2-min-isr-elr": (config("C2", "ELR", **MIN_ISR), 34_965, 5_554, 4),
    "c2-min-isr-elr-16540": (config("C2", "ELR", bugs=B16540, **MIN_ISR), 39_852, 4_772, 4),
    "c5-min-isr-elr": (config("C5", "ELR", **LOWER), 127_358, 0, None),
    "c5-min-isr-elr-16540": (config("C5", "ELR", bugs=B16540, **LOWER), 160_780, 0, None),
    "lrs-disk-elr": (config("LRS", "ELR", **DISK), 848_816, 21_022, 5),
    "lrs-min-isr-elr": (config("LRS", "ELR", **LOWER), 184_415, 4_994, 6),
    "lrs-min-isr-elr-16540": (config("LRS", "ELR", bugs=B16540, **LOWER), 233_822, 3_103, 6),
}


def test_every_row_of_partition_recoverable_is_a_row_of_the_table():
    """(test_known_verdict checks them, in the run of the same configuration.)"""
    for name, (cfg, distinct, _, _) in RECOVERABLE.items():
        assert ROWS[name][0] == cfg and ROWS[name][2] == distinct


def test_the_fixed_disk_failure_of_the_last_isr_member_is_a_trap():
    """C1 + ELR: Produce(A); ShrinkIsr(B), ISR {A} at min ISR 1; DiskFailure(A): ISR {}, A offline
    and its restart unclean, B in neither set; the trap's explanation says so."""
    model, result = explore(config("C1", "ELR", **DISK), (PR,))
    v = result.violations[PR]
    assert [model.format_action(a) for a in v.path.actions] == ["Produce(A)", "ShrinkIsr(B)", "DiskFailure(A)"]
    assert v.explanation == ("ISR {} and ELR {A}; unclean election is off; no last-known-leader election; A's "
                             "failed log directory lost committed record 0, so its restart removes it from the ISR "
                             "and the ELR: no replica can ever be elected again")


# -- the shortest counterexamples, step by step ---------------------------------------------------

STORIES = {
    # KAFKA-16540 in the 2-replica groups: raise min ISR so that a shrink puts B in the ELR, lower it
    # again (the ELR kept), and the HW moves past B.
    ("c1-min-isr-elr-16540", CNL): ["Produce(A)", "ChangeMinIsr", "ShrinkIsr(B)", "ChangeMinIsr", "Produce(A)",
                                    "Crash(A)", "ElectLeader(B)"],
    # KAFKA-16234: the controller puts A, which it removes from an ISR {A}, in the ELR; A re-creates
    # the partition empty and is elected from the ELR.
    ("c1-disk-elr-16234", CNL): ["Produce(A)", "ShrinkIsr(B)", "DiskFailure(A)", "ElectLeader(A)"],
    ("c1-disk-elr-16234", LCC): ["Produce(A)", "ShrinkIsr(B)", "DiskFailure(A)"],
    # Without the ELR a disk failure is a lossy crash the controller hears of: the ISR {A} is kept.
    ("c1-disk", CNL): ["Produce(A)", "ShrinkIsr(B)", "DiskFailure(A)", "Restart(A)", "ElectLeader(A)"],
    ("c1-disk-16234", CNL): ["Produce(A)", "ShrinkIsr(B)", "DiskFailure(A)", "ElectLeader(A)"],
    # The 3-replica stories (KMC_SLOW=1).
    # (the section's story passes the HW with a fetch of C; Produce(A), enumerated first, does too)
    ("c5-min-isr-elr-16540", CNL): ["Produce(A)", "ShrinkIsr(C)", "ShrinkIsr(B)", "ChangeMinIsr", "Produce(A)",
                                    "Crash(A)", "ElectLeader(B)"],
    ("c5-disk-elr-16234", CNL): ["Produce(A)", "FetchRequest(C)", "FetchResponse(C)", "FetchRequest(C)",
                                 "Crash(C)", "ShrinkIsr(B)", "DiskFailure(A)", "ElectLeader(A)"],
    # (the section's story writes record 1 after C's second fetch; here before C takes the first)
    ("c5-raise-elr-lag", CNL): ["Produce(A)", "FetchRequest(C)", "Produce(A)", "FetchResponse(C)",
                                "FetchRequest(C)", "ChangeMinIsr", "ShrinkIsr(B)", "ShrinkIsr(C)", "Crash(A)",
                                "ElectLeader(B)"],
}


def _swap_b_c(texts) -> list[str]:
    """The same steps with B and C renamed into each other (a symmetric image)."""
    return [t.replace("(B)", "(x)").replace("(C)", "(B)").replace("(x)", "(C)") for t in texts]


@pytest.mark.parametrize("name,prop", [pytest.param(n, p, id=f"{n}-{p}", marks=_row(n, ROWS[n][2]).marks)
                                       for n, p in STORIES])
def test_the_shortest_counterexample_is_the_story(name, prop):
    """The engine prints the story, or, with three replicas, its image with B and C swapped (the
    first in the order of actions, which takes B before C)."""
    cfg, _, _, _ = ROWS[name]
    model, result = explore(cfg, (prop,), keep_going=False)
    got = [model.format_action(a) for a in result.violations[prop].path.actions]
    story = STORIES[name, prop]
    assert got == (story if cfg.n == 2 else _swap_b_c(story))


def _sentences(model, path) -> list[str]:
    states = path.states
    return [model.describe_step(states[i], a, states[i + 1]) for i, a in enumerate(path.actions)]


def test_the_trace_names_the_kept_elr_of_kafka_16540():
    model, result = explore(ROWS["c1-min-isr-elr-16540"][0], (CNL,), keep_going=False)
    said = _sentences(model, result.violations[CNL].path)
    assert said[1] == "the operator raises min ISR 1 → 2"  # the ELR is empty: nothing to keep
    assert said[3] == ("the operator lowers min ISR 2 → 1; the controller keeps the ELR {B} (KAFKA-16540): "
                       "replicas that left the ISR under min ISR 2 stay electable")
    assert said[6].endswith("but B lacks committed record 0 (epoch 0) at offset 0, record 1 (epoch 0) at offset 1: "
                            "it entered the ELR under a higher min ISR, and the controller kept it there when min "
                            "ISR was lowered and the high watermark moved on (KAFKA-16540)")


def test_the_trace_names_the_recreated_partition_of_kafka_16234():
    model, result = explore(ROWS["c1-disk-elr-16234"][0], (CNL,), keep_going=False)
    said = _sentences(model, result.violations[CNL].path)
    assert said[2] == ("A's log directory fails: its log of 1 record is gone; the controller removes A from the "
                       "ISR {A} → {}, the ELR {} → {A} (A enters it: a fenced broker's log is presumed intact); "
                       "A re-creates the partition empty and keeps serving it (KAFKA-16234), with no leader and "
                       "epoch -1")
    assert said[3].endswith("but A lacks committed record 0 (epoch 0) at offset 0: its log directory failed and "
                            "it re-created the partition empty (KAFKA-16234)")


def test_the_fixed_disk_failure_says_the_partition_is_offline():
    model, result = explore(ROWS["c1-disk"][0], (CNL,), keep_going=False)
    said = _sentences(model, result.violations[CNL].path)
    assert said[2] == ("A's log directory fails: its log of 1 record is gone; the controller keeps A in the ISR "
                       "{A} (it never empties it); the partition stays offline on A until its broker restarts")


# -- the actions, by hand ---------------------------------------------------------------------------

def _successor(model, state, text):
    found = [t for a, t in model.successors(state) if model.format_action(a) == text]
    assert len(found) == 1, [model.format_action(a) for a, _ in model.successors(state)]
    return found[0]


def _walk(model, *texts):
    state = model.init_states()[0]
    for text in texts:
        state = _successor(model, state, text)
    return state


def test_change_min_isr_clears_the_elr_also_for_an_unchanged_value_and_needs_no_leader():
    """C5 + ELR, min ISR 2 set to 2 again, after B left the ISR {A, B} for {A} (below 2: B entered
    the ELR) and A crashed: the ELR {B} is cleared (Kafka writes a ClearElrRecord even for an
    unchanged value); with KAFKA-16540 it stays. The change is enabled with no leader too, and
    once only."""
    for bugs, elr in (((), ()), (B16540, (B,))):
        model = KafkaModel(config("C5", "ELR", min_isr_changes=(2,), bugs=bugs))
        s = _walk(model, "Produce(A)", "ShrinkIsr(C)", "ShrinkIsr(B)", "Crash(A)")
        assert s.quorum.elr == (B,) and s.leader() is None
        t = _successor(model, s, "ChangeMinIsr")
        assert t.quorum.elr == elr and t.quorum.min_isr_step == 1 and t.quorum.isr == s.quorum.isr
        assert t.replicas == s.replicas and t.committed == s.committed
        assert "ChangeMinIsr" not in [model.format_action(a) for a, _ in model.successors(t)]


def test_clearing_the_elr_drops_the_request_in_flight():
    model = KafkaModel(config("C5", "ELR AP", min_isr_changes=(1,)))
    s = _walk(model, "Produce(A)", "ShrinkIsr(C)", "AlterPartition(C)", "ShrinkIsr(B)", "AlterPartition(B)")
    assert s.quorum.isr == (A,) and s.quorum.elr == (B,)
    s = _successor(model, _successor(model, s, "FetchRequest(B)"), "FetchResponse(B)")
    s = _successor(model, s, "FetchRequest(B)")
    s = _successor(model, s, "ExpandIsr(B)")
    assert s.quorum.alter == (A, "expand", B)
    t = _successor(model, s, "ChangeMinIsr")
    assert t.quorum.elr == () and t.quorum.alter is None
    plain = KafkaModel(config("C5", "AP", min_isr_changes=(1,)))  # no ELR: nothing to clear, the request stays
    s = _walk(plain, "Produce(A)", "ShrinkIsr(C)")
    assert _successor(plain, s, "ChangeMinIsr").quorum.alter == (A, "shrink", C)


def test_the_leader_min_isr_lags_with_min_isr_lag():
    """C5 + ELR, [1] with min_isr_lag: after ChangeMinIsr the controller's min ISR is 1 (and it
    clears the ELR {B}) while the leader's broker still refuses to produce with an ISR of 1
    until ApplyMinIsr; ApplyMinIsr is enabled once, and is weakly fair."""
    model = KafkaModel(config("C5", "ELR", min_isr_changes=(1,), min_isr_lag=True))
    s = _walk(model, "Produce(A)", "ShrinkIsr(C)", "ShrinkIsr(B)")
    assert s.quorum.elr == (B,)
    s = _successor(model, s, "ChangeMinIsr")
    assert s.quorum.elr == () and s.quorum.min_isr_step == 1 and s.leader_min_isr_step == 0
    enabled = [model.format_action(a) for a, _ in model.successors(s)]
    assert "Produce(A)" not in enabled and enabled[-1] == "ApplyMinIsr"
    t = _successor(model, s, "ApplyMinIsr")
    assert t.leader_min_isr_step == 1 and t.quorum == s.quorum and t.replicas == s.replicas
    enabled = [model.format_action(a) for a, _ in model.successors(t)]
    assert "Produce(A)" in enabled and "ApplyMinIsr" not in enabled
    assert model.fair_instances()[-1] == "ApplyMinIsr"
    assert model.fair_instance(s, Action("ApplyMinIsr", 0)) == "ApplyMinIsr"
    assert model.fair_instance(s, Action("ChangeMinIsr", 0)) is None
    assert model.fair_instance(s, Action("DiskFailure", A)) is None
    # without the lag the leader's broker applies the change in the same step
    plain = KafkaModel(config("C5", "ELR", min_isr_changes=(1,)))
    s = _walk(plain, "Produce(A)", "ShrinkIsr(C)", "ShrinkIsr(B)", "ChangeMinIsr")
    assert "Produce(A)" in [plain.format_action(a) for a, _ in plain.successors(s)]
    assert "ApplyMinIsr" not in plain.action_names() and "ApplyMinIsr" not in plain.fair_instances()


def test_the_hw_gate_reads_the_leader_min_isr_and_the_elr_the_controller_min_isr():
    """The min_isr_lag story's step: with the controller at min ISR 3 and the leader's broker at 2,
    ShrinkIsr(B) puts B in the ELR (ISR {A, C} below 3) and A's HW passes record 0 (2 members, at
    the leader's min ISR 2)."""
    model = KafkaModel(config("C5", "ELR", min_isr_changes=(3,), min_isr_lag=True))
    s = _walk(model, "Produce(A)", "FetchRequest(C)", "FetchResponse(C)", "FetchRequest(C)", "Produce(A)",
              "ChangeMinIsr")
    assert s.replicas[A].hw == 0
    t = _successor(model, s, "ShrinkIsr(B)")
    assert t.quorum.isr == (A, C) and t.quorum.elr == (B,)
    assert t.replicas[A].hw == 1 and t.committed == ((0, 0, 0),)
    applied = _successor(model, _successor(model, s, "ApplyMinIsr"), "ShrinkIsr(B)")
    assert applied.quorum.elr == (B,) and applied.replicas[A].hw == 0  # the gate at 3 holds the HW


def test_disk_failure_of_a_follower_fixed_and_with_kafka_16234():
    """C5 + ELR: B's directory fails after it fetched record 0. Fixed: B is down with an empty log,
    lossy, out of the ISR (still at min ISR 2: no ELR), and A forgets B's log end. KAFKA-16234:
    B stays up following A in its epoch, empty, and may fetch from offset 0."""
    for bugs in ((), B16234):
        model = KafkaModel(config("C5", "ELR", bugs=bugs, **DISK))
        s = _walk(model, "Produce(A)", "FetchRequest(B)", "FetchResponse(B)", "FetchRequest(B)")
        assert s.replicas[A].remote_leo[B] == 1
        t = _successor(model, s, "DiskFailure(B)")
        b = t.replicas[B]
        assert (b.log, b.hw, b.inflight, b.remote_leo) == ((), 0, None, (0, 0, 0))
        assert t.quorum.isr == (A, C) and t.quorum.elr == () and t.replicas[A].remote_leo[B] == 0
        assert t.disk_failures == 1 and t.crashes == 0
        assert "DiskFailure(A)" not in [model.format_action(a) for a, _ in model.successors(t)]  # at most 1
        if bugs:
            assert b.alive and not b.lossy and (b.leader, b.epoch) == (A, 0)
            assert "FetchRequest(B)" in [model.format_action(a) for a, _ in model.successors(t)]
        else:
            assert not b.alive and b.lossy and (b.leader, b.epoch) == (A, 0)


def test_a_disk_failure_may_move_the_hw():
    """C5: B has fetched record 0, C lags; C's directory fails. The controller removes C (ISR
    {A, B}, at min ISR 2) and A's HW step passes record 0."""
    model = KafkaModel(config("C5", "ELR", **DISK))
    s = _walk(model, "Produce(A)", "FetchRequest(B)", "FetchResponse(B)", "FetchRequest(B)")
    assert s.replicas[A].hw == 0
    t = _successor(model, s, "DiskFailure(C)")
    assert t.quorum.isr == (A, B) and t.replicas[A].hw == 1 and t.committed == ((0, 0, 0),)


def test_leader_epoch_monotonic_allows_the_recreated_partition_only():
    model = KafkaModel(config("C1", "ELR", bugs=B16234, **DISK))
    s = _walk(model, "Produce(A)")
    t = _successor(model, s, "DiskFailure(A)")
    assert t.replicas[A].alive and t.replicas[A].epoch == -1 and s.replicas[A].epoch == 0
    assert leader_epoch_monotonic(model, s, Action("DiskFailure", A), t) is None
    assert leader_epoch_monotonic(model, s, Action("BecomeFollower", A), t) == (
        "replica A's leader epoch went down from 0 to -1 by BecomeFollower(A)")
    fixed = KafkaModel(config("C1", "ELR", **DISK))
    assert leader_epoch_monotonic(fixed, s, Action("DiskFailure", A), t) == (
        "replica A's leader epoch went down from 0 to -1 by DiskFailure(A)")


def test_the_actions_appear_in_order_and_only_with_their_options():
    plain = KafkaModel(config("C1"))
    assert not {"ChangeMinIsr", "DiskFailure", "ApplyMinIsr"} & set(plain.action_names())
    model = KafkaModel(config("C1", "AP", min_isr_changes=(2,), min_isr_lag=True, **DISK))
    assert model.action_names()[-4:] == ("AlterPartition", "ChangeMinIsr", "DiskFailure", "ApplyMinIsr")
    s = _walk(model, "ChangeMinIsr")
    enabled = [model.format_action(a) for a, _ in model.successors(s)]
    assert enabled[-3:] == ["DiskFailure(A)", "DiskFailure(B)", "ApplyMinIsr"]


# -- the engines: these configurations run on the batch kernel, on every engine ---------------------

# C1 + ELR with one record, one crash, [2, 1] and one disk failure under both bugs: every new
# action but ApplyMinIsr, and both bugs.
SMALL = config("C1", "ELR", max_messages=1, max_crashes=1, bugs=B16540 + B16234, **MIN_ISR, **DISK)
# C5 + ELR with one record, no crash, [1] with min_isr_lag and one disk failure under both bugs:
# 15,056 states (CommittedNeverLost fails in 8).
SMALL3 = config("C5", "ELR", max_messages=1, max_crashes=0, min_isr_changes=(1,), min_isr_lag=True,
                bugs=B16540 + B16234, **DISK)


def test_the_kernel_runs_these_configurations():
    for cfg in (SMALL, SMALL3, config("C1", **MIN_ISR), config("C1", **DISK)):
        model = KafkaModel(cfg)
        assert model.batch_unsupported() is None and model.batch_kernel().action_names == model.action_names()


def _summary(result):
    s = result.stats
    return (s.distinct, s.generated, s.depth, s.levels, traces(result),
            {p: v.path.choices for p, v in result.violations.items()})


@functools.lru_cache(maxsize=None)
def _per_state(cfg):
    """The per-state run of ``cfg`` with every property of its model, keep_going: run once in a
    process, read by each test that compares an engine with it (none changes it)."""
    model = KafkaModel(cfg)
    return LocalEngine(model, list(model.properties()), Options(keep_going=True)).run()


@pytest.mark.parametrize("options", [
    pytest.param(Options(keep_going=True), id="local"),
    pytest.param(Options(keep_going=True, workers=2), id="workers"),
    pytest.param(Options(keep_going=True, store="disk"), id="disk-store"),
])
def test_every_local_engine_runs_them_on_the_batch_kernel(options, tmp_path):
    model = KafkaModel(SMALL)
    props = list(model.properties())
    want = _per_state(SMALL)
    if options.store == "disk":
        options = Options(keep_going=True, store="disk", store_dir=str(tmp_path))
    engine = make_engine(model, props, options, data_root=str(tmp_path))
    assert engine.path != "per-state" and engine.per_state_because is None
    got = engine.run()
    assert _summary(got) == _summary(want)
    assert traces(want) == {"CommittedNeverLost": 5, "LeaderCandidateCompleteness": 4}


def test_symmetry_reduction_counts_the_orbits():
    """Three replicas, A leading: B and C may be swapped. The new variables are counts, so the
    reduced run stores one state an orbit, counted here by brute force, with the same verdicts."""
    from helpers import reachable
    from kmc.model.state import encode
    from kmc.model.symmetry import permute, symmetries

    model = KafkaModel(SMALL3)
    every = reachable(model, 10**6)
    perms = symmetries(model.config)
    orbits = {min(encode(permute(s, p)) for p in perms) for s in every}
    assert any(s.disk_failures and s.quorum.min_isr_step and s.leader_min_isr_step for s in every)
    props = [p for p in model.properties() if p.symmetric]
    plain = make_engine(model, props, Options(keep_going=True)).run()
    engine = make_engine(model, props, Options(keep_going=True, symmetry=True))
    assert engine.path != "per-state"
    reduced = engine.run()
    per_state = make_engine(model, props, Options(keep_going=True, symmetry=True), per_state=True).run()
    assert _summary(per_state) == _summary(reduced)
    assert plain.stats.distinct == len(every) > reduced.stats.distinct == len(orbits)
    assert traces(plain) == traces(reduced)
    assert_traces_replay(model, reduced)


def test_a_checkpoint_resumes_to_the_same_counts(monkeypatch):
    import kmc.checker.core.driver
    import kmc.checker.local.rows

    model = KafkaModel(SMALL)
    props = list(model.properties())
    want = _per_state(SMALL)
    monkeypatch.setattr(kmc.checker.local.rows, "CHUNK_ROWS", 64)
    engine = make_engine(model, props, Options(keep_going=True, max_memory=1 << 30))
    monkeypatch.setattr(kmc.checker.core.driver, "resident_bytes", lambda: (1 << 40) * (len(engine.seen) > 500))
    partial = engine.run()
    assert partial.stopped == "max-memory"
    snap = engine.snapshot()
    monkeypatch.setattr(kmc.checker.core.driver, "resident_bytes", lambda: 0)
    resumed = make_engine(model, props, Options(keep_going=True))
    resumed.restore(snap)
    assert _summary(resumed.run()) == _summary(want)


@pytest.mark.spark
@pytest.mark.skipif(__import__("os").environ.get("KMC_SLOW") != "1", reason="another Spark run of its own (the suite's time): set KMC_SLOW=1")
def test_spark_runs_them_on_rows(request):
    import shutil

    if shutil.which("java") is None:
        pytest.skip("the Spark engine needs Java")
    request.getfixturevalue("spark_sc")
    model = KafkaModel(SMALL)
    props = list(model.properties())
    want = LocalEngine(model, props, Options(keep_going=True)).run()
    engine = make_engine(model, props, Options(keep_going=True), engine="spark", partitions=2,
                         driver_level_limit=200)
    assert engine.path == "rows" and engine.per_state_because is None
    assert _summary(engine.run()) == _summary(want)


# -- the oracle (tests/oracle.py), written from the text alone ----------------------------------------

ORACLE_ROWS = {
    "small": (SMALL, list(SAFETY) + [PR]),
    "small-three": (SMALL3, list(SAFETY) + [PR]),
    "c1-min-isr-elr-16540": (ROWS["c1-min-isr-elr-16540"][0], list(SAFETY)),
    "c1-disk-elr": (ROWS["c1-disk-elr"][0], list(SAFETY) + [PR]),
    "c1-disk": (ROWS["c1-disk"][0], list(SAFETY)),
    "small-ap": (config("C1", "ELR AP", max_messages=1, max_crashes=1, bugs=B16234, **MIN_ISR, **DISK),
                 list(SAFETY) + [PR]),
    "small-lag": (config("C5", "ELR", max_messages=1, min_isr_changes=(3,), min_isr_lag=True), list(SAFETY)),
}


def _oracle_param(name):
    """The rows of the table (some 20,000 states: ten seconds each for the oracle) with KMC_SLOW=1."""
    return pytest.param(name, id=name, marks=[pytest.mark.slow, SLOW] if name in ROWS else [])


@pytest.mark.parametrize("name", [_oracle_param(n) for n in sorted(ORACLE_ROWS)])
def test_the_oracle_agrees(name):
    cfg, checked = ORACLE_ROWS[name]
    want = oracle.explore(cfg, checked, keep_going=True)
    model, got = explore(cfg, checked)
    s = got.stats
    assert (s.distinct, s.generated, s.depth, s.levels) == (want.distinct, want.generated, want.depth, want.levels)
    assert traces(got) == want.traces
    assert (got.violations[PR].traps if PR in got.violations else 0) == want.traps
    if name in ROWS:
        assert want.distinct == ROWS[name][2]


# -- the shipped specs ----------------------------------------------------------------------------

# spec -> (distinct, generated, depth, {property: trace length}, trap states, the table's row it stands
# for). Each is a row of the table with one crash instead of two, small enough for every suite, with
# the row's trace lengths (TLC's) — except min-isr-lag, the two-replica form of the three-replica
# raise (c5-raise-elr-lag), whose story is shorter. The naive oracle recomputes every number.
SPECS = Path(__file__).resolve().parent.parent / "specs"
SHIPPED = {
    "kafka-16540-two-replicas": (3_653, 9_006, 18, {CNL: 8, LCC: 6}, 0, "c1-min-isr-elr-16540"),
    "min-isr-change-elr": (3_281, 8_328, 18, {}, 0, "c1-min-isr-elr"),
    "min-isr-lag": (3_556, 8_503, 18, {CNL: 6, LCC: 4}, 0, "c5-raise-elr-lag"),
    "kafka-16234-two-replicas": (4_056, 9_107, 20, {CNL: 5, LCC: 4}, 0, "c1-disk-elr-16234"),
    "disk-failure-elr": (4_044, 8_899, 21, {PR: 4}, 626, "c1-disk-elr"),
    "disk-failure-no-elr": (4_594, 10_234, 21, {CNL: 6, LCC: 5}, 0, "c1-disk"),
}


def test_every_min_isr_or_disk_failure_spec_is_pinned_here():
    from kmc.app.specs import load_spec

    shipped = {p.stem for p in SPECS.glob("*.toml")
               if load_spec(p).config.min_isr_changes or load_spec(p).config.max_disk_failures}
    assert shipped == set(SHIPPED)


def test_docs_model_md_tells_every_shipped_spec_with_its_count():
    docs = (SPECS.parent / "docs" / "model.md").read_text()
    for name, (distinct, *_rest) in SHIPPED.items():
        where = docs.index(f"`specs/{name}.toml`")
        if name != "disk-failure-no-elr":  # (told beside the table's row, without a count)
            assert f"{distinct:,} states" in " ".join(docs[where:where + 200].split()), name


def _commented_lengths(text: str) -> dict:
    """``{property: n}`` for every ``Property = "violated"  # n states`` line of a spec's [expect]."""
    import re

    return {m[1]: int(m[2]) for m in re.finditer(r'^(\w+) = "violated"\s*#\s*(\d+) states', text, re.M)}


@pytest.mark.parametrize("name", sorted(SHIPPED))
def test_a_shipped_spec(name, explorations):
    """kmc check's run of the spec (per state) gives its pinned numbers, its [expect] table and the
    trace lengths its comments give; the naive oracle gives the same numbers; the spec is its row
    with one crash, with the row's trace lengths."""
    import attrs

    distinct, generated, depth, want, traps, row = SHIPPED[name]
    spec, model, result = explorations[name]
    assert spec.title and spec.description and spec.keep_going
    assert result.engine == "local" and result.complete and result.stopped is None
    assert (result.stats.distinct, result.stats.generated, result.stats.depth) == (distinct, generated, depth)
    assert traces(result) == want
    assert (result.violations[PR].traps if PR in result.violations else 0) == traps
    assert set(spec.expect) == set(result.checked)
    assert {p: result.verdict(p) for p in spec.expect} == spec.expect
    assert {p: v for p, v in spec.expect.items() if v != "holds"}.keys() == want.keys()
    assert _commented_lengths((SPECS / f"{name}.toml").read_text()) == want
    assert_traces_replay(model, result)
    checked = list(result.checked)
    theirs = oracle.explore(spec.config, checked, keep_going=True)
    assert (theirs.distinct, theirs.generated, theirs.depth, theirs.levels, theirs.traces, theirs.traps) == (
        distinct, generated, depth, list(result.stats.levels), want, traps)
    cfg = ROWS[row][0]
    if name == "min-isr-lag":  # min ISR 1 raised to 2 on two replicas, as 2 to 3 on three
        assert spec.config == config("C1", "ELR", min_isr_changes=(2,), min_isr_lag=True, max_crashes=1)
        assert cfg.min_isr_lag and cfg.min_isr_changes == (cfg.min_insync_replicas + 1,)
        return
    assert spec.config == attrs.evolve(cfg, max_crashes=1)
    theirs_too = dict(ROWS[row][3])
    if row in RECOVERABLE:
        theirs_too[PR] = RECOVERABLE[row][3]
    assert {p: n for p, n in theirs_too.items() if p in checked} == want


# -- the result file and kmc replay ---------------------------------------------------------------

SPEC = """title = "KAFKA-16234 and KAFKA-16540, one record"
[model]
replicas = 2
max_messages = 1
max_crashes = 1
max_leader_epoch = 2
truncation = "leader-epoch-2.1"
hw_requires_min_isr = true
eligible_leader_replicas = true
min_isr_changes = [2, 1]
min_isr_lag = true
max_disk_failures = 1
bugs = ["KAFKA-16540", "KAFKA-16234"]
[check]
keep_going = true
"""


def test_every_state_survives_the_json_result():
    from helpers import reachable
    from kmc.app.render.json_result import state_from_dict, state_to_dict

    model = KafkaModel(SMALL3)
    every = reachable(model, 10**6)
    assert any(s.disk_failures and s.quorum.min_isr_step and s.leader_min_isr_step for s in every)
    assert all(state_from_dict(model, state_to_dict(model, s)) == s for s in every)
    doc = state_to_dict(model, next(s for s in every if s.disk_failures and s.leader_min_isr_step))
    assert doc["quorum"]["min_isr_step"] == 1 and doc["leader_min_isr_step"] == 1 and doc["disk_failures"] == 1
    plain = KafkaModel(config("C1", "ELR"))
    assert not {"min_isr_step", "leader_min_isr_step", "disk_failures"} & (
        set(state_to_dict(plain, plain.init_states()[0])) | set(state_to_dict(plain, plain.init_states()[0])["quorum"]))


def test_kmc_check_runs_them_on_the_batch_kernel_and_its_traces_replay(tmp_path, capsys):
    from kmc.app.cli import main

    spec = tmp_path / "ops.toml"
    spec.write_text(SPEC)
    out = tmp_path / "ops.json"
    assert main(["check", str(spec), "--no-progress", "--json", str(out)]) == 1
    text, err = capsys.readouterr()
    assert "per-state path" not in err
    assert "State 4: DiskFailure(A)" in text and "re-creates the partition empty and keeps serving it (KAFKA-16234)" \
        in " ".join(text.split())
    assert main(["replay", str(out)]) == 0
    assert "the replay matches the saved trace" in capsys.readouterr().out
    assert main(["replay", str(out), "--format", "tla"]) == 0
    tla = capsys.readouterr().out
    assert "elr |-> {A}, min_isr_step |-> 0]" in tla and "/\\ leader_min_isr_step = 0\n/\\ disk_failures = 1\n" in tla



def test_the_trace_names_the_broker_s_lag():
    """The min_isr_lag story, walked by hand: the election from the ELR says what B lacks and why
    it was electable; the change says the leader's broker still uses the old value."""
    model = KafkaModel(ROWS["c5-raise-elr-lag"][0])
    path = STORIES["c5-raise-elr-lag", CNL]
    states = [model.init_states()[0]]
    for text in path:
        states.append(_successor(model, states[-1], text))
    said = [model.describe_step(states[i], Action(t.split("(")[0], 0), states[i + 1]) for i, t in enumerate(path)
            if t == "ChangeMinIsr"]
    assert said == ["the operator raises min ISR 2 → 3 (the controller clears the ELR, empty anyway); the leader's "
                    "broker still uses 2 until it applies the change"]
    last = [a for a, t in model.successors(states[-2]) if t == states[-1]][0]
    assert model.describe_step(states[-2], last, states[-1]).endswith(
        "; but B lacks committed record 0 (epoch 0) at offset 0: it entered the ELR when the controller's min ISR "
        "was already raised, while the leader's broker, still on the old value, let the high watermark pass "
        "(min_isr_lag)")
    assert not committed_never_lost(model, states[-2]) and committed_never_lost(model, states[-1])


def test_the_diagram_shows_the_controller_s_steps_and_no_crash():
    """KAFKA-16234 on C1 + ELR: at DiskFailure(A) the controller takes A out of the ISR (an arrow
    from its lane), A's log is emptied without the crash's cross; a min ISR change reaches the
    leader's broker as the controller's message."""
    from kmc.app.render.diagram import build

    model, result = explore(ROWS["c1-disk-elr-16234"][0], (CNL,), keep_going=False)
    d = build(model, result.violations[CNL])
    failed = next(col for col in d.columns if col.action == "DiskFailure(A)")
    assert [(e.kind, e.source, e.target, e.label) for e in failed.events] == [("isr", 0, 1, "ISR −A")]
    a = failed.replicas[A]
    assert a.alive and not a.crashed and a.dropped == 1 and a.leo == 0
    model, result = explore(ROWS["c1-min-isr-elr-16540"][0], (CNL,), keep_going=False)
    d = build(model, result.violations[CNL])
    changes = [col for col in d.columns if col.action == "ChangeMinIsr"]
    assert [[e.label for e in col.events] for col in changes] == [["min ISR 2"], ["min ISR 1"]]


def test_the_unclean_restart_after_a_failed_directory_says_so():
    model = KafkaModel(config("C5", "ELR", **DISK))
    s = _walk(model, "Produce(A)", "ShrinkIsr(C)", "DiskFailure(B)")
    assert s.quorum.isr == (A,) and s.quorum.elr == (B,) and s.replicas[B].lossy
    t = _successor(model, s, "Restart(B)")
    assert t.quorum.elr == () and not t.replicas[B].lossy
    assert model.describe_step(s, Action("Restart", B), t) == (
        "B restarts with its log and high watermark from disk, no leader, epoch -1; after its failed log directory "
        "the controller removes it from the ISR {A} → {A} and the ELR {B} → {}, and every leader forgets its fetch "
        "position from before its directory failed")


# -- the TLA+ text: every variable, every operator step -------------------------------------------

# Every option of both operator sections (and every bug they name) at once, with the ELR and
# AlterPartition: every variable of the state varies.
EVERY_OPTION = config("C1", "ELR AP", max_messages=1, max_crashes=1, max_controlled_shutdowns=1,
                      min_isr_changes=(2, 1), min_isr_lag=True, max_disk_failures=1,
                      bugs=("KAFKA-13916", "KAFKA-15221", "KAFKA-16540", "KAFKA-16234"))
TLA_VARIABLES = ["alive", "log", "hw", "epoch", "leader", "remote_leo", "inflight", "lossy", "quorum", "produced",
                 "crashes", "committed", "shutting", "controlled_shutdowns", "leader_min_isr_step", "disk_failures"]


def _tla_values(model, state) -> dict:
    from kmc.app.render.tla import state_text

    lines = state_text(model, state).split("\n")
    assert all(line.startswith("/\\ ") and " = " in line for line in lines), lines
    return dict(line[3:].split(" = ", 1) for line in lines)


def _changed(before, after) -> set:
    """The variables of docs/model.md a step changed: a replica's field by its name, the
    controller's record as ``quorum``, a history variable by its name."""
    import attrs

    out = set()
    for field in attrs.fields(type(before)):
        old, new = getattr(before, field.name), getattr(after, field.name)
        if field.name == "replicas":
            out |= {f.name for a, b in zip(old, new) for f in attrs.fields(type(a))
                    if getattr(a, f.name) != getattr(b, f.name)}
        elif old != new:
            out.add(field.name)
    return out


def test_the_tla_text_prints_every_variable_a_step_changes():
    """On every step of the first 3,000 states with every operator option, the TLA+ lines that
    change are exactly the variables the step changed: no variable is left out of the text, and
    each is printed in the order of docs/model.md."""
    from helpers import reachable

    model = KafkaModel(EVERY_OPTION)
    kinds = set()
    for s in reachable(model, 3000):
        before = _tla_values(model, s)
        assert list(before) == TLA_VARIABLES
        for action, t in model.successors(s):
            after = _tla_values(model, t)
            assert {k for k in before if before[k] != after[k]} == _changed(s, t), model.format_action(action)
            kinds.add(action.name)
    assert {"ControlledShutdown", "ShutdownComplete", "ChangeMinIsr", "DiskFailure", "ApplyMinIsr"} <= kinds
    plain = KafkaModel(config("C1", "ELR"))
    assert list(_tla_values(plain, plain.init_states()[0])) == [
        v for v in TLA_VARIABLES if v not in ("shutting", "controlled_shutdowns", "leader_min_isr_step", "disk_failures")]


def test_the_tla_trace_names_each_operator_step_in_its_header():
    """A counterexample through every operator action, printed as TLC prints a trace: a header per
    state naming the step, every variable in each state."""
    import re

    from kmc.checker.core.result import Violation
    from kmc.checker.core.trace import replay_choices
    from kmc.app.render.tla import violation_text

    model = KafkaModel(EVERY_OPTION)
    # B's controlled shutdown lets A's HW pass record 0; min ISR 2, which A's broker applies; A's
    # directory fails: the controller empties the ISR into the ELR {A}, and A, re-created empty
    # (KAFKA-16234), is elected from it
    steps = ["Produce(A)", "ControlledShutdown(B)", "ShutdownComplete(B)", "ChangeMinIsr", "ApplyMinIsr",
             "DiskFailure(A)", "ElectLeader(A)"]
    state, choices = model.init_states()[0], []
    for text in steps:
        names = [model.format_action(a) for a, _ in model.successors(state)]
        choices.append(names.index(text))
        state = model.successors(state)[choices[-1]][1]
    path = replay_choices(model, 0, tuple(choices))
    explanation = BY_NAME[CNL].check(model, path.states[-1])
    assert explanation is not None
    text = violation_text(model, Violation(CNL, "always", explanation, path))
    assert text.startswith("Error: Invariant CommittedNeverLost is violated.\nError: The behavior up to this point is:\n")
    assert re.findall(r"^State (\d+): <(.*)>$", text, re.M) == [
        (str(i), s) for i, s in enumerate(["Initial predicate", *steps], 1)]
    blocks = text.split("point is:\n", 1)[1].split("\n\n")
    assert [b.split(":", 1)[0] for b in blocks[:-1]] == [f"State {i}" for i in range(1, len(steps) + 2)]
    for block in blocks[:-1]:
        assert re.findall(r"^/\\ (\w+) = ", block, re.M) == TLA_VARIABLES
    last = blocks[-2].rstrip("\n")
    assert "/\\ quorum = [leader |-> A, epoch |-> 1, isr |-> {A}, elr |-> {}, alter |-> None, min_isr_step |-> 1]" \
        in last
    assert "/\\ shutting = (A :> FALSE @@ B :> FALSE)\n/\\ controlled_shutdowns = 1\n" in last
    assert last.endswith("/\\ leader_min_isr_step = 1\n/\\ disk_failures = 1")
    assert text.endswith(f"\\* CommittedNeverLost: {explanation}\n")


# -- the pictures: a failed directory, a config change, a shutdown's request and answer --------------

def _svg_events(svg: str) -> list[tuple[str, str, float]]:
    """``(kind, label, x)`` of every message arrow an SVG diagram draws, in order."""
    import re

    return [(k, label, float(x)) for k, label, x in
            re.findall(r'<g class="event ([a-z-]+)"><title>([^<]*)</title><line x1="([0-9.]+)"', svg)]


def test_the_picture_marks_a_failed_directory_as_its_own():
    """KAFKA-16234 (A stays up) and the fix (A offline until its restart): the cell of the failed
    replica says its directory failed and what it lost, with no crash's cross and no truncation's
    mark; the legend says what the mark means; the Mermaid text says it too."""
    from kmc.app.render.diagram import build
    from kmc.app.render.mermaid import render as mermaid
    from kmc.app.render.svg import render

    for row, alive in (("c1-disk-elr-16234", True), ("c1-disk", False)):
        model, result = explore(ROWS[row][0], (CNL,), keep_going=False)
        d = build(model, result.violations[CNL])
        col = next(c for c in d.columns if c.action == "DiskFailure(A)")
        a = col.replicas[A]
        assert a.failed_dir and a.alive == alive and not a.crashed and (a.dropped, a.leo) == (1, 0)
        assert not any(cell.failed_dir for c in d.columns for cell in c.replicas if cell is not a)
        svg = render(d)
        assert svg.count('class="disk-failure"') == 1 and ">dir failed: 1 lost<" in svg
        assert 'class="crash' not in svg.split(f'data-step="{col.number}" data-replica="A"')[1].split("</g>\n</g>")[0]
        assert "truncated: 1" not in svg
        assert "dir failed: a failed log directory, its log gone (not a crash)" in svg
        state = "up" if alive else "DOWN"
        assert f"A: log directory failed, 1 lost, {state}: empty (hw 0)" in mermaid(d)
    model, result = explore(config("C2"), (CNL,), keep_going=False)  # a lossy crash: no failed directory
    svg = render(build(model, result.violations[CNL]))
    assert "lossy: 1 lost" in svg and "dir failed" not in svg


def test_the_picture_shows_the_min_isr_of_the_controller_and_of_the_leader_s_broker():
    """min_isr_lag: the controller's min ISR and the leader's broker's are lines of the controller's
    lane; the change moves the first, ApplyMinIsr the second (its column highlighted, and its arrow
    to the leader); without the options neither line is drawn."""
    from kmc.app.render.diagram import build_path
    from kmc.app.render.svg import render

    model = KafkaModel(config("C1", "ELR", min_isr_changes=(2, 1), min_isr_lag=True, max_crashes=1))
    texts_ = ["Produce(A)", "ChangeMinIsr", "ApplyMinIsr", "ChangeMinIsr"]
    state, choices = model.init_states()[0], []
    for text in texts_:
        names = [model.format_action(a) for a, _ in model.successors(state)]
        choices.append(names.index(text))
        state = model.successors(state)[choices[-1]][1]
    from kmc.checker.core.trace import replay_choices

    d = build_path(model, replay_choices(model, 0, tuple(choices)))
    cells = [c.controller for c in d.columns]
    assert [(c.min_isr, c.leader_min_isr) for c in cells] == [(1, 1), (1, 1), (2, 1), (2, 2), (1, 2)]
    assert [c.changed for c in cells] == [False, False, True, True, True]
    assert [[e.label for e in c.events] for c in d.columns] == [[], [], [], ["min ISR 2"], []]
    svg = render(d)
    assert ">min ISR 2<" in svg and ">leader&#x27;s min ISR 1<" in svg
    plain = KafkaModel(config("C1", "ELR"))
    d = build_path(plain, replay_choices(plain, 0, (0,)))
    assert d.columns[1].controller.min_isr is None and "min ISR" not in render(d)


def test_the_shutdown_s_request_and_answer_are_two_arrows_side_by_side():
    """A controlled shutdown's column draws the broker's request to the controller and the
    controller's answer apart (their labels would cover each other on one line); a column of one
    message keeps its arrow where it always was. The clean stop that ends the shutdown is marked as
    such, with no crash's cross. Mermaid draws both messages and says the stop was clean."""
    from kmc.app.render.diagram import build_path
    from kmc.app.render.mermaid import render as mermaid
    from kmc.app.render.svg import EVENT_GAP, render

    model = KafkaModel(config("C1", max_crashes=1, max_messages=1, max_controlled_shutdowns=1))
    state, choices = model.init_states()[0], []
    for text in ["Produce(A)", "ControlledShutdown(B)", "ShutdownComplete(B)"]:
        names = [model.format_action(a) for a, _ in model.successors(state)]
        choices.append(names.index(text))
        state = model.successors(state)[choices[-1]][1]
    from kmc.checker.core.trace import replay_choices

    d = build_path(model, replay_choices(model, 0, tuple(choices)))
    events = _svg_events(render(d))
    assert [(k, label) for k, label, _ in events] == [("request", "controlled shutdown"), ("isr", "ISR −B")]
    (_, _, x_request), (_, _, x_answer) = events
    assert x_answer - x_request == EVENT_GAP
    one = KafkaModel(config("C1", max_crashes=1, max_messages=1))
    shrink = build_path(one, replay_choices(one, 0, (0, [one.format_action(a) for a, _ in one.successors(
        one.successors(one.init_states()[0])[0][1])].index("ShrinkIsr(B)"))))
    ((_, _, x_one),) = _svg_events(render(shrink))
    assert x_one == x_answer  # the same column, the same place
    svg = render(d)
    stop = svg.split(f'data-step="4" data-replica="B"')[1].split("</g>\n</g>")[0]  # ShutdownComplete(B)'s cell
    assert 'class="clean-stop"' in stop and ">clean stop<" in stop and 'class="crash' not in stop
    assert svg.count('class="clean-stop"') == 1 and "clean stop: the end of a controlled shutdown" in svg
    assert "B: DOWN, a clean stop: empty (hw 0)" in mermaid(d)
    arrows = [line.strip() for line in mermaid(d).split("\n") if "->>" in line]
    assert len(arrows) == 2
    assert arrows[0].startswith("r1->>ctl: 3. ControlledShutdown(B): the operator asks B to shut down")
    assert arrows[1] == "ctl->>r1: ISR −B"


# -- every engine with every operator option at once -------------------------------------------------

# Both sections' actions and three bugs together (KAFKA-15221 needs broker epochs, which multiply the
# states: the engines run it in tests/test_controlled_shutdown.py): 8,566 states, CommittedNeverLost
# violated in 5 (KAFKA-16234).
EVERY_ACTION = config("C1", "ELR", max_messages=1, max_crashes=0, max_controlled_shutdowns=1, min_isr_changes=(2,),
                      min_isr_lag=True, max_disk_failures=1, bugs=("KAFKA-13916", "KAFKA-16540", "KAFKA-16234"))


@pytest.mark.parametrize("how", ["workers", "disk-store", "resume"])
def test_every_engine_runs_every_operator_action_at_once(how, tmp_path, monkeypatch):
    """The batch path on every local engine (two worker processes, the disk store, a run
    stopped at its memory limit and resumed from its snapshot) gives the per-state engine's counts,
    levels and counterexamples, with every operator action fired."""
    import kmc.checker.core.driver
    import kmc.checker.local.rows

    model = KafkaModel(EVERY_ACTION)
    props = list(model.properties())
    want = _per_state(EVERY_ACTION)
    assert want.stats.distinct == 8_566 and traces(want) == {CNL: 5, LCC: 4}
    assert all(want.stats.fired[a] for a in ("ControlledShutdown", "ShutdownComplete", "ChangeMinIsr", "DiskFailure",
                                             "ApplyMinIsr"))
    if how == "resume":
        monkeypatch.setattr(kmc.checker.local.rows, "CHUNK_ROWS", 64)
        engine = make_engine(model, props, Options(keep_going=True, max_memory=1 << 30))
        monkeypatch.setattr(kmc.checker.core.driver, "resident_bytes", lambda: (1 << 40) * (len(engine.seen) > 2000))
        assert engine.run().stopped == "max-memory"
        snap = engine.snapshot()
        monkeypatch.setattr(kmc.checker.core.driver, "resident_bytes", lambda: 0)
        engine = make_engine(model, props, Options(keep_going=True))
        engine.restore(snap)
    else:
        opts = {"workers": dict(workers=2), "disk-store": dict(store="disk", store_dir=str(tmp_path))}[how]
        engine = make_engine(model, props, Options(keep_going=True, **opts), data_root=str(tmp_path))
    assert engine.path == "batch"
    assert _summary(engine.run()) == _summary(want)


def test_the_explorer_walks_the_shipped_stories():
    """kmc explore on the shipped specs: the KAFKA-16234 story ends with CommittedNeverLost violated
    and the picture's failed directory; the min_isr_lag story shows both min ISRs in the state and
    the picture."""
    from kmc.app.specs import load_spec
    from kmc.app.render.explorer import Explorer
    from kmc.app.render.explorer_views import KafkaView

    for name, steps, violated, mark in [
        ("kafka-16234-two-replicas", ["Produce(A)", "ShrinkIsr(B)", "DiskFailure(A)", "ElectLeader(A)"], {CNL, LCC},
         "dir failed: 1 lost"),
        ("min-isr-lag", ["Produce(A)", "ChangeMinIsr", "ShrinkIsr(B)", "ApplyMinIsr"], {LCC}, "leader&#x27;s min ISR 2"),
    ]:
        spec = load_spec(SPECS / f"{name}.toml")
        model = spec.model()
        explorer = Explorer(model, spec.properties(), view=KafkaView(model), title=spec.title, path=spec.path)
        state, choices = model.init_states()[0], []
        for text in steps:
            names = [model.format_action(a) for a, _ in model.successors(state)]
            choices.append(names.index(text))
            state = model.successors(state)[choices[-1]][1]
        doc = explorer.state_doc(0, choices)
        assert [s["action"] for s in doc["steps"]] == ["initial", *steps]
        assert {p["name"] for p in doc["properties"] if p["status"] == "violated"} == violated
        assert mark in doc["diagram_svg"]


# -- coverage: the kinds of a failed directory and of a min ISR change --------------------------------

@pytest.mark.parametrize("elr, bugs", [(False, ()), (True, ()), (True, B16540 + B16234)])
def test_coverage_counts_the_kinds_of_the_operators_actions(elr, bugs):
    """DiskFailure: outside the ISR, out of it, into the ELR (with it: KAFKA-16234's trigger), the ISR
    kept (without it); ChangeMinIsr: with an empty ELR, clearing it (the fix) or keeping it
    (KAFKA-16540). The kinds the options rule out never fire and raise no warning; the counts add up
    to the steps taken."""
    cfg = config("C1", "ELR" if elr else "", max_messages=1, max_crashes=1, bugs=bugs, **MIN_ISR, **DISK)
    model = KafkaModel(cfg)
    result = LocalEngine(model, [BY_NAME[CNL]], Options(keep_going=True, coverage=True)).run()
    kinds = result.stats.coverage.kinds
    for action in ("DiskFailure", "ChangeMinIsr"):
        assert sum(kinds[action].values()) == result.stats.fired[action]
    fired = {a: {k for k, n in kinds[a].items() if n} for a in ("DiskFailure", "ChangeMinIsr")}
    assert fired == {
        "DiskFailure": {"not in the ISR", "leaves the ISR", "enters the ELR" if elr else "ISR kept"},
        "ChangeMinIsr": {"ELR empty"} | ({"keeps the ELR" if bugs else "clears the ELR"} if elr else set()),
    }
    hint = model.coverage_names().hint
    for action in fired:
        for kind, n in kinds[action].items():
            if not n:
                assert hint(action, kind) == "", (action, kind)
    plain = KafkaModel(config("C1", "ELR"))
    assert not {"DiskFailure", "ChangeMinIsr"} & set(plain.coverage_names().kinds)


@pytest.mark.parametrize("name", [pytest.param(n, id=n, marks=[pytest.mark.slow, SLOW])
                                  for n in sorted(RECOVERABLE) if RECOVERABLE[n][1] <= FAST])
def test_the_oracle_gives_partition_recoverable_s_table(name):
    """The naive oracle alone (no kmc) reproduces each two-replica row of PartitionRecoverable's
    table: distinct states, trap states, the shortest trap's depth (18,000 to 40,000 states: a few
    seconds each in the oracle)."""
    cfg, distinct, traps, length = RECOVERABLE[name]
    want = oracle.explore(cfg, [PR], keep_going=True)
    assert (want.distinct, want.traps, want.traces.get(PR)) == (distinct, traps, length)
