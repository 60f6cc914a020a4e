"""``kmc matrix --versions --liveness``: EventuallyLeader and CommittedEventuallyReplicated through
the versions on the small configurations, its cells checked against docs/model.md's liveness table
(TLC with the same fairness on an independent TLA+ rendering) where its rows are cells of the grid,
and the published table (reports/versions/liveness) against the same rows."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pins import LIVE_PINS

from kmc.app.cli import EXIT_BAD_INPUT, main
from kmc.app.matrix_grids import KNOWN_LIVENESS_VERDICTS, LIVENESS_PROPERTIES, liveness_grid, run_row
from kmc.app.render.matrix import to_markdown, validate, versions_table

REPO = Path(__file__).resolve().parent.parent
EL, CER = "EventuallyLeader", "CommittedEventuallyReplicated"
H, V = "holds", "violated"

# docs/model.md's liveness table, written out by hand: (grid cell) -> (its row, EL, CER), and the
# liveness spec of that row, whose distinct count (tests/pins.py) ties the cell's configuration to it
TABLE = {
    ("c1", "v21"): ("C1, none", H, H, "live-c1"),
    ("c1", "hw"): ("C1 under high-watermark", H, V, "live-c1-hw"),
    ("c2", "v21"): ("C2, none", H, V, "live-c2"),
    ("c2", "v27"): ("C2, AP", H, V, "live-c2-ap"),
    ("c2", "v21-elr"): ("C2, ELR", V, V, "live-c2-elr"),
    ("c2", "v41"): ("C2, ELR + last_known_leader", H, V, "live-c2-elr-lkl"),
}


def test_the_grids_expectations_are_the_tables():
    assert set(KNOWN_LIVENESS_VERDICTS) == set(TABLE)
    for cell, (_, el, cer, _) in TABLE.items():
        assert KNOWN_LIVENESS_VERDICTS[cell] == {EL: el, CER: cer}, cell


@pytest.mark.parametrize("cell", [("c1", "hw"), ("c1", "v21"), ("c2", "v21-elr"), ("c2", "v41")])
def test_a_cell_has_the_tables_verdicts(cell):
    ((rid, config, known),) = liveness_grid([cell[0]], [cell[1]])
    row, traces = run_row((rid, config, None, 100_000, known, LIVENESS_PROPERTIES))
    _, el, cer, spec = TABLE[cell]
    assert row["distinct_states"] == LIVE_PINS[spec].distinct
    assert (row["verdicts"][EL], row["verdicts"][CER]) == (el, cer)
    assert row["matched"] is True and row["expected_from"] == "docs/model.md"
    assert set(traces) == {n for n in (EL, CER) if row["verdicts"][n] == V}
    for name in traces:
        assert row["counterexamples"][name]["kind"] in ("always-eventually", "leads-to")


def test_a_lasso_at_the_bound_says_so():
    row = {
        "id": "c4-v21",
        "distinct_states": 10,
        "verdicts": {EL: V, CER: V},
        "counterexamples": {
            EL: {
                "length": 7,
                "kind": "always-eventually",
                "explanation": "no leader can be elected because the controller's epoch reached max_leader_epoch = 2; raise it",
            },
            CER: {"length": 9, "kind": "leads-to", "explanation": "record (0, 0, 0) is missing from B"},
        },
    }
    table = versions_table({"rows": [row]})
    assert "✗ EL (7, at the bound), CER (9) |" in table


def test_liveness_needs_versions(tmp_path, capsys):
    assert main(["matrix", "--liveness", "--out", str(tmp_path)]) == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert err.startswith("kmc: error: --liveness: only with --versions") and err.count("\n") == 1


def test_published_liveness_table_is_current():
    """reports/versions/liveness is ``kmc matrix --versions --liveness``'s output: it follows the
    schema, has every version for c1 and c2, and every cell docs/model.md's table has matches it."""
    path = REPO / "reports" / "versions" / "liveness" / "results.json"
    doc = json.loads(path.read_text())
    assert validate(doc) == []
    assert doc["command"] == "kmc matrix --versions --liveness --out reports/versions/liveness"
    rows = {r["id"]: r for r in doc["rows"]}
    from kmc.model.versions import VERSIONS

    assert sorted(rows) == sorted(f"{c}-{v}" for c in ("c1", "c2") for v in VERSIONS)
    for (ck, vk), (_, el, cer, spec) in TABLE.items():
        row = rows[f"{ck}-{vk}"]
        assert (row["verdicts"][EL], row["verdicts"][CER]) == (el, cer), (ck, vk)
        assert row["distinct_states"] == LIVE_PINS[spec].distinct and row["matched"] is True
    for row in rows.values():
        for cx in row["counterexamples"].values():
            assert (path.parent / cx["trace"]).is_file()
    text = (path.parent / "RESULTS.md").read_text()
    assert versions_table(doc) in text and to_markdown(doc).startswith(text.split("\n", 1)[0])
