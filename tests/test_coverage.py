"""Per-action coverage in every ``kmc check`` result: how often each action fired and how
many new states it found, and a flag on an action that never fired."""

from __future__ import annotations

import argparse
import functools
import json
import os
from pathlib import Path

from rich.console import Console

from kmc.app.cli import EXIT_OK, EXIT_VIOLATION, SHARED_OPTIONS, main
from kmc.app.commands.common import options_from
from kmc.checker.local.states import LocalEngine
from kmc.model.kafka import ACTION_NAMES
from kmc.app.specs import load_spec
from kmc.app.render import ResultView

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
    result = LocalEngine(spec.model(), spec.properties(), options_from(spec, argparse.Namespace(**SHARED_OPTIONS))).run()
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
    from kmc.app.specs import parse_spec

    spec = parse_spec(NO_CRASH.encode(), "no-crash.toml")
    model = spec.model()
    result = LocalEngine(model, spec.properties()).run()
    console = Console(record=True, width=140, color_system=None)
    console.print(ResultView(spec, model, result))
    text = console.export_text()
    lines = {line.split()[0]: line for line in text.splitlines() if line.split() and line.split()[0] in ACTION_NAMES}
    assert "never fired" in lines["Crash"] and "never fired" in lines["Restart"]
    assert "never fired" not in lines["Produce"]


# -- enabled counts, kinds, variables (checker.core.coverage) ----------------------------------

import pytest  # noqa: E402

from kmc.checker.engines import make_engine  # noqa: E402

# specs/hw-data-loss.toml: in how many expanded states each action was enabled (a state
# counts once however many instances it enables: Crash fired 835 times from 468 states).
SEED_ENABLED = {
    "Produce": 376, "FetchRequest": 146, "FetchResponse": 393, "Crash": 468, "Restart": 541,
    "ElectLeader": 321, "BecomeFollower": 404, "ShrinkIsr": 276, "ExpandIsr": 35,
}
LKL = str(REPO / "specs" / "avail-c2-elr-lkl.toml")


def _coverage(result):
    cov = result.stats.coverage
    return cov.enabled, cov.kinds, cov.distinct_values()


@functools.lru_cache(maxsize=None)
def _run(path, **kw):
    """The result of the spec at ``path`` run as ``kmc check`` runs it: once in a process (the
    tests only read it)."""
    spec = load_spec(path)
    return make_engine(spec.model(), spec.properties(), options_from(spec, argparse.Namespace(**SHARED_OPTIONS)), **kw).run()


def test_seed_spec_enabled_and_kinds_are_pinned():
    enabled, kinds, values = _coverage(_run(SEED))
    assert enabled == SEED_ENABLED
    assert kinds == {"ElectLeader": {"clean": 406, "ELR": 0, "unclean": 0, "last-known-leader": 0},
                     "Crash": {"keeps its log": 835, "lossy cut": 0}}
    assert sum(kinds["ElectLeader"].values()) == SEED_FIRED["ElectLeader"]
    assert values["quorum.isr"] == [1, 2, 3] and values["replica.leader"] == [-1, 0, 1]
    assert values["quorum.elr"] == [0]  # no ELR without KIP-966


def test_kinds_of_the_last_known_leader_spec():
    _, kinds, _ = _coverage(_run(LKL))
    assert kinds["ElectLeader"] == {"clean": 2081, "ELR": 0, "unclean": 0, "last-known-leader": 538}
    assert kinds["Crash"] == {"keeps its log": 1871, "lossy cut": 2156}


@pytest.mark.parametrize("path", [SEED, LKL, str(REPO / "specs" / "avail-c2-elr-unclean.toml"),
                                  str(REPO / "specs" / "acks-all-data-loss.toml")])
def test_batch_and_per_state_coverage_agree(path):
    assert _coverage(_run(path)) == _coverage(_run(path, per_state=True))


def test_a_stop_inside_a_level_keeps_the_boundary_coverage(monkeypatch):
    import kmc.checker.local.rows

    spec = load_spec(LKL)
    # per state, a chunk of one row: a piece is one state, so a stop falls inside a level
    chunk_rows = kmc.checker.local.rows.CHUNK_ROWS
    monkeypatch.setattr(kmc.checker.local.rows, "CHUNK_ROWS", 1)
    engine = make_engine(spec.model(), spec.properties(), options_from(spec, argparse.Namespace(**SHARED_OPTIONS)), per_state=True)
    expand = engine.search.expand
    level_pieces = {"n": 0}

    def counting(piece, first, stats, level_found, found):
        level_pieces["n"] += 1
        if level_pieces["n"] == 200:
            engine.cancel("interrupted")
        return expand(piece, first, stats, level_found, found)

    engine.search.expand = counting
    result = engine.run()
    assert result.stopped == "interrupted"
    # the reported (partial) counts include the half level; the engine went back to the
    # boundary, with the coverage it had there: a second run counts the level once.
    assert sum(result.stats.coverage.enabled.values()) > sum(engine.stats.coverage.enabled.values())
    engine.stop_requested = None
    engine.search.expand = expand
    # the rest of the run in the usual chunks: how a level is cut changes none of the counts
    monkeypatch.setattr(kmc.checker.local.rows, "CHUNK_ROWS", chunk_rows)
    again = engine.run()
    assert _coverage(again) == _coverage(_run(LKL))


def test_the_json_result_carries_coverage_and_warnings(tmp_path, capsys):
    out, page = tmp_path / "r.json", tmp_path / "r.html"
    assert main(["check", LKL, "--no-progress", "--no-trace", "--coverage", "--json", str(out),
                 "--html", str(page)]) == EXIT_VIOLATION
    printed = capsys.readouterr().out
    doc = json.loads(out.read_text())
    assert doc["schema_minor"] == 3
    cov = doc["coverage"]
    assert cov["actions"]["Crash"] == {"enabled": 1053, "fired": 4027, "new": 2440,
                                       "kinds": {"keeps its log": 1871, "lossy cut": 2156}}
    assert cov["variables"]["quorum.isr"] == {"distinct": 4, "values": ["{}", "{A}", "{B}", "{A, B}"]}
    # the unclean kind never fired because the spec turned unclean elections off: no question
    assert cov["warnings"] == [
        "ElectLeader never took the ELR kind although `eligible_leader_replicas` is on: "
        "raise max_crashes or max_leader_epoch?",
    ]
    assert "Coverage: actions" in printed and "`eligible_leader_replicas` is on" in " ".join(printed.split())
    assert "unclean_leader_election" not in printed
    html = page.read_text()
    assert '<section class="coverage">' in html and "although `eligible_leader_replicas` is on" in html


def test_coverage_is_printed_only_when_asked(capsys):
    assert main(["check", SEED, "--no-progress", "--no-trace"]) == EXIT_VIOLATION
    assert "Coverage: actions" not in capsys.readouterr().out


def test_a_model_without_coverage_names_counts_its_state_fields():
    import toy

    model = toy.BareCounters()
    result = make_engine(model, [toy.NeverDown]).run()
    cov = result.stats.coverage
    assert cov.distinct_values() == {"x": [0, 1, 2, 3], "y": [0, 1, 2, 3]}
    # 15 states expand; IncX is enabled in those with x < 3: 12 of them
    assert cov.enabled == {"IncX": 12, "IncY": 12}
    from kmc.checker.core.coverage import coverage_warnings

    assert coverage_warnings(cov, result.stats.fired) == []
    assert coverage_warnings(cov, {"IncX": 3}) == ["IncY never fired: a modelling bug or an unreachable action?"]


@pytest.mark.spark
@pytest.mark.parametrize(("per_state", "partitions"), [
    (False, 3), (True, 1),  # both paths, both partition counts; the other two with KMC_SLOW=1
    pytest.param(False, 1, marks=pytest.mark.skipif(os.environ.get("KMC_SLOW") != "1", reason='set KMC_SLOW=1')),
    pytest.param(True, 3, marks=pytest.mark.skipif(os.environ.get("KMC_SLOW") != "1", reason='set KMC_SLOW=1')),
])
def test_spark_coverage_matches_the_local_engine(spark_sc, partitions, per_state):
    spec = load_spec(LKL)
    props = [p for p in spec.properties() if p.kind != "possibly"]  # local-only
    options = options_from(spec, argparse.Namespace(**SHARED_OPTIONS))
    local = make_engine(spec.model(), props, options).run()
    engine = make_engine(spec.model(), props, options, engine="spark", per_state=per_state, partitions=partitions,
                         driver_level_limit=0)
    assert _coverage(engine.run()) == _coverage(local)


@pytest.mark.parametrize("per_state", [False, True])
def test_a_resumed_run_counts_the_coverage_of_a_straight_one(per_state):
    import pickle

    spec = load_spec(LKL)
    options = options_from(spec, argparse.Namespace(**SHARED_OPTIONS))
    snaps = []
    engine = make_engine(spec.model(), spec.properties(), options, per_state=per_state,
                         on_level=lambda e: snaps.append(pickle.dumps(e.snapshot())))
    straight = engine.run()
    resumed = make_engine(spec.model(), spec.properties(), options, per_state=per_state)
    resumed.restore(pickle.loads(snaps[3]))  # from the boundary of the fourth level
    assert _coverage(resumed.run()) == _coverage(straight)


@pytest.mark.parametrize("engine_kind", ["local", pytest.param("spark", marks=[pytest.mark.spark, pytest.mark.skipif(os.environ.get("KMC_SLOW") != "1", reason="coverage off on Spark: set KMC_SLOW=1")])])
def test_coverage_off_counts_nothing_and_changes_nothing_else(engine_kind, request):
    """``Options.coverage`` off (``kmc bench --no-coverage``, to measure its cost)."""
    import attrs

    from kmc.app.render.coverage import coverage_to_dict

    if engine_kind == "spark":
        request.getfixturevalue("spark_sc")
    spec = load_spec(LKL)
    props = [p for p in spec.properties() if p.kind != "possibly"]
    options = options_from(spec, argparse.Namespace(**SHARED_OPTIONS))
    extra = {"partitions": 2, "driver_level_limit": 0} if engine_kind == "spark" else {}
    on = make_engine(spec.model(), props, options, engine=engine_kind, **extra).run()
    off = make_engine(spec.model(), props, attrs.evolve(options, coverage=False), engine=engine_kind, **extra).run()
    assert coverage_to_dict(off.stats) is None and coverage_to_dict(on.stats) is not None
    assert (off.stats.distinct, off.stats.generated, off.stats.fired, off.stats.new) == (
        on.stats.distinct, on.stats.generated, on.stats.fired, on.stats.new)


def test_a_task_told_the_runs_full_ranges_reports_the_same_union():
    """A Spark owner is given the variables' full ranges seen so far and skips the columns
    of its rows that fall inside them: the union it makes with the run's values is the
    union a task told nothing makes."""
    import numpy as np

    from kmc.checker.core.coverage import task_part
    from kmc.checker.core.options import Options

    spec = load_spec(SEED)
    model = spec.model()
    kernel = model.batch_kernel()
    engine = make_engine(model, spec.properties(), Options(max_depth=4))
    engine.run()
    seen = engine.stats.coverage
    ranges = seen.full_ranges()
    assert len(ranges) >= 5  # the test is about skipping: there are ranges to skip
    rows = kernel.expand(np.concatenate(engine.search.frontier))[3]  # the next level's states, and more
    before = seen.distinct_values()

    def union(part):
        out = {v: set(vals) for v, vals in before.items()}
        for var, vals in part[2].items():
            out.setdefault(var, set()).update(vals)
        return out

    told, untold = task_part(model, kernel, new_rows=rows, ranges=ranges), task_part(model, kernel, new_rows=rows)
    assert union(told) == union(untold)
    assert union(untold) != {v: set(vals) for v, vals in before.items()}  # the rows add values


def test_the_counts_of_two_slices_add_up_whichever_kinds_fired_in_each():
    """A Spark task adds up the coverage of the slices it expands (``_add_part``): a slice
    in which no crash is enabled and one in which some are give, added, the counts of the
    two expanded together."""
    import numpy as np

    from kmc.checker.core.coverage import task_part
    from kmc.checker.core.options import Options
    from kmc.checker.partitioned.tasks import _add_part
    from kmc.model.actions import CRASH_CODE

    spec = load_spec(SEED)
    model = spec.model()
    kernel = model.batch_kernel()
    engine = make_engine(model, spec.properties(), Options(max_depth=6))
    engine.run()
    rows = np.concatenate(engine.search.frontier)
    parents, _choices, codes, _succ = kernel.expand(rows)
    crashing = np.zeros(len(rows), dtype=bool)
    crashing[parents[codes == CRASH_CODE]] = True
    quiet, loud = rows[~crashing], rows[crashing]
    assert len(quiet) and len(loud)  # a slice of each

    def part(*chunks):
        return task_part(model, kernel, [(c, kernel.expand(c)) for c in chunks])

    added, together = _add_part(part(quiet), kernel.action_names, part(loud)), part(quiet, loud)
    assert "Crash" in together[1] and together[1]["Crash"].sum() > 0
    assert added[0].tolist() == together[0].tolist()
    assert {a: k.tolist() for a, k in added[1].items()} == {a: k.tolist() for a, k in together[1].items()}
