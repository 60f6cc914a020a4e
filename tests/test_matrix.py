"""``kmc matrix``: a grid of configurations, or a directory of specs, into a results table."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from kmc.app.cli import EXIT_BAD_INPUT, EXIT_OK, EXIT_UNEXPECTED, main
from kmc.app.commands.matrix import grid, known_verdicts, row_id
from kmc.app.commands.replay import load_document, replay
from kmc.app.render.matrix import validate

REPO = Path(__file__).resolve().parent.parent
INVARIANTS = ["HighWatermarkBelowLogEnd", "CommittedNeverLost", "LogsNeverDiverge", "LeaderEpochMonotonic"]

# docs/model.md, "Known verdicts": 2 replicas, min ISR 1, 2 messages,
# 2 crashes, epochs <= 2. (rule, unclean, unflushed) -> (CommittedNeverLost, LogsNeverDiverge).
# Written out again here, independently of app/matrix_grids.py's copy.
MODEL_MD = {
    ("high-watermark", False, False): ("violated", "violated"),
    ("leader-epoch", False, False): ("holds", "holds"),
    ("leader-epoch-kip279", False, False): ("holds", "holds"),
    ("high-watermark", False, True): ("violated", "violated"),
    ("leader-epoch", False, True): ("violated", "violated"),
    ("leader-epoch-kip279", False, True): ("violated", "holds"),
    ("high-watermark", True, False): ("violated", "violated"),
    ("leader-epoch", True, False): ("violated", "violated"),
    ("leader-epoch-kip279", True, False): ("violated", "holds"),
}


@pytest.fixture(scope="module")
def small_grid(tmp_path_factory):
    """The 2-replica, min-ISR-1 slice of the default grid: 3 rules x unclean x unflushed."""
    out = tmp_path_factory.mktemp("grid")
    code = main(["matrix", "--replicas", "2", "--min-isr", "1", "--out", str(out)])
    return code, out, json.loads((out / "results.json").read_text())


@pytest.mark.slow
def test_small_grid_verdicts_match_model_md(small_grid):
    code, out, doc = small_grid
    assert code == EXIT_OK
    assert len(doc["rows"]) == 12
    checked = 0
    for row in doc["rows"]:
        m = row["model"]
        assert row["verdicts"]["HighWatermarkBelowLogEnd"] == "holds"
        assert row["verdicts"]["LeaderEpochMonotonic"] == "holds"
        key = (m["truncation"], m["unclean_leader_election"], m["unflushed_loss"])
        if key in MODEL_MD:
            cnl, lnd = MODEL_MD[key]
            assert row["verdicts"]["CommittedNeverLost"] == cnl, row["id"]
            assert row["verdicts"]["LogsNeverDiverge"] == lnd, row["id"]
            assert row["matched"] is True and row["expected_from"] == "docs/model.md"
            checked += 1
        else:
            assert row["matched"] is None and row["expected"] == {}
    assert checked == 9


@pytest.mark.slow
def test_small_grid_pinned_numbers(small_grid):
    _, _, doc = small_grid
    rows = {r["id"]: r for r in doc["rows"]}
    seed = rows["hw-r2-isr1-clean-flushed"]
    assert (seed["distinct_states"], seed["depth"]) == (4913, 20)
    assert seed["counterexamples"]["CommittedNeverLost"]["length"] == 10
    assert seed["complete"] is True
    assert rows["kip279-r2-isr1-clean-flushed"]["distinct_states"] == 4267


@pytest.mark.slow
def test_results_json_follows_its_schema(small_grid):
    _, _, doc = small_grid
    assert doc["schema_version"] == 1 and doc["kind"] == "kmc-matrix"
    assert validate(doc) == []
    assert doc["invariants"] == INVARIANTS
    assert doc["constants"] == {"2": {"max_messages": 2, "max_crashes": 2, "max_leader_epoch": 2}}
    assert doc["command"].startswith("kmc matrix --replicas 2 --min-isr 1 --out ")
    broken = json.loads(json.dumps(doc))
    broken["rows"][0]["verdicts"]["CommittedNeverLost"] = "maybe"
    del broken["rows"][1]["depth"]
    errors = validate(broken)
    assert any("maybe" in e for e in errors) and any("depth" in e for e in errors)
    assert validate({"schema_version": 2}) != []


@pytest.mark.slow
def test_results_md_links_every_trace_and_the_traces_replay(small_grid):
    _, out, doc = small_grid
    text = (out / "RESULTS.md").read_text()
    table = [line for line in text.splitlines() if line.startswith("| `")]
    assert len(table) == 12
    links = re.findall(r"\]\((traces/[^)]+\.json)\)", text)
    expected = [cx["trace"] for r in doc["rows"] for cx in r["counterexamples"].values()]
    assert sorted(links) == sorted(expected) and links
    pages = [x[:-len(".json")] + ".html" for x in expected]  # each trace's diagram, next to it
    assert sorted(re.findall(r"\]\((traces/[^)]+\.html)\)", text)) == sorted(pages)
    assert sorted(p.name for p in (out / "traces").iterdir()) == sorted(Path(x).name for x in expected + pages)
    row = next(r for r in doc["rows"] if r["id"] == "le-r2-isr1-clean-unflushed")
    cx = row["counterexamples"]["LogsNeverDiverge"]
    model, violation = replay(cx["trace"], load_document(out / cx["trace"]), "LogsNeverDiverge")
    assert len(violation.path) == cx["length"]
    assert model.config.truncation == "leader-epoch" and model.config.unflushed_loss


def test_spec_dir_reports_expected_equals_got(tmp_path, capsys):
    specs = tmp_path / "specs"
    specs.mkdir()
    for name in ("hw-data-loss", "le-unflushed", "kip279-unclean"):
        shutil.copy(REPO / "specs" / f"{name}.toml", specs)
    out = tmp_path / "out"
    assert main(["matrix", str(specs), "--out", str(out)]) == EXIT_OK
    doc = json.loads((out / "results.json").read_text())
    assert validate(doc) == [] and doc["source"] == "specs"
    assert [r["id"] for r in doc["rows"]] == ["hw-data-loss", "kip279-unclean", "le-unflushed"]
    for row in doc["rows"]:
        assert row["expected_from"] == "spec" and row["matched"] is True
        for name, want in row["expected"].items():
            assert row["verdicts"][name] == want
        assert list(row["verdicts"]) == INVARIANTS  # all four, whatever the spec checks
    assert "as expected" in (out / "RESULTS.md").read_text()


def test_spec_dir_with_a_wrong_expectation_exits_3(tmp_path, capsys):
    specs = tmp_path / "specs"
    specs.mkdir()
    text = (REPO / "specs" / "hw-data-loss.toml").read_text()
    (specs / "wrong.toml").write_text(text.replace('CommittedNeverLost = "violated"', 'CommittedNeverLost = "holds"'))
    out = tmp_path / "out"
    assert main(["matrix", str(specs), "--out", str(out)]) == EXIT_UNEXPECTED
    doc = json.loads((out / "results.json").read_text())
    assert doc["rows"][0]["matched"] is False
    assert "**unexpected**" in (out / "RESULTS.md").read_text()


@pytest.mark.parametrize("argv", [
    ["--rules", "hw,nope"],
    ["--replicas", "two"],
    ["--unclean", "maybe"],
    ["--min-isr", "9"],
    ["--crashes", "99"],
])
def test_bad_grid_options_are_one_line_errors(argv, tmp_path, capsys):
    assert main(["matrix", *argv, "--out", str(tmp_path)]) == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_spec_dir_errors(tmp_path, capsys):
    assert main(["matrix", str(tmp_path / "none"), "--out", str(tmp_path)]) == EXIT_BAD_INPUT
    assert main(["matrix", str(tmp_path), "--out", str(tmp_path / "o")]) == EXIT_BAD_INPUT  # no specs
    (tmp_path / "a.toml").write_text("[model]\nreplicas = 2\n")  # no truncation
    assert main(["matrix", str(tmp_path), "--out", str(tmp_path / "o")]) == EXIT_BAD_INPUT
    assert main(["matrix", str(tmp_path), "--rules", "hw", "--out", str(tmp_path / "o")]) == EXIT_BAD_INPUT
    assert "cannot be combined" in capsys.readouterr().err


def test_grid_shape_and_ids():
    configs = grid(["high-watermark", "leader-epoch", "leader-epoch-kip279"], [2, 3], None,
                   [False, True], [False, True])
    assert len(configs) == 3 * (2 + 3) * 2 * 2
    ids = [row_id(c) for c in configs]
    assert len(set(ids)) == len(ids)
    assert ids[0] == "hw-r2-isr1-clean-flushed" and ids[-1] == "kip279-r3-isr3-unclean-unflushed"
    three = next(c for c in configs if c.n == 3)
    assert (three.max_messages, three.max_crashes, three.max_leader_epoch) == (2, 1, 2)
    assert known_verdicts(configs[0]) == {"CommittedNeverLost": "violated", "LogsNeverDiverge": "violated"}
    assert known_verdicts(three) == {}


def test_published_results_are_current():
    """reports/results.json is the default grid's output: it follows the schema, covers the
    whole grid, and agrees with docs/model.md wherever docs/model.md has a verdict."""
    path = REPO / "reports" / "results.json"
    assert path.exists(), "reports/results.json is missing: run `kmc matrix --out reports`"
    doc = json.loads(path.read_text())
    assert validate(doc) == []
    assert doc["command"] == "kmc matrix --out reports"
    assert len(doc["rows"]) == 60
    assert all(r["matched"] is not False for r in doc["rows"])
    assert sum(r["matched"] is True for r in doc["rows"]) == 9
    for row in doc["rows"]:
        for cx in row["counterexamples"].values():
            assert (REPO / "reports" / cx["trace"]).is_file()


@pytest.mark.slow
def test_published_two_replica_rows_match_the_current_model():
    """The published numbers are those of the model as it is now: every two-replica row of
    reports/results.json is explored again and must give the same counts and verdicts
    (after a change to model/ or invariants/, re-run `kmc matrix --out reports`)."""
    from kmc.checker.local.rows import BatchEngine  # (`kmc matrix` runs the per-state engine: they agree, test_engines)
    from kmc.checker.local.states import Options
    from kmc.invariants import CLASSIC as ALL  # the default grid checks the pre-2.1 properties
    from kmc.model.config import Config
    from kmc.model.kafka import KafkaModel

    doc = json.loads((REPO / "reports" / "results.json").read_text())
    rows = [r for r in doc["rows"] if len(r["model"]["replicas"]) == 2]
    assert len(rows) == 24
    for row in rows:
        cfg = dict(row["model"], replicas=tuple(row["model"]["replicas"]))
        result = BatchEngine(KafkaModel(Config(**cfg)), ALL, Options(keep_going=True)).run()
        assert (result.stats.distinct, result.stats.generated, result.stats.depth) == (
            row["distinct_states"], row["states_generated"], row["depth"]), row["id"]
        assert {p.name: result.verdict(p.name) for p in ALL} == row["verdicts"], row["id"]


def test_grid_option_errors_say_what_is_valid_and_name_out(tmp_path, capsys):
    assert main(["matrix", "--rules", "nope", "--out", str(tmp_path)]) == EXIT_BAD_INPUT
    assert "(use hw, le, kip279" in capsys.readouterr().err
    assert main(["matrix", "--unclean", "maybe", "--out", str(tmp_path)]) == EXIT_BAD_INPUT
    assert "(use off, on)" in capsys.readouterr().err
    (tmp_path / "file").write_text("")
    assert main(["matrix", "--rules", "hw", "--replicas", "2", "--min-isr", "1", "--unclean", "off",
                 "--unflushed", "off", "--out", str(tmp_path / "file")]) == EXIT_BAD_INPUT
    assert capsys.readouterr().err.startswith("kmc: error: --out: cannot create the directory")


def test_one_row_is_one_configuration(tmp_path, capsys):
    assert main(["matrix", "--rules", "le", "--replicas", "2", "--min-isr", "1", "--unclean", "off",
                 "--unflushed", "off", "--messages", "1", "--crashes", "0", "--out", str(tmp_path)]) == EXIT_OK
    out = capsys.readouterr().out
    assert out.startswith("1 configuration in ") and "and 0 traces in" in out


def test_a_row_stopped_by_its_state_bound_is_undecided_not_contradicted(tmp_path, capsys):
    (tmp_path / "big.toml").write_text('[model]\nreplicas = 2\ntruncation = "leader-epoch"\n'
                                       "[check]\nmax_states = 10\n[expect]\nCommittedNeverLost = \"holds\"\n")
    assert main(["matrix", str(tmp_path), "--out", str(tmp_path / "o")]) == EXIT_UNEXPECTED
    captured = capsys.readouterr()
    assert "[UNDECIDED: the row stopped at --max-states]" in captured.err and "UNEXPECTED" not in captured.err
    assert "left undecided" in captured.out


def test_versions_grid(tmp_path, capsys):
    """``--versions``: docs/model.md's configurations under each version's rule and options, in a
    grid of its own (the default grid is unchanged), with the configuration x version table."""
    from kmc.app.commands.matrix import VERSION_CONFIGS, VERSIONS, version_grid
    from kmc.model.versions import OPERATOR_CONFIGS
    from kmc.app.render.matrix import versions_table

    everything = version_grid()
    # docs/model.md's configurations on every version (the operators' rows on some: test_releases.py)
    assert len([r for r in everything if r[0].partition("-")[0] not in OPERATOR_CONFIGS]) == (
        len(VERSION_CONFIGS) - len(OPERATOR_CONFIGS)) * len(VERSIONS)
    assert [rid for rid, _, _ in everything][:2] == ["c1-hw", "c1-le"]
    assert main(["matrix", "--versions", "--configs", "c1,c3", "--kafka", "kip279,v21-elr",
                 "--out", str(tmp_path)]) == EXIT_OK
    doc = json.loads((tmp_path / "results.json").read_text())
    assert validate(doc) == [] and doc["source"] == "versions"
    assert doc["command"].startswith("kmc matrix --versions --configs c1,c3 --kafka kip279,v21-elr --out ")
    assert doc["invariants"] == INVARIANTS + ["LeaderCandidateCompleteness", "PartitionRecoverable"]
    rows = {r["id"]: r for r in doc["rows"]}
    assert list(rows) == ["c1-kip279", "c1-v21-elr", "c3-kip279", "c3-v21-elr"]
    assert rows["c1-kip279"]["matched"] is True and rows["c1-v21-elr"]["matched"] is None
    assert rows["c3-kip279"]["counterexamples"]["CommittedNeverLost"]["length"] == 5
    table = versions_table(doc)
    assert table.splitlines()[0] == "| configuration | 2.0: KIP-279 | KIP-966 (ELR) |"
    assert "| C1 + unclean election (C3) | ✗ CNL (5), LCC (5) | ✗ CNL (5), LCC (5) |" in table
    assert "## Kafka through the versions" in (tmp_path / "RESULTS.md").read_text()


def test_versions_options_errors(tmp_path, capsys):
    assert main(["matrix", "--configs", "c1", "--out", str(tmp_path)]) == EXIT_BAD_INPUT
    assert "only with --versions" in capsys.readouterr().err
    assert main(["matrix", "--versions", "--rules", "hw", "--out", str(tmp_path)]) == EXIT_BAD_INPUT
    assert main(["matrix", "--versions", "--kafka", "9.9", "--out", str(tmp_path)]) == EXIT_BAD_INPUT
    assert ("(use hw, le, kip279, v21, v27, v28, v281, v33, v35, v21-gate, v21-gate-ap, v370, v371, v21-elr, "
            "v21-elr-ap, v41, v41-ap)" in capsys.readouterr().err)


def test_versions_with_alter_partition():
    """The 2.7–3.4 column sends ISR changes to the controller without broker epochs; the 3.7,
    KIP-966 and 4.1 columns come twice: atomic (as they always were) and as Kafka runs them,
    with AlterPartition and broker epochs."""
    from kmc.app.commands.matrix import ALTER_PARTITION_VERSIONS, VERSIONS, version_grid

    def shape(c):
        return (c.truncation, c.hw_requires_min_isr, c.eligible_leader_replicas, c.last_known_leader,
                c.alter_partition, c.broker_epochs)

    grid = {rid: c for rid, c, _ in version_grid(["c2"])}
    v21 = "leader-epoch-2.1"
    assert shape(grid["c2-v27"]) == (v21, False, False, False, True, False)
    for atomic, ap in (("v21-gate", "v21-gate-ap"), ("v21-elr", "v21-elr-ap"), ("v41", "v41-ap")):
        a, b = grid[f"c2-{atomic}"], grid[f"c2-{ap}"]
        assert not a.alter_partition and not a.broker_epochs
        assert b.alter_partition and b.broker_epochs
        assert shape(b)[:4] == shape(a)[:4]  # the same version's rule and options otherwise
        assert "AlterPartition + broker epochs" in VERSIONS[ap][0]
        assert list(VERSIONS).index(ap) == list(VERSIONS).index(atomic) + 1  # next to its twin
    assert set(ALTER_PARTITION_VERSIONS) == {"v27", "v28", "v281", "v33", "v35", "v21-gate-ap", "v370", "v371",
                                             "v21-elr-ap", "v41-ap"}
    assert all(not grid[f"c2-{v}"].alter_partition for v in VERSIONS if v not in ALTER_PARTITION_VERSIONS)
    known = {rid: k for rid, _, k in version_grid(["c1", "c2"], ["v27", "v21-elr-ap"])}
    assert known["c2-v27"] == {"CommittedNeverLost": "violated", "LogsNeverDiverge": "holds",
                               "LeaderCandidateCompleteness": "violated"}
    assert known["c2-v21-elr-ap"]["CommittedNeverLost"] == "holds"
    assert known["c1-v21-elr-ap"] == {}  # docs/model.md has no such row


def test_versions_with_the_fetch_path(tmp_path, capsys):
    """2.8.0 and 2.8.1–3.4.0 run the fetch path with the bugs they shipped (and AlterPartition without
    broker epochs); every column as Kafka 3.5+ ships it runs it with every fix in; the atomic columns
    and every column before 2.8 keep the truncation at BecomeFollower and check what they checked."""
    from kmc.app.commands.matrix import ALTER_PARTITION_VERSIONS, VERSIONS, version_grid
    from kmc.model.versions import FETCH_PATH_VERSIONS

    grid = {rid: c for rid, c, _ in version_grid(["c1"])}
    assert list(VERSIONS)[list(VERSIONS).index("v27") + 1:][:2] == ["v28", "v281"]
    assert grid["c1-v28"].fetch_bugs == ("KAFKA-13141", "KAFKA-14704")
    assert grid["c1-v281"].fetch_bugs == ("KAFKA-14704",)
    for v in ("v28", "v281"):
        assert grid[f"c1-{v}"].alter_partition and not grid[f"c1-{v}"].broker_epochs
    shipped = [v for v, be in ALTER_PARTITION_VERSIONS.items() if be]  # 3.5+: broker epochs
    assert set(FETCH_PATH_VERSIONS) == {"v28", "v281", "v33", *shipped}  # v33: 3.3–3.4, no broker epochs
    for v in shipped:
        assert grid[f"c1-{v}"].truncate_on_fetch and grid[f"c1-{v}"].fetch_bugs == ()
    for v in set(VERSIONS) - set(FETCH_PATH_VERSIONS):
        assert not grid[f"c1-{v}"].truncate_on_fetch and grid[f"c1-{v}"].fetch_bugs == ()
    # one row of each: UncommittedNeverExposed is checked on the fetch path only; the 2.8 rows
    # against the independent oracle
    assert main(["matrix", "--versions", "--configs", "c1", "--kafka", "v27,v28,v281", "--out", str(tmp_path)]) == EXIT_OK
    capsys.readouterr()
    doc = json.loads((tmp_path / "results.json").read_text())
    rows = {r["id"]: r for r in doc["rows"]}
    assert "UncommittedNeverExposed" not in rows["c1-v27"]["verdicts"]
    assert rows["c1-v27"]["distinct_states"] == 7394  # tests/pins.py: ap-c1, as before
    import oracle

    for v in ("v28", "v281"):
        row = rows[f"c1-{v}"]
        want = oracle.explore(grid[f"c1-{v}"], list(row["verdicts"]), keep_going=True)
        assert (row["distinct_states"], row["states_generated"], row["depth"]) == (
            want.distinct, want.generated, want.depth)
        assert {n: c["length"] for n, c in row["counterexamples"].items()} == want.traces
    assert rows["c1-v281"]["verdicts"]["UncommittedNeverExposed"] == "violated"
    assert rows["c1-v28"]["verdicts"]["CommittedNeverLost"] == "violated"
    results = (tmp_path / "RESULTS.md").read_text()
    assert "fetch path, fetch bugs KAFKA-14704 |" in results and "fetch bugs []" not in results
    assert "UNE = `UncommittedNeverExposed`" in results


def test_published_versions_table_is_the_readme_table():
    """reports/versions is `kmc matrix --versions --out reports/versions`'s output, every row
    agrees with docs/model.md where docs/model.md has a verdict, and the README shows its table."""
    from kmc.app.commands.matrix import VERSION_CONFIGS, VERSIONS
    from kmc.model.versions import OPERATOR_CONFIGS
    from kmc.app.render.matrix import versions_table

    from kmc.app.commands.matrix import ALTER_PARTITION_VERSIONS, version_grid

    doc = json.loads((REPO / "reports" / "versions" / "results.json").read_text())
    assert validate(doc) == [] and doc["source"] == "versions"
    assert doc["command"] == "kmc matrix --versions --out reports/versions"
    # Every published row is the grid's row of that id, constants included (the atomic columns
    # did not change when the AlterPartition ones joined).
    grid = {rid: c.as_dict() for rid, c, _ in version_grid()}
    assert {r["id"]: r["model"] for r in doc["rows"]} == grid
    # docs/model.md's configurations on every version, the operators' rows on theirs
    assert len(doc["rows"]) == len(grid) == (len(VERSION_CONFIGS) - len(OPERATOR_CONFIGS)) * len(VERSIONS) + 62
    assert {rid.partition("-")[2] for rid in grid} >= set(ALTER_PARTITION_VERSIONS)
    assert all(r["matched"] is not False and r["complete"] for r in doc["rows"])
    # 23 + the three acks=all rows with a known verdict + c2-v41 (4.1 with the last-known-leader
    # election) + the four AlterPartition cells of docs/model.md's table (c1, c2 and c4 under 2.7-3.4,
    # c2 under KIP-966 with AlterPartition and broker epochs)
    assert sum(r["matched"] is True for r in doc["rows"]) == 31
    assert versions_table(doc) in (REPO / "README.md").read_text()
