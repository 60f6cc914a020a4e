"""The model protocol's defaults (checker/contract/protocol.py): a model owes the engines
``init_states``, ``actions``, ``next_state``, ``properties`` and ``encode`` only. Actions
need no ``name`` (they are counted under their class's name), and a model with no
``format_action`` or ``describe_step`` gets plain texts."""

from __future__ import annotations

from pathlib import Path

from kmc.checker.local.state_graph import state_graph
from kmc.checker.local.states import LocalEngine, Options
from kmc.checker.contract.protocol import action_name, with_defaults
from kmc.checker.local.simulate import simulate
from kmc.app.specs import load_spec
from toy import BareCounters, IncX, NeverDown, SumBelow, TwoCounters

SPECS = Path(__file__).resolve().parents[1] / "specs"


def test_action_name_defaults():
    class Named:
        name = "Produce"

    class NotAString:
        name = 3

    assert action_name(Named()) == "Produce"
    assert action_name(IncX()) == "IncX"
    assert action_name(NotAString()) == "NotAString"
    assert action_name("tick") == "tick"


def test_format_and_describe_defaults():
    model = with_defaults(BareCounters())  # as an engine or the application takes it
    assert model.format_action(IncX()) == "IncX()"
    assert model.describe_step(None, IncX(), None) == ""


def test_the_kafka_model_formats_and_describes_through_the_protocol():
    spec = load_spec(SPECS / "hw-data-loss.toml")
    model = spec.model()
    state = model.init_states()[0]
    action, after = model.successors(state)[0]
    assert model.format_action(action) == str(action.name) + model.format_action(action)[len(action.name) :]
    assert model.describe_step(state, action, after) != ""


def test_nameless_actions_run_with_per_action_counters():
    # The same counts as the named toy (tests/test_oracle.py works them out), each
    # action counted under its class's name. Breadth-first, a level lists its states by
    # decreasing x, so every state with y > 0 is first reached by IncY.
    bare = LocalEngine(BareCounters(), [SumBelow, NeverDown], Options(keep_going=True)).run()
    s = bare.stats
    assert (s.distinct, s.generated, s.depth, s.terminal) == (16, 25, 7, 1)
    assert s.fired == {"IncX": 12, "IncY": 12}
    assert s.new == {"IncX": 3, "IncY": 12}
    assert [type(a).__name__ for a in bare.violations["SumBelow"].path.actions] == ["IncX"] * 3 + ["IncY"] * 2


def test_nameless_actions_match_the_named_model():
    bare = LocalEngine(BareCounters(), None, Options(keep_going=True)).run()
    named = LocalEngine(TwoCounters(), None, Options(keep_going=True)).run()
    for field in ("distinct", "generated", "depth", "terminal", "levels", "fired", "new"):
        assert getattr(bare.stats, field) == getattr(named.stats, field), field
    assert bare.violations["SumBelow"].path.choices == named.violations["SumBelow"].path.choices


def test_nameless_actions_in_simulation_and_graphs():
    result = simulate(BareCounters(), [NeverDown], runs=5, depth=10, seed=1)
    assert set(result.stats.fired) <= {"IncX", "IncY"} and sum(result.stats.fired.values()) > 0
    g = state_graph(BareCounters())
    assert g.number_of_nodes() == 16 and g.number_of_edges() == 24
    assert {d["action"] for *_, d in g.edges(data=True)} == {"IncX", "IncY"}
    assert {d["label"] for *_, d in g.edges(data=True)} == {"IncX()", "IncY()"}
