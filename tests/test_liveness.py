"""Liveness under weak fairness: the kept graph on hand-built graphs whose answers are worked
out by hand, then the engines (per-state, rows of Python states, the batch kernel) on the toy
ring and on two-phase commit, every lasso re-checked by ``checker.graph.lasso`` (which shares
no code with the components' computation)."""

from __future__ import annotations

import importlib.util
import os
import pickle
from pathlib import Path

import numpy as np
import pytest
from toy import Ring

from kmc.checker.local.rows import BatchEngine
from kmc.checker.base.errors import UsageError
from kmc.checker.graph.lasso import check_lasso
from kmc.checker.graph.liveness import LivenessLog
from kmc.checker.local.states import LocalEngine
from kmc.checker.core.options import Options
from kmc.checker.core.states_kernel import StatesKernel

# State i is stored under the fingerprint FP[i] (arbitrary, unordered: a mix-up between
# numbers and fingerprints cannot pass by accident).
FP = np.array([0xDEAD_BEEF_0000_0011 * (i + 3) % 2**64 for i in range(64)], dtype=np.uint64)
NUMBER = {int(fp): i for i, fp in enumerate(FP)}


def numbers_of(fps):
    return np.array([NUMBER[int(f)] for f in fps], dtype=np.int64)


def build(waits, edges, instances, opened=None, chunks=1):
    """A log of one obligation over states ``0 .. len(waits) - 1``: ``waits`` a string, ``w``
    where the obligation waits, ``.`` where it does not; ``opened`` likewise with ``o`` (default:
    opened wherever it waits, as for ``[]<>P``); ``edges`` ``(source, target, fair code)`` in
    the order of each source's choices (-1: not fair)."""
    w = np.array([c == "w" for c in waits])
    o = w if opened is None else np.array([c == "o" for c in opened])
    log = LivenessLog(1, instances)
    bounds = np.linspace(0, len(w), chunks + 1).astype(int)
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        log.add_states(int(lo), o[lo:hi, None], w[lo:hi, None])
    by_source: dict[int, list] = {}
    for s, d, f in edges:
        by_source.setdefault(s, []).append((d, f))
    for s in sorted(by_source, reverse=True):  # any order of sources: the answer must not care
        out = by_source[s]
        log.add_edges(np.full(len(out), s), FP[[d for d, _ in out]], np.arange(len(out)), [f for _, f in out])
    return log


def lasso_of(log):
    found = log.decide(numbers_of)
    return None if found is None else (found.start, found.steps, found.to_loop, found.loop_state)


def test_a_fair_cycle_is_a_violation():
    # 0 <-> 1, both waiting, instance 0 taken both ways: the cycle from 0.
    log = build("ww", [(0, 1, 0), (1, 0, 0)], 1)
    assert lasso_of(log) == (0, ((0, 0), (1, 0)), 0, 0)


def test_an_instance_enabled_throughout_and_never_taken_makes_the_cycle_unfair():
    # 0 <-> 1 by instance 0; instance 1 leads out to 2 (where the obligation is met) from both.
    log = build("ww.", [(0, 1, 0), (0, 2, 1), (1, 0, 0), (1, 2, 1)], 2)
    assert lasso_of(log) is None


def test_a_cycle_is_fair_when_the_instance_is_disabled_in_one_of_its_states():
    # As above, but instance 1 is not enabled in 1: weak fairness does not force it.
    log = build("ww.", [(0, 1, 0), (0, 2, 1), (1, 0, 0)], 2)
    assert lasso_of(log) == (0, ((0, 0), (1, 0)), 0, 0)


def test_the_cycle_takes_every_instance_it_must():
    # 0 -> 1 (a), 1 -> 0 (a), 1 -> 2 (b), 2 -> 0 (a): a and b are enabled in ... a everywhere,
    # b only in 1; the component {0, 1, 2} is fair (a is taken); the cycle from 0 takes a.
    log = build("www", [(0, 1, 0), (1, 0, 0), (1, 2, 1), (2, 0, 0)], 2)
    assert lasso_of(log) == (0, ((0, 0), (1, 0)), 0, 0)
    # now b is enabled everywhere (2 -> 2 by b, 0 -> 0 by b): the cycle must go through a b edge
    log = build("www", [(0, 1, 0), (0, 0, 1), (1, 0, 0), (1, 2, 1), (2, 0, 0), (2, 2, 1)], 2)
    found = log.decide(numbers_of)
    assert found is not None and found.to_loop == 0 and found.loop_state == 0
    cycle = found.steps
    # a closed walk from 0 that takes a (choice 0 of 0 or 1, or of 2) and b (a b edge)
    assert cycle[0][0] == 0
    assert cycle == ((0, 0), (1, 1), (2, 0)) or cycle == ((0, 0), (1, 0), (0, 1))


def test_the_printed_cycle_is_fair_for_its_own_states():
    # {0, 1, 2} by a (0 -> 1, 1 -> 0, 1 -> 2, 2 -> 0); b leads out to 3 from 0 and 1 only.
    # The component is fair (b is disabled in 2), but the cycle 0 -> 1 -> 0 would not be
    # (b enabled in both its states, never taken): the cycle must pass through 2.
    edges = [(0, 1, 0), (0, 3, 1), (1, 0, 0), (1, 2, 0), (1, 3, 1), (2, 0, 0)]
    found = build("www.", edges, 2).decide(numbers_of)
    assert (found.start, found.steps, found.to_loop) == (0, ((0, 0), (1, 1), (2, 0)), 0)  # 1 -> 2 is choice 1


def test_stuttering_where_no_fair_instance_is_enabled():
    # 0 -> 1 by a step that is not fair: 0 may stop there for ever.
    assert lasso_of(build("w.", [(0, 1, -1)], 1)) == (0, (), 0, 0)
    # a state without any successor stutters too
    assert lasso_of(build(".w", [(0, 1, 0)], 1)) == (1, (), 0, 1)


def test_no_stuttering_where_a_fair_instance_is_enabled():
    # 0 -> 1 by the fair instance 0, and 1 is where the obligation is met
    assert lasso_of(build("w.", [(0, 1, 0)], 1)) is None


def test_leads_to_with_p_recurring():
    # 0 (P, not Q) -> 1 (not P, not Q) -> 2 (Q) -> 0: every time P holds, Q follows.
    assert lasso_of(build("ww.", [(0, 1, 0), (1, 2, 0), (2, 0, 0)], 1, opened="o..")) is None
    # 1 -> 0 by the fair instance 0 too, and 1 -> 2 by the unfair step: P recurs for ever
    # on the cycle 0 -> 1 -> 0 and Q never comes.
    log = build("ww.", [(0, 1, 0), (1, 0, 0), (1, 2, -1), (2, 0, 0)], 1, opened="o..")
    assert lasso_of(log) == (0, ((0, 0), (1, 0)), 0, 0)


def test_a_waiting_cycle_not_reached_from_an_opened_state_is_no_violation():
    # 1 <-> 2 wait for ever, but the obligation is only opened in 0, which goes to 3 (met).
    log = build("www.", [(0, 3, 0), (1, 2, 0), (2, 1, 0)], 1, opened="o...")
    assert lasso_of(log) is None


def test_the_prefix_goes_through_the_opened_state():
    # 0 opened -> 1 -> 2 <-> 3 (fair): the lasso starts at 0 and reaches the cycle at 2.
    log = build("wwww", [(0, 1, 0), (1, 2, 0), (2, 3, 0), (3, 2, 0)], 1, opened="o...")
    assert lasso_of(log) == (0, ((0, 0), (1, 0), (2, 0), (3, 0)), 2, 2)


def test_in_chunks_after_a_rollback_and_through_a_pickle():
    edges = [(0, 1, 0), (1, 0, 0), (1, 2, 1), (2, 2, 0)]
    whole = lasso_of(build("www", edges, 2))
    assert lasso_of(build("www", edges, 2, chunks=3)) == whole
    log = build("www", edges, 2)
    log.add_states(3, np.ones((2, 1), bool), np.ones((2, 1), bool))
    log.add_edges(np.array([3, 4]), FP[[4, 3]], np.zeros(2), np.zeros(2))
    log.rollback(3)
    assert (log.states, log.edges) == (3, 4) and lasso_of(log) == whole
    again = pickle.loads(pickle.dumps(log))
    assert lasso_of(again) == whole and again.nbytes() <= log.nbytes()


@pytest.mark.parametrize("chunk", [None, 1])
def test_the_prefix_comes_from_the_opened_state_that_found_it(monkeypatch, chunk):
    # 0, 1 opened; 0 -> 2 -> 4 -> 7 (not waiting) and 1 -> 3 -> {4, 5}; 5 <-> 6 (fair). Worked
    # by hand: the levels are {0, 1}, {2, 3}, {4, 5}, {6}; 5 is the nearest violating state,
    # found from 3 (its choice 1), which was found from 1. With one state a part, each
    # level's states are looked at one by one and must give the same prefix.
    from kmc.checker.graph import fair_components, liveness

    if chunk is not None:
        monkeypatch.setattr(fair_components, "CHUNK", chunk)
        monkeypatch.setattr(liveness, "CHUNK", chunk)
    edges = [(0, 2, 0), (1, 3, 0), (2, 4, 0), (3, 4, 0), (3, 5, 0), (4, 7, 0), (5, 6, 0), (6, 5, 0)]
    log = build("wwwwwww.", edges, 1, opened="oo......")
    assert lasso_of(log) == (1, ((1, 0), (3, 1), (5, 0), (6, 0)), 2, 5)


def test_bad_input_is_refused():
    log = LivenessLog(1, 1)
    with pytest.raises(ValueError, match="expected state 0"):
        log.add_states(2, np.ones((1, 1), bool), np.ones((1, 1), bool))
    log.add_states(0, np.ones((1, 1), bool), np.ones((1, 1), bool))
    with pytest.raises(ValueError, match="was not added"):
        log.add_edges(np.array([5]), FP[[0]], np.zeros(1), np.zeros(1))
    with pytest.raises(ValueError, match="out of range"):
        log.add_edges(np.array([0]), FP[[0]], np.zeros(1), np.array([3]))


# -- the engines --------------------------------------------------------------------------------

ENGINES = {
    "per-state": lambda model, **kw: LocalEngine(model, **kw),
    "rows": lambda model, **kw: BatchEngine(model, kernel=StatesKernel(model), **kw),
}


def _lassos(result):
    return {
        name: (v.loop, v.obligation, v.path.init_index, v.path.choices) for name, v in sorted(result.violations.items())
    }


def _recheck(model, result):
    props = {p.name: p for p in model.properties()}
    for v in result.violations.values():
        if v.loop is not None:
            assert check_lasso(model, props[v.property], v.path, v.loop, v.obligation) is None, v.property


@pytest.mark.parametrize("engine", sorted(ENGINES))
def test_the_ring_by_hand(engine):
    fair = ENGINES[engine](Ring(fair=True)).run()
    assert (fair.stats.distinct, fair.verdict("ReturnsToZero"), fair.verdict("OneLeadsToFinish")) == (
        6,
        "holds",
        "violated",
    )
    v = fair.violations["OneLeadsToFinish"]
    # (0,0) -Next-> (1,0), then round: (2,0), (0,0), back to (1,0)
    assert [(s.state.x, s.state.y) for s in v.path.steps] == [(0, 0), (1, 0), (2, 0), (0, 0), (1, 0)]
    assert (v.loop, v.path.choices) == (1, (0, 0, 0, 0))
    unfair = ENGINES[engine](Ring(fair=False)).run()
    assert unfair.verdict("ReturnsToZero") == "violated"
    v = unfair.violations["ReturnsToZero"]
    assert (len(v.path), v.loop, v.stutters) == (2, 1, True)  # it stops at x = 1
    assert "declares no fair actions" in v.explanation
    _recheck(Ring(fair=True), fair)
    _recheck(Ring(fair=False), unfair)


TWO_PHASE = Path(__file__).resolve().parent.parent / "specs" / "models" / "two_phase.py"


def two_phase(**params):
    spec = importlib.util.spec_from_file_location("two_phase_liveness", TWO_PHASE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.two_phase(liveness=True, **params)


@pytest.mark.parametrize("rms", [1, 2, 3])
def test_two_phase_on_every_local_engine(rms):
    """Every engine, the same verdicts and lassos; the model's expectations hold."""
    for fair_tm in (True, False):
        model = two_phase(rms=rms, fair_tm=fair_tm)
        results = [
            LocalEngine(model).run(),
            BatchEngine(model, kernel=StatesKernel(model)).run(),
            BatchEngine(model, options=Options(verify_kernel=True)).run(),
        ]
        want = model.expect()
        for r in results:
            assert {n: r.verdict(n) for n in ("EveryoneDecides", "PreparedDecides")} == {
                n: want[n] for n in ("EveryoneDecides", "PreparedDecides")
            }
            assert _lassos(r) == _lassos(results[0])
            _recheck(model, r)


def test_two_phase_by_hand():
    """One RM, TM silent: the initial state stutters (no fair action: no message yet), and the
    RM that prepares waits for ever in state 2 (RMPrepare is the second action of state 1)."""
    r = LocalEngine(two_phase(rms=1, fair_tm=False)).run()
    every, prepared = r.violations["EveryoneDecides"], r.violations["PreparedDecides"]
    assert (len(every.path), every.loop) == (1, 0)
    assert (len(prepared.path), prepared.loop, prepared.obligation, prepared.path.choices) == (2, 1, 0, (1,))
    # the kept graph: the 7 states where the RM has not decided (3 while the TM is undecided,
    # 1 once it committed, 3 once it aborted) and their 14 edges (3 + 2 + 3, 1, 3 + 1 + 1)
    engine = LocalEngine(two_phase(rms=1))
    engine.run()
    (_, log), _ = engine.liveness
    assert (log.kept_states, log.edges) == (7, 14)


def test_a_depth_bound_leaves_it_unknown():
    r = LocalEngine(Ring(fair=True), options=Options(max_depth=2)).run()
    assert r.verdict("ReturnsToZero") == "unknown" and "max_depth 2" in r.unknown["ReturnsToZero"]


def test_symmetry_is_refused_in_one_line():
    with pytest.raises(UsageError, match="liveness property.*not preserved by the symmetry quotient"):
        LocalEngine(Ring(), options=Options(symmetry=True))


def test_a_checkpoint_keeps_the_liveness_log():
    engine = LocalEngine(Ring(fair=True), options=Options(max_depth=2))
    engine.run()
    snap = pickle.loads(pickle.dumps(engine.snapshot()))
    assert "liveness" in snap
    resumed = LocalEngine(Ring(fair=True))
    resumed.restore(snap)
    assert _lassos(resumed.run()) == _lassos(LocalEngine(Ring(fair=True)).run())


def test_a_batch_checkpoint_keeps_the_liveness_log():
    model = two_phase(rms=2, fair_tm=False)
    engine = BatchEngine(model, options=Options(max_depth=3))
    engine.run()
    snap = pickle.loads(pickle.dumps(engine.snapshot()))
    resumed = BatchEngine(model)
    resumed.restore(snap)
    got, want = resumed.run(), BatchEngine(model).run()
    assert _lassos(got) == _lassos(want) and got.verdict("EveryoneDecides") == "violated"
    kept = [(log.kept_states, log.edges) for _, log in resumed.liveness]
    fresh = BatchEngine(model)
    fresh.run()
    assert kept == [(log.kept_states, log.edges) for _, log in fresh.liveness]


def test_check_lasso_refuses_what_is_not_a_counterexample():
    model = Ring(fair=True)
    props = {p.name: p for p in model.properties()}
    v = LocalEngine(model).run().violations["OneLeadsToFinish"]
    assert check_lasso(model, props["OneLeadsToFinish"], v.path, v.loop) is None
    assert "does not close" in check_lasso(model, props["OneLeadsToFinish"], v.path, 0)
    # the prefix alone, read as stuttering in (1, 0): Next is enabled there
    short = type(v.path)(v.path.steps[:2], v.path.init_index, v.path.choices[:1])
    assert "is enabled there" in check_lasso(model, props["OneLeadsToFinish"], short, 1)


@pytest.mark.spark
@pytest.mark.parametrize("fair_tm", [True, False])
def test_two_phase_on_spark_as_locally(fair_tm, spark_sc):
    """On Spark (the levels past the twentieth state run as Spark levels; the executors write
    what the graph visitor keeps into the store), the local engine's verdicts, lassos and kept
    graph."""
    from kmc.checker.engines import make_engine

    spark_sc.addPyFile(str(TWO_PHASE))
    model = two_phase(rms=3, fair_tm=fair_tm)
    local = LocalEngine(model)
    want = local.run()
    engine = make_engine(model, None, Options(), engine="spark", partitions=2, driver_level_limit=20)
    got = engine.run()
    assert engine.metrics["spark_levels"]
    assert {n: got.verdict(n) for n in got.checked} == {n: want.verdict(n) for n in want.checked}
    assert _lassos(got) == _lassos(want)
    kept = [(log.kept_states, log.edges) for _, log in local.liveness]
    assert [(log.kept_states, log.edges) for _, log in engine.liveness] == kept


@pytest.mark.spark
@pytest.mark.parametrize("partitions", [
    pytest.param(2, marks=pytest.mark.skipif(os.environ.get("KMC_SLOW") != "1", reason='another partition count: set KMC_SLOW=1')), 3])
def test_the_ring_on_spark(spark_sc, partitions):
    from kmc.checker.engines import make_engine

    spark_sc.addPyFile(str(Path(__file__).with_name("toy.py")))
    for fair in (True, False):
        want = LocalEngine(Ring(n=7, fair=fair)).run()
        engine = make_engine(Ring(n=7, fair=fair), None, Options(), engine="spark", partitions=partitions,
                             driver_level_limit=0)
        got = engine.run()
        assert engine.metrics["spark_levels"]
        assert {n: got.verdict(n) for n in got.checked} == {n: want.verdict(n) for n in want.checked}
        assert _lassos(got) == _lassos(want)


def _two_phase_module():
    spec = importlib.util.spec_from_file_location("two_phase_kernel_check", TWO_PHASE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_kernel_check_compares_fair_codes_and_liveness_masks():
    from kmc.checker.contract.kernel_check import KernelMismatchError

    module = _two_phase_module()
    model = module.two_phase(rms=2, liveness=True)

    class WrongFair(module.TwoPhaseKernel):
        def fair_codes(self, rows, parents, choices, codes, succ):
            out = super().fair_codes(rows, parents, choices, codes, succ)
            return np.where(out == 0, -1, out)  # TMRcvPrepared(0) declared not fair

    with pytest.raises(KernelMismatchError, match="fair instance code"):
        BatchEngine(model, kernel=WrongFair(model), options=Options(verify_kernel=True)).run()

    def wrong_mask(kernel, rows):
        p, q = module.prepared_decides_mask(kernel, rows)
        return p, np.zeros_like(q)  # "no RM ever decided"

    wrong = module.PreparedDecides.__class__(**{**module.attrs.asdict(module.PreparedDecides, recurse=False),
                                               "mask": wrong_mask})
    with pytest.raises(KernelMismatchError, match="PreparedDecides mask"):
        BatchEngine(model, [wrong], options=Options(verify_kernel=True)).run()


def _kmc(*args):
    import os
    import subprocess
    import sys

    repo = TWO_PHASE.parent.parent.parent
    env = dict(os.environ, COLUMNS="200")
    env["PYTHONPATH"] = str(repo) + os.pathsep + env.get("PYTHONPATH", "")
    return subprocess.run([sys.executable, "-m", "kmc.app.cli", *map(str, args)], cwd=repo, env=env,
                          capture_output=True, text=True, timeout=600)


@pytest.mark.spark
@pytest.mark.skipif(__import__("shutil").which("java") is None, reason="the Spark engine needs Java")
@pytest.mark.skipif(__import__("os").environ.get("KMC_SLOW") != "1", reason="another Spark run of its own (the suite's time): set KMC_SLOW=1")
def test_a_spark_checkpoint_keeps_the_graph(tmp_path):
    """A Spark run stopped by --max-states with a checkpoint, resumed: the verdicts and lassos
    of an uninterrupted local run (the graph the visitor kept so far travels in the checkpoint)."""
    import json

    model = ["--model", f"{TWO_PHASE}:two_phase", "--param", "liveness=true", "--param", "fair_tm=false",
             "--keep-going", "--no-progress"]
    first = _kmc("check", *model, "--engine", "spark", "--partitions", "2", "--driver-level-limit", "20",
                 "--max-states", "100", "--checkpoint", tmp_path / "ck")
    assert first.returncode == 0, first.stderr
    resumed = _kmc("check", "--resume", tmp_path / "ck", "--json", tmp_path / "a.json")
    local = _kmc("check", *model, "--json", tmp_path / "b.json")
    assert resumed.returncode == local.returncode == 1, resumed.stderr
    a, b = (json.loads((tmp_path / f).read_text()) for f in ("a.json", "b.json"))
    assert (a["engine"], b["engine"]) == ("spark", "local")
    assert a["verdicts"] == b["verdicts"] and a["verdicts"]["EveryoneDecides"] == "violated"
    assert [(v["lasso"], v["trace"]["choices"]) for v in a["violations"]] == [
        (v["lasso"], v["trace"]["choices"]) for v in b["violations"]]


def test_kmc_replay_checks_a_lasso(tmp_path):
    """kmc replay re-executes a lasso and checks it; a lasso edited to start its cycle elsewhere
    (it no longer closes) is refused in one line."""
    import json

    model = ["--model", f"{TWO_PHASE}:two_phase", "--param", "rms=1", "--param", "liveness=true",
             "--param", "fair_tm=false", "--keep-going", "--no-progress"]
    ring = tmp_path / "r.json"
    assert _kmc("check", *model, "--json", ring).returncode == 1
    ok = _kmc("replay", ring, "--invariant", "PreparedDecides", "--model", f"{TWO_PHASE}:two_phase")
    assert ok.returncode == 0 and "stutters here for ever" in ok.stdout, ok.stderr
    doc = json.loads(ring.read_text())
    entry = next(v for v in doc["violations"] if v["property"] == "PreparedDecides")
    assert entry["lasso"] == {"cycle_start": 2, "stutters": True, "obligation": 0}
    # read as a cycle from state 1 to state 2 and back, it does not close (state 2 is not state 1)
    entry["lasso"] = {"cycle_start": 1, "stutters": False, "obligation": 0}
    ring.write_text(json.dumps(doc))
    bad = _kmc("replay", ring, "--invariant", "PreparedDecides", "--model", f"{TWO_PHASE}:two_phase")
    assert bad.returncode == 2 and "the cycle does not close" in bad.stderr and "Traceback" not in bad.stderr
