"""Each thing once and the same everywhere: a counterexample two properties share is
printed once with both verdicts, ``kmc replay`` shows by default the counterexample
``kmc check``'s summary names first, ``--coverage`` prints one action table and asks
nothing about what the spec turned off, and the swimlane's lanes hold long replica names
inside their columns.
"""

from __future__ import annotations

import re
from pathlib import Path

from kmc.app.cli import EXIT_VIOLATION, main

REPO = Path(__file__).resolve().parent.parent
SPECS = REPO / "specs"


def run(capsys, *args):
    code = main([str(a) for a in args])
    cap = capsys.readouterr()
    return code, cap.out, cap.err


def test_a_counterexample_two_properties_share_is_printed_once(capsys, monkeypatch):
    # v21-unclean: CommittedNeverLost and LeaderCandidateCompleteness fail in the same
    # state at the end of the same 5-state path (one BFS path: the same choices)
    monkeypatch.setenv("COLUMNS", "120")
    code, out, err = run(capsys, "check", SPECS / "v21-unclean.toml", "--keep-going", "--no-progress")
    assert code == EXIT_VIOLATION, err
    assert re.findall(r"Counterexample: [^─]*", out) == [
        "Counterexample: CommittedNeverLost, LeaderCandidateCompleteness (5 states) "
    ]
    assert len(re.findall(r"^State 1: initial", out, re.M)) == len(re.findall(r"^State 5: ", out, re.M)) == 1
    assert "✗ CommittedNeverLost is violated in State 5" in out
    assert "✗ LeaderCandidateCompleteness is violated in State 5" in out


def test_a_models_shared_counterexample_is_printed_once(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "twice.py").write_text(
        "from kmc.checker.contract.protocol import ALWAYS, Property\n\n"
        "def at_two(model, state):\n    return 'two' if state == 2 else None\n\n"
        "def at_least_two(model, state):\n    return 'at least two' if state >= 2 else None\n\n"
        "class Twice:\n"
        "    def init_states(self):\n        return (0,)\n"
        "    def actions(self, s):\n        return ('Inc',) if s < 3 else ()\n"
        "    def next_state(self, s, a):\n        return s + 1\n"
        "    def properties(self):\n"
        "        return (Property('AtTwo', ALWAYS, at_two), Property('AtLeastTwo', ALWAYS, at_least_two))\n"
        "    def encode(self, s):\n        return bytes([s])\n\n"
        "def twice():\n    return Twice()\n"
    )
    code, out, err = run(capsys, "check", "--model", "twice.py:twice", "--keep-going", "--no-progress", "--html",
                         "t.html", "--mermaid", "t.mmd")
    assert code == EXIT_VIOLATION, err
    assert re.findall(r"Counterexample: .*", out) == ["Counterexample: AtTwo, AtLeastTwo (3 states)"]
    assert out.count("State 3") == 1 and "AtTwo: two" in out and "AtLeastTwo: at least two" in out
    page, text = (tmp_path / "t.html").read_text(), (tmp_path / "t.mmd").read_text()
    assert re.findall(r"<h2[^>]*>(.*?)</h2>", page) == ["✗ AtTwo, AtLeastTwo: a counterexample of 3 states"]
    assert re.findall(r"subgraph .*", text) == ['subgraph v0["AtTwo: two; AtLeastTwo: at least two"]']
    assert text.count("flowchart TD") == 1


def test_replay_shows_the_counterexample_checks_summary_names_first(tmp_path, capsys):
    # lrs-v21 lists CommittedNeverLost (7 states) first, but its shortest counterexample,
    # the one check's summary names, is LeaderCandidateCompleteness's (6 states)
    js = tmp_path / "r.json"
    code, out, _ = run(capsys, "check", SPECS / "lrs-v21.toml", "--keep-going", "--no-progress", "--no-trace",
                       "--json", js)
    assert code == EXIT_VIOLATION
    headline = re.search(r"^✗ (\w+) violated: shortest counterexample has (\d+) states", out, re.M)
    assert headline.groups() == ("LeaderCandidateCompleteness", "6")
    code, out, err = run(capsys, "replay", js)
    assert code == 0
    assert "this is the one of LeaderCandidateCompleteness" in err
    assert f"{js}: LeaderCandidateCompleteness, 6 states" in out
    code, out, _ = run(capsys, "replay", js, "--format", "json")
    assert code == 0 and '"property": "LeaderCandidateCompleteness"' in out


def test_coverage_prints_one_action_table_and_no_question_about_what_the_spec_turned_off(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "160")
    # le-data-loss turns off unclean election, unflushed loss, ELR and the last known leader
    code, out, err = run(capsys, "check", SPECS / "le-data-loss.toml", "--coverage", "--no-progress")
    assert code == 0, err
    assert len(re.findall(r"^ Produce ", out, re.M)) == 1
    assert "Coverage: actions" in out and "Coverage: variables" in out
    assert "⚠" not in out and "meant to be on" not in out


def test_long_replica_names_stay_in_their_columns():
    # Every line of the controller lane and of a replica's role fits its column (by the
    # width estimate the layout wraps with: at most 0.53 of the font size per character,
    # 0.58 in bold); the names are the longest a spec allows.
    from kmc.checker.local.states import LocalEngine
    from kmc.app.specs import parse_spec
    from kmc.app.render import diagram, svg

    text = (SPECS / "hw-data-loss.toml").read_text()
    names = '["broker_east_1abc", "broker_west_2xyz"]'
    text = re.sub(r"^replicas = .*$", f"replicas = {names}", text, flags=re.M)
    spec = parse_spec(text.encode(), "long.toml")
    model = spec.model()
    result = LocalEngine(model, spec.properties()).run()
    (violation,) = result.violations.values()
    page = svg.render(diagram.build(model, violation), standalone=False)
    width = float(re.search(r'<g class="cell controller"[^>]*><rect [^>]*width="([\d.]+)"', page).group(1)) + 2
    cells = re.findall(r'<g class="cell (controller|replica)[^"]*"[^>]*>(.*?)</g>', page, re.S)
    assert len(cells) > 2 * len(violation.path)
    checked = 0
    for kind, body in cells:
        first = re.search(r'<text [^>]*font-size="9" [^>]*font-weight="(\w+)"[^>]*>(.*?)</text>', body, re.S)
        if kind == "replica":  # its role, the first line: room is kept at the right for a crash's mark
            room = width - 22
        else:
            room = width - 8
        for span in re.findall(r"<tspan [^>]*>(.*?)</tspan>", first.group(2)):
            per = 9 * (0.58 if first.group(1) == "bold" else 0.53)
            assert len(span.replace("&amp;", "&")) * per <= room + 0.01, (kind, span)
            checked += 1
    assert checked > 3 * len(cells) // 2  # the long names did wrap
