"""``kmc matrix --atlas``: the durability × availability atlas (reports/atlas.py)."""

from __future__ import annotations

import json

import pytest

from kmc.app.cli import main
from kmc.app.commands.atlas import check_atlas_outputs, run_cell, write_atlas
from kmc.checker.errors import UsageError
from kmc.checker.exitcodes import EXIT_BAD_INPUT
from kmc.checker.result import CheckResult, Stats, Violation
from kmc.checker.trace import replay_choices
from kmc.model.kafka import KafkaModel
from kmc.model.spec import config_from_table
from kmc.reports.atlas import (AVAILABLE, COMMITTED, KNOWN, MARKER, POLICIES, ROWS, cell_of, cell_text,
                               config_of, is_atlas_markdown)


def test_the_grid_is_configurations_by_policies():
    assert len(ROWS) == 8 and len(POLICIES) == 6
    assert {(c[1], c[2], c[3]) for c in ROWS.values()} == {
        (n, isr, k) for n in (2, 3) for isr in (1, 2) for k in (1, 2)}
    for row in ROWS:
        for policy in POLICIES:
            cfg = config_of(row, policy)
            assert cfg.unflushed_loss and cfg.truncation == "leader-epoch-2.1"
            assert config_from_table(cfg.as_dict()) == cfg  # every cell passes the spec validator
    assert config_of("r2-isr1-c2", "v41").last_known_leader
    assert not config_of("r2-isr1-c2", "kip966").last_known_leader
    assert set(k for k, _ in KNOWN) <= set(ROWS) and set(p for _, p in KNOWN) <= set(POLICIES)


def _fake_result(traps=None, committed_length=None, distinct=7057):
    """A CheckResult with the given verdicts (paths of the right length, from the C2 model)."""
    model = KafkaModel(config_of("r2-isr1-c2", "kip966"))
    violations = {}
    if traps is not None:
        path = replay_choices(model, 0, (0, 0, 0))  # any 4-state path
        violations[AVAILABLE] = Violation(AVAILABLE, "possibly", "stuck", path, traps=traps)
    if committed_length is not None:
        path = replay_choices(model, 0, (0,) * (committed_length - 1))
        violations[COMMITTED] = Violation(COMMITTED, "always", "lost", path)
    return CheckResult("local", [COMMITTED, AVAILABLE], Stats(distinct=distinct, seconds=1.0), violations)


def test_a_cell_gives_both_halves_and_compares_with_the_known_verdicts():
    trap = cell_of("r2-isr1-c2", "kip966", _fake_result(traps=1296))
    assert trap["availability"] == {"verdict": "violated", "length": 4, "trap_states": 1296,
                                    "trap_share": round(1296 / 7057, 6),
                                    "trace": "traces/atlas-r2-isr1-c2-kip966-PartitionRecoverable.json"}
    assert trap["committed"] == {"verdict": "holds", "length": None}
    assert trap["matched"] is True
    assert cell_text(trap) == "durable ✓ · available ✗ 4 (18.4% traps)"
    wrong = cell_of("r2-isr1-c2", "kip966", _fake_result(committed_length=6, distinct=8325))
    assert wrong["matched"] is False and cell_text(wrong).endswith("**UNEXPECTED**")
    unknown_row = cell_of("r3-isr1-c1", "v21", _fake_result())
    assert unknown_row["matched"] is None and unknown_row["expected"] == {}


def test_the_files(tmp_path):
    cells = [cell_of("r2-isr1-c2", "kip966", _fake_result(traps=1296)),
             cell_of("r2-isr1-c2", "v41", _fake_result(committed_length=6, distinct=8325))]
    doc = write_atlas(tmp_path, cells, command="kmc matrix --atlas --out x", total_seconds=2.0)
    text = (tmp_path / "ATLAS.md").read_text()
    assert text.startswith(MARKER + "\n")
    assert "| 2 replicas, min ISR 1, 2 crashes | durable ✓ · available ✗ 4 (18.4% traps) | " \
           "durable ✗ 6 · available ✓ |" in text
    assert "| configuration | KIP-966: ELR as written | 4.1: ELR + last known leader |" in text
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
    trap = run_cell(("r2-isr1-c2", "kip966", None))
    assert trap["distinct_states"] == 7057 and trap["complete"]
    assert trap["committed"]["verdict"] == "holds"
    assert (trap["availability"]["length"], trap["availability"]["trap_states"]) == (4, 1296)
    assert trap["matched"] is True
    lost = run_cell(("r2-isr1-c2", "v41", None))
    assert (lost["committed"]["length"], lost["availability"]["verdict"]) == (6, "holds")
    assert lost["matched"] is True


def test_the_published_atlas():
    """reports/ATLAS.md is `kmc matrix --atlas --out reports`'s output, every cell with a known
    verdict matching it."""
    from pathlib import Path

    from kmc.reports.atlas import to_markdown

    reports = Path(__file__).resolve().parent.parent / "reports"
    doc = json.loads((reports / "atlas.json").read_text())
    assert doc["command"] == "kmc matrix --atlas --out reports" and doc["kind"] == "kmc-atlas"
    assert len(doc["cells"]) == len(ROWS) * len(POLICIES)
    assert all(c["complete"] and c["matched"] is not False for c in doc["cells"])
    assert sum(c["matched"] is True for c in doc["cells"]) == len(KNOWN)
    assert (reports / "ATLAS.md").read_text() == to_markdown(doc)
    cells = {(c["row"], c["policy"]): c for c in doc["cells"]}
    assert cell_text(cells[("r2-isr1-c2", "kip966")]) == "durable ✓ · available ✗ 4 (18.4% traps)"
    assert cell_text(cells[("r3-isr2-c2", "v41")]) == "durable ✗ 11 · available ✓"


def test_every_violated_cell_links_its_trace_and_diagram(tmp_path):
    """The atlas writes each counterexample as a JSON trace `kmc replay` reads and as an HTML
    diagram of it, next to ATLAS.md, and links both from the cell; a rerun removes the ones
    it no longer writes, never a file kmc did not write."""
    from kmc.app.outputs import is_kmc_output

    cell = run_cell(("r2-isr1-c2", "kip966", None))
    write_atlas(tmp_path, [cell], command="kmc matrix --atlas --out x", total_seconds=1.0)
    name = "traces/atlas-r2-isr1-c2-kip966-PartitionRecoverable"
    trace, page = tmp_path / f"{name}.json", tmp_path / f"{name}.html"
    assert is_kmc_output(trace, "json") and is_kmc_output(page, "diagram")
    assert "trace_docs" not in json.loads((tmp_path / "atlas.json").read_text())["cells"][0]
    text = (tmp_path / "ATLAS.md").read_text()
    assert f"✗ 4 (18.4% traps) ([trace]({name}.json), [diagram]({name}.html))" in text
    # the trace replays (kmc replay re-executes it and confirms the violation: exit 0), to a trap of the
    # pinned length, with the pinned trap count
    assert main(["replay", str(trace)]) == 0
    doc = json.loads(trace.read_text())
    (v,) = doc["violations"]
    assert (v["property"], v["trace"]["length"], v["trap_states"]) == ("PartitionRecoverable", 4, 1296)
    assert "1,296" in page.read_text()
    mine = tmp_path / "traces" / "atlas-my-notes.json"
    mine.write_text('{"mine": 1}\n')
    with pytest.raises(UsageError, match="atlas-my-notes.json"):
        check_atlas_outputs(tmp_path)
    mine.unlink()
    held = run_cell(("r2-isr2-c1", "kip966", None))  # both halves hold: no trace
    write_atlas(tmp_path, [held], command="kmc matrix --atlas --out x", total_seconds=1.0)
    assert not trace.exists() and not page.exists()
