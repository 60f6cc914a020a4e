"""Per-action coverage in every ``kmc check`` result: how often each action fired and how
many new states it found, and a flag on an action that never fired."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from rich.console import Console

from kmc.app.cli import EXIT_OK, EXIT_VIOLATION, main
from kmc.app.commands.common import options_from
from kmc.checker.local import LocalEngine
from kmc.model.kafka import ACTION_NAMES
from kmc.model.spec import load_spec
from kmc.reports import ResultView

REPO = Path(__file__).resolve().parent.parent
SEED = str(REPO / "specs" / "hw-data-loss.toml")

# specs/hw-data-loss.toml as the spec runs it (CommittedNeverLost only, stop at the level
# of the first violation): 1,834 distinct states, 3,455 generated, depth 10.
SEED_FIRED = {
    "Produce": 376, "FetchRequest": 146, "FetchResponse": 393, "Crash": 835, "Restart": 583,
    "ElectLeader": 406, "BecomeFollower": 404, "ShrinkIsr": 276, "ExpandIsr": 35,
}
SEED_NEW = {
    "Produce": 167, "FetchRequest": 140, "FetchResponse": 58, "Crash": 476, "Restart": 400,
    "ElectLeader": 226, "BecomeFollower": 192, "ShrinkIsr": 173, "ExpandIsr": 1,
}

NO_CRASH = """title = "no crashes: Crash and Restart can never fire"
[model]
replicas = 2
max_messages = 2
max_crashes = 0
max_leader_epoch = 2
truncation = "leader-epoch"
"""


def test_seed_spec_per_action_counts_are_pinned():
    spec = load_spec(SEED)
    result = LocalEngine(spec.model(), spec.properties(), options_from(spec, argparse.Namespace())).run()
    st = result.stats
    assert (st.distinct, st.generated, st.depth) == (1834, 3455, 10)
    assert st.fired == SEED_FIRED and st.new == SEED_NEW
    # Every generated successor is one firing; every new state was found by one firing.
    assert sum(st.fired.values()) == st.generated - 1
    assert sum(st.new.values()) == st.distinct - 1


def test_seed_spec_counts_in_the_json_result(tmp_path, capsys):
    out = tmp_path / "r.json"
    assert main(["check", SEED, "--no-progress", "--no-trace", "--json", str(out)]) == EXIT_VIOLATION
    actions = json.loads(out.read_text())["stats"]["actions"]
    assert list(actions) == list(ACTION_NAMES[:-1])  # AlterPartition: alter_partition only
    assert {n: a["fired"] for n, a in actions.items()} == SEED_FIRED
    assert {n: a["new"] for n, a in actions.items()} == SEED_NEW
    assert "never fired" not in capsys.readouterr().out


def test_an_action_that_never_fires_is_flagged(tmp_path, capsys):
    spec_path = tmp_path / "no-crash.toml"
    spec_path.write_text(NO_CRASH)
    out = tmp_path / "r.json"
    assert main(["check", str(spec_path), "--no-progress", "--json", str(out)]) == EXIT_OK
    printed = capsys.readouterr().out
    actions = json.loads(out.read_text())["stats"]["actions"]
    never = {n for n, a in actions.items() if a["fired"] == 0}
    assert {"Crash", "Restart"} <= never
    assert actions["Crash"] == {"fired": 0, "new": 0} and actions["Restart"] == {"fired": 0, "new": 0}
    assert actions["Produce"]["fired"] > 0 and actions["FetchRequest"]["new"] > 0
    flagged = {line.split()[0] for line in printed.splitlines() if "never fired" in line}
    assert {"Crash", "Restart"} <= flagged
    assert not flagged & {"Produce", "FetchRequest", "FetchResponse"}


def test_result_view_flags_never_fired_actions_directly():
    from kmc.model.spec import parse_spec

    spec = parse_spec(NO_CRASH.encode(), "no-crash.toml")
    model = spec.model()
    result = LocalEngine(model, spec.properties()).run()
    console = Console(record=True, width=140, color_system=None)
    console.print(ResultView(spec, model, result))
    text = console.export_text()
    lines = {line.split()[0]: line for line in text.splitlines() if line.split() and line.split()[0] in ACTION_NAMES}
    assert "never fired" in lines["Crash"] and "never fired" in lines["Restart"]
    assert "never fired" not in lines["Produce"]
