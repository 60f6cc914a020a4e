"""After KIP-279 (docs/model.md's "Kafka 2.1 and later"): the 2.1 rule, the HW gate, eligible leader
replicas, ``initial_leader``, and ``LeaderCandidateCompleteness``.

Every row of docs/model.md's second known-verdict table is a spec in specs/, run here once per
session against the verdicts and shortest-trace lengths of that table (TLC's, on an
independent TLA+ rendering) and against the distinct / depth / generated counts kmc
reports. The rows with three replicas explore 50,000 to 1.2 million states each (the
two-crash rows take minutes each), so they are marked ``slow`` and run only with
``KMC_SLOW=1``; the two-replica rows and the unit tests on hand-built states always run.

Replicas are numbered A=0, B=1, C=2; records are (epoch, id).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kmc.checker.local.rows import BatchEngine
from kmc.checker.local.states import LocalEngine, Options
from kmc.checker.contract.protocol import ALWAYS
from kmc.checker.core.result import HOLDS, VIOLATED
from kmc.invariants import ALL, BY_NAME, CLASSIC, default_properties, leader_candidate_completeness
from kmc.model import LEADER_EPOCH_21, LEADER_EPOCH_KIP279, Config, KafkaModel, elr_after, encode, leso
from kmc.app.specs import load_spec
from helpers import assert_traces_replay, spec_runs
from pins import EXCLUDED
from pins import MODERN_FAST_ROWS as FAST_ROWS
from pins import MODERN_SLOW_ROWS as SLOW_ROWS

SPECS = Path(__file__).resolve().parent.parent / "specs"
A, B, C = range(3)
CNL, LND, LCC = "CommittedNeverLost", "LogsNeverDiverge", "LeaderCandidateCompleteness"
H = HOLDS

SLOW = pytest.mark.skipif(os.environ.get("KMC_SLOW") != "1",
                          reason="7.9 million states (half a minute on the batch engine): set KMC_SLOW=1")

ROWS = {**FAST_ROWS, **SLOW_ROWS}


# The three-replica rows run on the batch engine (the default engine; the per-state path
# takes minutes on them). Their numbers were first computed on the per-state path, and
# tests/test_batch.py checks the batch kernel against the reference model on every spec.
BATCH_ROWS = set(SLOW_ROWS)
HUGE_ROWS = {"v21-preferred-two-crashes"}


def _param(name):
    marks = [pytest.mark.slow] if name in SLOW_ROWS else []
    return pytest.param(name, id=name, marks=marks + ([SLOW] if name in HUGE_ROWS else []))


PARAMS = [_param(n) for n in ROWS]


@pytest.fixture(scope="session")
def runs():
    """spec name -> (spec, model, result), each spec run at most once per session."""
    return spec_runs(SPECS, lambda name: BatchEngine if name in BATCH_ROWS else LocalEngine,
                     lambda spec: Options(keep_going=spec.keep_going, max_depth=spec.max_depth))


# -- the specs ---------------------------------------------------------------------------


def test_every_modern_spec_is_a_row():
    """Every shipped spec of docs/model.md's "Kafka 2.1 and later" is pinned here (tests/test_specs.py
    pins the others)."""
    # (the specs that track acknowledgements are tests/test_acks.py's rows; the availability
    # specs, tests/test_availability.py's; those with alter_partition, tests/test_alter_partition.py's;
    # those with min ISR changes or disk failures, tests/test_min_isr_disk.py's)
    modern = {p.stem for p in SPECS.glob("*.toml")
              if load_spec(p).config.modern and load_spec(p).config.acks is None
              and not load_spec(p).config.alter_partition and not p.stem.startswith(("avail-", "live-"))
              and not load_spec(p).config.min_isr_changes and not load_spec(p).config.max_disk_failures
              and not load_spec(p).config.truncate_on_fetch}  # the fetch path: tests/test_fetch_path.py
    assert modern - set(EXCLUDED) == set(ROWS)  # benchmarks are measured, not tested


@pytest.mark.parametrize("name", PARAMS)
def test_row(runs, name):
    distinct, depth, generated, want = ROWS[name]
    spec, model, result = runs(name)
    assert spec.title and spec.expect
    assert result.complete
    # The spec checks the table's invariants ("—" = not checked), plus HWB and LEM when
    # it checks them all; those two always hold.
    assert set(want) <= set(result.checked)
    assert set(result.checked) - set(want) <= {"HighWatermarkBelowLogEnd", "LeaderEpochMonotonic"}
    got = {p: (len(result.violations[p].path) if p in result.violations else H) for p in want}
    assert got == want
    assert all(result.verdict(p) == H for p in result.checked if p not in want)
    for prop, verdict in spec.expect.items():
        assert result.verdict(prop) == verdict, prop
    assert set(spec.expect) == set(result.checked)
    if distinct is not None:  # None: a two-crash row whose counts are not pinned yet
        assert (result.stats.distinct, result.stats.depth, result.stats.generated) == (distinct, depth, generated)


@pytest.mark.parametrize("name", PARAMS)
def test_row_traces_replay_and_are_shortest(runs, name):
    _, model, result = runs(name)
    assert all(BY_NAME[prop].kind == ALWAYS for prop in result.violations)
    assert_traces_replay(model, result)


def test_same_config_as_the_kip279_finding():
    old = load_spec(SPECS / "kip279-isr-expansion.toml").config
    new = load_spec(SPECS / "v21-isr-expansion.toml").config
    assert new.truncation == LEADER_EPOCH_21
    assert Config(**dict(new.as_dict(), replicas=new.replicas, truncation=LEADER_EPOCH_KIP279)) == old


def test_c2_gate_is_c2_with_min_isr_1(runs):
    """With min ISR 1 the HW gate never closes: the same state space as without it."""
    a, b = runs("v21-unflushed")[2], runs("v21-gate-unflushed")[2]
    assert (a.stats.distinct, a.stats.generated) == (b.stats.distinct, b.stats.generated)


def test_elr_closes_c2_through_the_lossy_restart(runs):
    spec, model, result = runs("v21-elr-unflushed")
    assert result.stats.fired["Restart"] > 0 and result.verdict(CNL) == HOLDS


# -- defaults: a pre-2.1 configuration is checked as before -----------------------------


def test_default_properties():
    assert default_properties(Config()) == CLASSIC == ALL[:4]
    assert ALL[4].name == LCC  # then AcknowledgedNeverLost, only with acks (tests/test_acks.py)
    for kw in ({"truncation": LEADER_EPOCH_21}, {"hw_requires_min_isr": True},
               {"hw_requires_min_isr": True, "eligible_leader_replicas": True},
               {"hw_requires_min_isr": True, "eligible_leader_replicas": True, "last_known_leader": True}):
        assert default_properties(Config(**kw)) == ALL[:5]  # never PartitionRecoverable


# -- leso, elr_after ---------------------------------------------------------------------


def test_leso(build):
    model = build.model(truncation=LEADER_EPOCH_21)
    log = [(0, 0), (1, 1), (1, 2)]
    for epoch, want in ((0, 0), (1, 1), (2, 3)):
        s = build.state([build.replica(2, log=log, epoch=epoch), build.replica(2, epoch=epoch)],
                        epoch=epoch)
        assert leso(s, A) == want
    s = build.state([build.replica(2, epoch=1), build.replica(2, epoch=1)], epoch=1)
    assert leso(s, A) == 0
    assert model is not None


def test_elr_after():
    on = Config(replicas=("A", "B", "C"), min_insync_replicas=2, hw_requires_min_isr=True,
                eligible_leader_replicas=True)
    off = Config(replicas=("A", "B", "C"), min_insync_replicas=2, hw_requires_min_isr=True)
    # A replica enters the ELR when it leaves an ISR that is then below min ISR.
    assert elr_after(on, (), (A, B), (A,)) == (B,)
    assert elr_after(on, (B,), (A,), ()) == (A, B)
    assert elr_after(on, (C,), (A, B, C), (A,)) == (B, C)
    # Back at min ISR: cleared. Without the option: always empty.
    assert elr_after(on, (C,), (A,), (A, B)) == ()
    assert elr_after(off, (), (A, B), (A,)) == ()


# -- the actions on hand-built states ----------------------------------------------------


def texts(model, state):
    return [model.format_action(a) for a, _ in model.successors(state)]


def step(model, state, text):
    found = [s for a, s in model.successors(state) if model.format_action(a) == text]
    assert found, f"{text} is not enabled; enabled: {texts(model, state)}"
    return found[0]


def _elr_model(build, **kw):
    base = dict(replicas=("A", "B", "C"), min_insync_replicas=2, truncation=LEADER_EPOCH_21,
                hw_requires_min_isr=True, eligible_leader_replicas=True, max_crashes=2)
    return build.model(**dict(base, **kw))


def test_elr_election_excludes_unclean(build):
    """No ISR member alive, a live ELR member: only it may be elected, even with unclean
    election on; the dead ISR members join the ELR."""
    model = _elr_model(build, unclean_leader_election=True)
    reps = [build.replica(3, alive=False, log=[(0, 0)], hw=1),
            build.replica(3, log=[(0, 0)], hw=1), build.replica(3)]
    s = build.state(reps, isr=[A], elr=[B], committed=[(0, 0, 0)])
    assert [t for t in texts(model, s) if t.startswith("ElectLeader")] == ["ElectLeader(B)"]
    after = step(model, s, "ElectLeader(B)")
    assert after.quorum.isr == (B,) and after.quorum.elr == (A,) and after.quorum.epoch == 1
    assert leader_candidate_completeness(model, after) is None


def test_unclean_needs_no_live_elr_member_and_clears_the_elr(build):
    model = _elr_model(build, unclean_leader_election=True)
    reps = [build.replica(3, alive=False, log=[(0, 0)], hw=1),
            build.replica(3, alive=False, log=[(0, 0)]), build.replica(3)]
    s = build.state(reps, isr=[A], elr=[B], committed=[(0, 0, 0)])
    assert [t for t in texts(model, s) if t.startswith("ElectLeader")] == ["ElectLeader(C)"]
    after = step(model, s, "ElectLeader(C)")
    assert after.quorum.isr == (C,) and after.quorum.elr == ()
    # Without unclean election the partition stays leaderless.
    model = _elr_model(build)
    assert not [t for t in texts(model, s) if t.startswith("ElectLeader")]


def test_clean_election_puts_dead_isr_members_in_the_elr(build):
    model = _elr_model(build)
    reps = [build.replica(3, alive=False), build.replica(3), build.replica(3)]
    s = build.state(reps, isr=[A, B])
    after = step(model, s, "ElectLeader(B)")
    assert after.quorum.isr == (B,) and after.quorum.elr == (A,)


def test_lossy_crash_and_restart(build):
    """A crash that loses records marks the replica lossy; its restart removes it from the
    ISR and the ELR, fences its old fetch position, then runs the quorum leader's HW step."""
    model = build.model(truncation=LEADER_EPOCH_21, unflushed_loss=True, hw_requires_min_isr=True,
                        eligible_leader_replicas=True, max_crashes=2)
    a = build.replica(2, log=[(0, 0), (0, 1)], hw=0, remote=(0, 1))
    b = build.replica(2, log=[(0, 0)])
    s = build.state([a, b], produced=2)
    kept = step(model, s, "Crash(B, keeps 1)")
    assert kept.replicas[B].lossy is False and not kept.replicas[B].alive
    crashed = step(model, s, "Crash(B, keeps 0)")
    assert crashed.replicas[B].lossy is True and crashed.replicas[B].log == ()
    assert encode(crashed) != encode(step(model, s, "Crash(B, keeps 1)"))
    restarted = step(model, crashed, "Restart(B)")
    rb = restarted.replicas[B]
    assert rb.alive and not rb.lossy and rb.epoch == -1 and rb.leader is None
    assert restarted.quorum.isr == (A,) and restarted.quorum.elr == ()
    assert restarted.replicas[A].remote_leo[B] == 0          # the fence
    assert restarted.quorum.leader == A and restarted.quorum.epoch == 0
    # HW(A) with the ISR {A}: both records are committed.
    assert restarted.replicas[A].hw == 2
    assert restarted.committed == ((0, 0, 0), (1, 0, 1))
    # A clean (not lossy) restart changes nothing at the controller.
    plain = step(model, kept, "Restart(B)")
    assert plain.quorum == kept.quorum and plain.replicas[A].remote_leo[B] == 1


def test_lossy_restart_of_the_last_isr_member_empties_the_isr(build):
    model = _elr_model(build, unflushed_loss=True)
    reps = [build.replica(3, alive=False, lossy=True), build.replica(3, alive=False),
            build.replica(3)]
    s = build.state(reps, isr=[A], elr=[B])
    after = step(model, s, "Restart(A)")
    assert after.quorum.isr == () and after.quorum.elr == (B,)


def test_hw_gate(build):
    """With hw_requires_min_isr the leader's HW does not move while the ISR is below min ISR."""
    a = build.replica(3, log=[(0, 0)], remote=(0, 0, 1))  # B lags, C has fetched record 0
    reps = [a, build.replica(3), build.replica(3, log=[(0, 0)])]
    s = build.state(reps, isr=[A, B], produced=1)
    gated = build.model(replicas=("A", "B", "C"), min_insync_replicas=2, hw_requires_min_isr=True,
                        truncation=LEADER_EPOCH_21)
    plain = build.model(replicas=("A", "B", "C"), min_insync_replicas=2, truncation=LEADER_EPOCH_21)
    assert step(gated, s, "ShrinkIsr(B)").replicas[A].hw == 0
    assert step(plain, s, "ShrinkIsr(B)").replicas[A].hw == 1
    # Reaching min ISR by ExpandIsr lets a frozen HW move.
    lone = build.state(reps, isr=[A], produced=1)
    assert step(gated, lone, "ExpandIsr(C)").replicas[A].hw == 1


def test_21_expand_isr_guard(build):
    """KAFKA-7128: under 2.1 a follower re-joins only from the leader's epoch start offset."""
    b = build.replica(3, log=[(0, 0), (1, 1)], epoch=1, leader=B, remote=(0, 0, 0))
    c = build.replica(3, epoch=1, leader=B)
    a = build.replica(3, alive=False, log=[(0, 0)], hw=1)
    s = build.state([a, b, c], leader=B, epoch=1, isr=[A, B], produced=2, committed=[(0, 0, 0)])
    assert leso(s, B) == 1
    kip279 = build.model(replicas=("A", "B", "C"), truncation=LEADER_EPOCH_KIP279)
    v21 = build.model(replicas=("A", "B", "C"), truncation=LEADER_EPOCH_21)
    assert "ExpandIsr(C)" in texts(kip279, s)      # position 0 is not below B's HW 0
    assert "ExpandIsr(C)" not in texts(v21, s)     # but it is below B's epoch start 1
    caught_up = build.state([a, build.replica(3, log=b.log, epoch=1, leader=B, remote=(0, 0, 1)), c],
                            leader=B, epoch=1, isr=[A, B], produced=2, committed=[(0, 0, 0)])
    assert "ExpandIsr(C)" in texts(v21, caught_up)


def test_leader_candidate_completeness_sentence(build):
    model = _elr_model(build)
    reps = [build.replica(3, log=[(0, 0)], hw=1), build.replica(3), build.replica(3, alive=False)]
    s = build.state(reps, isr=[A, B], committed=[(0, 0, 0)])
    assert leader_candidate_completeness(model, s) == (
        "record 0 (epoch 0) at offset 0 was committed but B, alive and in the ISR, has a log "
        "ending at 0")
    # Dead members are not candidates.
    s = build.state(reps, isr=[A, C], committed=[(0, 0, 0)])
    assert leader_candidate_completeness(model, s) is None


# -- initial_leader ----------------------------------------------------------------------


def test_initial_leader_any_gives_one_initial_state_per_replica():
    model = KafkaModel(Config(replicas=("A", "B", "C"), initial_leader="any"))
    states = model.init_states()
    assert len(states) == 3
    for i, s in enumerate(states):
        assert s.quorum.leader == i and s.quorum.epoch == 0 and s.quorum.isr == (A, B, C)
        assert all(r.leader == i and r.epoch == 0 and r.alive for r in s.replicas)
    assert KafkaModel(Config(replicas=("A", "B", "C"))).init_states() == states[:1]


def test_initial_leader_any_explores_every_initial_state():
    first = LocalEngine(KafkaModel(Config(max_crashes=0)), list(CLASSIC), Options()).run()
    both = LocalEngine(KafkaModel(Config(max_crashes=0, initial_leader="any")), list(CLASSIC),
                       Options()).run()
    # Two replicas, no crash: the two initial states' behaviours are mirror images.
    assert both.stats.distinct == 2 * first.stats.distinct


def test_pre_21_states_keep_their_encoding(build):
    """The new variables are appended only when not at their initial values."""
    (s,) = build.model().init_states()
    assert len(encode(s)) == 8 * 24


# -- the terminal trace ------------------------------------------------------------------


def _render(renderable) -> str:
    from rich.console import Console

    console = Console(width=160, no_color=True, record=True, file=open(os.devnull, "w"))
    console.print(renderable)
    return console.export_text()


def test_terminal_explains_the_21_guard_and_the_elr_election(build):
    from kmc.model.describe import describe_step

    b = build.replica(3, log=[(0, 0), (1, 1)], epoch=1, leader=B)
    c = build.replica(3, epoch=1, leader=B)
    a = build.replica(3, alive=False, log=[(0, 0)], hw=1)
    s = build.state([a, b, c], leader=B, epoch=1, isr=[A, B], produced=2, committed=[(0, 0, 0)])
    v21 = build.model(replicas=("A", "B", "C"), truncation=LEADER_EPOCH_21)
    after = step(v21, s, "FetchRequest(C)")
    from kmc.model import Action

    assert describe_step(v21, s, Action("FetchRequest", C), after).endswith(
        "C may not re-join the ISR: its log ends at 0, before the leader's epoch start offset 1")
    kip279 = build.model(replicas=("A", "B", "C"), truncation=LEADER_EPOCH_KIP279)
    assert "re-join" not in describe_step(kip279, s, Action("FetchRequest", C), step(kip279, s, "FetchRequest(C)"))

    model = _elr_model(build)
    reps = [build.replica(3, alive=False, log=[(0, 0)], hw=1), build.replica(3, log=[(0, 0)], hw=1),
            build.replica(3)]
    s = build.state(reps, isr=[A], elr=[B], committed=[(0, 0, 0)])
    text = describe_step(model, s, Action("ElectLeader", B), step(model, s, "ElectLeader(B)"))
    assert text.startswith("the controller elects B in epoch 1, ISR {B}")
    assert "(from the ELR: no ISR member is alive" in text and "ELR now {A}" in text


def test_terminal_shows_the_elr_and_a_lossy_replica(build):
    from kmc.model import Action
    from kmc.model.describe import describe_step
    from kmc.app.render.terminal import StateView

    model = build.model(truncation=LEADER_EPOCH_21, unflushed_loss=True, hw_requires_min_isr=True,
                        eligible_leader_replicas=True, max_crashes=2)
    a = build.replica(2, log=[(0, 0), (0, 1)], hw=0, remote=(0, 1))
    s = build.state([a, build.replica(2, log=[(0, 0)])], produced=2)
    crashed = step(model, s, "Crash(B, keeps 0)")
    text = _render(StateView(model, crashed, s))
    assert "DOWN (lossy)" in text and "ELR {}" in text
    assert "unclean shutdown" in describe_step(model, s, Action("Crash", B, 0), crashed)
    restarted = step(model, crashed, "Restart(B)")
    assert describe_step(model, crashed, Action("Restart", B), restarted) == (
        "B restarts with its log and high watermark from disk, no leader, epoch -1; after its lossy "
        "crash the controller removes it from the ISR {A,B} → {A} and the ELR {} → {}, and every "
        "leader forgets its fetch position from before the crash; A's high watermark advances to 2")
    # Without the option, neither the ELR nor "lossy" is shown.
    plain = build.model()
    assert "ELR" not in _render(StateView(plain, s)) and "lossy" not in _render(StateView(plain, s))
