""""Why is this action not enabled?": the models' guards as named conditions
(``Model.guards``, the Kafka model's in ``model/guards.py``), ``kmc why-not`` and the
explorer's disabled actions.

The important test is the differential one: on every reachable state of small shipped specs
covering every truncation rule and option, an action is enabled (the reference model yields
it, and so does the naive oracle of ``tests/oracle.py``, written from docs/model.md alone)
exactly when every condition the model declares for it holds."""

from __future__ import annotations

import collections
import json
from pathlib import Path

import attrs
import pytest

import oracle
from kmc.app.cli import EXIT_BAD_INPUT, main
from kmc.app.specs import load_spec
from kmc.checker.contract.protocol import with_defaults
from kmc.model.actions import ELECT_LEADER, Action
from kmc.model.config import KNOWN_BUGS, Config
from kmc.model.truncation import TRUNCATION_RULES
from kmc.model.kafka import KafkaModel
from kmc.model.state import Quorum, Replica, State
from kmc.app.render.why_not import NOT_DECLARED, UnknownAction, answers

REPO = Path(__file__).resolve().parent.parent
SPECS = REPO / "specs"

# (spec, the constants changed to keep it small): together every truncation rule, every
# option and both acks settings (test_the_specs_cover_every_rule_and_option)
CASES = [
    ("hw-unclean", {"max_messages": 1}),
    ("le-unflushed", {"max_messages": 1}),
    ("kip279-unclean", {"max_messages": 1}),
    ("fetch-c1-both-bugs", {"max_messages": 1}),
    ("ap-be-c1", {"max_messages": 1}),
    ("acks1-data-loss", {"max_messages": 1}),
    ("acks1-zombie-preferred", {"max_messages": 1}),
    ("acks-all-min-isr", {"max_messages": 1}),
    ("v21-gate-min-isr", {"max_messages": 1}),
    ("v21-elr-min-isr", {"max_messages": 1}),
    ("live-c2-elr-lkl", {"max_messages": 1}),
    ("fetch-c4-both-bugs", {"max_crashes": 0}),
    ("hw-data-loss", {"initial_leader": "any", "max_messages": 1}),
    # the operators' actions and their bugs
    ("rolling-restart-elr", {"max_crashes": 1, "max_messages": 1}),
    ("rolling-restart-loss", {"max_crashes": 1, "max_messages": 1, "bugs": ("KAFKA-13916",),
                              "unclean_leader_election": True}),
    ("kafka-15221-two-replicas", {"max_messages": 1}),
    ("kafka-15221-two-replicas", {"max_crashes": 1, "max_messages": 1, "bugs": ("KAFKA-16540",),
                                  "min_isr_changes": (2, 1), "min_isr_lag": True, "alter_partition": False,
                                  "broker_epochs": False}),
    ("kafka-15221-two-replicas", {"max_crashes": 1, "max_messages": 1, "bugs": ("KAFKA-16234",),
                                  "max_disk_failures": 1, "alter_partition": False, "broker_epochs": False}),
    ("rolling-restart-loss", {"max_crashes": 0, "max_messages": 1, "max_disk_failures": 1, "min_isr_changes": (2,),
                              "max_controlled_shutdowns": 1}),
]
OPTIONS = ("unclean_leader_election", "unflushed_loss", "preferred_election", "hw_requires_min_isr",
           "eligible_leader_replicas", "last_known_leader", "alter_partition", "broker_epochs", "truncate_on_fetch")


def _config(name, changes) -> Config:
    return attrs.evolve(load_spec(str(SPECS / f"{name}.toml")).model().config, **changes)


def test_the_specs_cover_every_rule_and_option():
    configs = [_config(n, c) for n, c in CASES]
    assert {c.truncation for c in configs} == set(TRUNCATION_RULES)
    for option in OPTIONS:
        assert any(getattr(c, option) for c in configs), option
    assert {c.acks for c in configs} == {None, "all", "1"}
    assert {c.initial_leader for c in configs} == {"first", "any"}
    assert {b for c in configs for b in c.all_bugs} == set(KNOWN_BUGS)
    assert all(any(getattr(c, key) for c in configs)
               for key in ("max_controlled_shutdowns", "min_isr_changes", "min_isr_lag", "max_disk_failures"))


@pytest.mark.parametrize("name,changes", CASES, ids=[f"{n}-{k}" for k, (n, _) in enumerate(CASES)])
def test_an_action_is_enabled_exactly_when_its_guard_holds(name, changes):
    cfg = _config(name, changes)
    model = KafkaModel(cfg)
    seen = set(model.init_states())
    level = list(seen)
    states = 0
    while level:
        following = []
        for s in level:
            states += 1
            succ = model.successors(s)
            enabled = collections.Counter(a for a, _ in succ)
            guards = model.guards(s)
            declared = collections.Counter(g.action for g in guards)
            assert set(declared.values()) == {1}, f"{name}: an action declared twice"
            assert set(enabled) <= set(declared), f"{name}: an enabled action has no guard: {set(enabled) - set(declared)}"
            by_guard = {g.action for g in guards if g.enabled}
            assert set(enabled) == by_guard, (name, s, {model.format_action(a) for a in set(enabled) ^ by_guard})
            # the naive oracle's enabled actions, written from docs/model.md alone
            labels = {(a, r, cut) for (a, r, cut), _ in oracle.successors(cfg, s)}
            # (the oracle's third label is a crash's cut, or the replica a controlled shutdown elects)
            assert labels == {(a.name, a.replica, a.cut if a.to is None else a.to) for a in by_guard}, (name, s)
            for _, t in succ:
                if t not in seen:
                    seen.add(t)
                    following.append(t)
        level = following
    assert states == len(seen) > 100


# -- an election blocked by each of its guard's conditions --------------------------------------

A, B, C = 0, 1, 2


def _state(alive=(True, True, True), isr=(A, B, C), leader=A, epoch=1, elr=(), rep_epoch=None):
    """Three replicas, A the controller's leader (``leader``) in ``epoch``, each replica
    following it in ``rep_epoch`` (default ``epoch``)."""
    reps = tuple(
        Replica(alive=alive[r], log=(), hw=0, epoch=epoch if rep_epoch is None else rep_epoch[r], leader=leader,
                remote_leo=(0, 0, 0))
        for r in range(3)
    )
    return State(replicas=reps, quorum=Quorum(leader, epoch, tuple(isr), tuple(elr)))


def _why(model, state, action):
    (row,) = answers(with_defaults(model), state, action)["actions"]
    return row


@pytest.mark.parametrize("case", ["bound", "leader", "down", "ineligible", "preferred-self"])
def test_an_election_blocked_by_each_condition_names_it(case):
    cfg = Config(replicas=("A", "B", "C"), max_leader_epoch=2, min_insync_replicas=1,
                 preferred_election=case == "preferred-self")
    model = KafkaModel(cfg)
    elect_b = Action(ELECT_LEADER, B)
    if case == "bound":  # A is down, B in the ISR and up: only the epoch bound stops it
        s, who, want = _state(alive=(False, True, True), epoch=2), "ElectLeader(B)", \
            "the controller's epoch 2 is below max_leader_epoch = 2"
    elif case == "leader":  # A leads: nothing to replace (no preferred election)
        s, who, want = _state(), "ElectLeader(B)", "the controller's leader A is gone"
    elif case == "down":  # A is down, and so is B
        s, who, want = _state(alive=(False, False, True)), "ElectLeader(B)", "B is up"
    elif case == "ineligible":  # A is down, B is not in the ISR (no unclean election)
        s, who, want = _state(alive=(False, True, True), isr=(A, C)), "ElectLeader(B)", "B is in the ISR {A,C}"
    else:  # a preferred election may move leadership away from A, but not to A itself
        s, who, want = _state(), "ElectLeader(A)", "A is not the leader a preferred election moves leadership from"
    row = _why(model, s, who)
    assert not row["enabled"] and not row["disagrees"]
    assert len(row["failing"]) == 1 and row["failing"][0].startswith(want), row["failing"]
    enabled = {model.format_action(a) for a, _ in model.successors(s)}
    assert who not in enabled
    if case != "preferred-self":
        assert elect_b not in {a for a, _ in model.successors(s)}


def test_a_model_without_guards_says_so_and_a_model_with_guards_is_answered():
    import toy

    bare = with_defaults(toy.BareCounters())
    state = toy.Counters(3, 0)
    doc = answers(bare, state, "IncX")
    assert doc == {"declared": False, "actions": [{"action": "IncX", "name": "IncX", "enabled": False,
                                                   "conditions": [], "failing": []}]}
    with pytest.raises(UnknownAction):
        answers(bare, state, "Nope")
    from kmc.app.user_model import load_model_spec

    two = load_model_spec(str(SPECS / "models" / "two_phase.py") + ":two_phase", {"rms": 2}).model()
    s0 = two.init_states()[0]
    (row,) = answers(with_defaults(two), s0, "TMCommit")["actions"]
    assert not row["enabled"] and row["failing"] == ["the TM knows every RM prepared"]


def test_the_two_phase_guards_agree_with_its_actions():
    from kmc.app.user_model import load_model_spec

    for params in ({"rms": 3}, {"rms": 2, "eager": True}):
        model = load_model_spec(str(SPECS / "models" / "two_phase.py") + ":two_phase", params).model()
        seen = set(model.init_states())
        level = list(seen)
        while level:
            following = []
            for s in level:
                actions = model.actions(s)
                assert set(actions) == {g.action for g in model.guards(s) if g.enabled}
                for a in actions:
                    t = model.next_state(s, a)
                    if t not in seen:
                        seen.add(t)
                        following.append(t)
            level = following
        assert len(seen) > 50


# -- kmc why-not ---------------------------------------------------------------------------------


def _seed(tmp_path):
    out = tmp_path / "r.json"
    main(["check", str(SPECS / "hw-data-loss.toml"), "--no-progress", "--no-trace", "--json", str(out)])
    return out


def test_why_not_on_a_trace_step(tmp_path, capsys):
    result = _seed(tmp_path)
    capsys.readouterr()
    # state 6 of seed scenario 1: A has just crashed, B follows it (epoch 0): B's election is
    # enabled (A is gone), and B's fetch is not (the leader is down)
    assert main(["why-not", str(result), "--step", "6", "--action", "FetchRequest(B)"]) == 0
    out = capsys.readouterr().out
    assert "FetchRequest(B) is not enabled in state 6" in out
    assert "✗ the partition has a leader" in out and "✓ B is up" in out
    assert main(["why-not", str(result), "--step", "6", "--action", "ElectLeader(B)", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["step"] == 6 and doc["actions"][0]["enabled"] and doc["actions"][0]["failing"] == []


@pytest.mark.parametrize("args,message", [
    (["--step", "0"], "--step 0: the trace of CommittedNeverLost has states 1 to 10"),
    (["--step", "11"], "--step 11"),
    (["--action", "Elect(B)"], "--action: no action 'Elect(B)'"),
    (["--model", "x.py:f"], "--model: "),
])
def test_why_not_bad_input_is_one_line(tmp_path, capsys, args, message):
    result = _seed(tmp_path)
    capsys.readouterr()
    assert main(["why-not", str(result), *args]) == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_why_not_on_a_model_of_one_s_own(tmp_path, capsys):
    ref = str(SPECS / "models" / "two_phase.py") + ":two_phase"
    out = tmp_path / "r.json"
    main(["check", "--model", ref, "--param", "rms=2", "--param", "eager=true", "--no-progress", "--json", str(out)])
    capsys.readouterr()
    assert main(["why-not", str(out), "--step", "1", "--action", "TMCommit", "--model", ref]) == 0
    text = capsys.readouterr().out
    assert "TMCommit is not enabled in state 1" in text and "✗ the TM knows at least one RM prepared" in text
    assert main(["why-not", str(out), "--step", "1", "--action", "TMCommit"]) == EXIT_BAD_INPUT


def test_the_explorer_names_why_each_action_is_not_enabled():
    from kmc.app.render.explorer import Explorer
    from kmc.app.render.explorer_views import GenericView, KafkaView

    spec = load_spec(str(SPECS / "hw-data-loss.toml"))
    model = spec.model()
    doc = Explorer(model, spec.properties(), view=KafkaView(model)).state_doc(0, [])
    off = {d["action"]: d["failing"] for d in doc["disabled"]}
    assert "Produce(A)" not in off and off["Produce(B)"][0] == "B is the controller's leader (it is A)"
    assert off["Restart(A)"] == ["A is down"]
    import toy

    bare = toy.BareCounters()
    doc = Explorer(bare, bare.properties(), view=GenericView(bare)).state_doc(0, [0, 0, 0])
    assert doc["disabled"] == [{"name": "IncX", "action": "IncX", "reason": f"not enabled in this state ({NOT_DECLARED})",
                                "failing": []}]
