"""Liveness under fairness on the Kafka model: EventuallyLeader and
CommittedEventuallyReplicated.

Three sources meet here: the known-verdict table of docs/model.md's "Liveness under
fairness" (TLC with the same fairness on an independent TLA+ rendering), the independent
liveness oracle (tests/liveness_oracle.py: the naive oracle's whole state graph, networkx's
components, fairness decided from the model description), and kmc. The oracle is checked
against the table first; then the Kafka pieces kmc plugs into its engines — the fair
instance of a step, its array form, the properties' checks and masks, the lasso
explanations — are checked against the oracle, state by state.
"""

from __future__ import annotations

import os
from pathlib import Path

import liveness_oracle as lo
import numpy as np
import pytest
from helpers import reachable
from kmc.checker.contract.protocol import ALWAYS_EVENTUALLY, LEADS_TO
from kmc.invariants import BY_NAME, EVERY, LIVENESS, CommittedEventuallyReplicated, EventuallyLeader
from kmc.invariants.liveness import (
    blocked_by_bound,
    committed_replicated,
    committed_replicated_mask,
    explain_leaderless,
    explain_unreplicated,
    leaderless,
    leaderless_mask,
    record_obligations,
)
from kmc.model import Action, Config, KafkaModel
from kmc.app.specs import load_spec
from kmc.app.render.json_result import expectation as expectation_of
from pins import FETCH_PINS

SPECS = Path(__file__).resolve().parent.parent / "specs"
EL, CER = lo.EL, lo.CER
H, V, VB = "holds", "violated", "violated, at the bound"

# docs/model.md's known verdicts of the liveness section, one shipped spec per row.
TABLE = {
    "live-c1": {EL: H, CER: H},
    "live-c1-ap-be": {EL: H, CER: H},
    "live-c1-hw": {EL: H, CER: V},
    "live-c2": {EL: H, CER: V},
    "live-c2-ap": {EL: H, CER: V},
    "live-c2-elr": {EL: V, CER: V},
    "live-c2-elr-lkl": {EL: H, CER: V},
    "live-c3": {EL: H, CER: V},
    "live-c4": {EL: VB, CER: VB},
    "live-c5": {EL: H, CER: H},
    "live-lrs2": {EL: H, CER: V},
    "live-lrs2-elr": {EL: V, CER: V},
}
# Distinct states of each row (the oracle's count; a two-replica row is fast, a
# three-replica one is not).
ORACLE_ALL = pytest.mark.skipif(os.environ.get("KMC_ORACLE_ALL") != "1",
                                reason="1.2 million states in the naive oracle: set KMC_ORACLE_ALL=1")
SLOW_ROWS = {"live-c4", "live-c5"}  # about 50,000 states: 20-60 s in the oracle
HUGE_ROWS = {"live-lrs2", "live-lrs2-elr"}  # 1.2 million states


def _spec(name):
    return load_spec(SPECS / f"{name}.toml")


def _param(name):
    if name in HUGE_ROWS:
        return pytest.param(name, id=name, marks=[pytest.mark.slow, ORACLE_ALL])
    if name in SLOW_ROWS:  # (their verdicts stay pinned on every engine below, and in tests/pins.py)
        return pytest.param(name, id=name, marks=[pytest.mark.slow, KMC_SLOW])
    return pytest.param(name, id=name)


KMC_SLOW = pytest.mark.skipif(os.environ.get("KMC_SLOW") != "1",
                              reason="about 50,000 states in the oracle or the per-state engine (~10 s): set KMC_SLOW=1")


_GRAPHS: dict = {}


def _oracle(name):
    """The oracle's verdicts and graph of a row, computed once per session."""
    if name not in _GRAPHS:
        _GRAPHS[name] = lo.verdicts(_spec(name).config)
    return _GRAPHS[name]


# -- the specs are the table ----------------------------------------------------------------------


def test_every_liveness_spec_is_a_table_row():
    shipped = {p.stem for p in SPECS.glob("live-*.toml")}
    assert shipped == set(TABLE)
    for name, row in TABLE.items():
        spec = _spec(name)
        assert spec.title and spec.keep_going and not spec.symmetry, name
        assert set(spec.invariants) - {"CommittedNeverLost"} == {EL, CER}, name
        for prop, verdict in row.items():
            assert spec.expect[prop] == verdict.split(",")[0], (name, prop)
        # CommittedNeverLost beside the liveness verdicts only where the table of the
        # availability section knows it holds (the eligible leader replicas)
        assert spec.expect.get("CommittedNeverLost", H) == H


def test_the_rows_are_the_tables_configurations():
    c1 = _spec("live-c1").config
    assert (c1.n, c1.max_messages, c1.max_crashes, c1.max_leader_epoch, c1.min_insync_replicas,
            c1.truncation) == (2, 2, 2, 2, 1, "leader-epoch-2.1")
    plus = {
        "live-c1-ap-be": dict(alter_partition=True, broker_epochs=True),
        "live-c1-hw": dict(truncation="high-watermark"),
        "live-c2": dict(unflushed_loss=True),
        "live-c2-ap": dict(unflushed_loss=True, alter_partition=True),
        "live-c2-elr": dict(unflushed_loss=True, hw_requires_min_isr=True, eligible_leader_replicas=True),
        "live-c2-elr-lkl": dict(unflushed_loss=True, hw_requires_min_isr=True, eligible_leader_replicas=True,
                                last_known_leader=True),
        "live-c3": dict(unclean_leader_election=True),
    }
    for name, kw in plus.items():
        assert _spec(name).config == _evolve(c1, **kw), name
    assert _spec("live-c4").config == _evolve(c1, max_messages=4, max_crashes=1, preferred_election=True)
    c5 = _spec("live-c5").config
    assert (c5.n, c5.min_insync_replicas, c5.max_messages, c5.max_crashes) == (3, 2, 2, 1)
    lrs2 = _spec("live-lrs2").config
    assert lrs2 == _evolve(c5, max_crashes=2, unflushed_loss=True)
    assert _spec("live-lrs2-elr").config == _evolve(lrs2, hw_requires_min_isr=True, eligible_leader_replicas=True)


def _evolve(config, **kw):
    import attrs

    return attrs.evolve(config, **kw)


# -- the oracle against the table -------------------------------------------------------------------


@pytest.mark.parametrize("name", [_param(n) for n in TABLE])
def test_the_oracle_reproduces_the_table(name):
    got, _ = _oracle(name)
    assert got == TABLE[name]


@pytest.mark.parametrize("name", [_param(n) for n in TABLE if TABLE[n] != {EL: H, CER: H}])
def test_every_oracle_lasso_is_a_fair_violating_behaviour(name):
    """A lasso through each of the first fair tails of every violated obligation passes
    the oracle's lasso check (which re-executes it: the lasso builder and the check share
    nothing but the successor function)."""
    _, graph = _oracle(name)
    cfg = graph.cfg
    cases = []
    tails = lo.eventually_leader(graph)
    if tails:
        cases.append((EL, None, tails))
    for record, tails in lo.committed_eventually_replicated(graph).items():
        cases.append((CER, record, tails))
    assert cases
    for prop, record, tails in cases:
        for tail in sorted(tails, key=lambda t: min(t[0]))[:3]:
            states, labels, loop = lo.lasso(graph, tail)
            assert lo.check_lasso(cfg, states, labels, loop, prop, record) is None, (prop, record)


def test_the_lasso_check_rejects_what_is_not_a_fair_violation():
    cfg = _spec("live-c2-elr").config
    graph = lo.Graph(cfg)
    init = graph.states[0]
    # a leader leads in the initial state, which has fair instances enabled
    assert lo.check_lasso(cfg, [init], [], None, EL) == "the final state stutters with a fair instance enabled"
    # B's fetch of nothing and its response: a real, fair cycle, but A leads on it
    succ = dict(((lb[0], lb[1]), t) for lb, t in oracle_successors(cfg, init))
    fetched = succ[("FetchRequest", 1)]
    back = dict(((lb[0], lb[1]), t) for lb, t in oracle_successors(cfg, fetched))[("FetchResponse", 1)]
    assert back == init  # nothing to fetch: the response changes nothing else
    cycle = [init, fetched, init]
    labels = [("FetchRequest", 1, None), ("FetchResponse", 1, None)]
    assert lo.check_lasso(cfg, cycle, labels, 0, EL) == "some replica leads on the cycle"
    assert lo.check_lasso(cfg, cycle, labels[:1] + [("FetchRequest", 1, None)], 0, EL).startswith("step 2")
    assert lo.check_lasso(cfg, cycle, labels, 1, EL) == "the cycle does not come back to the state it names"
    # (fair: the only fair instance the initial state enables is the one the cycle takes)
    assert lo.enabled_fair(init, oracle_successors(cfg, init)) == {("FetchRequest", 1)}


def oracle_successors(cfg, state):
    import oracle

    return oracle.successors(cfg, state)


def test_a_cycle_that_skips_an_instance_enabled_throughout_is_unfair():
    """A two-step cycle of C1 whose two states both enable a fair instance that neither
    step takes: the lasso check refuses it."""
    cfg = _spec("live-c1").config
    graph = lo.Graph(cfg)
    for i, edges in enumerate(graph.out):
        for label, inst, j in edges:
            for label2, inst2, k in graph.out[j]:
                if k != i:
                    continue
                owed = (graph.enabled[i] & graph.enabled[j]) - {inst, inst2}
                if owed:
                    states = [graph.states[i], graph.states[j], graph.states[i]]
                    path, labels = graph.path_to(i)
                    prefix = [graph.states[x] for x in path]
                    why = lo.check_lasso(cfg, prefix + states[1:], labels + [label, label2], len(prefix) - 1, EL)
                    assert why is not None and why.startswith("the cycle is unfair to"), why
                    return
    pytest.fail("no two-step cycle in C1")


# -- the fair instances: the model and its kernel against the oracle -----------------------------------


def _oracle_text(cfg, inst):
    if inst is None:
        return None
    return inst[0] if len(inst) == 1 else f"{inst[0]}({cfg.replicas[inst[1]]})"


@pytest.mark.parametrize("name", ["live-c1", "live-c1-ap-be", "live-c2-elr-lkl", "live-c3", "live-c4", "live-c5",
                                  "fetch-c1-both-bugs", "fetch-c2-kafka-14704"])
def test_the_fair_instance_of_every_step_is_the_oracles(name):
    cfg = _spec(name).config
    model = KafkaModel(cfg)
    kernel = model.batch_kernel()
    names = model.fair_instances()
    assert len(set(names)) == len(names)
    states = reachable(model, 1500)
    rows = np.stack([kernel.encode(s) for s in states])
    parents, choices, codes, succ = kernel.expand(rows)
    fair = kernel.fair_codes(rows, parents, choices, codes, succ)
    order = np.lexsort((choices, parents))
    j = 0
    seen = set()
    for i, s in enumerate(states):
        for choice, (action, _) in enumerate(model.successors(s)):
            want = _oracle_text(cfg, lo.fair_instance(s, (action.name, action.replica, action.cut)))
            assert model.fair_instance(s, action) == want, (s, action)
            x = order[j]
            assert (parents[x], choices[x]) == (i, choice)
            assert (None if fair[x] < 0 else names[fair[x]]) == want, (s, action)
            seen.add(want)
            j += 1
    assert j == len(parents)
    # every kind of fair step and a step that is not fair occur in these states
    kinds = {w.split("(")[0] for w in seen if w is not None}
    assert {"FetchRequest", "FetchResponse", "Restart", "Failover", "BecomeFollower", "ExpandIsr"} <= kinds
    assert None in seen
    if cfg.alter_partition:
        assert "AlterPartition" in seen


def test_the_fair_instances_are_named_in_code_order():
    assert KafkaModel(Config(replicas=("A", "B"))).fair_instances() == (
        "FetchRequest(A)", "FetchRequest(B)", "FetchResponse(A)", "FetchResponse(B)", "Restart(A)", "Restart(B)",
        "Failover(A)", "Failover(B)", "BecomeFollower(A)", "BecomeFollower(B)", "ExpandIsr(A)", "ExpandIsr(B)")
    ap = KafkaModel(Config(replicas=("A", "B"), truncation="leader-epoch-2.1", alter_partition=True))
    assert ap.fair_instances()[-1] == "AlterPartition" and len(ap.fair_instances()) == 13


def test_a_preferred_election_is_not_fair_and_a_failover_is(build):
    model = build.model(truncation="leader-epoch-2.1", preferred_election=True, max_leader_epoch=3)
    init = model.init_states()[0]
    assert model.fair_instance(init, Action("ElectLeader", 1)) is None  # A leads: preferred
    crashed = model.next_state(init, Action("Crash", 0))
    assert model.fair_instance(crashed, Action("ElectLeader", 1)) == "Failover(B)"
    assert model.fair_instance(init, Action("Produce", 0)) is None
    assert model.fair_instance(init, Action("ShrinkIsr", 1)) is None
    assert model.fair_instance(init, Action("Crash", 1)) is None


# -- the properties: checks and masks -------------------------------------------------------------


def test_both_properties_are_listed_and_never_a_default():
    assert LIVENESS == (EventuallyLeader, CommittedEventuallyReplicated)
    assert set(LIVENESS) <= set(EVERY)
    assert BY_NAME[EL] is EventuallyLeader and BY_NAME[CER] is CommittedEventuallyReplicated
    assert EventuallyLeader.kind == ALWAYS_EVENTUALLY and CommittedEventuallyReplicated.kind == LEADS_TO
    for spec in SPECS.glob("*.toml"):
        config = load_spec(spec).config
        assert not set(LIVENESS) & set(KafkaModel(config).properties()), spec.name


def test_the_obligations_are_every_record_a_commit_can_hold():
    model = KafkaModel(Config(max_messages=2, max_leader_epoch=1))
    assert record_obligations(model) == ((0, 0, 0), (0, 0, 1), (0, 1, 0), (0, 1, 1), (1, 0, 1), (1, 1, 1))


@pytest.mark.parametrize("name", ["live-c1-hw", "live-c2-elr", "live-c4", "live-c1-ap-be"])
def test_the_checks_masks_and_oracle_agree_state_by_state(name):
    cfg = _spec(name).config
    model = KafkaModel(cfg)
    kernel = model.batch_kernel()
    states = reachable(model, 4000)
    rows = np.stack([kernel.encode(s) for s in states])
    lm = leaderless_mask(kernel, rows)
    p, q = committed_replicated_mask(kernel, rows)
    obligations = record_obligations(model)
    assert p.shape == q.shape == (len(states), len(obligations))
    waiting = 0
    for i, s in enumerate(states):
        assert (leaderless(model, s) is None) == lo.someone_leads(s) == (not lm[i])
        ps, qs = committed_replicated(model, s)
        assert set(ps) == set(s.committed) <= set(obligations)
        for j, ob in enumerate(obligations):
            assert p[i, j] == (ob in ps) == (ob in s.committed)
            want_q = ob not in s.committed or lo.holds_everywhere(s, ob)
            assert q[i, j] == (ob in qs) == want_q
            waiting += not want_q
    assert waiting  # some state waits for a record in each of these configurations


def test_leaderless_says_why():
    model = KafkaModel(Config(truncation="leader-epoch-2.1", max_crashes=2))
    init = model.init_states()[0]
    assert leaderless(model, init) is None
    down = model.next_state(init, Action("Crash", 0))
    assert leaderless(model, down) == "the controller's leader A is down"
    back = model.next_state(down, Action("Restart", 0))
    assert leaderless(model, back) == (
        "the controller's leader A has restarted since its election (its epoch is -1, the controller's 0)")


# -- the explanations of a lasso --------------------------------------------------------------------


def _first_lasso(graph, tails):
    states, labels, loop = lo.lasso(graph, min(tails, key=lambda t: min(t[0])))
    return states, labels, len(states) - 1 if loop is None else loop


@pytest.mark.slow
def test_the_c4_lasso_is_violated_at_the_bound():
    _, graph = _oracle("live-c4")
    model = _spec("live-c4").model()
    states, labels, loop = _first_lasso(graph, lo.eventually_leader(graph))
    assert [model.format_action(Action(*lb)) for lb in labels] == [
        "ElectLeader(B)", "ElectLeader(A)", "Crash(A)", "Restart(A)"]
    assert blocked_by_bound(model, states[-1]) and lo.failover_blocked_by_bound(graph.cfg, states[-1])
    assert explain_leaderless(model, states, loop, None) == (
        "no replica leads in state 5, where no fair action is enabled (it stays there for ever): no leader can "
        "be elected because the controller's epoch reached max_leader_epoch = 2; raise it")
    record = (0, 0, 0)
    states, _, loop = _first_lasso(graph, lo.record_violations(graph, record))
    assert explain_unreplicated(model, states, loop, record) == (
        "committed record 0 (epoch 0) at offset 0 is missing from B (its log ends at 0) in state 7, where no fair "
        "action is enabled (it stays there for ever); no leader can be elected because the controller's epoch reached "
        "max_leader_epoch = 2; raise it")


def test_the_c2_elr_lasso_says_nobody_can_be_elected():
    graph = lo.Graph(_spec("live-c2-elr").config)
    model = _spec("live-c2-elr").model()
    states, labels, loop = _first_lasso(graph, lo.eventually_leader(graph))
    assert [model.format_action(Action(*lb)) for lb in labels] == [
        "Produce(A)", "ShrinkIsr(B)", "Crash(A, keeps 0)", "Restart(A)"]
    assert explain_leaderless(model, states, loop, None) == (
        "no replica leads in state 5, where no fair action is enabled (it stays there for ever): no replica can "
        "be elected: ISR {} and ELR {}, both are empty, unclean election is off, no last-known-leader election")
    record = (0, 0, 0)
    states, _, loop = _first_lasso(graph, lo.record_violations(graph, record))
    assert explain_unreplicated(model, states, loop, record).endswith(
        "in state 5, where no fair action is enabled (it stays there for ever); no replica holds it any more: "
        "it is lost for good")
    assert not any(blocked_by_bound(model, s) for s in states)


def test_a_cycle_names_the_replica_that_lacks_the_record_in_every_state():
    graph = lo.Graph(_spec("live-c1-hw").config)
    model = _spec("live-c1-hw").model()
    record = (0, 0, 0)
    states, labels, loop = _first_lasso(graph, lo.record_violations(graph, record))
    assert loop < len(states) - 1  # a cycle, not a stutter
    assert lo.check_lasso(graph.cfg, states, labels, loop, CER, record) is None
    text = explain_unreplicated(model, states, loop, record)
    assert text == (
        f"committed record 0 (epoch 0) at offset 0 is missing from B (it holds record 1 (epoch 1) there) in every "
        f"state on the cycle from state {loop + 1} back to it")


# -- kmc's engines against the table, every lasso checked by the oracle -----------------------------

SLOW = pytest.mark.skipif(os.environ.get("KMC_SLOW") != "1",
                          reason="three replicas, two crashes (1.2 million states): set KMC_SLOW=1")
_RUNS: dict = {}


def _run(name, per_state=False):
    """The spec run by the local engine (the batch path, or ``per_state``), once a session."""
    from kmc.checker.engines import make_engine
    from kmc.checker.core.options import Options

    key = (name, per_state)
    if key not in _RUNS:
        spec = _spec(name)
        model = spec.model()
        engine = make_engine(model, spec.properties(), Options(keep_going=spec.keep_going), per_state=per_state)
        _RUNS[key] = (spec, model, engine.run())
    return _RUNS[key]


def assert_lassos_are_fair_violations(spec, model, result):
    """Every lasso of ``result`` replays, is a fair behaviour that violates its property
    (the oracle's lasso check, which shares no code with kmc's), and carries the
    property's own explanation."""
    from kmc.checker.core.trace import replay_choices

    assert result.violations
    for name, v in result.violations.items():
        prop = BY_NAME[name]
        if prop not in LIVENESS:
            continue
        path = v.path
        assert v.lasso and v.fair_instances == len(model.fair_instances())
        assert replay_choices(model, path.init_index, path.choices) == path
        labels = [(a.name, a.replica, a.cut) for a in path.actions]
        loop = None if v.stutters else v.loop
        assert lo.check_lasso(spec.config, list(path.states), labels, loop, name, v.obligation) is None, name
        assert v.explanation == prop.explain(model, path.states, v.loop, v.obligation)


def _engine_param(name, slow_if_per_state=False):
    if name in HUGE_ROWS:
        return pytest.param(name, id=name, marks=[pytest.mark.slow, SLOW])
    if slow_if_per_state:
        return pytest.param(name, id=name, marks=[pytest.mark.slow, KMC_SLOW])
    return pytest.param(name, id=name)


@pytest.mark.parametrize("name", [_engine_param(n) for n in TABLE])
def test_the_batch_engine_reproduces_the_table(name):
    spec, model, result = _run(name)
    assert result.complete
    for prop, verdict in TABLE[name].items():
        assert result.verdict(prop) == verdict.split(",")[0], prop
    expectation = expectation_of(spec, result)  # the spec's own [expect] table, as `kmc check` reads it
    assert expectation["matched"] and not expectation["unchecked"] and expectation["expected"], expectation
    if any(v != H for v in TABLE[name].values()):
        assert_lassos_are_fair_violations(spec, model, result)


# (live-c2-ap's 18,417 states take as long per state as C4's: AlterPartition's requests)
@pytest.mark.parametrize("name", [_engine_param(n, n in SLOW_ROWS | {"live-c2-ap"}) for n in TABLE if n not in HUGE_ROWS])
def test_the_per_state_engine_gives_the_batch_engines_verdicts_and_lassos(name):
    spec, model, result = _run(name, per_state=True)
    _, _, batch = _run(name)
    assert result.stats.distinct == batch.stats.distinct
    assert {p: result.verdict(p) for p in result.checked} == {p: batch.verdict(p) for p in batch.checked}
    for prop, v in batch.violations.items():
        w = result.violations[prop]
        assert (w.path.init_index, w.path.choices, w.loop, w.obligation, w.explanation) == (
            v.path.init_index, v.path.choices, v.loop, v.obligation, v.explanation), prop
    if result.violations:
        assert_lassos_are_fair_violations(spec, model, result)


@pytest.mark.parametrize("name", ["live-c4"])
def test_at_the_bound_the_explanation_says_raise_it(name):
    _, _, result = _run(name)
    bound = "no leader can be elected because the controller's epoch reached max_leader_epoch = 2; raise it"
    assert result.violations[EL].explanation.endswith(bound)
    assert result.violations[CER].explanation.endswith(bound)
    # and nowhere else in the table
    for other in ("live-c2-elr", "live-c1-hw", "live-c2"):
        for v in _run(other)[2].violations.values():
            assert "max_leader_epoch" not in v.explanation


def test_the_c2_elr_run_names_the_record_and_the_replicas():
    _, _, result = _run("live-c2-elr")
    v = result.violations[CER]
    assert v.obligation == (0, 0, 0) and v.stutters and len(v.path) == 5
    assert v.explanation == (
        "committed record 0 (epoch 0) at offset 0 is missing from A (its log ends at 0), B (its log ends at 0) in "
        "state 5, where no fair action is enabled (it stays there for ever); no replica holds it any more: it is "
        "lost for good")
    assert result.verdict("CommittedNeverLost") == H


# -- a printed cycle owes what its own states enable --------------------------------------------------


def never(model, state):
    """``[]<>false``: fails in every state."""
    return "never"


class _Triangle:
    """Three states ``s``, ``t``, ``u`` in one component: ``s -X-> t -Y-> s``, ``s -Z-> u``,
    ``t -Z-> u``, and ``u -> s`` (not fair). No instance is enabled in all three states
    (``u`` enables none), so the component is fair; but the short cycle ``s t s`` has
    ``Z`` enabled in both of its states and never takes it: it is not a fair cycle, and a
    lasso must not print it."""

    EDGES = {"s": [("X", "t"), ("Z", "u")], "t": [("Y", "s"), ("Z", "u")], "u": [("back", "s")]}

    def init_states(self):
        return ("s",)

    def actions(self, state):
        return [a for a, _ in self.EDGES[state]]

    def next_state(self, state, action):
        return dict(self.EDGES[state])[action]

    def properties(self):
        return ()

    def encode(self, state):
        return state.encode()

    def fair_instances(self):
        return ("X", "Y", "Z")

    def fair_instance(self, state, action):
        return action if action in ("X", "Y", "Z") else None


def _fair_lasso(model, path, loop) -> bool:
    """Whether the cycle of ``path`` from ``loop`` takes every instance its states all enable
    (written here from the definition, on the model's own successor function)."""
    states, actions = list(path.states), list(path.actions)
    cycle = range(loop, len(states) - 1)
    enabled = [{model.fair_instance(states[i], a) for a in model.actions(states[i])} - {None} for i in cycle]
    taken = {model.fair_instance(states[i], actions[i]) for i in cycle} - {None}
    return not (set.intersection(*enabled) - taken) if enabled else True


def test_a_printed_cycle_takes_every_instance_its_own_states_enable():
    from kmc.checker.local.states import LocalEngine
    from kmc.checker.core.options import Options
    from kmc.checker.contract.protocol import ALWAYS_EVENTUALLY, Property

    model = _Triangle()
    prop = Property("Never", ALWAYS_EVENTUALLY, never)
    v = LocalEngine(model, [prop], Options(keep_going=True)).run().violations["Never"]
    assert v.lasso and not v.stutters
    assert _fair_lasso(model, v.path, v.loop), [str(a) for a in v.path.actions]


# -- pictures and the explorer ---------------------------------------------------------------------


def test_the_svg_frames_the_cycle_and_draws_the_way_back():
    import re

    from kmc.app.render import svg
    from kmc.app.render.diagram import build

    _, model, result = _run("live-c1-hw")
    v = result.violations[CER]
    d = build(model, v)
    assert d.lasso and not d.stutters and d.loop == v.loop
    assert d.verdict == f"{CER} fails" and d.lost == ("0:e0·r0",)
    text = svg.render(d)
    assert text.count('class="cycle-arrow"') == 1 and f"back to State {v.loop + 1}, for ever" in text
    frame = re.search(r'<rect class="cycle" x="([\d.]+)" y="[\d.]+" width="([\d.]+)"', text)
    cols = [float(x) for x in re.findall(r'<g class="column" data-step="\d+"><title>[^<]*</title><rect x="([\d.]+)"',
                                         text)]
    assert frame and float(frame.group(1)) == cols[v.loop] + 1  # from the cycle's first state ...
    assert float(frame.group(1)) + float(frame.group(2)) == cols[-1] + (cols[1] - cols[0]) - 1  # ... to the last
    assert 'stroke-dasharray="6 3"' in text and "dashed red frame: the cycle" in text
    # B lacks the record in the last state: a dashed box where it should be
    assert d.columns[-1].replicas[1].boxes[-1].ghost and d.columns[-1].replicas[1].boxes[-1].lost


def test_a_stuttering_lasso_is_drawn_as_a_state_kept_for_ever():
    from kmc.app.render import html, mermaid, svg
    from kmc.app.render.diagram import build

    _, model, result = _run("live-c2-elr")
    d = build(model, result.violations[EL])
    assert d.stutters and d.loop == 4 and d.lost == ()
    text = svg.render(d)
    assert '<rect class="cycle" ' in text and "State 5 for ever: no fair action is enabled" in text
    assert "stroke-dasharray" not in text.split('class="cycle"')[1].split("/>")[0]
    assert "red: the lost record" not in text  # no record is marked: the legend does not name one
    page = html.page([d], title="t")
    assert "EventuallyLeader: a lasso of 5 states" in page and "↺ State 5 for ever" in page
    mmd = mermaid.render(d)
    assert "loop " not in mmd and "rect rgb" not in mmd
    assert mmd.rstrip().splitlines()[-1].startswith("    Note over ctl,r1: ✗ EventuallyLeader fails: no replica leads")
    assert "↺ State 5 for ever: no fair action is enabled" in mmd


def test_mermaid_draws_the_cycle_as_a_loop_block():
    from kmc.app.render import mermaid
    from kmc.app.render.diagram import build

    _, model, result = _run("live-c1-hw")
    v = result.violations[CER]
    lines = mermaid.render(build(model, v)).splitlines()
    start = lines.index(f"    loop back to State {v.loop + 1}, for ever")
    end = lines.index("    end", start)
    # the block holds exactly the cycle's steps (one message each), then closes before the verdict
    inside = lines[start + 1 : end]
    assert len(inside) == len(v.cycle) and inside[0].split(": ", 1)[1].startswith(f"{v.loop + 2}. ")
    assert lines[end + 1].startswith("    Note over ctl,r1: ✗ CommittedEventuallyReplicated fails")


def test_the_explorer_loads_a_lasso_as_a_path(tmp_path):
    from kmc.app.cli import main
    from kmc.app.commands.explore import load_traces
    from kmc.app.render.explorer import Explorer
    from kmc.app.render.explorer_views import KafkaView

    out = tmp_path / "c1hw.json"
    assert main(["check", str(SPECS / "live-c1-hw.toml"), "--json", str(out), "--no-trace", "--no-progress"]) == 1
    spec, model, result = _run("live-c1-hw")
    from kmc.app.commands.explore import trace_lasso

    traces = load_traces([str(out)], model)
    (saved,) = traces.values()
    init, choices = saved.init, saved.choices
    v = result.violations[CER]
    explorer = Explorer(model, spec.properties(), view=KafkaView(model), traces={"t": (init, choices)})
    assert explorer.walk(init, choices) == v.path
    doc = explorer.state_doc(init, choices)
    status = {p["name"]: p for p in doc["properties"]}
    assert status[EL]["status"] == "goal"  # B leads in the last state
    assert status[CER]["status"] == "waits"
    # record 0 (epoch 0) is on A only, record 1 (epoch 1) on B only, both at offset 0: in words
    assert status[CER]["reason"].startswith(
        "2 obligations wait (committed record 0 (epoch 0) at offset 0 on every replica; "
        "committed record 1 (epoch 1) at offset 0 on every replica)"
    )
    assert doc["diagram_svg"] and doc["lasso"] is None
    # known as the lasso it is, its end violates the property, and its cycle is drawn
    lasso = trace_lasso("t", saved, explorer.walk(init, choices), explorer.model, spec.properties())
    assert lasso.loop == v.loop and lasso.obligation == v.obligation
    explorer.add_lasso(lasso)
    doc = explorer.state_doc(init, choices)
    assert {p["name"]: p for p in doc["properties"]}[CER]["status"] == "violated"
    assert doc["lasso"]["cycle_start"] == v.loop + 1 and "cycle-arrow" in doc["diagram_svg"]


# -- the users' page --------------------------------------------------------------------------------


def test_docs_model_md_has_the_table_and_the_real_explanations():
    doc = " ".join((SPECS.parent / "docs" / "model.md").read_text(encoding="utf-8").split())
    for name, row in TABLE.items():
        line = f"| `{name}` |"
        assert line in doc, name
        shown = doc.split(line, 1)[1].split("|")[1:3]
        assert [c.strip().strip("*") for c in shown] == [row[EL], row[CER]], name
    _, _, result = _run("live-c2-elr")
    for prop in (EL, CER):
        assert f"✗ {prop}: {result.violations[prop].explanation}" in doc, prop
    assert "no leader can be elected because the controller's epoch reached max_leader_epoch = 2; raise it" in doc


# -- Spark (local mode) -------------------------------------------------------------------------------


# Two rows on Spark in every suite (both properties violated, the bound), the others with
# KMC_SLOW=1 (each starts Spark jobs for a few seconds).
SPARK_ROWS = {"live-c2-elr", "live-c4"}


def _spark_param(name):
    if name in SPARK_ROWS:
        return _engine_param(name, name in SLOW_ROWS)
    return pytest.param(name, id=name, marks=[pytest.mark.slow, pytest.mark.skipif(
        os.environ.get("KMC_SLOW") != "1", reason="the other rows on Spark: set KMC_SLOW=1")])


@pytest.mark.spark
@pytest.mark.parametrize("name", [_spark_param(n) for n in TABLE if n not in HUGE_ROWS])
def test_spark_gives_the_batch_engines_verdicts_and_lassos(spark_sc, name):
    from kmc.checker.engines import make_engine
    from kmc.checker.core.options import Options

    spec, model, batch = _run(name)
    engine = make_engine(model, spec.properties(), Options(keep_going=spec.keep_going), engine="spark",
                         partitions=2, driver_level_limit=0)
    result = engine.run()
    assert engine.metrics["spark_levels"]  # the levels ran in Spark tasks
    assert (result.engine, result.complete, result.stats.distinct) == ("spark", True, batch.stats.distinct)
    assert {p: result.verdict(p) for p in result.checked} == {p: batch.verdict(p) for p in batch.checked}
    for prop, v in batch.violations.items():
        w = result.violations[prop]
        assert (w.path, w.loop, w.obligation, w.explanation) == (v.path, v.loop, v.obligation, v.explanation), prop
    if result.violations:
        assert_lassos_are_fair_violations(spec, model, result)


@pytest.mark.spark
@pytest.mark.parametrize("partitions", [pytest.param(p, marks=pytest.mark.skipif(os.environ.get("KMC_SLOW") != "1", reason="the Spark lassos of live-c2-elr and live-c4 on two partitions stay; another partition count: set KMC_SLOW=1")) for p in (1, 3)])
def test_a_spark_lasso_does_not_depend_on_the_partitions(spark_sc, partitions):
    from kmc.checker.engines import make_engine
    from kmc.checker.core.options import Options

    spec, model, batch = _run("live-c1-hw")
    result = make_engine(model, spec.properties(), Options(keep_going=True), engine="spark",
                         partitions=partitions, driver_level_limit=0).run()
    v, w = batch.violations[CER], result.violations[CER]
    assert (w.path.choices, w.loop, w.obligation) == (v.path.choices, v.loop, v.obligation)


def test_kmc_replay_draws_a_saved_lasso_and_prints_it_as_tlc_does(tmp_path, capsys):
    from kmc.app.cli import main

    saved = tmp_path / "c1hw.json"
    assert main(["check", str(SPECS / "live-c1-hw.toml"), "--json", str(saved), "--no-trace", "--no-progress"]) == 1
    _, _, result = _run("live-c1-hw")
    v = result.violations[CER]
    back = v.loop + 1
    outputs = {}
    for fmt in ("svg", "mermaid", "html"):
        out = tmp_path / f"c1hw.{fmt}"
        assert main(["replay", str(saved), "--format", fmt, "--out", str(out)]) == 0, fmt
        outputs[fmt] = out.read_text(encoding="utf-8")
    capsys.readouterr()
    assert main(["replay", str(saved), "--format", "tla"]) == 0
    outputs["tla"] = capsys.readouterr().out
    assert 'class="cycle-arrow"' in outputs["svg"] and f"back to State {back}, for ever" in outputs["svg"]
    assert f"    loop back to State {back}, for ever" in outputs["mermaid"]
    assert f"a lasso (a cycle from State {back})" in outputs["html"]
    tla = outputs["tla"]
    assert tla.startswith("Error: Temporal properties were violated.\n")
    assert f"\nBack to state {back}: <FetchRequest(A)>\n" in tla
    assert f"State {len(v.path)}:" not in tla  # the closing step is the "Back to state" line


def test_a_stuttering_lasso_ends_as_tlc_says_it():
    from kmc.app.render.tla import violation_text

    _, model, result = _run("live-c2-elr")
    text = violation_text(model, result.violations[EL])
    assert "\nState 5: <Restart(A)>\n" in text and "\nState 6: Stuttering\n" in text
    assert "Back to state" not in text


# -- the pins ------------------------------------------------------------------------------------------


def _older_counts(name):
    """The counts pinned for the same configuration by the older tables of tests/pins.py."""
    import pins

    if name == "hw-data-loss":
        p = pins.HW_DATA_LOSS_KEEP_GOING
        return p.distinct, p.generated, p.depth
    for table in (pins.PINS, pins.AP_PINS, pins.AVAIL_PINS):
        if name in table:
            p = table[name]
            return p.distinct, p.generated, p.depth
    distinct, depth, generated, _ = {**pins.MODERN_FAST_ROWS, **pins.MODERN_SLOW_ROWS}[name]
    return distinct, generated, depth


def test_the_pins_are_the_table_and_the_older_pins():
    from pins import LIVE_PINS

    assert set(LIVE_PINS) == set(TABLE)
    for name, pin in LIVE_PINS.items():
        spec = _spec(name)
        assert pin.verdicts == spec.expect, name
        assert {p: v.split(",")[0] for p, v in TABLE[name].items()} == {p: pin.verdicts[p] for p in (EL, CER)}
        # the liveness properties add no state: the same configuration, the same counts
        assert _spec(pin.same_as).config == spec.config or pin.same_as == "hw-data-loss", name
        assert (pin.distinct, pin.generated, pin.depth) == _older_counts(pin.same_as), name
    assert _spec("hw-data-loss").config == _spec("live-c1-hw").config


@pytest.mark.parametrize("name", [_engine_param(n) for n in TABLE])
def test_the_batch_engines_counts_are_pinned(name):
    from pins import LIVE_PINS

    _, _, result = _run(name)
    pin = LIVE_PINS[name]
    assert (result.stats.distinct, result.stats.generated, result.stats.depth) == (
        pin.distinct, pin.generated, pin.depth)
    assert {p: result.verdict(p) for p in result.checked} == pin.verdicts


@pytest.mark.parametrize("name", [_param(n) for n in TABLE])
def test_the_oracle_counts_the_pinned_states(name):
    from pins import LIVE_PINS

    _, graph = _oracle(name)
    pin = LIVE_PINS[name]
    depth = {0: 1}
    for i in range(1, len(graph.states)):
        p = graph.parent[i]
        depth[i] = 1 if p is None else depth[p[0]] + 1
    generated = sum(1 for p in graph.parent if p is None) + sum(len(out) for out in graph.out)
    assert (len(graph.states), generated, max(depth.values())) == (pin.distinct, pin.generated, pin.depth)


def test_symmetry_refuses_a_kafka_liveness_spec_in_one_line(capsys):
    from kmc.app.cli import main

    assert main(["check", str(SPECS / "live-c1.toml"), "--symmetry", "--no-progress"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "EventuallyLeader is a liveness property" in err and "--symmetry" in err


def test_a_run_that_did_not_explore_everything_leaves_them_unknown():
    from kmc.checker.engines import make_engine
    from kmc.checker.core.options import Options
    from kmc.checker.core.result import UNKNOWN

    spec = _spec("live-c2-elr")
    result = make_engine(spec.model(), [EventuallyLeader, CommittedEventuallyReplicated],
                         Options(keep_going=True, max_states=500)).run()
    assert not result.complete
    assert result.verdict(EL) == result.verdict(CER) == UNKNOWN


def test_the_summary_line_calls_a_lasso_a_lasso(capsys):
    from kmc.app.cli import main

    assert main(["check", str(SPECS / "live-c2-elr.toml"), "--no-trace", "--no-progress"]) == 1
    out = " ".join(capsys.readouterr().out.split())
    assert "✗ EventuallyLeader violated: counterexample is a lasso of 5 states, stuttering in state 5." in out
    assert "Also violated: CommittedEventuallyReplicated (a lasso of 5 states, stuttering in state 5)." in out
    assert "shortest" not in out


@pytest.mark.parametrize("name", ["fetch-c1-both-bugs", "fetch-c2-kafka-14704"])
def test_the_fetch_path_s_liveness_is_the_same_on_both_local_engines(name):
    """With truncate_on_fetch (a diverging answer, and under KAFKA-14704 its response in two
    halves, each a FetchResponse step), the batch kernel's fair instances are the model's: both
    local engines give the same verdicts and the same lassos, and each lasso is a fair
    violating behaviour by the oracle's check."""
    from kmc.checker.engines import make_engine
    from kmc.checker.core.options import Options

    spec = _spec(name)
    model = spec.model()
    props = [*spec.properties(), EventuallyLeader, CommittedEventuallyReplicated]
    per_state, batch = (
        make_engine(model, props, Options(keep_going=True), per_state=p).run() for p in (True, False)
    )
    assert per_state.stats.distinct == batch.stats.distinct == FETCH_PINS[name].distinct
    assert {p: per_state.verdict(p) for p in per_state.checked} == {p: batch.verdict(p) for p in batch.checked}
    assert batch.verdict("EventuallyLeader") == "holds" and batch.verdict("CommittedEventuallyReplicated") == "violated"
    for prop, v in batch.violations.items():
        w = per_state.violations[prop]
        assert (w.path.init_index, w.path.choices, w.loop, w.obligation) == (
            v.path.init_index, v.path.choices, v.loop, v.obligation), prop
    assert_lassos_are_fair_violations(spec, model, batch)


def test_the_rows_search_looks_up_numbers_in_storing_order(monkeypatch):
    """``RowsSearch.numbers_of`` against the fingerprints the search stored, in the order
    it numbered them (kept beside the store only for the graph's verdicts), on slices of
    a few fingerprints so that a fingerprint's slice and its number's offset both count:
    asked in any order, repeated, or not stored at all (-1)."""
    from kmc.checker.local import rows as batch
    from kmc.checker.local.rows import BatchEngine
    from kmc.checker.core.options import Options

    monkeypatch.setattr(batch, "NUMBERS_SLICE", 7)
    spec = _spec("live-c1")
    engine = BatchEngine(KafkaModel(spec.config), spec.properties(), Options(keep_going=True))
    result = engine.run()
    search = engine.search
    numbered = np.concatenate(list(search.numbered))
    assert len(numbered) == result.stats.distinct == len(np.unique(numbered))
    assert sorted(numbered.tolist()) == sorted(search.seen.fingerprints().tolist())
    rng = np.random.default_rng(5)
    numbers = rng.integers(0, len(numbered), 200)
    absent = np.setdiff1d(np.arange(1, 50, dtype=np.uint64), numbered)[:3]
    asked = np.concatenate([numbered[numbers], absent])
    assert search.numbers_of(asked).tolist() == numbers.tolist() + [-1] * len(absent)
    ordered = np.unique(numbered[numbers])
    expect = [int(np.flatnonzero(numbered == fp)[0]) for fp in ordered]
    assert search.numbers_of(ordered).tolist() == expect


@pytest.mark.parametrize("name", ["live-c1-hw", "live-c2-elr", "live-c3"])
def test_the_decision_a_few_states_at_a_time_gives_the_same_lassos(monkeypatch, name):
    """The breadth-first levels and the components' rows taken a state or an edge at
    a time (as a large graph's are, a million at a time): the same verdicts and lassos as
    with every level and row at once, each a fair violation by the oracle's check."""
    from kmc.checker.graph import fair_components, liveness
    from kmc.checker.engines import make_engine
    from kmc.checker.core.options import Options

    spec, model, want = _run(name)
    monkeypatch.setattr(liveness, "CHUNK", 1)
    monkeypatch.setattr(fair_components, "CHUNK", 1)
    got = make_engine(model, spec.properties(), Options(keep_going=spec.keep_going)).run()
    assert {p: got.verdict(p) for p in got.checked} == {p: want.verdict(p) for p in want.checked}
    assert {p: (v.path.init_index, v.path.choices, v.loop, v.obligation) for p, v in got.violations.items()} == {
        p: (v.path.init_index, v.path.choices, v.loop, v.obligation) for p, v in want.violations.items()}
    assert_lassos_are_fair_violations(spec, model, got)


# -- the operators' actions: ShutdownComplete and ApplyMinIsr are fair ---------------------------------

def _operators(key, **kw):
    """The configurations of docs/model.md's operator sections: C1 = 2 replicas, min ISR 1, 2 messages,
    2 crashes; C2 = C1 + unflushed_loss; C5 = 3 replicas, min ISR 2, 2 messages, 1 crash; all under
    leader-epoch-2.1 with epochs <= 2. Options: ELR (the HW gate and the eligible leader replicas),
    AP+BE (alter_partition, broker_epochs), CS (one controlled shutdown), 13916 (its bug)."""
    conf, _, opts = key.partition(" ")
    base = dict(truncation="leader-epoch-2.1", max_leader_epoch=2, max_messages=2)
    if conf in ("C1", "C2"):
        base.update(replicas=("A", "B"), min_insync_replicas=1, max_crashes=2, unflushed_loss=conf == "C2")
    else:
        base.update(replicas=("A", "B", "C"), min_insync_replicas=2, max_crashes=1)
    extra = {"ELR": dict(hw_requires_min_isr=True, eligible_leader_replicas=True),
             "AP": dict(alter_partition=True), "BE": dict(broker_epochs=True), "CS": dict(max_controlled_shutdowns=1),
             "13916": dict(bugs=("KAFKA-13916",))}
    for o in filter(None, opts.split("+")):
        base.update(extra[o])
    base.update(kw)
    return Config(**base)


# Small configurations with every operator action: (configuration, the oracle's verdicts). The
# verdicts are the oracle's; the first is C1 + CS with one record and one crash, which has the
# verdicts of docs/model.md's C1 + CS row.
OPERATOR_SMALL = {
    "c1-cs-small": (_operators("C1 CS", max_messages=1, max_crashes=1), {EL: VB, CER: VB}),
    "c1-ap-be-cs-small": (_operators("C1 AP+BE+CS", max_messages=1, max_crashes=1), {EL: VB, CER: VB}),
    "c1-elr-lag-small": (_operators("C1 ELR", max_messages=1, max_crashes=1, min_isr_changes=(2, 1), min_isr_lag=True),
                         {EL: H, CER: V}),
    "c5-elr-lag-small": (_operators("C5 ELR", max_messages=1, max_crashes=0, min_isr_changes=(3,), min_isr_lag=True),
                         {EL: H, CER: H}),
    # a failed directory: with the fix, the trap of PartitionRecoverable's table is a leaderless end
    "c1-elr-disk-small": (_operators("C1 ELR", max_messages=1, max_crashes=1, max_disk_failures=1), {EL: V, CER: V}),
    "c1-elr-disk-16234-small": (_operators("C1 ELR", max_messages=1, max_crashes=1, max_disk_failures=1,
                                           bugs=("KAFKA-16234",)), {EL: H, CER: V}),
}
# docs/model.md's EventuallyLeader rows of the controlled shutdown (TLC, with ShutdownComplete
# weakly fair): 24,712 to 47,961 states, 6 to 15 s each in the oracle.
OPERATOR_ROWS = {"C1 CS": VB, "C1 CS+13916": VB, "C2 ELR+CS": V}


def _engine_verdicts(cfg):
    from kmc.checker.local.states import LocalEngine, Options

    model = KafkaModel(cfg)
    result = LocalEngine(model, [BY_NAME[EL], BY_NAME[CER]], Options(keep_going=True)).run()
    assert result.complete
    return model, result


def _assert_engine_agrees(cfg, want):
    """kmc's verdicts are the oracle's ``want``; a violation "at the bound" is explained so; every
    lasso replays and is a fair violating behaviour by the oracle's lasso check."""
    from kmc.checker.core.trace import replay_choices

    model, result = _engine_verdicts(cfg)
    assert {p: result.verdict(p) for p in (EL, CER)} == {p: v.split(",")[0] for p, v in want.items()}
    for name, v in result.violations.items():
        if want[name] == VB:
            assert v.explanation.endswith("reached max_leader_epoch = 2; raise it"), v.explanation
        path = v.path
        assert replay_choices(model, path.init_index, path.choices) == path
        labels = [(a.name, a.replica, a.cut) for a in path.actions]
        loop = None if v.stutters else v.loop
        assert lo.check_lasso(cfg, list(path.states), labels, loop, name, v.obligation) is None, name


@pytest.mark.parametrize("name", sorted(OPERATOR_SMALL))
def test_the_operators_fair_instances_are_the_oracles(name):
    """The fair instance of every step of the first states is the oracle's: ShutdownComplete(r) and
    ApplyMinIsr are fair, ControlledShutdown, ChangeMinIsr and DiskFailure are not."""
    cfg, _ = OPERATOR_SMALL[name]
    model = KafkaModel(cfg)
    seen = {}
    for s in reachable(model, 1500):
        for action, _ in model.successors(s):
            want = _oracle_text(cfg, lo.fair_instance(s, (action.name, action.replica, action.cut)))
            assert model.fair_instance(s, action) == want, (s, action)
            seen.setdefault(action.name, set()).add(want)
    for op in ("ControlledShutdown", "ChangeMinIsr", "DiskFailure"):
        assert seen.get(op, {None}) == {None}, op
    if cfg.max_controlled_shutdowns:
        assert seen["ShutdownComplete"] >= {"ShutdownComplete(A)", "ShutdownComplete(B)"}
    if cfg.min_isr_lag:
        assert seen["ApplyMinIsr"] == {"ApplyMinIsr"}


@pytest.mark.parametrize("name", sorted(OPERATOR_SMALL))
def test_the_operators_liveness_is_the_oracles(name):
    cfg, want = OPERATOR_SMALL[name]
    got, _ = lo.verdicts(cfg)
    assert got == want
    _assert_engine_agrees(cfg, want)


def test_without_a_fair_shutdown_complete_the_verdict_would_not_be_at_the_bound(monkeypatch):
    """The fairness of ShutdownComplete decides C1 + CS: a replica that never finishes its shutdown
    cannot be elected, so without it the partition may stay leaderless below the epoch bound."""
    cfg, want = OPERATOR_SMALL["c1-cs-small"]
    monkeypatch.setattr(lo, "FAIR_PARAMETRIC", tuple(a for a in lo.FAIR_PARAMETRIC if a != "ShutdownComplete"))
    got, _ = lo.verdicts(cfg)
    assert want == {EL: VB, CER: VB} and got == {EL: V, CER: V}


@pytest.mark.slow
@KMC_SLOW
@pytest.mark.parametrize("key", sorted(OPERATOR_ROWS))
def test_eventually_leader_of_the_controlled_shutdown_rows(key):
    """docs/model.md's rows: the oracle and kmc give TLC's EventuallyLeader verdict."""
    cfg = _operators(key)
    got, graph = lo.verdicts(cfg)
    assert got[EL] == OPERATOR_ROWS[key]
    assert len(graph.states) == {"C1 CS": 24_712, "C1 CS+13916": 35_261, "C2 ELR+CS": 47_961}[key]
    _assert_engine_agrees(cfg, got)
