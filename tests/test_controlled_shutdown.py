"""The operator's controlled shutdown (docs/model.md, "Operator actions: controlled shutdown")
and the broker-epoch race KAFKA-15221: ``max_controlled_shutdowns``, ``bugs`` with
``"KAFKA-13916"`` or ``"KAFKA-15221"``.

The section's known-verdict tables (TLC's, on an independent TLA+ rendering) are checked row by
row: distinct states, the verdicts and the shortest trace lengths (in states, initial included),
PartitionRecoverable's trap counts, EventuallyLeader's verdicts. The rows up to 60,000 states run
in every suite on both paths, the per-state engine and the batch kernel (compared with the model
on every parent in tests/test_operators_kernel.py); the larger ones with KMC_SLOW=1. On every row that runs, the engine also evaluates the section's side
checks on every reachable state: ShuttingNotInIsr, ShuttingNeverLeads, ShuttingOnlyWhileAlive
(checks of the model's own consistency, evaluated here, not properties a user selects). The naive
oracle (tests/oracle.py) recomputes the small rows. Unit tests on states reached by named steps pin
each rule.

Replicas are numbered A=0, B=1, C=2; records are (epoch, id).
"""

from __future__ import annotations

import functools
import os
from pathlib import Path

import attrs
import pytest

import oracle
from helpers import assert_traces_replay, reachable, step, texts
from kmc.app.specs import load_spec
from kmc.checker.engines import make_engine
from kmc.checker.local.states import LocalEngine, Options
from kmc.checker.contract.protocol import ALWAYS, Property
from kmc.invariants import BY_NAME
from kmc.model import Config, KafkaModel, encode
from kmc.model.actions import ACTION_NAMES
from kmc.model.state import EXPAND, leads

ROOT = Path(__file__).resolve().parent.parent
SPECS = ROOT / "specs"
A, B, C = range(3)
H = "holds"
CNL, LND, LCC = "CommittedNeverLost", "LogsNeverDiverge", "LeaderCandidateCompleteness"
ANL, HWB, PR, EL = "AcknowledgedNeverLost", "HighWatermarkBelowLogEnd", "PartitionRecoverable", "EventuallyLeader"
KAFKA_13916, KAFKA_15221 = "KAFKA-13916", "KAFKA-15221"

FAST_LIMIT = 60_000  # distinct states: above, a row runs with KMC_SLOW=1 only
SLOW = pytest.mark.skipif(os.environ.get("KMC_SLOW") != "1",
                          reason="60,000 to 1.7 million states on the per-state engine: set KMC_SLOW=1")

# The section's configurations (all under leader-epoch-2.1, epochs <= 2) and options.
CONF = {
    "C1": dict(replicas=("A", "B"), min_insync_replicas=1, max_messages=2, max_crashes=2),
    "C2": dict(replicas=("A", "B"), min_insync_replicas=1, max_messages=2, max_crashes=2, unflushed_loss=True),
    "C4": dict(replicas=("A", "B"), min_insync_replicas=1, max_messages=4, max_crashes=1, preferred_election=True),
    "C5": dict(replicas=("A", "B", "C"), min_insync_replicas=2, max_messages=2, max_crashes=1),
    "LRS2": dict(replicas=("A", "B", "C"), min_insync_replicas=2, max_messages=2, max_crashes=2,
                 unflushed_loss=True),
}
OPTS = {
    "ELR": dict(hw_requires_min_isr=True, eligible_leader_replicas=True),
    "AP": dict(alter_partition=True),
    "BE": dict(broker_epochs=True),
    "CS": dict(max_controlled_shutdowns=1),
    "acks": dict(acks="all"),
}


def config(key: str) -> Config:
    """``"C2 ELR+AP+BE+15221"`` -> its Config (``13916`` and ``15221`` are bug ids)."""
    conf, _, opts = key.partition(" ")
    kw = dict(truncation="leader-epoch-2.1", max_leader_epoch=2, **CONF[conf])
    bugs = []
    for o in filter(None, opts.split("+")):
        if o in ("13916", "15221"):
            bugs.append(f"KAFKA-{o}")
        else:
            kw.update(OPTS[o])
    return Config(**kw, bugs=tuple(bugs))


# The table "KAFKA-15221": configuration -> (distinct, {property: "holds" or the trace length}).
KAFKA_15221_TABLE = {
    "C1 ELR+AP+BE+15221": (7_487, {CNL: H, LND: H, LCC: H}),
    "C2 AP+BE+15221": (18_550, {CNL: 7, LND: H, LCC: 6}),
    "C2 ELR+AP+BE+15221": (12_671, {CNL: 14, LND: H, LCC: 12}),
    "C2 ELR+AP+BE+15221+acks": (16_015, {CNL: 14, LND: H, LCC: 12, ANL: 14}),
    "C4 ELR+AP+BE+15221": (87_419, {CNL: H, LND: H, LCC: H}),
    "C5 ELR+AP+BE+15221": (144_000, {CNL: H, LND: H, LCC: H}),
}
# Its last column: the same configurations without the bug.
KAFKA_15221_WITHOUT = {
    "C1 ELR+AP+BE": (7_390, {CNL: H, LND: H, LCC: H}),
    "C2 AP+BE": (18_313, {CNL: 7, LND: H, LCC: 6}),
    "C2 ELR+AP+BE": (11_644, {CNL: H, LND: H, LCC: H}),
    "C2 ELR+AP+BE+acks": (None, {CNL: H, LND: H, LCC: H, ANL: H}),
}
# The table "Controlled shutdown": configuration -> (distinct with CS, with CS + 13916, verdicts),
# the verdicts the same with and without the bug.
CS_TABLE = {
    "C1": (24_712, 35_261, {CNL: H, LND: H, LCC: H}),
    "C1 ELR": (24_730, 35_279, {CNL: H, LND: H, LCC: H}),
    "C1 AP+BE": (36_887, 58_681, {CNL: H, LND: H, LCC: H}),
    "C1 ELR+AP+BE": (36_919, 58_713, {CNL: H, LND: H, LCC: H}),
    "C2": (63_419, 89_890, {CNL: 6, LND: H, LCC: 5}),
    "C2 ELR": (47_961, 66_900, {CNL: H, LND: H, LCC: H}),
    "C2 AP+BE": (94_205, 149_142, {CNL: 6, LND: H, LCC: 5}),
    "C2 ELR+AP+BE": (67_077, 103_560, {CNL: H, LND: H, LCC: H}),
    "C4": (165_634, 265_999, {CNL: H, LND: H, LCC: H}),
    "C5": (990_730, 1_719_219, {CNL: H, LND: H, LCC: H}),
}
# The table "PartitionRecoverable": configuration -> (distinct, trap states, trace length or "holds").
PR_TABLE = {
    "C2 ELR+AP+BE": (11_644, 1_894, 5),
    "C2 ELR+AP+BE+15221": (12_671, 1_941, 5),
    "C2 CS": (63_419, 0, H),
    "C2 ELR+CS": (47_961, 15_367, 4),
    "C2 ELR+CS+13916": (66_900, 17_180, 4),
    "C2 ELR+AP+BE+CS": (67_077, 18_580, 4),
    "C2 ELR+AP+BE+CS+13916": (103_560, 21_970, 4),
    "C5 ELR+CS": (1_401_776, 0, H),
}


def with_options(key: str, *more: str) -> str:
    """``with_options("C1 ELR", "CS")`` -> ``"C1 ELR+CS"``; ``with_options("C1", "CS")`` -> ``"C1 CS"``."""
    conf, _, opts = key.partition(" ")
    return f"{conf} {'+'.join(filter(None, [opts, *more]))}"


def _rows():
    out = dict(KAFKA_15221_TABLE)
    out.update(KAFKA_15221_WITHOUT)
    for key, (plain, bug, want) in CS_TABLE.items():
        out[with_options(key, "CS")] = (plain, want)
        out[with_options(key, "CS", "13916")] = (bug, want)
    return out


ROWS = _rows()


def _param(key, distinct):
    # (a row whose distinct count the table does not give is small: its verdicts run in every suite)
    marks = [SLOW] if distinct is not None and distinct > FAST_LIMIT else []
    return pytest.param(key, id=key.replace(" ", "-"), marks=marks)


# -- the side checks ------------------------------------------------------------------------------

def shutting_not_in_isr(model, state):
    """A replica in controlled shutdown is in no ISR (without KAFKA-13916, and without
    alter_partition or with broker_epochs) — except the ISR's last member when its shutdown
    left the partition leaderless without eligible leader replicas: the controller does not
    write an empty ISR then (the section's leaderless successor keeps ``I``)."""
    q = state.quorum
    for r, rep in enumerate(state.replicas):
        if rep.shutting and r in q.isr:
            if not model.config.eligible_leader_replicas and q.leader is None and q.isr == (r,):
                continue
            return f"{model.name(r)} is in controlled shutdown and in the ISR"
    return None


def shutting_never_leads(model, state):
    """Without KAFKA-13916 a replica in controlled shutdown is never the quorum's leader."""
    for r, rep in enumerate(state.replicas):
        if rep.shutting and state.quorum.leader == r:
            return f"{model.name(r)} is in controlled shutdown and the quorum's leader"
    return None


def shutting_only_while_alive(model, state):
    """``shutting`` only while alive, and never more controlled shutdowns than the bound."""
    for r, rep in enumerate(state.replicas):
        if rep.shutting and not rep.alive:
            return f"{model.name(r)} is in controlled shutdown but down"
    if state.controlled_shutdowns > model.config.max_controlled_shutdowns:
        return f"{state.controlled_shutdowns} controlled shutdowns"
    return None


SIDE = {
    "ShuttingNotInIsr": shutting_not_in_isr,
    "ShuttingNeverLeads": shutting_never_leads,
    "ShuttingOnlyWhileAlive": shutting_only_while_alive,
}


def side_checks(cfg) -> list[Property]:
    """The side checks that apply to ``cfg``, as state invariants the engine evaluates."""
    names = ["ShuttingOnlyWhileAlive"]
    if KAFKA_13916 not in cfg.bugs:
        names.append("ShuttingNeverLeads")
        if not cfg.alter_partition or cfg.broker_epochs:
            names.append("ShuttingNotInIsr")
    return [Property(n, ALWAYS, SIDE[n], description=n, symmetric=True) for n in names]


# Both paths give every row's numbers; the per-state one in every suite only where a test says so
# (tests/test_operators_kernel.py compares the two on every parent of small configurations).
PATHS = (pytest.param("per-state", marks=pytest.mark.skipif(
    os.environ.get("KMC_SLOW") != "1", reason="the per-state path on the tables' rows: set KMC_SLOW=1")), "batch")


def _run(cfg, props, path="batch", **kw):
    """``(model, result)`` of ``cfg`` with ``props`` and the side checks on ``path``: each
    run once in a process (several tests read the same run: they only read it)."""
    return _runs(cfg, tuple(props), path, tuple(sorted(kw.items())))


@functools.lru_cache(maxsize=None)
def _runs(cfg, props, path, kw):
    from kmc.checker.local.rows import BatchEngine

    kw = dict(kw)
    model = KafkaModel(cfg)
    extra = side_checks(cfg) if cfg.max_controlled_shutdowns else []
    engine = LocalEngine if path == "per-state" else BatchEngine
    result = engine(model, [BY_NAME[p] for p in props] + extra, Options(keep_going=True, **kw)).run()
    assert result.complete and result.stopped is None
    for p in extra:
        assert p.name not in result.violations, result.violations[p.name].explanation
    return model, result


def _lengths(result):
    return {p: len(v.path) for p, v in result.violations.items()}


# -- the tables -----------------------------------------------------------------------------------

@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("key", [_param(k, d) for k, (d, _) in ROWS.items()])
def test_row(key, path):
    distinct, want = ROWS[key]
    model, result = _run(config(key), [HWB, *want], path)
    if distinct is not None:
        assert result.stats.distinct == distinct
    assert {p: _lengths(result).get(p, H) for p in [HWB, *want]} == {HWB: H, **want}
    assert_traces_replay(model, result)


def test_the_rows_are_the_tables():
    assert len(ROWS) == len(KAFKA_15221_TABLE) + len(KAFKA_15221_WITHOUT) + 2 * len(CS_TABLE)
    assert ROWS["C2 CS"] == (63_419, {CNL: 6, LND: H, LCC: 5})
    assert ROWS["C2 ELR+AP+BE+CS+13916"] == (103_560, {CNL: H, LND: H, LCC: H})
    assert config("C2 ELR+AP+BE+CS+13916") == Config(
        replicas=("A", "B"), max_messages=2, max_crashes=2, max_leader_epoch=2, truncation="leader-epoch-2.1",
        unflushed_loss=True, hw_requires_min_isr=True, eligible_leader_replicas=True, alter_partition=True,
        broker_epochs=True, max_controlled_shutdowns=1, bugs=(KAFKA_13916,))


@pytest.mark.parametrize("key, want", [
    pytest.param("LRS2 CS", {CNL: 7, LCC: 6}, id="LRS2-CS"),
    pytest.param("LRS2 ELR+AP+BE+15221", {CNL: 17, LCC: 15}, id="LRS2-ELR-AP-BE-15221", marks=[pytest.mark.slow, SLOW]),
])
def test_the_lrs2_rows(key, want):
    """LRS2's rows (the table gives no distinct count): the shortest trace of each property, each
    run stopped at the level of its first violation."""
    model = KafkaModel(config(key))
    got = {}
    for prop in want:
        result = LocalEngine(model, [BY_NAME[prop]], Options()).run()
        got[prop] = len(result.violations[prop].path)
        assert_traces_replay(model, result)
    assert got == want


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("key", [_param(k, d) for k, (d, _t, _l) in PR_TABLE.items()])
def test_partition_recoverable(key, path):
    distinct, traps, length = PR_TABLE[key]
    _model, result = _run(config(key), [PR], path)
    assert result.stats.distinct == distinct
    v = result.violations.get(PR)
    assert (len(v.path) if v else H, v.traps if v else 0) == (length, traps)


@pytest.mark.parametrize("key", [pytest.param("C1 CS", id="C1-CS"), pytest.param("C2 ELR+CS", id="C2-ELR-CS"),
                                 pytest.param("C1 CS+13916", id="C1-CS-13916", marks=[pytest.mark.slow])])
@pytest.mark.parametrize("path", PATHS)
def test_eventually_leader_is_violated(key, path):
    """With ShutdownComplete weakly fair: a controlled shutdown of the leader spends a leader
    epoch, and at the bound the partition may stay leaderless for ever."""
    model, result = _run(config(key), [EL], path)
    v = result.violations[EL]
    last = v.path.states[-1]
    assert last.quorum.leader is None or not leads(last, last.quorum.leader)
    if key.startswith("C1"):  # at the bound: epoch 2, nobody electable without the bound either
        assert any(s.quorum.epoch == model.config.max_leader_epoch for s in v.path.states[v.loop:])
        assert any(a.name == "ControlledShutdown" for a in v.path.actions)


def test_shutdown_complete_is_weakly_fair():
    model = KafkaModel(config("C1 AP+BE+CS"))
    assert model.fair_instances()[-3:] == ("AlterPartition", "ShutdownComplete(A)", "ShutdownComplete(B)")
    assert KafkaModel(config("C1 CS")).fair_instances()[-2:] == ("ShutdownComplete(A)", "ShutdownComplete(B)")
    s = step(model, model.init_states()[0], "ControlledShutdown(B)")
    done = [a for a, _ in model.successors(s) if a.name == "ShutdownComplete"][0]
    cs = [a for a, _ in model.successors(model.init_states()[0]) if a.name == "ControlledShutdown"][0]
    assert model.fair_instance(s, done) == "ShutdownComplete(B)"
    assert model.fair_instance(model.init_states()[0], cs) is None  # the operator is not fair
    assert "ShutdownComplete(A)" not in KafkaModel(config("C1 AP+BE")).fair_instances()


# -- the oracle -----------------------------------------------------------------------------------

@pytest.mark.parametrize("key", ["C1 ELR+AP+BE+15221", "C2 ELR+AP+BE+15221", "C1 CS",
                                 pytest.param("C2 ELR+CS", marks=[pytest.mark.slow])])
def test_the_oracle_gives_the_engine_s_numbers(key):
    cfg = config(key)
    checked = [CNL, LND, LCC] + ([PR] if "ELR" in key else [])
    _model, result = _run(cfg, checked)
    want = oracle.explore(cfg, checked, keep_going=True)
    assert (want.distinct, want.generated, want.depth, want.levels) == (
        result.stats.distinct, result.stats.generated, result.stats.depth, list(result.stats.levels))
    assert want.traces == _lengths(result)
    if PR in checked:
        assert want.traps == (result.violations[PR].traps if PR in result.violations else 0)


# -- the stories ----------------------------------------------------------------------------------

def _story(key, prop):
    """The shortest counterexample of ``prop`` on ``key``: the search stops at its first violation
    (breadth-first, so the first is a shortest; the side checks hold on every state it saw)."""
    cfg = config(key)
    model = KafkaModel(cfg)
    extra = side_checks(cfg) if cfg.max_controlled_shutdowns else []
    result = make_engine(model, [BY_NAME[prop], *extra], Options()).run()
    assert list(result.violations) == [prop], list(result.violations)
    path = result.violations[prop].path
    return model, path, [model.format_action(a) for a in path.actions]


def test_the_kafka_15221_story():
    """The 14-state loss of docs/model.md, step for step: B's pending expansion survives its
    lossy restart, is accepted once B follows A again, and B is elected with an empty log."""
    model, path, actions = _story("C2 ELR+AP+BE+15221", CNL)
    assert actions == [
        "Produce(A)", "FetchRequest(B)", "FetchResponse(B)", "ShrinkIsr(B)", "FetchRequest(B)", "AlterPartition(B)",
        "ExpandIsr(B)", "Crash(B, keeps 0)", "Restart(B)", "BecomeFollower(B)", "Crash(A, keeps 0)",
        "AlterPartition(B)", "ElectLeader(B)"]
    s = path.states
    assert s[9].quorum.alter == (A, EXPAND, B) and s[9].replicas[B].epoch == -1  # survived the restart
    assert s[12].quorum.isr == (A, B) and s[12].replicas[B].log == ()  # the controller adds B, empty
    said = [model.describe_step(b, a, t) for b, a, t in zip(s, path.actions, s[1:])]
    assert "stays in flight although it was decided on B's previous incarnation (KAFKA-15221" in said[8]
    _model, lcc, lcc_actions = _story("C2 ELR+AP+BE+15221", LCC)
    assert len(lcc) == 12 and lcc_actions[-1] == "AlterPartition(B)"


def test_without_the_bug_the_request_is_dropped_or_refused():
    model = KafkaModel(config("C2 ELR+AP+BE"))
    s = model.init_states()[0]
    for text in ["Produce(A)", "FetchRequest(B)", "FetchResponse(B)", "ShrinkIsr(B)", "FetchRequest(B)",
                 "AlterPartition(B)", "ExpandIsr(B)", "Crash(B, keeps 0)", "Restart(B)"]:
        s = step(model, s, text)
    assert s.quorum.alter is None  # KIP-903: the restart drops it
    bug = KafkaModel(config("C2 ELR+AP+BE+15221"))
    t = bug.init_states()[0]
    for text in ["Produce(A)", "FetchRequest(B)", "FetchResponse(B)", "ShrinkIsr(B)", "FetchRequest(B)",
                 "AlterPartition(B)", "ExpandIsr(B)", "Crash(B, keeps 0)", "Restart(B)"]:
        t = step(bug, t, text)
    assert t.quorum.alter == (A, EXPAND, B)
    # answered before B follows A again, the request carries the old broker epoch: refused
    refused = step(bug, t, "AlterPartition(B)")
    assert refused.quorum.isr == (A,) and refused.quorum.alter is None
    assert bug.describe_step(t, [a for a, _ in bug.successors(t) if a.name == "AlterPartition"][0], refused) == (
        "A's request to add B is refused: it carries the broker epoch of B's previous incarnation "
        "(B does not follow A in epoch 0 yet)")
    accepted = step(bug, step(bug, t, "BecomeFollower(B)"), "AlterPartition(B)")
    assert accepted.quorum.isr == (A, B)


def test_a_rolling_restart_loses_a_record_in_six_states():
    """With alter_partition the controller removes the shutting-down replica at once: C2 + AP +
    BE loses a record in 6 states, as the atomic model does, instead of 7."""
    model, path, actions = _story("C2 AP+BE+CS", CNL)
    assert actions == ["Produce(A)", "ControlledShutdown(B)", "Crash(A, keeps 0)", "Restart(A)", "ElectLeader(A)"]
    s = path.states
    assert s[2].quorum.isr == (A,) and s[2].committed == ((0, 0, 0),) and s[2].replicas[B].shutting
    assert model.describe_step(s[1], path.actions[1], s[2]) == (
        "the operator asks B to shut down: B is in controlled shutdown; the controller removes it from the ISR "
        "{A,B} → {A} in the same leader epoch 0; A's high watermark advances to 1")


def test_the_eligible_leader_replicas_trap_in_four_states():
    """B leaves the ISR through a controlled shutdown, which the controller applies at once (the
    ISR stays at min ISR 1, so B does not enter the ELR); A's crash loses its record: A's unclean
    restart will leave nobody electable."""
    model, result = _run(config("C2 ELR+CS"), [PR])
    path = result.violations[PR].path
    assert sorted(model.format_action(a) for a in path.actions[1:]) == ["ControlledShutdown(B)", "Crash(A, keeps 0)"]
    last = path.states[-1]
    assert last.quorum.isr == (A,) and last.quorum.elr == () and last.replicas[A].lossy


# -- the rules, on states reached by named steps ----------------------------------------------------

def _walk(model, *texts_):
    s = model.init_states()[0]
    for text in texts_:
        s = step(model, s, text)
    return s


def test_a_follower_s_shutdown_leaves_the_isr_in_the_same_epoch():
    model = KafkaModel(config("C5 ELR+CS"))
    s = _walk(model, "Produce(A)")
    t = step(model, s, "ControlledShutdown(C)")
    assert t.quorum.isr == (A, B) and t.quorum.epoch == 0 and t.quorum.leader == A
    assert t.replicas[C].shutting and t.replicas[C].alive and t.controlled_shutdowns == 1
    assert t.replicas[C].log == s.replicas[C].log and t.replicas[C].leader == A  # C itself is untouched
    # at most max_controlled_shutdowns: no other ControlledShutdown now
    assert [x for x in texts(model, t) if x.startswith("ControlledShutdown")] == []
    assert "ShutdownComplete(C)" in texts(model, t)
    # below min ISR the leaving replica joins the ELR
    u = step(model, _walk(model, "Crash(B)", "ShrinkIsr(B)"), "ControlledShutdown(C)")
    assert u.quorum.isr == (A,) and u.quorum.elr == (C,)


def test_a_replica_in_controlled_shutdown_may_not_rejoin_or_lead():
    model = KafkaModel(config("C1 CS"))
    s = _walk(model, "ControlledShutdown(B)")
    assert s.quorum.isr == (A,)
    s = _walk(model, "ControlledShutdown(B)", "FetchRequest(B)", "FetchResponse(B)")
    assert "ExpandIsr(B)" not in texts(model, s)  # KIP-841
    bug = KafkaModel(config("C1 CS+13916"))
    assert "ExpandIsr(B)" in texts(bug, _walk(bug, "ControlledShutdown(B)", "FetchRequest(B)", "FetchResponse(B)"))
    # A crashes: B (alive, in controlled shutdown) may not be elected, unless the bug
    down = _walk(model, "Crash(A)")
    assert "ElectLeader(B)" in texts(model, down)
    assert "ElectLeader(B)" not in texts(model, _walk(model, "ControlledShutdown(B)", "Crash(A)", "Restart(A)",
                                                      "Crash(A)"))  # (B is not in the ISR either)
    three = KafkaModel(config("C5 CS"))
    t = _walk(three, "ControlledShutdown(C)", "Crash(A)")
    assert [x for x in texts(three, t) if x.startswith("ElectLeader")] == ["ElectLeader(B)"]
    three_bug = KafkaModel(config("C5 CS+13916"))
    t = _walk(three_bug, "ControlledShutdown(C)", "FetchRequest(C)", "FetchResponse(C)", "ExpandIsr(C)", "Crash(A)")
    assert [x for x in texts(three_bug, t) if x.startswith("ElectLeader")] == ["ElectLeader(B)", "ElectLeader(C)"]


def test_the_leader_s_shutdown_elects_each_candidate_or_nobody():
    model = KafkaModel(config("C5 CS"))
    s = model.init_states()[0]
    moves = [x for x in texts(model, s) if x.startswith("ControlledShutdown(A")]
    assert moves == ["ControlledShutdown(A, to B)", "ControlledShutdown(A, to C)"]
    t = step(model, s, "ControlledShutdown(A, to C)")
    assert (t.quorum.leader, t.quorum.epoch, t.quorum.isr) == (C, 1, (B, C))
    assert t.replicas[C].leader == C and t.replicas[C].epoch == 1 and t.replicas[A].shutting
    assert t.replicas[A].leader == A and t.replicas[A].epoch == 0  # A acts on its old epoch until it follows
    assert "BecomeFollower(A)" in texts(model, t)
    # the leader of a partition whose ISR is only itself: nobody may lead
    one = KafkaModel(config("C1 CS"))
    u = step(one, _walk(one, "Produce(A)", "ShrinkIsr(B)"), "ControlledShutdown(A)")
    assert (u.quorum.leader, u.quorum.epoch, u.quorum.isr) == (None, 1, (A,))  # never an empty ISR without ELR
    elr = KafkaModel(config("C1 ELR+CS"))
    v = step(elr, _walk(elr, "Produce(A)", "ShrinkIsr(B)"), "ControlledShutdown(A)")
    assert (v.quorum.leader, v.quorum.epoch, v.quorum.isr, v.quorum.elr) == (None, 1, (), (A,))
    # at the last leader epoch the leader's shutdown has no successor; a follower's still has
    top = _walk(one, "Crash(A)", "ElectLeader(B)", "Restart(A)", "BecomeFollower(A)", "FetchRequest(A)",
                "FetchResponse(A)", "ExpandIsr(A)", "Crash(B)", "ElectLeader(A)")
    assert top.quorum.epoch == 2 and top.quorum.leader == A
    assert [x for x in texts(one, top) if x.startswith("ControlledShutdown")] == []


def test_the_controller_moves_a_leadership_by_the_election_kinds():
    unclean = KafkaModel(attrs.evolve(config("C1 CS"), unclean_leader_election=True))
    s = step(unclean, _walk(unclean, "Produce(A)", "ShrinkIsr(B)"), "ControlledShutdown(A, to B)")
    assert (s.quorum.leader, s.quorum.isr, s.quorum.elr) == (B, (B,), ())
    # from the ELR: C left the ISR below min ISR; B left it at min ISR and may not lead
    elr = KafkaModel(config("C5 ELR+CS"))
    t = _walk(elr, "Produce(A)", "ShrinkIsr(B)", "ShrinkIsr(C)")
    assert t.quorum.isr == (A,) and t.quorum.elr == (C,)
    assert [x for x in texts(elr, t) if x.startswith("ControlledShutdown(A")] == ["ControlledShutdown(A, to C)"]
    u = step(elr, t, "ControlledShutdown(A, to C)")
    assert (u.quorum.leader, u.quorum.epoch, u.quorum.isr, u.quorum.elr) == (C, 1, (C,), (A,))


def test_a_pending_expansion_of_a_replica_outside_the_isr_survives_its_shutdown():
    """Only the mark changes for a replica outside the ISR; the controller with broker epochs
    refuses to add it, the controller without them accepts (the exception of ShuttingNotInIsr)."""
    for key, isr in (("C1 AP+BE+CS", (A,)), ("C1 AP+CS", (A, B))):
        model = KafkaModel(config(key))
        s = _walk(model, "Produce(A)", "ShrinkIsr(B)", "AlterPartition(B)", "FetchRequest(B)", "FetchResponse(B)",
                  "FetchRequest(B)", "ExpandIsr(B)")
        assert s.quorum.alter == (A, EXPAND, B)
        t = step(model, s, "ControlledShutdown(B)")
        assert t.quorum == s.quorum and t.replicas[B].shutting
        assert step(model, t, "AlterPartition(B)").quorum.isr == isr, key
    model = KafkaModel(config("C1 AP+BE+CS"))
    done = [model.describe_step(t, a, u) for a, u in model.successors(t) if a.name == "AlterPartition"]
    assert done == ["A's request to add B is refused: B is in controlled shutdown"]


def test_a_clean_stop_is_no_crash_and_keeps_the_replica_eligible():
    model = KafkaModel(config("C2 ELR+CS"))
    s = _walk(model, "Produce(A)", "FetchRequest(B)", "FetchResponse(B)", "ControlledShutdown(B)")
    t = step(model, s, "ShutdownComplete(B)")
    b = t.replicas[B]
    assert not b.alive and not b.shutting and not b.lossy and b.inflight is None
    assert b.log == s.replicas[B].log and t.crashes == 0 and t.quorum == s.quorum
    back = step(model, t, "Restart(B)")
    assert back.quorum == t.quorum  # not an unclean shutdown: nothing removed
    # a crash ends a controlled shutdown
    crashed = [u for a, u in model.successors(s) if a.name == "Crash" and a.replica == B]
    assert crashed and all(not u.replicas[B].shutting and u.crashes == 1 for u in crashed)


def test_the_side_check_s_exception_is_reachable():
    """ShuttingNotInIsr as the section words it fails on C1 + CS: the leaderless shutdown of the
    ISR's last member keeps it (the controller writes no empty ISR without the eligible leader
    replicas); our check excepts exactly that state."""
    model = KafkaModel(config("C1 CS"))
    s = _walk(model, "Produce(A)", "ShrinkIsr(B)", "ControlledShutdown(A)")
    assert s.replicas[A].shutting and s.quorum.isr == (A,) and s.quorum.leader is None
    assert shutting_not_in_isr(model, s) is None
    broken = s.__class__(s.replicas, s.quorum.__class__(A, 1, (A,)))
    assert shutting_not_in_isr(model, broken) == "A is in controlled shutdown and in the ISR"


# -- every option off: nothing changes; every engine runs these configurations per state -------------

def test_without_the_options_the_actions_are_as_before():
    assert KafkaModel(Config()).action_names() == ACTION_NAMES[:-1]
    assert KafkaModel(Config(alter_partition=True)).action_names() == ACTION_NAMES
    assert KafkaModel(config("C1 CS")).action_names() == ACTION_NAMES[:-1] + ("ControlledShutdown", "ShutdownComplete")
    for key in ("C1 ELR+AP+BE", "C1 CS", "C1 ELR+AP+BE+15221"):  # the batch kernel runs them all
        model = KafkaModel(config(key))
        assert model.batch_unsupported() is None and model.batch_kernel().action_names == model.action_names()
    every = reachable(KafkaModel(config("C1 ELR+AP+BE")), 10**5)
    assert len(every) == 7_390  # the table's count without the options
    assert not any(s.controlled_shutdowns or any(r.shutting for r in s.replicas) for s in every)


def test_symmetry_stores_one_state_per_orbit():
    """``shutting`` moves with its replica: the distinct count under symmetry is the number of
    orbits of every reachable state, counted by brute force."""
    from kmc.model.symmetry import permute, symmetries

    cfg = Config(replicas=("A", "B", "C"), max_messages=1, max_crashes=0, max_leader_epoch=2,
                 min_insync_replicas=2, truncation="leader-epoch-2.1", max_controlled_shutdowns=1)
    model = KafkaModel(cfg)
    every = reachable(model, 10**6)
    orbits = {min(encode(permute(s, p)) for p in symmetries(cfg)) for s in every}
    assert any(r.shutting for s in every for r in s.replicas)
    plain = LocalEngine(model, model.properties(), Options(keep_going=True)).run()
    reduced = LocalEngine(model, model.properties(), Options(keep_going=True, symmetry=True)).run()
    assert plain.stats.distinct == len(every) > reduced.stats.distinct == len(orbits)
    s = next(s for s in every if s.replicas[B].shutting)
    assert permute(s, (0, 2, 1)).replicas[C].shutting and not permute(s, (0, 2, 1)).replicas[B].shutting
    assert permute(s, (0, 2, 1)).controlled_shutdowns == s.controlled_shutdowns


@pytest.mark.parametrize("how", ["default", "workers", "disk", "symmetry"])
def test_every_local_engine_runs_it_on_the_batch_kernel(how, tmp_path):
    cfg = config("C1 ELR+AP+BE+15221")
    model = KafkaModel(cfg)
    props = [BY_NAME[p] for p in (CNL, LND, LCC)]
    opts = {"default": {}, "workers": {"workers": 2}, "disk": {"store": "disk", "store_dir": str(tmp_path)},
            "symmetry": {"symmetry": True}}[how]
    engine = make_engine(model, props, Options(keep_going=True, **opts))
    assert engine.path != "per-state" and engine.per_state_because is None
    result = engine.run()
    # (two replicas, the first leading: the only symmetry is the identity, so symmetry keeps every state)
    assert result.stats.distinct == 7_487
    assert not result.violations


def test_resuming_from_every_level_gives_the_same_result():
    import pickle

    model = KafkaModel(config("C1 ELR+AP+BE+15221"))
    props = [BY_NAME[p] for p in (CNL, LCC)]
    snaps = []
    engine = make_engine(model, props, Options(keep_going=True))
    engine.on_level = lambda e: snaps.append(pickle.dumps(e.snapshot()))
    whole = engine.run()
    assert whole.stats.distinct == 7_487
    for blob in snaps[::5]:
        resumed = make_engine(model, props, Options(keep_going=True))
        resumed.restore(pickle.loads(blob))
        got = resumed.run()
        assert (got.stats.distinct, got.stats.generated, got.stats.depth) == (
            whole.stats.distinct, whole.stats.generated, whole.stats.depth)


def test_the_batch_engine_runs_it():
    from kmc.checker.local.rows import BatchEngine

    result = BatchEngine(KafkaModel(config("C1 CS")), [BY_NAME[CNL]], Options(keep_going=True)).run()
    assert result.stats.distinct == CS_TABLE["C1"][0] and not result.violations


# -- the shipped specs ------------------------------------------------------------------------------

# spec -> its row of the tables
SPEC_ROWS = {
    "kafka-15221-two-replicas": "C2 ELR+AP+BE+15221",
    "kafka-15221-acks-all": "C2 ELR+AP+BE+15221+acks",
    "rolling-restart-loss": "C2 AP+BE+CS",
    "rolling-restart-elr": "C2 ELR+AP+BE+CS",
}
# The rolling restart of a 3-broker cluster (acks=all, min ISR 2, Kafka 3.7+): no table has it;
# its numbers are kmc's, pinned and recomputed by the naive oracle with KMC_SLOW=1:
# spec -> (distinct, generated, depth, {property: trace length}, trap states).
ROLLING = {
    "rolling-restart-3-7": (149_347, 527_143, 32, {}, 0),
    "rolling-restart-3-7-crash": (337_008, 1_269_215, 31, {}, 0),
    "rolling-restart-3-6-crash": (391_892, 1_481_591, 35, {CNL: 8, LCC: 7, ANL: 9}, 0),
}


def _operators(config) -> bool:
    return bool(config.max_controlled_shutdowns or config.bugs)


def test_every_operators_spec_is_a_row():
    shipped = {p.stem for p in SPECS.glob("*.toml") if _operators(load_spec(p).config)
               and not load_spec(p).config.min_isr_changes and not load_spec(p).config.max_disk_failures}
    assert shipped == set(SPEC_ROWS) | set(ROLLING)
    for name, key in SPEC_ROWS.items():
        spec = load_spec(SPECS / f"{name}.toml")
        assert spec.config == config(key), name
        assert spec.title and spec.description and spec.keep_going
        want = {**ROWS.get(key, (None, {}))[1]}
        if PR in spec.expect:
            want = {p: v for p, v in want.items()}
            want[PR] = PR_TABLE[key][2]
        assert spec.expect == {p: H if v == H else "violated" for p, v in want.items()}, name


def _spec_param(name):
    key = SPEC_ROWS[name]
    distinct = ROWS[key][0] if key in ROWS else PR_TABLE[key][0]
    return _param(name, distinct)


@pytest.mark.parametrize("name", [_spec_param(n) for n in SPEC_ROWS])
def test_a_shipped_spec_runs_as_kmc_check_runs_it(name, explorations):
    spec, model, result = explorations[name]
    assert result.engine == "local" and result.complete
    key = SPEC_ROWS[name]
    distinct, want = ROWS[key] if key in ROWS else (PR_TABLE[key][0], {})
    assert result.stats.distinct == distinct
    lengths = _lengths(result)
    for p in spec.expect:
        if p == PR:
            assert (lengths[PR], result.violations[PR].traps) == (PR_TABLE[key][2], PR_TABLE[key][1])
        else:
            assert lengths.get(p, H) == want[p], p
    assert {p: result.verdict(p) for p in spec.expect} == spec.expect
    assert tuple(result.checked) == tuple(p.name for p in spec.properties())


@pytest.mark.slow
@SLOW
@pytest.mark.parametrize("name", sorted(ROLLING))
def test_the_rolling_restart_of_three_brokers(name, explorations):
    """A rolling restart of three brokers: what kmc check says, pinned, and the naive oracle's numbers."""
    spec, _model, result = explorations[name]
    distinct, generated, depth, traces, traps = ROLLING[name]
    assert spec.config.replicas == ("A", "B", "C") and spec.config.acks == "all"
    assert spec.config.min_insync_replicas == 2 and spec.config.broker_epochs
    assert spec.config.eligible_leader_replicas == ("3-7" in name) and spec.config.bugs == (
        () if "3-7" in name else (KAFKA_15221,))
    assert (result.stats.distinct, result.stats.generated, result.stats.depth) == (distinct, generated, depth)
    assert _lengths(result) == traces
    assert (result.violations[PR].traps if PR in result.violations else 0) == traps
    assert {p: result.verdict(p) for p in spec.expect} == spec.expect
    want = oracle.explore(spec.config, [p.name for p in spec.properties()], keep_going=True)
    assert (want.distinct, want.generated, want.depth, want.traces, want.traps) == (
        distinct, generated, depth, traces, traps)


def test_kmc_check_runs_it_on_the_batch_kernel(capsys):
    from kmc.app.cli import main

    code = main(["check", str(SPECS / "kafka-15221-two-replicas.toml"), "--no-progress", "--no-trace"])
    _out, err = capsys.readouterr()
    assert code == 1
    assert "per-state path" not in err


def test_a_saved_counterexample_replays(tmp_path, capsys):
    import json

    from kmc.app.cli import main
    from kmc.app.commands.replay import load_document, replay
    from kmc.app.render.json_result import state_from_dict, state_to_dict

    saved = tmp_path / "r.json"
    assert main(["check", str(SPECS / "rolling-restart-loss.toml"), "--invariant", CNL, "--no-progress",
                 "--no-trace", "--json", str(saved)]) == 1
    capsys.readouterr()
    model, violation = replay(str(saved), load_document(saved))
    states = violation.path.states
    assert len(states) == 6 and states[-1].replicas[B].shutting and states[-1].controlled_shutdowns == 1
    for s in states:
        assert state_from_dict(model, json.loads(json.dumps(state_to_dict(model, s)))) == s
    assert "shutting" not in json.dumps(state_to_dict(KafkaModel(config("C2 AP+BE")), model.init_states()[0]))
    assert main(["replay", str(saved)]) == 0
    text = capsys.readouterr().out
    assert "B is in controlled shutdown" in text and "ControlledShutdown(B)" in text


@pytest.mark.spark
@pytest.mark.skipif(os.environ.get("KMC_SLOW") != "1", reason="the per-state path on Spark: set KMC_SLOW=1")
def test_the_spark_engine_gives_the_per_state_result(spark_sc):
    from conftest import SPARK_MASTER, assert_same_spark_result
    from kmc.checker.spark.engine import SparkRowsEngine

    spec = load_spec(SPECS / "kafka-15221-two-replicas.toml")
    model = spec.model()
    options = Options(keep_going=True)
    want = LocalEngine(model, spec.properties(), options).run()
    engine = SparkRowsEngine(model, spec.properties(), options, master=SPARK_MASTER, partitions=2,
                             driver_level_limit=0)
    assert engine.path == "rows"
    assert_same_spark_result(engine.run(), want)


def test_coverage_counts_the_kinds_of_a_controlled_shutdown():
    """Every answer of the controller but the unclean one (off here) is reached on two replicas with
    the eligible leader replicas and min ISR 2 (1,563 states); the counts add up to the steps taken;
    the mark and the count are variables."""
    cfg = Config(replicas=("A", "B"), max_messages=1, max_crashes=1, max_leader_epoch=2, min_insync_replicas=2,
                 truncation="leader-epoch-2.1", hw_requires_min_isr=True, eligible_leader_replicas=True,
                 max_controlled_shutdowns=1)
    model = KafkaModel(cfg)
    result = LocalEngine(model, model.properties(), Options(keep_going=True, coverage=True)).run()
    cov = result.stats.coverage
    kinds = cov.kinds["ControlledShutdown"]
    assert {k for k, n in kinds.items() if n} == {"not in the ISR", "leaves the ISR", "clean", "ELR", "leaderless"}
    assert sum(kinds.values()) == result.stats.fired["ControlledShutdown"]
    assert cov.values["replica.shutting"] == {0, 1} and cov.values["controlled_shutdowns"] == {0, 1}
    plain = KafkaModel(Config(truncation="leader-epoch-2.1"))
    assert "ControlledShutdown" not in plain.coverage_names().kinds
    assert "replica.shutting" not in plain.coverage_names().variables


def test_the_pictures_show_the_shutdown_on_the_controller_s_lane():
    """The operator's request goes to the controller and its answer comes back on the controller's
    lane; the clean stop is no crash (no cross); the refusal of a replica in controlled shutdown
    is drawn as a refusal."""
    from kmc.app.render.diagram import CONTROLLER, build_path
    from kmc.app.render.svg import render

    model = KafkaModel(config("C2 AP+BE+CS"))
    s0 = model.init_states()[0]
    texts_ = ["Produce(A)", "ControlledShutdown(B)", "ShutdownComplete(B)", "Restart(B)"]
    states, choices = [s0], []
    for text in texts_:
        names = [model.format_action(a) for a, _ in model.successors(states[-1])]
        choices.append(names.index(text))
        states.append(model.successors(states[-1])[choices[-1]][1])
    from kmc.checker.core.trace import replay_choices

    d = build_path(model, replay_choices(model, 0, tuple(choices)))
    cs, done = d.columns[2], d.columns[3]
    assert [(e.kind, e.source, e.target, e.label) for e in cs.events] == [
        ("request", B + 1, CONTROLLER, "controlled shutdown"), ("isr", CONTROLLER, B + 1, "ISR −B")]
    assert done.events == () and not any(c.crashed for c in done.replicas)
    svg = render(d)
    assert "controlled shutdown" in svg and "ISR −B" in svg and "shutting down" in svg
    assert cs.replicas[B].shutting and not done.replicas[B].shutting
    leader = KafkaModel(config("C5 CS"))
    path = replay_choices(leader, 0, (next(i for i, (a, _) in enumerate(leader.successors(leader.init_states()[0]))
                                           if leader.format_action(a) == "ControlledShutdown(A, to B)"),))
    events = build_path(leader, path).columns[1].events
    assert [(e.kind, e.target, e.label) for e in events] == [
        ("request", CONTROLLER, "controlled shutdown"), ("elect", B + 1, "leader, e1")]


def test_the_tla_text_has_the_mark_and_the_count():
    from kmc.app.render.tla import state_text

    model = KafkaModel(config("C1 CS"))
    s = step(model, model.init_states()[0], "ControlledShutdown(B)")
    text = state_text(model, s)
    assert text.endswith("/\\ shutting = (A :> FALSE @@ B :> TRUE)\n/\\ controlled_shutdowns = 1")
    assert "shutting" not in state_text(KafkaModel(config("C1")), KafkaModel(config("C1")).init_states()[0])


def test_the_explorer_walks_the_rolling_restart_loss():
    from kmc.app.render.explorer import Explorer
    from kmc.app.render.explorer_views import KafkaView

    spec = load_spec(SPECS / "rolling-restart-loss.toml")
    model = spec.model()
    explorer = Explorer(model, spec.properties(), view=KafkaView(model), title=spec.title, path=spec.path)
    s, choices = model.init_states()[0], []
    for text in ["Produce(A)", "ControlledShutdown(B)", "Crash(A, keeps 0)", "Restart(A)", "ElectLeader(A)"]:
        names = [model.format_action(a) for a, _ in model.successors(s)]
        choices.append(names.index(text))
        s = model.successors(s)[choices[-1]][1]
    doc = explorer.state_doc(0, choices)
    assert [st["action"] for st in doc["steps"]][1:3] == ["Produce(A)", "ControlledShutdown(B)"]
    status = {p["name"]: p["status"] for p in doc["properties"]}
    assert status[CNL] == "violated"
    assert "controlled shutdown" in doc["diagram_svg"]
