"""Progress: the live display, its plain lines when standard error is not a terminal, and the
status messages, on real runs (tests/test_reports.py: traces, results and JSON).
"""

from __future__ import annotations

import io
import os

import pytest
from rich.console import Console

from kmc.checker.local.states import LocalEngine, Options
from kmc.checker.core.result import Stats
from kmc.app.specs import load_spec
from kmc.app.render import ProgressDisplay
from kmc.app.render.progress import progress_text

HERE = os.path.dirname(os.path.abspath(__file__))
SPECS = os.path.join(os.path.dirname(HERE), "specs")


@pytest.fixture(scope="module")
def data_loss(explorations):
    return explorations["hw-data-loss"]


# -- progress -----------------------------------------------------------------------------

def test_progress_disabled_is_silent():
    c = Console(file=io.StringIO(), force_terminal=True)
    with ProgressDisplay(c, enabled=False) as p:
        p.update(Stats(distinct=5))
    assert c.file.getvalue() == ""
    assert p.last.distinct == 5


def test_progress_line_follows_a_real_run():
    c = Console(file=io.StringIO(), force_terminal=True, width=160)
    spec = load_spec(os.path.join(SPECS, "hw-data-loss.toml"))
    with ProgressDisplay(c, title="exploring") as p:
        result = LocalEngine(spec.model(), spec.properties(), progress=p.update).run()
    assert p.last is not None and p.last.distinct == result.stats.distinct
    assert "1,834" in c.file.getvalue()  # drawn at least once before it was erased
    line = progress_text(Stats(distinct=1834, queue=580, depth=10, seconds=3725.0)).plain
    assert line.startswith("exploring")
    for part in ("1,834 distinct states", "580 in queue", "depth 10", "0 states/s", "1:02:05"):
        assert part in line


def test_progress_prints_one_lasting_line_per_level():
    import io

    from rich.console import Console

    from kmc.checker.core.result import Stats
    from kmc.app.render.progress import ProgressDisplay

    buf = io.StringIO()
    console = Console(file=buf, force_terminal=True, width=120, color_system=None)
    with ProgressDisplay(console, enabled=True, title="t", levels=True) as progress:
        for depth, distinct, queue, seconds in ((1, 1, 1, 0.5), (2, 3, 2, 1.5), (2, 4, 1, 1.7), (3, 9, 5, 4.0)):
            progress.update(Stats(distinct=distinct, depth=depth, queue=queue, seconds=seconds))
    lines = [line for line in buf.getvalue().splitlines() if "level " in line]
    assert [line.split("·")[0].strip().split()[-1] for line in lines] == ["1", "2", "3"]
    assert "2 in the frontier" in lines[1] and "3 distinct states" in lines[1] and "1.0 s" in lines[1]
    assert "9 distinct states" in lines[2] and "2.5 s" in lines[2]


class _FakeClock:
    """A monotonic clock that advances by ``step`` seconds at every reading."""

    def __init__(self, step):
        self.t, self.step = 0.0, step

    def __call__(self):
        self.t += self.step
        return self.t


def test_plain_progress_lines_when_stderr_is_not_a_terminal(data_loss):
    """Not a terminal: a plain, lasting line at most every `every` seconds, timestamped, with
    distinct, generated, queue, depth and rate. The clock is injected: each reading advances
    it 10 s, so with every=25 one update in three prints, whatever the real time."""
    from datetime import datetime, timezone

    from kmc.app.render.progress import plain_line

    buf = io.StringIO()
    c = Console(file=buf, width=200)
    assert not c.is_terminal
    when = datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone.utc)
    with ProgressDisplay(c, enabled=False, title="hw-data-loss", every=25, clock=_FakeClock(10),
                         now=lambda: when) as p:
        for depth in range(1, 10):
            p.update(Stats(distinct=100 * depth, generated=200 * depth, queue=depth, depth=depth,
                           seconds=float(depth)))
    lines = buf.getvalue().splitlines()
    # the constructor reads 10; the update at depth d reads 10 + 10 d: 30 s have passed at
    # depth 3 (print, interval restarts at 40), then at depth 6 (70) and depth 9 (100)
    assert len(lines) == 3, lines
    assert [l.split("depth ")[1].split()[0] for l in lines] == ["3", "6", "9"]
    assert lines[0] == ("2026-01-02T03:04:05Z hw-data-loss: 300 distinct · 600 generated · 3 queue "
                        "· depth 3 · 100 states/s")
    assert lines[0] == plain_line(Stats(distinct=300, generated=600, queue=3, depth=3, seconds=3.0), when,
                                  "hw-data-loss")
    # a live display (a terminal) never writes plain lines; --no-progress passes every=None
    buf = io.StringIO()
    with ProgressDisplay(Console(file=buf), enabled=False, every=None, clock=_FakeClock(100)) as p:
        p.update(Stats(distinct=1))
    assert buf.getvalue() == ""


def test_status_messages_live_and_plain():
    """Spark's start-up messages: on the live line, or as plain timestamped lines."""
    from datetime import datetime, timezone

    when = datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone.utc)
    buf = io.StringIO()
    with ProgressDisplay(Console(file=buf), enabled=False, title="t", every=30, now=lambda: when) as p:
        p.status("starting the JVM (Spark's driver)")
    assert buf.getvalue() == "2026-01-02T03:04:05Z t: starting the JVM (Spark's driver)\n"
    c = Console(file=io.StringIO(), force_terminal=True, width=120)
    with ProgressDisplay(c, title="t") as p:
        p.status("starting the Spark session (master local[2])")
        assert "starting the Spark session" in p._spinner.text.plain
    buf = io.StringIO()
    with ProgressDisplay(Console(file=buf), enabled=False, every=None) as p:  # --no-progress
        p.status("starting the JVM")
    assert buf.getvalue() == ""


def test_plain_progress_follows_a_real_run_at_every_level(data_loss):
    """With an interval the clock always passes, every level boundary of a real run
    (the engine reports after each level) prints one line: 9 levels after the first."""
    spec, model, result = data_loss
    buf = io.StringIO()
    with ProgressDisplay(Console(file=buf, width=200), enabled=False, every=1, clock=_FakeClock(1)) as p:
        LocalEngine(model, spec.properties(), Options(progress_seconds=float("inf")), progress=p.update).run()
    lines = buf.getvalue().splitlines()
    assert len(lines) == len(result.stats.levels) - 1 == 9
    # the run stopped at its violation with the last level's 580 states unexpanded
    assert " 1,834 distinct · 3,455 generated · 580 queue · depth 10 · " in lines[-1]


def test_kmc_check_writes_plain_progress_into_a_log(tmp_path):
    """`kmc check ... 2> log`: stderr is a file, so progress is plain lines in it."""
    import subprocess
    import sys

    log = tmp_path / "log"
    with open(log, "w") as err:
        proc = subprocess.run([sys.executable, "-m", "kmc.app.cli", "check", os.path.join(SPECS, "hw-data-loss.toml"),
                               "--progress-every", "0", "--no-trace"], stdout=subprocess.PIPE, stderr=err,
                              cwd=os.path.dirname(HERE), text=True, timeout=120)
    assert proc.returncode == 1
    lines = log.read_text().splitlines()
    assert lines and all(" distinct · " in l and " states/s" in l and l[4] == "-" for l in lines)
    assert "1,834 distinct · 3,455 generated" in lines[-1]


# -- after the search: the liveness decision ------------------------------------------------

def test_the_liveness_decision_shows_its_progress_and_counts_in_the_time(monkeypatch):
    """EventuallyLeader and CommittedEventuallyReplicated on live-c2-elr: once the search is
    over, each decision reports what it is doing (states waiting, edges, obligations and
    components decided) with the clock running on, and its time is in the result's."""
    import time

    from kmc.checker.engines import make_engine
    from kmc.checker.graph.liveness import LivenessLog

    spec = load_spec(os.path.join(SPECS, "live-c2-elr.toml"))
    props = [p for p in spec.properties() if p.name in ("EventuallyLeader", "CommittedEventuallyReplicated")]
    assert len(props) == 2
    original = LivenessLog.decide

    def slow(self, numbers_of, progress=None):  # a decision that takes a while
        time.sleep(0.4)
        return original(self, numbers_of, progress)

    monkeypatch.setattr(LivenessLog, "decide", slow)
    seen = []
    started = time.perf_counter()
    result = make_engine(spec.model(), props, Options(keep_going=True), progress=seen.append).run()
    wall = time.perf_counter() - started
    deciding = [s for s in seen if s.deciding]
    searching = [s for s in seen if not s.deciding]
    assert deciding and seen.index(deciding[0]) > seen.index(searching[-1])  # after the search
    texts = [s.deciding for s in deciding]
    for name in ("EventuallyLeader", "CommittedEventuallyReplicated"):
        mine = [t for t in texts if t.startswith(f"deciding {name}: ")]
        assert mine and "states waiting" in mine[0] and "edges: building the graph" in mine[0]
        assert any("components decided" in t for t in mine)
    clock = [s.seconds for s in seen]
    assert clock == sorted(clock)  # the clock never goes back, and runs on during the decisions
    assert deciding[-1].seconds >= searching[-1].seconds + 0.8
    # the two decisions' 0.8 s are in the result's time, which is the run's whole time
    assert deciding[-1].seconds <= result.stats.seconds <= wall
    assert result.stats.seconds >= 0.8 and result.stats.deciding is None


def test_the_live_line_s_clock_runs_between_snapshots():
    """The live line is rebuilt at every refresh: a long step without new counts (the
    liveness decision) never shows a frozen clock."""
    now = [100.0]
    c = Console(file=io.StringIO(), force_terminal=True, width=160)
    with ProgressDisplay(c, title="t", clock=lambda: now[0]) as p:
        assert p.line() is None
        p.update(Stats(distinct=10, seconds=5.0))
        assert "0:00:05" in p.line().plain
        now[0] = 130.0
        assert "0:00:35" in p.line().plain
        p.update(Stats(distinct=10, seconds=40.0, deciding="deciding EventuallyLeader: 7 states waiting"))
        now[0] = 150.0
        line = p.line().plain
        assert "deciding EventuallyLeader: 7 states waiting" in line and "0:01:00" in line
        p.status("starting the JVM")  # a status message stays until the next snapshot
        assert p.line() is None
    from datetime import datetime, timezone

    from kmc.app.render.progress import plain_line

    when = datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone.utc)
    assert plain_line(Stats(distinct=3, deciding="deciding X: 2 states waiting"), when).endswith(
        " · deciding X: 2 states waiting")
