"""Counterexample pictures: the swimlane SVG, the self-contained HTML page, the Mermaid text
(``reports.diagram``, ``reports.svg``, ``reports.html``, ``reports.mermaid``), the options
that write them, and a real browser drawing the seed scenario's page.

What the seed scenarios' traces hold is known without kmc: specs/hw-data-loss.toml and
specs/hw-divergence.toml describe them in words (and tests/test_replay.py pins the first
one's actions), so the lanes, columns, arrows and lost records below are checked against
that, and the Mermaid text against golden files read and checked by hand.
"""

from __future__ import annotations

import re
import shutil
import struct
import subprocess
import tempfile
import xml.etree.ElementTree as ET
import zlib
from html.parser import HTMLParser
from pathlib import Path

import pytest

from kmc.app.cli import EXIT_BAD_INPUT, EXIT_OK, EXIT_VIOLATION, main
from kmc.checker.core.result import Violation
from kmc.app.render import diagram, html, mermaid, pictures, svg

REPO = Path(__file__).resolve().parent.parent
GOLDEN = Path(__file__).resolve().parent / "golden"
SEED1 = str(REPO / "specs" / "hw-data-loss.toml")
SVG_NS = "{http://www.w3.org/2000/svg}"

# Seed scenario 1, as its spec tells it: A commits record 0 with B, both crash with B's
# fetch response (which would have advanced its HW) in flight, B restarts, truncates to
# its stale HW 0 and is elected: the record is gone.
SEED1_ACTIONS = ["initial", "Produce(A)", "FetchRequest(B)", "FetchResponse(B)", "FetchRequest(B)",
                 "Crash(A)", "Crash(B)", "Restart(B)", "BecomeFollower(B)", "ElectLeader(B)"]


# -- Mermaid ------------------------------------------------------------------------------

@pytest.mark.parametrize("spec, golden", [("hw-data-loss", "seed-scenario-1.mmd"),
                                          ("hw-divergence", "seed-scenario-2.mmd")])
def test_mermaid_of_the_seed_scenarios_is_the_golden_text(explorations, spec, golden):
    text = pictures.result_mermaid(*explorations[spec])
    assert text == (GOLDEN / golden).read_text(encoding="utf-8")
    lines = text.splitlines()
    assert lines[3] == "sequenceDiagram"
    assert [ln.strip() for ln in lines[4:7]] == ["participant ctl as controller", "participant r0 as A",
                                                 "participant r1 as B"]
    # one message or note per transition, numbered 2..10, and the verdict last
    steps = [int(m.group(1)) for m in
             re.finditer(r"^    (?:Note over \w+|\w+(?:->>|-->>|--x)\w+): (\d+)\. ", text, re.M)]
    assert steps == list(range(2, 11))
    assert lines[-2].startswith("    Note over ctl,r1: ✗ ") and lines[-1] == "    end"
    assert all(";" not in ln.replace("#59;", "").replace("#35;", "") for ln in lines)


def test_mermaid_arrows_follow_the_messages(explorations):
    text = pictures.result_mermaid(*explorations["hw-data-loss"])
    assert "r1->>r0: 3. FetchRequest(B)" in text  # B's fetch goes to the leader A
    assert "r0-->>r1: 4. FetchResponse(B)" in text  # A's response comes back
    assert "ctl->>r1: 10. ElectLeader(B)" in text  # the controller elects B
    assert "lost record: 0:e0·r0" in text


def test_mermaid_escapes_what_would_end_a_statement():
    assert mermaid.escape("a; b # c <d>") == "a#59; b #35; c #lt;d#gt;"


# -- the HTML page ------------------------------------------------------------------------

class _Tags(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags, self.attrs = [], []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.attrs += [(tag, k, v) for k, v in attrs]


def _svgs(page) -> list:
    return [ET.fromstring(m.group(0)) for m in re.finditer(r"<svg\b.*?</svg>", page, re.S)]


@pytest.fixture(scope="module")
def seed_page(tmp_path_factory):
    out = tmp_path_factory.mktemp("page") / "seed-scenario-1.html"
    assert main(["check", SEED1, "--no-progress", "--html", str(out)]) == EXIT_VIOLATION
    return out


def test_the_page_references_nothing_outside_itself(seed_page):
    page = seed_page.read_text(encoding="utf-8")
    parser = _Tags()
    parser.feed(page)
    parser.close()
    assert parser.tags[:3] == ["html", "head", "meta"]
    assert not {"script", "link", "img", "iframe", "object", "embed", "image", "use"} & set(parser.tags)
    refs = [(t, k, v) for t, k, v in parser.attrs if k in ("src", "href", "xlink:href", "srcset", "action")]
    assert refs == []
    # the only URL is the SVG namespace's name, which is never fetched
    assert set(re.findall(r"https?://[^\s\"'<>)]+", page)) == {"http://www.w3.org/2000/svg"}
    assert "@import" not in page and "@font-face" not in page
    assert re.findall(r"url\(([^)]*)\)", page) and all(u.startswith("#") for u in re.findall(r"url\(([^)]*)\)", page))


def test_the_page_has_a_header_and_one_lane_per_replica_plus_the_controller(seed_page):
    page = seed_page.read_text(encoding="utf-8")
    assert "<h1>Seed scenario 1: the high-watermark rule loses a committed record</h1>" in page
    for fact in ("<dt>truncation</dt><dd>high-watermark</dd>", "<dt>distinct states</dt><dd>1,834</dd>",
                 "<dt>depth</dt><dd>10</dd>"):
        assert fact in page
    (root,) = _svgs(page)
    lanes = [g.get("data-lane") for g in root.iter(f"{SVG_NS}g") if g.get("class") == "lane"]
    assert lanes == ["controller", "A", "B"]
    columns = [g for g in root.iter(f"{SVG_NS}g") if g.get("class") == "column"]
    assert [int(g.get("data-step")) for g in columns] == list(range(1, 11))
    heads = ["".join(g.itertext()) for g in columns]
    for head, action in zip(heads, SEED1_ACTIONS):
        assert action in head
    assert "B restarts with its log and high watermark from disk" in heads[7]  # the description
    assert (root.get("data-lanes"), root.get("data-columns")) == ("3", "10")


def _cell(root, step, replica):
    (g,) = [g for g in root.iter(f"{SVG_NS}g") if g.get("data-step") == str(step)
            and g.get("data-replica") == replica]
    return g


def test_the_lost_record_dead_replicas_and_messages_are_marked(seed_page):
    (root,) = _svgs(seed_page.read_text(encoding="utf-8"))
    last = _cell(root, 10, "B")
    lost = [g for g in last.iter(f"{SVG_NS}g") if "lost" in g.get("class", "").split()]
    assert ["".join(g.itertext()) for g in lost] == ["0:e0·r0"]
    assert "ghost" in lost[0].get("class")  # drawn where B's log should hold it
    # at step 9 B truncates its log to its stale HW 0: the committed record is struck out there
    truncated = [g for g in _cell(root, 9, "B").iter(f"{SVG_NS}g") if "dropped" in g.get("class", "").split()]
    assert [("".join(g.itertext()), "lost" in g.get("class")) for g in truncated] == [("0:e0·r0", True)]
    for step, replica, down in ((5, "A", False), (6, "A", True), (7, "B", True), (8, "B", False)):
        assert ("down" in _cell(root, step, replica).get("class").split()) == down
    crashes = [g for g in root.iter(f"{SVG_NS}g") if g.get("class", "").startswith("crash")]
    assert len(crashes) == 2
    kinds = [g.get("class").split()[1] for g in root.iter(f"{SVG_NS}g") if g.get("class", "").startswith("event ")]
    assert kinds == ["fetch-request", "fetch-response", "fetch-request", "follow", "elect"]
    assert root.find(f".//{SVG_NS}rect[@class='violation']") is not None
    text = "".join(root.itertext())
    assert "CommittedNeverLost is violated in State 10" in text and "lost record: 0:e0·r0" in text


def test_a_lossy_crash_and_the_diverging_records(explorations):
    spec, model, result = explorations["hw-divergence"]
    d = diagram.build(model, result.violations["LogsNeverDiverge"])
    assert d.lost == ("0:e0·r0", "0:e1·r1")  # A holds record 1 of epoch 1, B record 0 of epoch 0
    root = ET.fromstring(svg.render(d, standalone=False))
    crash = _cell(root, 6, "A")  # Crash(A, keeps 0): its record 0 was never flushed
    assert [g.get("class") for g in crash.iter(f"{SVG_NS}g") if "crash" in g.get("class", "")] == \
        ["crash lossy-crash"]
    dropped = [g for g in crash.iter(f"{SVG_NS}g") if "dropped" in g.get("class", "").split()]
    assert ["".join(g.itertext()) for g in dropped] == ["0:e0·r0"]


def test_an_availability_trap_is_marked_with_its_count(explorations):
    spec, model, result = explorations["hw-data-loss"]
    v = result.violations["CommittedNeverLost"]
    trap = Violation("SomeLeaderPossible", "possibly", "no replica can be elected again", v.path, traps=7)
    page = html.page([diagram.build(model, trap)], title="t")
    (root,) = _svgs(page)
    assert root.find(f".//{SVG_NS}rect[@class='trap']") is not None
    assert "one of 7 trap states" in "".join(root.itertext())
    assert "State 10 is a trap" in page


def test_a_15_step_trace_fits_1280_pixels_and_a_long_one_grows(explorations):
    spec, model, result = explorations["hw-data-loss"]
    v = result.violations["CommittedNeverLost"]
    steps = v.path.steps
    for n, fits in ((15, True), (40, False)):
        longer = Violation(v.property, v.kind, v.explanation,
                           type(v.path)((steps * 5)[:n], v.path.init_index, v.path.choices))
        width = int(ET.fromstring(svg.render(diagram.build(model, longer), standalone=False)).get("width"))
        assert (width <= 1240) == fits  # a 1280-pixel window less the page's margins and a scroll bar


def test_the_page_prints_and_says_when_nothing_failed(tmp_path):
    out = tmp_path / "le.html"
    assert main(["check", str(REPO / "specs" / "le-data-loss.toml"), "--no-progress", "--html", str(out),
                 "--mermaid", str(tmp_path / "le.mmd")]) == EXIT_OK
    page = out.read_text(encoding="utf-8")
    assert "@media print" in page and "No counterexample" in page and _svgs(page) == []
    assert "all invariants hold" not in (tmp_path / "le.mmd").read_text() and \
        "no counterexample" in (tmp_path / "le.mmd").read_text()


# -- the options that write them -----------------------------------------------------------

def test_replay_formats_match_the_check_outputs(tmp_path, capsys):
    saved, mmd = tmp_path / "r.json", tmp_path / "c.mmd"
    assert main(["check", SEED1, "--no-progress", "--json", str(saved), "--mermaid", str(mmd)]) == EXIT_VIOLATION
    capsys.readouterr()
    assert main(["replay", str(saved), "--format", "mermaid"]) == EXIT_OK
    assert capsys.readouterr().out == mmd.read_text(encoding="utf-8")
    assert main(["replay", str(saved), "--format", "svg", "--out", str(tmp_path / "d.svg")]) == EXIT_OK
    root = ET.fromstring((tmp_path / "d.svg").read_bytes())
    assert root.tag == f"{SVG_NS}svg" and root.get("data-columns") == "10"
    assert main(["replay", str(saved), "--format", "html"]) == EXIT_OK
    assert "<dt>distinct states</dt><dd>1,834</dd>" in capsys.readouterr().out
    assert main(["replay", str(saved), "--format", "rich", "--out", str(tmp_path / "x")]) == EXIT_BAD_INPUT
    assert "only with --format html" in capsys.readouterr().err


@pytest.mark.parametrize("option", ["--html", "--mermaid"])
def test_a_file_kmc_did_not_write_is_kept_unless_force(tmp_path, capsys, option):
    mine = tmp_path / "notes.txt"
    mine.write_text("my notes\n")
    assert main(["check", SEED1, "--no-progress", option, str(mine)]) == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert err.startswith(f"kmc: error: {option}: {mine} exists and is not a kmc diagram") and "--force" in err
    assert mine.read_text() == "my notes\n"
    assert main(["check", SEED1, "--no-progress", option, str(mine), "--force"]) == EXIT_VIOLATION
    assert diagram.MARKER in mine.read_text()
    # a diagram kmc wrote is replaced without --force; the spec never is
    assert main(["check", SEED1, "--no-progress", option, str(mine)]) == EXIT_VIOLATION
    capsys.readouterr()
    assert main(["check", SEED1, "--no-progress", option, SEED1, "--force"]) == EXIT_BAD_INPUT
    assert "is an input of this run" in capsys.readouterr().err


def test_two_outputs_naming_one_file_are_refused(tmp_path, capsys):
    p = str(tmp_path / "x")
    assert main(["check", SEED1, "--no-progress", "--json", p, "--html", p]) == EXIT_BAD_INPUT
    assert "--html: " in capsys.readouterr().err and not Path(p).exists()


def test_the_marker_kmc_looks_for_is_the_one_it_writes():
    from kmc.app.outputs import DIAGRAM_MARKER

    assert DIAGRAM_MARKER.decode() == diagram.MARKER


def test_simulate_writes_the_walk(tmp_path, capsys):
    out = tmp_path / "walk.html"
    assert main(["simulate", str(REPO / "specs" / "hw-unclean.toml"), "--runs", "300", "--seed", "0", "--html", str(out),
                 "--mermaid", str(tmp_path / "walk.mmd")]) == EXIT_VIOLATION
    page = out.read_text(encoding="utf-8")
    (root,) = _svgs(page)
    printed = capsys.readouterr().out
    steps = int(re.search(r"after (\d+) steps", printed).group(1))
    assert root.get("data-columns") == str(steps + 1)
    assert "not necessarily a shortest counterexample" in page
    assert (tmp_path / "walk.mmd").read_text().startswith(f"%% {diagram.MARKER}: CommittedNeverLost")


def test_matrix_links_every_violated_cell_to_its_diagram(tmp_path, capsys):
    assert main(["matrix", "--rules", "hw", "--replicas", "2", "--min-isr", "1", "--unclean", "off",
                 "--unflushed", "on", "--out", str(tmp_path)]) == EXIT_OK
    text = (tmp_path / "RESULTS.md").read_text()
    pages = re.findall(r"\(\[diagram\]\((traces/[^)]+\.html)\)\)", text)
    traces = re.findall(r"\]\((traces/[^)]+\.json)\)", text)
    assert len(pages) == len(traces) == 2 and [p[:-5] for p in pages] == [t[:-5] for t in traces]
    for page in pages:
        (root,) = _svgs((tmp_path / page).read_text(encoding="utf-8"))
        assert root.get("data-lanes") == "3"
    assert "2 traces with their diagrams" in capsys.readouterr().out


# -- a real browser -----------------------------------------------------------------------

def _chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    return None


def decode_png(data):
    """``(width, height, channels, rows)`` of an 8-bit RGB or RGBA PNG (rows as bytearrays)."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, head = 8, [], None
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        if kind == b"IHDR":
            head = struct.unpack(">IIBBBBB", data[pos + 8:pos + 8 + n])
        elif kind == b"IDAT":
            idat.append(data[pos + 8:pos + 8 + n])
        pos += 12 + n
    width, height, depth, colour = head[:4]
    assert depth == 8 and colour in (2, 6) and head[6] == 0, head
    bpp = 3 if colour == 2 else 4
    raw = zlib.decompress(b"".join(idat))
    stride = width * bpp
    assert len(raw) == height * (stride + 1)
    prev, rows = bytearray(stride), []
    for y in range(height):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        if f == 1:
            for i in range(bpp, stride):
                line[i] = (line[i] + line[i - bpp]) & 255
        elif f == 2:
            line = bytearray((a + b) & 255 for a, b in zip(line, prev))
        elif f == 3:
            for i in range(stride):
                left = line[i - bpp] if i >= bpp else 0
                line[i] = (line[i] + ((left + prev[i]) >> 1)) & 255
        elif f == 4:
            for i in range(stride):
                a = line[i - bpp] if i >= bpp else 0
                b, c = prev[i], (prev[i - bpp] if i >= bpp else 0)
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(line)
        prev = line
    return width, height, bpp, rows


def test_chromium_draws_the_seed_scenario_page(seed_page, tmp_path):
    browser = _chromium()
    if browser is None:
        pytest.skip("Chromium is not installed (Debian: apt-get install chromium; .ci/run installs it "
                    "when it can), so the page cannot be drawn by a browser here")
    shot = tmp_path / "seed-scenario-1.png"
    profile = tempfile.mkdtemp(prefix="kmc-chromium-")
    try:
        subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                        "--disable-background-networking", "--disable-component-update", "--disable-sync",
                        f"--user-data-dir={profile}", f"--screenshot={shot}", "--window-size=1280,900",
                        seed_page.as_uri()], capture_output=True, timeout=120, check=False)
    finally:
        shutil.rmtree(profile, ignore_errors=True)
    assert shot.is_file(), "Chromium wrote no screenshot"
    width, height, bpp, rows = decode_png(shot.read_bytes())
    assert (width, height) == (1280, 900)
    pixels = [bytes(r[i:i + 3]) for r in rows[::4] for i in range(0, len(r), bpp * 4)]
    white = sum(1 for p in pixels if p == b"\xff\xff\xff")
    assert len(set(pixels)) > 50  # text, record colours, lanes: not one flat colour
    assert 0.05 < 1 - white / len(pixels) < 0.9  # something is drawn, and it is not all ink
    # the violation's red (the outline of the last column, the verdict) is on screen
    assert any(p[0] > 150 and p[1] < 80 and p[2] < 80 for p in pixels)
    # the diagram is drawn where the page puts it: inked rows below the header, down the page
    inked = [y for y, r in enumerate(rows) if r.count(255) < len(r) * 0.97]
    assert inked and inked[-1] > 500


def test_the_readme_diagram_is_what_kmc_draws_now(explorations):
    """docs/seed-scenario-1.svg is the tool's drawing of seed scenario 1, as the README says."""
    spec, model, result = explorations["hw-data-loss"]
    drawn = svg.render(diagram.build(model, result.violations["CommittedNeverLost"]), title=spec.title)
    assert (REPO / "docs" / "seed-scenario-1.svg").read_text(encoding="utf-8") == drawn, \
        "run: kmc check specs/hw-data-loss.toml --json seed1.json && " \
        "kmc replay seed1.json --format svg --out docs/seed-scenario-1.svg"
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert "](docs/seed-scenario-1.svg)" in readme
    assert "kmc replay seed1.json --format svg --out docs/seed-scenario-1.svg" in readme


def test_a_spec_s_text_is_shown_as_text(tmp_path):
    spec = tmp_path / "odd.toml"
    spec.write_text((REPO / "specs" / "hw-data-loss.toml").read_text(encoding="utf-8").replace(
        'title = "Seed scenario 1: the high-watermark rule loses a committed record"',
        'title = "<script src=\'http://x/y.js\'></script> & \\"q\\""'), encoding="utf-8")
    out = tmp_path / "odd.html"
    assert main(["check", str(spec), "--no-progress", "--html", str(out)]) == EXIT_VIOLATION
    parser = _Tags()
    parser.feed(out.read_text(encoding="utf-8"))
    assert "script" not in parser.tags and not [a for a in parser.attrs if a[1] == "src"]
    assert "&lt;script src=&#x27;http://x/y.js&#x27;&gt;&lt;/script&gt; &amp; &quot;q&quot;" in out.read_text()


def test_replay_out_keeps_a_file_kmc_did_not_write(tmp_path, capsys):
    saved, mine = tmp_path / "r.json", tmp_path / "page.html"
    assert main(["check", SEED1, "--no-progress", "--json", str(saved)]) == EXIT_VIOLATION
    mine.write_text("<html>mine</html>")
    assert main(["replay", str(saved), "--format", "html", "--out", str(mine)]) == EXIT_BAD_INPUT
    assert "exists and is not a kmc diagram" in capsys.readouterr().err and mine.read_text() == "<html>mine</html>"
    assert main(["replay", str(saved), "--format", "html", "--out", str(mine), "--force"]) == EXIT_OK
    assert main(["replay", str(saved), "--format", "mermaid", "--out", str(mine)]) == EXIT_OK
    assert mine.read_text().startswith(f"%% {diagram.MARKER}")


def test_a_check_with_several_violations(explorations):
    """The page shows every counterexample, shortest first; the Mermaid text the shortest,
    naming the others (specs/hw-unflushed.toml: CNL in 6 states, LND in 10, README)."""
    spec, model, result = explorations["hw-unflushed"]
    page = pictures.result_page(spec, model, result)
    assert [s.get("data-columns") for s in _svgs(page)] == ["6", "10"]
    text = pictures.result_mermaid(spec, model, result)
    assert text.splitlines()[1].startswith("%% also violated: LogsNeverDiverge")
