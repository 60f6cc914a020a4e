"""Terminal states as errors on request (``kmc check --deadlock``, ``[check] deadlock = true``,
``checker.core.deadlock``): a reachable state with no enabled action, as TLC defines a deadlock,
reported with a shortest trace, exit 1."""

from __future__ import annotations

import json

import attrs

import oracle
import pytest
from counter_kernels import KernelCounters
from kmc.app.cli import main
from kmc.checker.core.deadlock import DEADLOCK, Deadlock
from kmc.checker.engines import make_engine
from kmc.checker.base.exitcodes import EXIT_BAD_INPUT, EXIT_OK, EXIT_VIOLATION
from kmc.checker.core.options import Options
from kmc.model.spec import load_spec
from toy import Counters, Ring, TwoCounters

ENGINES = {"per-state": dict(per_state=True), "batch": {}, "disk": dict(options=Options(store="disk"))}


@pytest.mark.parametrize("engine", ENGINES)
def test_the_toy_s_one_terminal_state_is_found_with_a_shortest_trace(engine):
    # Two counters up to 3: every state but (3, 3) enables IncX or IncY, so (3, 3) is the one
    # deadlock, 6 steps from (0, 0); the least trace in the breadth-first order takes IncX
    # (the first enabled action) while it can: 3 IncX, then 3 IncY, 7 states.
    kw = dict(ENGINES[engine])
    model = TwoCounters() if engine == "per-state" else KernelCounters(n=3, limit=10**6)
    result = make_engine(model, [Deadlock], kw.pop("options", Options()), **kw).run()
    v = result.violations[DEADLOCK]
    assert v.path.states == (Counters(0, 0), Counters(1, 0), Counters(2, 0), Counters(3, 0),
                             Counters(3, 1), Counters(3, 2), Counters(3, 3))
    assert [a.name for a in v.path.actions] == ["IncX"] * 3 + ["IncY"] * 3
    assert "no action is enabled" in v.explanation
    # every state was reached by then: 16 = 4 x 4
    assert result.stats.distinct == 16


@pytest.mark.parametrize("engine", ENGINES)
def test_a_state_the_depth_bound_cuts_is_no_deadlock(engine):
    # With max_depth 4 the states at depth 4 are not expanded; each still enables an action,
    # and a deadlock is a state with no enabled action, not one the run did not expand.
    kw = dict(ENGINES[engine])
    options = attrs.evolve(kw.pop("options", Options()), max_depth=4)
    model = TwoCounters() if engine == "per-state" else KernelCounters(n=3, limit=10**6)
    result = make_engine(model, [Deadlock], options, **kw).run()
    assert result.violations == {} and result.stats.depth == 4 and result.verdict(DEADLOCK) == "unknown"


def test_without_a_terminal_state_deadlock_holds():
    # The ring: Next is enabled in every state (x goes round 0, 1, 2): no deadlock.
    result = make_engine(Ring(), [Deadlock], Options(), per_state=True).run()
    assert result.verdict(DEADLOCK) == "holds" and result.stats.terminal == 0 and result.stats.distinct == 6


def test_a_model_s_deadlock_from_the_command_line(capsys, tmp_path):
    ref = "tests/counter_kernels.py:widened"
    assert main(["check", "--model", ref, "--param", "n=3", "--no-progress"]) == EXIT_OK
    capsys.readouterr()
    out = tmp_path / "r.json"
    assert main(["check", "--model", ref, "--param", "n=3", "--no-progress", "--deadlock", "--json", str(out)]) \
        == EXIT_VIOLATION
    text = capsys.readouterr().out
    assert "Counterexample: Deadlock (7 states)" in text and "x=3, y=3" in text
    (v,) = json.loads(out.read_text())["violations"]
    assert (v["property"], len(v["trace"]["steps"])) == (DEADLOCK, 7)


def test_a_kafka_deadlock_matches_the_oracle(capsys, tmp_path):
    # KIP-966 as written, C2 (specs/avail-c2-elr.toml): with both crashes spent, a partition
    # whose ISR lost its leader and whose ELR is empty has no action left at all (182 of its
    # 7,057 states). The first in the breadth-first order is 7 states from the start: Produce(A),
    # Crash(B), Restart(B), ShrinkIsr(B), Crash(A), Restart(A). The naive oracle finds the same
    # length.
    spec = load_spec("specs/avail-c2-elr.toml")
    length = oracle.shortest_path_length(spec.config, lambda s: not oracle.successors(spec.config, s))
    assert length == 7
    out = tmp_path / "r.json"
    code = main(["check", "specs/avail-c2-elr.toml", "--invariant", "CommittedNeverLost", "--deadlock",
                 "--no-progress", "--json", str(out)])
    assert code == EXIT_VIOLATION
    doc = json.loads(out.read_text())
    (v,) = doc["violations"]
    assert (v["property"], v["trace"]["length"]) == (DEADLOCK, 7)
    assert [s["action"]["name"] for s in v["trace"]["steps"][1:]] == [
        "Produce", "Crash", "Restart", "ShrinkIsr", "Crash", "Restart"]
    # with keep_going every terminal state is counted: the oracle's count of states without a successor
    result = make_engine(spec.model(), [Deadlock], Options(keep_going=True)).run()
    assert result.stats.terminal == 182 and len(result.violations[DEADLOCK].path) == 7
    seen, queue = set(oracle.initial_states(spec.config)), list(oracle.initial_states(spec.config))
    terminal = 0
    while queue:
        nexts = [t for _, t in oracle.successors(spec.config, queue.pop())]
        terminal += not nexts
        for t in nexts:
            if t not in seen:
                seen.add(t)
                queue.append(t)
    assert (len(seen), terminal) == (7057, 182)
    per_state = make_engine(spec.model(), [Deadlock], Options(keep_going=True), per_state=True).run()
    assert per_state.violations[DEADLOCK].path.choices == result.violations[DEADLOCK].path.choices


def test_a_kafka_spec_without_terminal_states_has_no_deadlock(capsys, tmp_path):
    spec = tmp_path / "c1.toml"
    spec.write_text(open("specs/fetch-c1.toml").read().replace("[check]", "[check]\ndeadlock = true"))
    assert load_spec(spec).deadlock
    assert main(["check", str(spec), "--no-progress"]) == EXIT_OK
    text = capsys.readouterr().out
    assert "Deadlock" in text and "0 terminal" in text
    cfg = load_spec(spec).config
    assert oracle.shortest_path_length(cfg, lambda s: not oracle.successors(cfg, s)) is None


def test_a_bad_deadlock_key_is_one_line(capsys, tmp_path):
    spec = tmp_path / "bad.toml"
    good = open("specs/fetch-c1.toml").read().split("[check]")[0].split("[expect]")[0]
    spec.write_text(good + '\n[check]\ndeadlock = "yes"\n')
    assert main(["check", str(spec), "--no-progress"]) == EXIT_BAD_INPUT
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "check.deadlock" in err[0] and str(spec) in err[0]
