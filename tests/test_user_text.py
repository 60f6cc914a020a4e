"""What a user hands kmc as text (a model's action, property and description names, its
step sentences and states, a spec's file name, a result's title) is shown as written and
never obeyed, and never stops a result from being written: rich markup and emoji codes on
the terminal, control characters and bidirectional overrides everywhere, lone surrogates
(an undecodable file name, a model's broken string) in every writer, and HTML and Mermaid
syntax in the pictures. A model's own outputs carry kmc's header, so a second identical
run replaces them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from kmc.app.cli import EXIT_BAD_INPUT, EXIT_VIOLATION, main

REPO = Path(__file__).resolve().parent.parent
SPECS = REPO / "specs"

# Every kind of hostile text at once: markup that does not parse ([/]) and markup that
# would restyle ([bold]), an emoji code, a screen-clearing escape, a right-to-left
# override, NUL, a script, a Mermaid directive and a lone surrogate.
HOSTILE = r'''
from kmc.checker.contract.protocol import ALWAYS, Property

TEXT = "[/] [bold]loud :x: \x1b[2J\u202e\x00 <script>alert(1)</script> %%{init: {'theme': 'dark'}}%% \ud800"


def reached(model, state):
    return f"reached {state}: {TEXT}" if state >= 2 else None


class Hostile:
    def init_states(self):
        return (0,)

    def actions(self, state):
        return ("[/]" + TEXT,) if state < 3 else ()

    def next_state(self, state, action):
        return state + 1

    def properties(self):
        return (Property("[/]P", ALWAYS, reached, "[bold]what :x: " + TEXT),)

    def encode(self, state):
        return bytes([state])

    def describe_step(self, before, action, after):
        return "did " + TEXT

    def format_state(self, state):
        return f"s={state} {TEXT}"

    def __repr__(self):
        return "Hostile[bold] :x:"


def hostile():
    return Hostile()
'''

RAW = ("\x1b", "\u202e", "\x00")  # what no output may hold as is


def kmc(*args, cwd):
    env = dict(os.environ, COLUMNS="200", PYTHONIOENCODING="utf-8")
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    return subprocess.run([sys.executable, "-m", "kmc.app.cli", *map(str, args)], cwd=cwd, env=env,
                          capture_output=True, timeout=300)


def hostile_model(tmp_path) -> str:
    (tmp_path / "hostile.py").write_text(HOSTILE, encoding="utf-8")
    return "hostile.py:hostile"


# -- the terminal -----------------------------------------------------------------------------

def test_markup_and_emoji_codes_in_a_models_names_are_shown_as_written(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code = main(["check", "--model", hostile_model(tmp_path), "--no-progress", "--json", "r.json"])
    out, err = capsys.readouterr()
    assert code == EXIT_VIOLATION, err
    assert "Traceback" not in out + err
    for shown in ("[/]P", "[bold]what :x: [/] [bold]loud :x:", "Hostile[bold] :x:", "did [/] [bold]loud :x:",
                  "s=2 [/] [bold]loud", r"\x1b[2J\u202e\x00 <script>alert(1)</script>", r"\ud800"):
        assert shown in out, shown
    assert "❌" not in out and not any(c in out for c in RAW)
    doc = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))
    assert [v["property"] for v in doc["violations"]] == ["[/]P"]


def test_an_emoji_code_in_a_file_name_is_not_rendered(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["check", "--model", "m:x:.py:f"]) == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert "m:x:.py" in err and "❌" not in err


def test_the_coverage_tables_show_a_models_names_as_written(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code = main(["check", "--model", hostile_model(tmp_path), "--no-progress", "--coverage"])
    out, err = capsys.readouterr()
    assert code == EXIT_VIOLATION, err
    assert "Coverage: actions" in out and "[/][/] [bold]loud :x:" in out and not any(c in out for c in RAW)


# -- lone surrogates and undecodable file names: every writer -----------------------------------

@pytest.mark.slow
def test_an_undecodable_spec_name_is_written_to_every_output(tmp_path):
    name = os.fsdecode(b"bad\xff.toml")
    (tmp_path / name).write_bytes((SPECS / "hw-data-loss.toml").read_bytes())
    proc = kmc("check", name, "--no-progress", "--no-trace", "--json", "r.json", "--html", "r.html",
               "--mermaid", "r.mmd", cwd=tmp_path)
    assert proc.returncode == EXIT_VIOLATION, proc.stderr
    assert b"Traceback" not in proc.stderr
    doc = json.loads((tmp_path / "r.json").read_bytes().decode("utf-8"))  # strict UTF-8
    assert doc["spec"]["path"].endswith("bad\udcff.toml")  # read back as the name it was
    assert "bad\\udcff.toml" in (tmp_path / "r.html").read_bytes().decode("utf-8")
    (tmp_path / "r.mmd").read_bytes().decode("utf-8")
    proc = kmc("simulate", name, "--runs", "30", "--seed", "1", "--no-progress", "--no-trace", "--json", "s.json",
               cwd=tmp_path)
    assert proc.returncode in (0, EXIT_VIOLATION) and b"Traceback" not in proc.stderr, proc.stderr
    assert json.loads((tmp_path / "s.json").read_bytes().decode("utf-8"))["spec"]["path"].endswith("bad\udcff.toml")


@pytest.mark.slow
def test_replay_prints_a_title_with_a_lone_surrogate(tmp_path):
    assert kmc("check", SPECS / "hw-data-loss.toml", "--no-progress", "--no-trace", "--json", "r.json",
               cwd=tmp_path).returncode == EXIT_VIOLATION
    doc = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))
    doc["spec"]["title"] = "broken \ud800 title"
    (tmp_path / "t.json").write_text(json.dumps(doc), encoding="ascii")  # "\ud800" as a JSON escape
    proc = kmc("replay", "t.json", "--format", "json", cwd=tmp_path)
    assert proc.returncode == 0 and b"Traceback" not in proc.stderr, proc.stderr
    assert json.loads(proc.stdout.decode("utf-8"))["spec"]["title"] == "broken \ud800 title"
    for fmt in ("html", "mermaid"):
        proc = kmc("replay", "t.json", "--format", fmt, cwd=tmp_path)
        assert proc.returncode == 0 and "broken \\ud800 title" in proc.stdout.decode("utf-8"), proc.stderr


def test_a_model_whose_text_holds_a_lone_surrogate_writes_every_output(tmp_path):
    proc = kmc("check", "--model", hostile_model(tmp_path), "--no-progress", "--json", "r.json", "--html", "r.html",
               "--mermaid", "r.mmd", cwd=tmp_path)
    assert proc.returncode == EXIT_VIOLATION and b"Traceback" not in proc.stderr, proc.stderr
    proc.stdout.decode("utf-8")
    doc = json.loads((tmp_path / "r.json").read_bytes().decode("utf-8"))
    assert doc["violations"][0]["explanation"].endswith("%%{init: {'theme': 'dark'}}%% \ud800")  # as it was
    for name in ("r.html", "r.mmd"):
        assert "\\ud800" in (tmp_path / name).read_bytes().decode("utf-8")


# -- the pictures of a model escape as the spec pictures do ---------------------------------------

def _assert_no_raw_text(html: str, mermaid: str) -> None:
    for text in (html, mermaid):
        assert not any(c in text for c in RAW)
        assert "<script>alert" not in text
    assert "%%{" not in mermaid and "<script" not in mermaid and "\\x1b[2J\\u202e\\x00" in mermaid
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html and "\\x1b[2J\\u202e\\x00" in html


def test_a_models_pictures_escape_what_spec_pictures_escape(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code = main(["check", "--model", hostile_model(tmp_path), "--no-progress", "--html", "r.html", "--mermaid",
                 "r.mmd"])
    assert code == EXIT_VIOLATION, capsys.readouterr().err
    html = (tmp_path / "r.html").read_text(encoding="utf-8")
    mermaid = (tmp_path / "r.mmd").read_text(encoding="utf-8")
    _assert_no_raw_text(html, mermaid)
    # the page's embedded result holds every text exactly, and nothing in it can end the element
    embedded = html.split('<script type="application/json" id="kmc-result">', 1)[1].split("</script>", 1)[0]
    assert "<" not in embedded
    assert json.loads(embedded)["violations"][0]["property"] == "[/]P"


def test_a_replayed_models_pictures_escape_too(tmp_path, monkeypatch):
    # what kmc replay --format html|mermaid writes for a model's counterexample
    import importlib.util

    from kmc.checker.contract.protocol import with_defaults
    from kmc.checker.core.result import Violation
    from kmc.checker.core.trace import replay_choices
    from kmc.app.render import generic

    hostile_model(tmp_path)
    spec = importlib.util.spec_from_file_location("hostile_under_test", tmp_path / "hostile.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    model = with_defaults(module.hostile())  # as the application takes a user's model
    path = replay_choices(model, 0, [0, 0])
    violation = Violation("[/]P", "always", module.reached(model, 2), path)
    ref = "hostile.py:hostile\x1b[2J"
    html = generic.violation_page(ref, model, violation)
    mermaid = generic.violation_mermaid(ref, model, violation)
    _assert_no_raw_text(html, mermaid)


# -- a model's outputs are kmc's own ----------------------------------------------------------------

def test_a_second_identical_model_run_replaces_its_own_outputs(tmp_path, capsys, monkeypatch):
    from kmc.app.outputs import is_kmc_output

    monkeypatch.chdir(tmp_path)
    args = ["check", "--model", f"{SPECS / 'models' / 'two_phase.py'}:two_phase", "--param", "eager=true",
            "--no-progress", "--no-trace", "--json", "r.json", "--html", "r.html", "--mermaid", "r.mmd"]
    assert main(args) == EXIT_VIOLATION, capsys.readouterr().err
    capsys.readouterr()
    assert is_kmc_output("r.json", "json")
    assert is_kmc_output("r.html", "diagram") and is_kmc_output("r.mmd", "diagram")
    assert main(args) == EXIT_VIOLATION, capsys.readouterr().err
    assert "kmc: wrote r.html" in capsys.readouterr().err
    doc = json.loads((tmp_path / "r.json").read_text())
    assert list(doc)[:2] == ["schema_version", "schema"] and doc["schema"] == "kmc-generic-result-1"


def test_a_models_page_is_styled_as_a_specs(tmp_path, capsys, monkeypatch):
    from kmc.app.render.html import CSS

    monkeypatch.chdir(tmp_path)
    assert main(["check", "--model", f"{SPECS / 'models' / 'two_phase.py'}:two_phase", "--param", "eager=true",
                 "--no-progress", "--no-trace", "--html", "r.html"]) == EXIT_VIOLATION
    page = (tmp_path / "r.html").read_text()
    assert f"<style>{CSS}</style>" in page
    assert '<table class="steps">' in page and '<section class="trace" data-property="Consistent">' in page
    assert "<footer>Made by kmc" in page


def test_matrix_writes_every_file_of_a_spec_with_an_undecodable_name(tmp_path):
    specs = tmp_path / "specs"
    specs.mkdir()
    (specs / os.fsdecode(b"bad\xff.toml")).write_bytes((SPECS / "hw-data-loss.toml").read_bytes())
    proc = kmc("matrix", "specs", "--out", "mx", cwd=tmp_path)
    assert proc.returncode == 0 and b"Traceback" not in proc.stderr, proc.stderr
    assert "| `bad\\udcff` |" in (tmp_path / "mx" / "RESULTS.md").read_bytes().decode("utf-8")
    doc = json.loads((tmp_path / "mx" / "results.json").read_bytes().decode("utf-8"))
    assert [row["id"] for row in doc["rows"]] == ["bad\udcff"]
