"""``kmc matrix --atlas``: the durability × availability atlas (app/render/atlas.py), the page that
answers which Kafka setting is safe and what it costs in availability."""

from __future__ import annotations

import json

import pytest

from kmc.app.cli import main
from kmc.app.commands.atlas import check_atlas_outputs, run_cell, write_atlas
from kmc.checker.base.errors import UsageError
from kmc.checker.base.exitcodes import EXIT_BAD_INPUT
from kmc.checker.core.result import CheckResult, Stats, Violation
from kmc.checker.core.trace import replay_choices
from kmc.model.kafka import KafkaModel
from kmc.model.spec import config_from_table
from kmc.app.render.atlas import (
    ACKED,
    AVAILABLE,
    COMMITTED,
    KNOWN,
    MARKER,
    POLICIES,
    ROWS,
    cell_of,
    cell_text,
    config_of,
    is_atlas_markdown,
)

C2 = "r2-isr1-lossy-acksall"  # docs/model.md's C2 with acks=all


def test_the_columns_are_the_versions_grid_s():
    # Every version of `kmc matrix --versions` is a column, with the configuration fields it
    # sets read from that grid: a version added there (with options added later) is a column
    # here with no change to the atlas.
    from kmc.app import matrix_grids
    from kmc.app.render import atlas

    assert [p for p in POLICIES if not p.endswith("-unclean")] == list(matrix_grids.VERSIONS)
    for version, (label, _rule, gate, elr) in matrix_grids.VERSIONS.items():
        cfg = config_of(C2, version)
        assert POLICIES[version][0] == label
        assert (cfg.hw_requires_min_isr, cfg.eligible_leader_replicas) == (gate, elr)
        assert cfg.last_known_leader == (version in matrix_grids.LAST_KNOWN_LEADER_VERSIONS)
        assert (cfg.alter_partition, cfg.broker_epochs) == (
            version in matrix_grids.ALTER_PARTITION_VERSIONS, matrix_grids.ALTER_PARTITION_VERSIONS.get(version, False))
    from kmc.model import versions

    try:  # a version added to the versions grid is a column, with every option it sets
        versions.VERSIONS["new"] = ("a later version", "leader-epoch-2.1", True, True)
        versions.ALTER_PARTITION_VERSIONS["new"] = True
        policies = atlas._version_policies()
    finally:
        del versions.VERSIONS["new"], versions.ALTER_PARTITION_VERSIONS["new"]
    assert policies["new"][0] == "a later version"
    assert policies["new"][1]["alter_partition"] is True and policies["new"][1]["broker_epochs"] is True


def test_the_grid_is_settings_by_versions():
    # acks all and 1, flushed and lossy crashes, min ISR 1 to the replica count
    assert {(c[1], c[2], c[3], c[4], c[5]) for c in ROWS.values()} == {
        (n, isr, 2 if n == 2 else 1, lossy, acks) for n in (2, 3) for isr in range(1, n + 1)
        for lossy in (False, True) for acks in ("all", "1")}
    for row in ROWS:
        for policy in POLICIES:
            cfg = config_of(row, policy)
            assert (cfg.max_messages, cfg.max_crashes, cfg.max_leader_epoch) == (2, ROWS[row][3], 2)
            assert cfg.unflushed_loss == ROWS[row][4] and cfg.acks == ROWS[row][5]
            assert config_from_table(cfg.as_dict()) == cfg  # every cell passes the spec validator
    assert config_of(C2, "v41").last_known_leader
    assert not config_of(C2, "v21-elr").last_known_leader
    assert config_of(C2, "v41-unclean").unclean_leader_election
    assert set(k for k, _ in KNOWN) <= set(ROWS) and set(p for _, p in KNOWN) <= set(POLICIES)


def _fake_result(traps=None, committed_length=None, distinct=7057):
    """A CheckResult with the given verdicts (paths of the right length, from the C2 model)."""
    model = KafkaModel(config_of(C2, "v21-elr"))
    violations = {}
    if traps is not None:
        path = replay_choices(model, 0, (0, 0, 0))  # any 4-state path
        violations[AVAILABLE] = Violation(AVAILABLE, "possibly", "stuck", path, traps=traps)
    if committed_length is not None:
        path = replay_choices(model, 0, (0,) * (committed_length - 1))
        violations[COMMITTED] = Violation(COMMITTED, "always", "lost", path)
    return CheckResult("local", [COMMITTED, ACKED, AVAILABLE], Stats(distinct=distinct, seconds=1.0), violations)


def test_a_cell_gives_both_halves_and_compares_with_the_known_verdicts():
    trap = cell_of(C2, "v21-elr", _fake_result(traps=1296))
    assert trap["availability"] == {"verdict": "violated", "length": 4, "trap_states": 1296,
                                    "trap_share": round(1296 / 7057, 6),
                                    "trace": f"traces/atlas-{C2}-v21-elr-PartitionRecoverable.json"}
    assert trap["committed"] == {"verdict": "holds", "length": None}
    assert trap["acknowledged"] == {"verdict": "holds", "length": None}
    assert trap["matched"] is True
    assert cell_text(trap) == "acked ✓ · committed ✓ · available ✗ 4 (18.4% traps)"
    wrong = cell_of(C2, "v21-elr", _fake_result(committed_length=6, distinct=8325))
    assert wrong["matched"] is False and cell_text(wrong).endswith("**UNEXPECTED**")
    unknown_row = cell_of("r3-isr1-flushed-acks1", "v21", _fake_result())
    assert unknown_row["matched"] is None and unknown_row["expected"] == {}


def test_the_files(tmp_path):
    cells = [cell_of(C2, "v21-elr", _fake_result(traps=1296)),
             cell_of(C2, "v41", _fake_result(committed_length=6, distinct=8325))]
    doc = write_atlas(tmp_path, cells, command="kmc matrix --atlas --out x", total_seconds=2.0)
    text = (tmp_path / "ATLAS.md").read_text()
    assert text.startswith(MARKER + "\n")
    assert ("| 2 replicas, min ISR 1, 2 lossy crashes, acks=all | acked ✓ · committed ✓ · available ✗ 4 (18.4% traps) "
            "| acked ✓ · committed ✗ 6 · available ✓ |") in text
    assert "| configuration | KIP-966 (ELR) | 4.1 (ELR + last known leader) |" in text
    # the conclusion, written from the cells
    answer = text.split("## The answer", 1)[1].split("\n## ", 1)[0]
    assert "- **durable, not always available**: 1 cell:\n  - 2 replicas, min ISR 1, 2 lossy crashes, acks=all: " \
           "KIP-966 (ELR)\n" in answer
    assert "- **available, not durable**: 1 cell:\n  - 2 replicas, min ISR 1, 2 lossy crashes, acks=all: " \
           "4.1 (ELR + last known leader)\n" in answer
    assert "- **durable and available**: 0 cells." in answer and "No setting here is both" in answer
    loaded = json.loads((tmp_path / "atlas.json").read_text())
    assert loaded == json.loads(json.dumps(doc))
    assert loaded["kind"] == "kmc-atlas" and list(loaded)[0] == "schema_version"
    # kmc's own files may be written over, before anything runs
    check_atlas_outputs(tmp_path)


@pytest.mark.parametrize("name, content", [("ATLAS.md", "# my notes\n"), ("atlas.json", '{"mine": 1}\n')])
def test_it_refuses_files_kmc_did_not_write(tmp_path, capsys, name, content):
    (tmp_path / name).write_text(content)
    assert not is_atlas_markdown(tmp_path / name) or name != "ATLAS.md"
    with pytest.raises(UsageError, match=name):
        check_atlas_outputs(tmp_path)
    assert main(["matrix", "--atlas", "--out", str(tmp_path)]) == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert name in err and "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert (tmp_path / name).read_text() == content
    check_atlas_outputs(tmp_path, force=True)  # --force would replace it


def test_atlas_is_its_own_grid(tmp_path, capsys):
    assert main(["matrix", "--atlas", "--versions", "--out", str(tmp_path)]) == EXIT_BAD_INPUT
    assert "--atlas" in capsys.readouterr().err


def test_a_cell_runs_the_engine():
    trap = run_cell((C2, "v21-elr", None))
    assert trap["complete"] and trap["committed"]["verdict"] == trap["acknowledged"]["verdict"] == "holds"
    assert trap["availability"]["length"] == 4
    assert trap["matched"] is True
    lost = run_cell((C2, "v41", None))
    assert (lost["committed"]["length"], lost["availability"]["verdict"]) == (6, "holds")
    assert lost["acknowledged"]["verdict"] == "violated"
    assert lost["matched"] is True


def test_the_published_atlas():
    """reports/ATLAS.md is `kmc matrix --atlas --out reports`'s output, every cell with a known
    verdict matching it."""
    from pathlib import Path

    from kmc.app.render.atlas import to_markdown

    reports = Path(__file__).resolve().parent.parent / "reports"
    doc = json.loads((reports / "atlas.json").read_text())
    assert doc["command"] == "kmc matrix --atlas --out reports" and doc["kind"] == "kmc-atlas"
    assert len(doc["cells"]) == len(ROWS) * len(POLICIES)
    assert all(c["complete"] and c["matched"] is not False for c in doc["cells"])
    assert sum(c["matched"] is True for c in doc["cells"]) == len(KNOWN)
    assert (reports / "ATLAS.md").read_text() == to_markdown(doc)
    cells = {(c["row"], c["policy"]): c for c in doc["cells"]}
    assert cell_text(cells[(C2, "v21-elr")]).startswith("acked ✓ · committed ✓ · available ✗ 4 (")
    assert cell_text(cells[("r3-isr2-lossy-acksall", "v21")]).startswith("acked ✗ 9 · committed ✗ 7 · ")
    # the answer page: every Kafka version a column, min ISR 1 to 3, acks all and 1, a conclusion
    text = (reports / "ATLAS.md").read_text()
    assert "## The answer" in text and "min ISR 3" in text and "acks=1" in text and "flushed crash" in text


def test_every_violated_cell_links_its_trace_and_diagram(tmp_path):
    """The atlas writes each counterexample as a JSON trace `kmc replay` reads and as an HTML
    diagram of it, next to ATLAS.md, and links both from the cell; a rerun removes the ones
    it no longer writes, never a file kmc did not write."""
    from kmc.app.outputs import is_kmc_output

    cell = run_cell((C2, "v21-elr", None))
    write_atlas(tmp_path, [cell], command="kmc matrix --atlas --out x", total_seconds=1.0)
    name = f"traces/atlas-{C2}-v21-elr-PartitionRecoverable"
    trace, page = tmp_path / f"{name}.json", tmp_path / f"{name}.html"
    assert is_kmc_output(trace, "json") and is_kmc_output(page, "diagram")
    assert "trace_docs" not in json.loads((tmp_path / "atlas.json").read_text())["cells"][0]
    text = (tmp_path / "ATLAS.md").read_text()
    traps = cell["availability"]["trap_states"]
    share = 100 * traps / cell["distinct_states"]
    assert f"✗ 4 ({share:.1f}% traps) ([trace]({name}.json), [diagram]({name}.html))" in text
    # the trace replays (kmc replay re-executes it and confirms the violation: exit 0), to a trap of the
    # pinned length, with the cell's trap count
    assert main(["replay", str(trace)]) == 0
    doc = json.loads(trace.read_text())
    (v,) = doc["violations"]
    assert (v["property"], v["trace"]["length"], v["trap_states"]) == ("PartitionRecoverable", 4, traps)
    assert f"{traps:,}" in page.read_text()
    mine = tmp_path / "traces" / "atlas-my-notes.json"
    mine.write_text('{"mine": 1}\n')
    with pytest.raises(UsageError, match="atlas-my-notes.json"):
        check_atlas_outputs(tmp_path)
    mine.unlink()
    held = run_cell(("r2-isr2-flushed-acksall", "v21-elr", None))  # every property holds: no trace
    write_atlas(tmp_path, [held], command="kmc matrix --atlas --out x", total_seconds=1.0)
    assert not trace.exists() and not page.exists()


def test_the_versions_table_tells_kip966_from_4_1():
    # The bounds column names every option a row's model sets: KIP-966's ELR and 4.1's ELR with
    # the last-known-leader election read differently, and acks shows.
    from kmc.app.matrix_grids import version_grid
    from kmc.app.render.matrix import _bounds

    rows = {rid: cfg for rid, cfg, _ in version_grid(["lrs_acks"], ["v21-elr", "v41"])}
    assert _bounds(rows["lrs_acks-v21-elr"].as_dict()) == "2 msg, 1 crash, ep ≤ 2, HW gate, ELR, acks all"
    assert _bounds(rows["lrs_acks-v41"].as_dict()) == \
        "2 msg, 1 crash, ep ≤ 2, HW gate, ELR, last known leader, acks all"


def test_the_cells_weigh_every_safety_property_their_options_check():
    # Every cell checks what `kmc check` of its configuration checks by default (and
    # PartitionRecoverable): a property a column's options turn on (UncommittedNeverExposed with
    # the fetch path, LeaderCandidateCompleteness with the 2.1 rule) is never left out.
    from kmc.invariants import default_properties
    from kmc.app.render.atlas import properties_of

    for row in ROWS:
        for policy in POLICIES:
            names = [p.name for p in properties_of(row, policy)]
            wanted = [p.name for p in default_properties(config_of(row, policy))]
            assert names == wanted + [AVAILABLE], (row, policy)
    assert "UncommittedNeverExposed" in [p.name for p in properties_of("r2-isr1-flushed-acksall", "v281")]
    assert "UncommittedNeverExposed" not in [p.name for p in properties_of("r2-isr1-flushed-acksall", "v21")]
    assert "LeaderCandidateCompleteness" not in [p.name for p in properties_of("r2-isr1-flushed-acksall", "hw")]


def test_a_cell_that_loses_no_record_but_exposes_an_uncommitted_one_is_not_durable(tmp_path):
    # KAFKA-14704 under 2.8.1-3.4.0: a follower truncating in the fetch path keeps a high
    # watermark above a record that was never committed, so a consumer reading from it reads
    # that record; no acknowledged or committed record is lost. `kmc check` of this
    # configuration finds UncommittedNeverExposed violated in a 9-state behaviour.
    from kmc.app.render.atlas import available, durable, failed_safety

    row, policy = "r2-isr1-flushed-acksall", "v281"
    cell = run_cell((row, policy, None))
    assert cell["committed"]["verdict"] == cell["acknowledged"]["verdict"] == "holds"
    une = cell["safety"]["UncommittedNeverExposed"]
    assert (une["verdict"], une["length"]) == ("violated", 9)
    assert "UncommittedNeverExposed" in failed_safety(cell)
    assert durable(cell) is False and available(cell) is True
    assert "UncommittedNeverExposed ✗ 9" in cell_text(cell)
    write_atlas(tmp_path, [cell], command="kmc matrix --atlas --out x", total_seconds=1.0)
    text = (tmp_path / "ATLAS.md").read_text()
    answer = text.split("## The answer", 1)[1].split("\n## ", 1)[0]
    assert "- **durable and available**: 0 cells." in answer
    assert "- **available, not durable**: 1 cell:" in answer
    assert "2.8.1–3.4.0: AlterPartition + fetch path with KAFKA-14704: `LogsNeverDiverge`, `UncommittedNeverExposed`" in answer
    name = f"traces/atlas-{row}-{policy}-UncommittedNeverExposed"
    assert f"UncommittedNeverExposed ✗ 9 ([trace]({name}.json), [diagram]({name}.html))" in text
    assert main(["replay", str(tmp_path / f"{name}.json")]) == 0
    # the same verdict and length as `kmc check` of the cell's configuration
    from kmc.checker.engines import make_engine
    from kmc.checker.local.states import Options
    from kmc.invariants import UncommittedNeverExposed

    result = make_engine(KafkaModel(config_of(row, policy)), [UncommittedNeverExposed], Options()).run()
    assert len(result.violations["UncommittedNeverExposed"].path) == 9


def test_the_published_atlas_weighs_every_property():
    from pathlib import Path

    from kmc.app.render.atlas import durable, properties_of

    reports = Path(__file__).resolve().parent.parent / "reports"
    doc = json.loads((reports / "atlas.json").read_text())
    for c in doc["cells"]:
        checked = [p.name for p in properties_of(c["row"], c["policy"])]
        assert list(c["safety"]) == [n for n in checked if n not in (COMMITTED, ACKED, AVAILABLE)]
    cells = {(c["row"], c["policy"]): c for c in doc["cells"]}
    une = cells[("r2-isr1-flushed-acksall", "v281")]
    assert durable(une) is False and une["safety"]["UncommittedNeverExposed"]["length"] == 9
