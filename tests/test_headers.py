"""What every header says and what a shared picture shows: every option that changes the
model (``acks``, and any option added to the configuration later) in the terminal, the
HTML page, the JSON's spec echo and the Mermaid text; the acknowledged record an
AcknowledgedNeverLost counterexample loses, marked as CommittedNeverLost's is, and what
the producer was told; the command line a page names, with every option; the lines that
say what was written, shown or not checked.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import attrs
import pytest
from kmc.app.cli import EXIT_VIOLATION, main
from kmc.model.config import Config
from kmc.app.render import headers

REPO = Path(__file__).resolve().parent.parent
SPECS = REPO / "specs"
ACKS1 = SPECS / "acks1-data-loss.toml"  # acks = "1": AcknowledgedNeverLost violated in 4 states


def run(capsys, *args):
    code = main([str(a) for a in args])
    cap = capsys.readouterr()
    return code, cap.out, cap.err


# -- every model-changing option, in every header --------------------------------------------

def test_acks_is_in_every_header(tmp_path, capsys):
    html, mmd, js = tmp_path / "a.html", tmp_path / "a.mmd", tmp_path / "a.json"
    code, out, err = run(capsys, "check", ACKS1, "--no-progress", "--no-trace", "--html", html, "--mermaid", mmd,
                         "--json", js)
    assert code == EXIT_VIOLATION, err
    assert re.search(r"^  flags\s+acks = 1$", out, re.M)
    assert "<dt>flags</dt><dd>acks = 1</dd>" in html.read_text()
    assert "flags acks = 1" in mmd.read_text().splitlines()[2]
    assert json.loads(js.read_text())["spec"]["model"]["acks"] == "1"
    code, out, _ = run(capsys, "simulate", ACKS1, "--runs", "20", "--no-trace", "--no-progress")
    assert re.search(r"^  flags\s+acks = 1$", out, re.M)


def test_an_option_added_later_appears_without_being_named():
    # Another option of the configuration (as alter_partition and broker_epochs were once):
    # the header lists it once it differs from its default, with no change to the reports.
    Wider = attrs.make_class("Wider", {"rack_aware": attrs.field(default=False),
                                       "fetch_mode": attrs.field(default="off")}, bases=(Config,), frozen=True)
    assert headers.config_flags(Wider()) == []
    cfg = Wider(acks="all", unflushed_loss=True, alter_partition=True, rack_aware=True, fetch_mode="on")
    want = ["unflushed_loss", "acks = all", "alter_partition", "rack_aware", "fetch_mode = on"]
    assert headers.config_flags(cfg) == want
    assert dict(headers.config_lines(cfg))["flags"] == ", ".join(want)
    from kmc.app.render.result_view import _flags

    assert _flags(cfg) == ", ".join(want)


# -- the acknowledged record that is lost ------------------------------------------------------

def test_the_acknowledged_loss_is_marked_and_what_the_producer_was_told_is_drawn(tmp_path, capsys):
    html, mmd = tmp_path / "a.html", tmp_path / "a.mmd"
    code, _out, err = run(capsys, "check", ACKS1, "--no-progress", "--no-trace", "--invariant", "AcknowledgedNeverLost",
                          "--html", html, "--mermaid", mmd)
    assert code == EXIT_VIOLATION, err
    page = html.read_text()
    assert page.count('class="record ghost lost"') == 1  # the red dashed box, where the leader's log lacks it
    assert "lost acknowledged record: 0:e0·r0 (red, dashed where it is missing)" in page
    assert re.search(r'class="acked"><tspan[^>]*>producer told:</tspan><tspan[^>]*>0:e0·r0</tspan>', page)
    text = mmd.read_text()
    assert "producer told: 0:e0·r0" in text and "lost acknowledged record: 0:e0·r0" in text


# -- small things --------------------------------------------------------------------------------

def test_the_page_names_the_whole_command_and_check_says_what_it_wrote(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    spec = tmp_path / "s.toml"
    spec.write_text((SPECS / "hw-data-loss.toml").read_text())
    code, _out, err = run(capsys, "check", spec, "--no-progress", "--no-trace", "--max-depth", "12", "--html", "p.html",
                          "--json", "r.json")
    assert code == EXIT_VIOLATION
    assert "kmc: wrote p.html" in err.splitlines()
    page = (tmp_path / "p.html").read_text()
    # every option kept; the spec's absolute path shown relative to where the command ran
    assert "<code>kmc check s.toml --no-progress --no-trace --max-depth 12 --html p.html --json r.json</code>" in page
    assert '<p class="path">s.toml</p>' in page and str(tmp_path) not in page


def test_replay_says_which_of_several_counterexamples_it_shows(tmp_path, capsys):
    js = tmp_path / "r.json"
    assert run(capsys, "check", SPECS / "le-unclean.toml", "--no-progress", "--no-trace", "--json", js)[0] == 1
    code, out, err = run(capsys, "replay", js)
    assert code == 0
    assert (f"kmc: note: {js} holds 2 counterexamples (CommittedNeverLost, LogsNeverDiverge); this is the one of "
            "CommittedNeverLost; --invariant NAME shows another") in err
    code, out, err = run(capsys, "replay", js, "--invariant", "LogsNeverDiverge")
    assert code == 0 and "this is the one of LogsNeverDiverge" in err and "LogsNeverDiverge" in out


def test_simulate_says_it_does_not_check_an_always_possibly_property(capsys):
    code, out, err = run(capsys, "simulate", SPECS / "avail-c2.toml", "--runs", "20", "--no-trace", "--no-progress")
    assert out.startswith(f"kmc simulate {SPECS / 'avail-c2.toml'}\n")
    assert [line for line in err.splitlines() if "PartitionRecoverable" in line] == [
        "kmc: note: PartitionRecoverable is not checked: an always-possibly property is about the whole state "
        "graph, which a random walk does not build ('kmc check' checks it)"]


def test_long_step_text_wraps_in_the_page():
    from kmc.app.render import html

    assert re.search(r"ol\.steps \{[^}]*overflow-wrap: anywhere", html.CSS)


@pytest.mark.parametrize("fmt", ["html", "mermaid"])
def test_pictures_of_a_replay_name_the_configuration(tmp_path, capsys, fmt):
    js, out = tmp_path / "r.json", tmp_path / f"p.{fmt}"
    assert run(capsys, "check", ACKS1, "--no-progress", "--no-trace", "--json", js)[0] == EXIT_VIOLATION
    assert run(capsys, "replay", js, "--format", fmt, "--out", out)[0] == 0
    assert "acks = 1" in out.read_text()
