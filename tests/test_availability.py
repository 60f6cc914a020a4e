"""Availability: PartitionRecoverable (always possibly a leader: AG EF), the last-known-leader
election, and how a trap is reported.

Three independent sources meet here: the known-verdict table of the availability property
(TLC's state graph of an independent TLA+ rendering: verdicts and shortest trace lengths), the
naive oracle of tests/oracle.py (whole states, plain BFS forward and backward), and
kmc. The oracle is checked against the table, the pins against the oracle, and the engine
(per-state and batch paths, through the command line and the Python API) against both.
The two-replica specs run in every suite (about a second each); the three-replica ones
(60,000 and 1.2 million states) only with KMC_SLOW=1.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import oracle
from kmc.checker.base.errors import SpecError
from kmc.checker.local.states import Options, check
from kmc.checker.contract.properties import state_mask
from kmc.checker.graph.possibly import EdgeLog
from kmc.checker.contract.protocol import POSSIBLY
from kmc.checker.core.result import CheckResult, HOLDS, Stats, UNKNOWN, VIOLATED, Violation
from kmc.checker.core.trace import replay_choices
from kmc.invariants import BY_NAME, PartitionRecoverable, available, default_properties, explain_trap
from kmc.model import Config, KafkaModel
from kmc.app.specs import load_spec, parse_spec
from helpers import assert_same_successors, reachable
from pins import AVAIL_PINS, CNL, FAST_LIMIT, LCC, PR

REPO = Path(__file__).resolve().parent.parent
SPECS = REPO / "specs"
H = HOLDS
SLOW = pytest.mark.skipif(os.environ.get("KMC_SLOW") != "1",
                          reason="three replicas (60,000 to 1.2 million states): set KMC_SLOW=1")

# The known-verdict table of the availability property, one spec per row: property ->
# "holds" or the length (states, initial included) of the shortest counterexample; a
# property the table marks "—" is absent (and not checked by the spec).
TABLE = {
    "avail-c2": {PR: H, CNL: 6, LCC: 5},
    "avail-c2-elr": {PR: 4, CNL: H, LCC: H},
    "avail-c2-elr-lkl": {PR: H, CNL: 6, LCC: 6},
    "avail-c2-elr-unclean": {PR: H},
    "avail-c3": {PR: H, CNL: 5, LCC: 5},
    "avail-c2m2-elr": {PR: 6, CNL: H, LCC: H},
    "avail-c2m2-elr-lkl": {PR: H, CNL: 10, LCC: 10},
    "avail-c2m2-elr-unclean": {PR: H},
    "avail-c5-elr": {PR: H, CNL: H, LCC: H},
    "avail-lrs2": {PR: H, CNL: 7, LCC: 6},
    "avail-lrs2-elr": {PR: 7, CNL: H, LCC: H},
    "avail-lrs2-elr-lkl": {PR: H, CNL: 11, LCC: 11},
    "avail-lrs2-elr-unclean": {PR: H},
}
FAST = sorted(n for n in TABLE if load_spec(SPECS / f"{n}.toml").config.n == 2)


# The oracle on the last-replica-standing rows keeps 1.2-1.3 million whole states and their
# predecessor sets: 2 to 5 minutes each (measured: 122-277 s), so only with KMC_ORACLE_ALL=1.
ORACLE_ALL = pytest.mark.skipif(os.environ.get("KMC_ORACLE_ALL") != "1",
                                reason="1.2 million states in the naive oracle: set KMC_ORACLE_ALL=1")


def _param(name):
    if name in FAST:
        return pytest.param(name, id=name)
    huge = AVAIL_PINS.get(name) is None or AVAIL_PINS[name].distinct > 1_000_000
    return pytest.param(name, id=name, marks=[pytest.mark.slow, ORACLE_ALL if huge else SLOW])


def _spec(name):
    return load_spec(SPECS / f"{name}.toml")


def _verdict(length):
    return H if length == H else VIOLATED


# -- the specs are the table ------------------------------------------------------------------


def test_every_availability_spec_is_a_table_row():
    shipped = {p.stem for p in SPECS.glob("avail-*.toml")}
    assert shipped == set(TABLE)
    for name, row in TABLE.items():
        spec = _spec(name)
        assert spec.title and spec.keep_going, name
        assert set(spec.invariants) == set(row), name
        assert spec.expect == {p: _verdict(v) for p, v in row.items()}, name


# -- the oracle against the table, the pins against the oracle --------------------------------


@pytest.mark.parametrize("name", [_param(n) for n in TABLE])
def test_the_oracle_reproduces_the_table(name):
    row = TABLE[name]
    got = oracle.check(_spec(name).config)
    want_pr = row[PR]
    assert (got.trap_trace if got.traps else H) == want_pr
    for prop in (CNL, LCC):
        if prop in row:
            assert got.traces.get(prop, H) == row[prop], prop
    pin = AVAIL_PINS.get(name)
    if pin is not None:
        assert (got.distinct, got.generated, got.depth, got.traps, got.trap_trace) == (
            pin.distinct, pin.generated, pin.depth, pin.traps, pin.trap_trace)
        assert {p: n for p, n in got.traces.items() if p in row} == pin.traces


def test_the_fast_rows_are_pinned():
    assert set(FAST) <= set(AVAIL_PINS)
    assert all(AVAIL_PINS[n].distinct <= FAST_LIMIT for n in FAST)


# -- the model: the last-known-leader election and Available -----------------------------------


def _replay(model, texts):
    """The path of the actions named ``texts`` from the first initial state."""
    state, choices = model.init_states()[0], []
    for text in texts:
        names = [model.format_action(a) for a, _ in model.successors(state)]
        choices.append(names.index(text))
        state = model.successors(state)[choices[-1]][1]
    return replay_choices(model, 0, tuple(choices))


C2_TRAP = ["Produce(A)", "ShrinkIsr(B)", "Crash(A, keeps 0)"]


def test_the_c2_elr_trap_in_four_states():
    model = _spec("avail-c2-elr").model()
    path = _replay(model, C2_TRAP)
    trap = path.steps[-1].state
    assert len(path) == 4
    assert not available(model, trap)
    assert explain_trap(model, trap) == (
        "ISR {A} and ELR {}; unclean election is off; no last-known-leader election; A's crash "
        "lost committed record 0, so its restart removes it from the ISR and the ELR: no replica "
        "can ever be elected again")
    # A's restart empties the ISR; B is not in the ELR, so nobody can be elected, ever
    after = model.next_state(trap, [a for a, _ in model.successors(trap) if a.name == "Restart"][0])
    assert (after.quorum.isr, after.quorum.elr) == ((), ())
    assert not available(model, after)
    assert not [a for a in model.actions(after) if a.name == "ElectLeader"]


def test_the_last_known_leader_is_re_elected_with_the_log_it_has_left():
    model = _spec("avail-c2-elr-lkl").model()
    path = _replay(model, C2_TRAP + ["Restart(A)"])
    state = path.steps[-1].state
    assert (state.quorum.leader, state.quorum.isr, state.quorum.elr) == (0, (), ())
    assert available(model, state)
    # only A, the last known leader: B is alive but outside the ISR and the ELR
    assert [model.format_action(a) for a, _ in model.successors(state)
            if a.name == "ElectLeader"] == ["ElectLeader(A)"]
    elect = [a for a in model.actions(state) if a.name == "ElectLeader"][0]
    after = model.next_state(state, elect)
    assert (after.quorum.leader, after.quorum.epoch, after.quorum.isr, after.quorum.elr) == (0, 1, (0,), ())
    assert model.describe_step(state, elect, after) == (
        "the controller elects A in epoch 1, ISR {A}, its high watermark 0 (the last known leader: "
        "the ISR and the ELR are empty, so the controller re-elects its last leader A with the log "
        "it has left)")
    assert after.replicas[0].log == () and after.committed == ((0, 0, 0),)  # record 0 is lost


def test_the_last_known_leader_excludes_an_unclean_election():
    cfg = _spec("avail-c2-elr-lkl").config
    both = KafkaModel(Config(**{**cfg.as_dict(), "replicas": cfg.replicas, "unclean_leader_election": True}))
    state = _replay(both, C2_TRAP + ["Restart(A)"]).steps[-1].state
    assert both.electable(state) == [0]
    unclean = KafkaModel(Config(**{**cfg.as_dict(), "replicas": cfg.replicas, "last_known_leader": False,
                                   "unclean_leader_election": True}))
    assert unclean.electable(state) == [0, 1]


def test_available_ignores_the_epoch_bound():
    model = _spec("avail-c2").model()
    state = _replay(model, ["Crash(A, keeps 0)"]).steps[-1].state
    capped = KafkaModel(Config(**{**model.config.as_dict(), "replicas": model.config.replicas,
                                  "max_leader_epoch": 0}))
    assert not [a for a in capped.actions(state) if a.name == "ElectLeader"]
    assert available(capped, state)


def _reachable(model):
    order, seen = list(model.init_states()), set(model.init_states())
    for s in order:
        for _, t in model.successors(s):
            if t not in seen:
                seen.add(t)
                order.append(t)
    return order


@pytest.mark.parametrize("name", ["avail-c2-elr", "avail-c2m2-elr-lkl"])
def test_the_batch_goal_mask_is_available(name):
    model = _spec(name).model()
    states = _reachable(model)
    kernel = model.batch_kernel()
    rows = np.stack([kernel.encode(s) for s in states])
    mask = state_mask(kernel, BY_NAME[PR], rows)  # as the engine reads it: the property's own
    assert mask.dtype == bool and len(mask) == len(states)
    assert mask.tolist() == [available(model, s) for s in states]
    assert kernel.goal_mask(PR, rows) is None  # the kernel answers no property by name


@pytest.mark.parametrize("name", ["avail-c2-elr", "avail-c2m2-elr"])
def test_the_edge_log_finds_the_oracles_traps_on_the_kafka_graph(name):
    """The engine core's trap computation on the real graph, fed as an engine feeds it
    (states in BFS order, goal masks from the batch kernel, every successor edge)."""
    model = _spec(name).model()
    kernel = model.batch_kernel()
    number, depth, order = {}, [], []
    log = EdgeLog()

    def store(states, d):
        first = len(order)
        for s in states:
            number[s] = len(order)
            order.append(s)
            depth.append(d)
        if states:
            log.add_states(first, state_mask(kernel, BY_NAME[PR], np.stack([kernel.encode(s) for s in states])))

    store(list(model.init_states()), 1)
    i = 0
    while i < len(order):
        level_end = len(order)
        new, fresh = [], set()
        src, dst = [], []
        for j in range(i, level_end):
            for _, t in model.successors(order[j]):
                if t not in number and t not in fresh:
                    fresh.add(t)
                    new.append(t)
                src.append(j)
                dst.append(t)
        store(new, depth[i] + 1)
        log.add_edges(np.array(src, dtype=np.int64), np.array([number[t] for t in dst], dtype=np.uint64))
        i = level_end
    count, least = log.traps(lambda fps: fps.astype(np.int64))  # here a state's "fingerprint" is its number
    pin = AVAIL_PINS[name]
    assert count == pin.traps
    assert (depth[least] if least is not None else None) == pin.trap_trace
    if least is not None:
        assert not available(model, order[least])


_LKL_CONFIGS = st.builds(
    lambda **kw: Config(truncation="leader-epoch-2.1", hw_requires_min_isr=True, eligible_leader_replicas=True,
                        last_known_leader=True, unflushed_loss=True, **kw),
    replicas=st.sampled_from([("A", "B"), ("A", "B", "C")]),
    max_messages=st.integers(0, 2), max_crashes=st.integers(1, 3), max_leader_epoch=st.integers(0, 3),
    min_insync_replicas=st.integers(1, 2), unclean_leader_election=st.booleans(),
    preferred_election=st.booleans(), initial_leader=st.sampled_from(["first", "any"]))


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(config=_LKL_CONFIGS)
def test_the_batch_kernel_is_the_model_with_the_last_known_leader(config):
    """Successors (the fourth kind of ElectLeader among them) and Available, per-state and
    batch, on the first 400 states of configurations that lose records in crashes."""
    model = KafkaModel(config)
    states = reachable(model, 400)
    assert_same_successors(model, states)
    kernel = model.batch_kernel()
    rows = np.stack([kernel.encode(s) for s in states])
    assert state_mask(kernel, BY_NAME[PR], rows).tolist() == [available(model, s) for s in states]


# -- the spec keys --------------------------------------------------------------------------------


MODEL = '[model]\nreplicas = 2\ntruncation = "leader-epoch-2.1"\n'


def test_last_known_leader_needs_eligible_leader_replicas():
    with pytest.raises(SpecError) as e:
        parse_spec((MODEL + "hw_requires_min_isr = true\nlast_known_leader = true\n").encode(), "x.toml")
    text = str(e.value)
    assert "\n" not in text and "x.toml" in text
    assert "model.last_known_leader" in text and "eligible_leader_replicas" in text
    with pytest.raises(SpecError, match="model.last_known_leader"):
        parse_spec((MODEL + "last_known_leader = 1\n").encode(), "x.toml")


def test_partition_recoverable_is_never_a_default():
    assert BY_NAME[PR] is PartitionRecoverable and PartitionRecoverable.kind == POSSIBLY
    assert PartitionRecoverable.symmetric and PartitionRecoverable.explain is explain_trap
    for kw in ({}, {"truncation": "leader-epoch-2.1"},
               {"hw_requires_min_isr": True, "eligible_leader_replicas": True, "last_known_leader": True}):
        cfg = Config(**kw)
        assert PartitionRecoverable not in default_properties(cfg)
        assert PartitionRecoverable not in KafkaModel(cfg).properties()
    spec = parse_spec((MODEL + '[check]\ninvariants = ["PartitionRecoverable"]\n'
                       '[expect]\nPartitionRecoverable = "holds"\n').encode())
    assert spec.invariants == (PR,) and spec.properties() == [PartitionRecoverable]
    assert PR not in parse_spec(MODEL.encode()).invariants


def _main(capsys, *argv):
    from kmc.app.cli import main

    try:
        code = main([str(a) for a in argv])
    except SystemExit as e:
        code = e.code
    out, err = capsys.readouterr()
    return code, out, err


def test_kmc_invariants_lists_it_with_its_kind(capsys):
    code, out, _ = _main(capsys, "invariants")
    assert code == 0
    line = next(x for x in out.splitlines() if x.strip().startswith(PR))
    assert "possibly" in line


def test_a_bad_spec_is_one_line_without_traceback(tmp_path, capsys):
    bad = tmp_path / "bad.toml"
    bad.write_text(MODEL + "hw_requires_min_isr = true\nlast_known_leader = true\n")
    code, out, err = _main(capsys, "check", bad, "--no-progress")
    assert code == 2
    assert "Traceback" not in out + err
    assert "model.last_known_leader" in err and "eligible_leader_replicas" in err


def test_the_json_of_a_trap():
    from kmc.app.render.json_result import SCHEMA_MINOR, SCHEMA_VERSION, result_to_dict

    spec = _spec("avail-c2-elr")
    model = spec.model()
    path = _replay(model, C2_TRAP)
    v = Violation(PR, POSSIBLY, explain_trap(model, path.steps[-1].state), path, traps=1296)
    result = CheckResult("local", list(spec.invariants), Stats(distinct=7057), {PR: v})
    doc = result_to_dict(spec, model, result)
    assert (doc["schema_version"], doc["schema_minor"]) == (SCHEMA_VERSION, SCHEMA_MINOR) == (1, 3)
    (entry,) = doc["violations"]
    assert list(entry) == ["property", "kind", "explanation", "trap_states", "trace"]
    assert entry["trap_states"] == 1296 and entry["kind"] == "possibly"
    assert entry["trace"]["length"] == 4
    assert doc["unknown"] == {}


# -- the engine (the one level driver): per-state and batch paths against the pins --------------

ENGINE_SPECS = sorted(n for n, p in AVAIL_PINS.items() if p.distinct <= FAST_LIMIT)
# Both paths (the per-state reference and the batch kernel) on every spec with eligible leader
# replicas of up to FAST_LIMIT states; the batch path on the others too, and on C5 (59,506
# states, a third of a second); the last-replica-standing specs (1.2 to 1.3 million states,
# 3 to 4 s each on the batch path) with KMC_SLOW=1.
PER_STATE_SPECS = [n for n in ENGINE_SPECS if _spec(n).config.eligible_leader_replicas]
BATCH_SPECS = ENGINE_SPECS + ["avail-c5-elr"]
ENGINE_RUNS = ([(n, "batch") for n in BATCH_SPECS] + [(n, "per-state") for n in PER_STATE_SPECS]
               + [pytest.param(n, "batch", marks=[pytest.mark.slow, SLOW])
                  for n in sorted(AVAIL_PINS) if n not in BATCH_SPECS])


@pytest.mark.parametrize("name, path", ENGINE_RUNS)
def test_the_engine_agrees_with_the_oracle(tmp_path, capsys, name, path):
    pin = AVAIL_PINS[name]
    out_json = tmp_path / "r.json"
    extra = ["--per-state"] if path == "per-state" else []
    code, out, err = _main(capsys, "check", SPECS / f"{name}.toml", "--no-progress", "--check-expect",
                           "--json", out_json, *extra)
    assert code == 0, out + err  # every verdict as the spec expects
    doc = json.loads(out_json.read_text())
    stats = doc["stats"]
    assert (stats["distinct_states"], stats["states_generated"], stats["depth"]) == (
        pin.distinct, pin.generated, pin.depth)
    assert doc["complete"] is True and doc["unknown"] == {}
    found = {v["property"]: v for v in doc["violations"]}
    assert {p: v["trace"]["length"] for p, v in found.items() if p != PR} == pin.traces
    if pin.traps:
        v = found[PR]
        assert (v["kind"], v["trap_states"], v["trace"]["length"]) == (POSSIBLY, pin.traps, pin.trap_trace)
        assert "no replica can ever be elected again" in v["explanation"]
        share = f"{pin.traps:,} trap states: {100 * pin.traps / pin.distinct:.1f}% of the {pin.distinct:,} reachable states"
        text = " ".join(out.replace("│", " ").split())  # the words, whatever the wrapping
        assert share in text and f"State {pin.trap_trace} is a trap" in text
    else:
        assert PR not in found and doc["verdicts"][PR] == HOLDS


@pytest.mark.spark
@pytest.mark.parametrize("name", [
    "avail-c2-elr",
    pytest.param("avail-c2", marks=pytest.mark.skipif(os.environ.get("KMC_SLOW") != "1", reason="another spec on Spark: set KMC_SLOW=1")),
    pytest.param("avail-c2m2-elr", marks=pytest.mark.skipif(os.environ.get("KMC_SLOW") != "1", reason="another spec on Spark: set KMC_SLOW=1")),
])
def test_spark_agrees_with_the_pins(name, spark_sc):
    """PartitionRecoverable on Spark: the pinned verdicts, trap counts and trace lengths
    (the levels past the first hundred states run as Spark levels)."""
    from kmc.checker.engines import make_engine

    pin = AVAIL_PINS[name]
    spec = _spec(name)
    engine = make_engine(spec.model(), spec.properties(), Options(keep_going=True), engine="spark", partitions=2,
                         driver_level_limit=100)
    result = engine.run()
    assert engine.metrics["spark_levels"]
    assert (result.stats.distinct, result.stats.generated, result.stats.depth) == (pin.distinct, pin.generated,
                                                                                   pin.depth)
    if pin.traps:
        v = result.violations[PR]
        assert (v.traps, len(v.path)) == (pin.traps, pin.trap_trace)
    else:
        assert result.verdict(PR) == HOLDS


def _trap_run(**options):
    spec = _spec("avail-c2-elr")
    return check(spec.model(), spec.properties(), Options(**options))


def test_the_python_api_reports_the_trap():
    result = _trap_run(keep_going=True)
    v = result.violations[PR]
    assert (result.verdict(PR), v.kind, v.traps, len(v.path)) == (VIOLATED, POSSIBLY, 1296, 4)
    assert [str(a.name) for a in v.path.actions] == ["Produce", "ShrinkIsr", "Crash"]
    assert v.explanation == explain_trap(_spec("avail-c2-elr").model(), v.path.steps[-1].state)


def test_a_depth_bound_leaves_it_unknown():
    result = _trap_run(keep_going=True, max_depth=5)
    assert result.verdict(PR) == UNKNOWN and PR not in result.violations
    assert PR in result.unknown and "max_depth" in result.unknown[PR]


def test_a_stop_at_another_violation_leaves_it_unknown():
    spec = _spec("avail-c2-elr-lkl")
    result = check(spec.model(), spec.properties(), Options(keep_going=False))
    assert result.verdict(CNL) == VIOLATED
    assert result.verdict(PR) == UNKNOWN and PR in result.unknown


def test_symmetry_keeps_the_verdict_and_the_trace_length():
    cfg = _spec("avail-c2-elr").config
    model = KafkaModel(Config(**{**cfg.as_dict(), "replicas": cfg.replicas, "initial_leader": "any"}))
    want = oracle.check(model.config)
    plain = check(model, [PartitionRecoverable], Options(keep_going=True))
    reduced = check(model, [PartitionRecoverable], Options(keep_going=True, symmetry=True))
    assert want.traps and plain.verdict(PR) == reduced.verdict(PR) == VIOLATED
    assert plain.stats.distinct == want.distinct
    assert plain.violations[PR].traps == want.traps
    assert len(plain.violations[PR].path) == len(reduced.violations[PR].path) == want.trap_trace
    assert 0 < reduced.violations[PR].traps < want.traps  # orbits: fewer than the states


def test_the_command_line_selects_it(tmp_path, capsys):
    out_json = tmp_path / "r.json"
    code, out, err = _main(capsys, "check", SPECS / "avail-c2-elr.toml", "--invariant", PR, "--keep-going",
                           "--no-progress", "--no-trace", "--check-expect", "--json", out_json)
    assert code == 0, out + err
    doc = json.loads(out_json.read_text())
    assert doc["checked"] == [PR] and doc["verdicts"] == {PR: VIOLATED}
    assert doc["expectation"]["unchecked"] == [CNL, LCC]
    code, out, err = _main(capsys, "check", SPECS / "avail-c2-elr.toml", "--invariant", PR, "--max-depth", "3",
                           "--no-progress", "--json", out_json)
    doc = json.loads(out_json.read_text())
    assert doc["verdicts"] == {PR: UNKNOWN} and PR in doc["unknown"]
    assert f"{PR} is unknown: " in " ".join(out.split())


def test_kmc_replay_reads_a_trap(tmp_path, capsys):
    from kmc.app.render.json_result import result_to_dict

    spec = _spec("avail-c2-elr")
    model = spec.model()
    path = _replay(model, C2_TRAP)
    v = Violation(PR, POSSIBLY, explain_trap(model, path.steps[-1].state), path, traps=1296)
    doc = result_to_dict(spec, model, CheckResult("local", [PR], Stats(distinct=7057), {PR: v}))
    saved = tmp_path / "trap.json"
    saved.write_text(json.dumps(doc))
    code, out, err = _main(capsys, "replay", saved)
    assert code == 0, err
    text = " ".join(out.replace("│", " ").split())
    assert "State 4 is a trap" in text and "1,296 trap states" in text
    # a trace that stops before the crash ends in a state where A still leads: not a trap
    short = Violation(PR, POSSIBLY, "edited", _replay(model, C2_TRAP[:2]), traps=1296)
    saved.write_text(json.dumps(result_to_dict(spec, model, CheckResult("local", [PR], Stats(), {PR: short}))))
    code, out, err = _main(capsys, "replay", saved)
    assert code == 2 and "not a trap" in err and "Traceback" not in err


def test_kmc_bench_reports_bytes_per_stored_edge(tmp_path, capsys):
    """The edge log keeps exactly the edges leaving non-goal states, duplicates included:
    as many as the oracle counts successors of its non-Available states."""
    cfg = _spec("avail-c2-elr").config
    order, seen = oracle.initial_states(cfg), set(oracle.initial_states(cfg))
    for s in order:
        for _, t in oracle.successors(cfg, s):
            if t not in seen:
                seen.add(t)
                order.append(t)
    want = sum(len(oracle.successors(cfg, s)) for s in order if not oracle.available(cfg, s))
    out_json = tmp_path / "b.json"
    code, out, err = _main(capsys, "bench", SPECS / "avail-c2-elr.toml", "--json", out_json)
    assert code == 0, err
    doc = json.loads(out_json.read_text())
    assert doc["edges_stored"] == want == 2657
    assert doc["bytes_per_stored_edge"] == round(doc["edge_log_bytes"] / want, 1)
    assert "bytes per stored edge" in out
