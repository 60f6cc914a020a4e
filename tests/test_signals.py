"""SIGINT and SIGTERM stop a run cleanly: statistics, a checkpoint, exit 130 or 143."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import pytest

from kmc.checker import LocalEngine, Options
from kmc.checker.checkpoints import file as checkpoint
from kmc.checker.base.signals import StopOnSignals
from kmc.app.specs import load_spec
from test_checkpoint import kmc_at_level, kmc_run

ROOT = Path(__file__).resolve().parents[1]
SPECS = ROOT / "specs"
LE3 = SPECS / "le-three-replicas.toml"
HW_FAST = SPECS / "hw-fast-leader-change.toml"


def assert_le3_counts(doc):
    stats = doc["stats"]
    assert (stats["distinct_states"], stats["states_generated"], stats["depth"]) == (50294, 168775, 24)
    assert doc["complete"] is True and set(doc["verdicts"].values()) == {"holds"}


@pytest.mark.slow
def test_sigint_prints_statistics_exits_130_and_the_checkpoint_resumes(tmp_path):
    ck = tmp_path / "ck"
    proc = kmc_at_level("check", LE3, "--checkpoint", ck, "--checkpoint-every", "0", "--no-progress",
                        "--json", tmp_path / "partial.json", depth=8, signals=("INT",))
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert "Traceback" not in err
    assert "distinct states" in out and "interrupted" in out
    assert f"checkpoint saved in {ck}" in err and f"--resume {ck}" in err
    partial = json.loads((tmp_path / "partial.json").read_text())
    assert partial["stopped"] == "interrupted" and partial["complete"] is False
    assert set(partial["verdicts"].values()) == {"unknown"}
    header = checkpoint.read_header(ck)
    assert header["depth"] == 8  # stopped inside level 9: the checkpoint is level 8's
    assert header["distinct"] <= partial["stats"]["distinct_states"] < 50294

    code, out, err = kmc_run("check", "--resume", ck, "--no-progress", "--json", tmp_path / "r.json")
    assert code == 0, err
    assert_le3_counts(json.loads((tmp_path / "r.json").read_text()))


@pytest.mark.slow
def test_sigterm_exits_143_with_a_checkpoint(tmp_path):
    ck = tmp_path / "ck"
    proc = kmc_at_level("check", HW_FAST, "--checkpoint", ck, "--checkpoint-every", "0", "--no-progress",
                        depth=4, signals=("TERM",))
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 143, err
    assert "Traceback" not in err and "distinct states" in out
    assert checkpoint.read_header(ck)["depth"] == 4


@pytest.mark.slow
def test_a_second_sigint_exits_at_once_and_leaves_a_valid_checkpoint(tmp_path):
    ck = tmp_path / "ck"
    proc = kmc_at_level("check", LE3, "--checkpoint", ck, "--checkpoint-every", "0", "--no-progress",
                        depth=6, signals=("INT", "INT"))
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130
    assert "Traceback" not in err
    assert checkpoint.read_header(ck)["depth"] == 6  # written whole before the signals


def test_a_signal_stops_an_in_process_run_at_a_level_boundary():
    spec = load_spec(SPECS / "hw-unclean.toml")
    engine = LocalEngine(spec.model(), spec.properties(), Options(keep_going=True, progress_seconds=0))
    engine.progress = lambda stats: os.kill(os.getpid(), signal.SIGINT) if stats.depth == 5 else None
    with StopOnSignals(engine) as stop:
        result = engine.run()
    assert result.stopped == "interrupted" and not result.complete
    assert stop.signum == signal.SIGINT and stop.exit_code == 130
    assert engine.stats.depth == 5  # gone back to the boundary the interrupted level started from


# -- the handler itself, in-process ------------------------------------------------------------

class _Engine:
    stop_requested = None

    def cancel(self, reason):
        self.stop_requested = reason


def test_first_signal_asks_to_stop_second_sigint_raises():
    before = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    engine = _Engine()
    with StopOnSignals(engine) as stop:
        os.kill(os.getpid(), signal.SIGINT)
        assert engine.stop_requested == "interrupted" and stop.exit_code == 130
        with pytest.raises(KeyboardInterrupt):
            os.kill(os.getpid(), signal.SIGINT)
        assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL  # a second SIGTERM kills
    assert (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)) == before


def test_sigterm_is_reported_as_143():
    engine = _Engine()
    with StopOnSignals(engine) as stop:
        os.kill(os.getpid(), signal.SIGTERM)
        assert engine.stop_requested == "interrupted"
    assert stop.signum == signal.SIGTERM and stop.exit_code == 143


# -- a signal at any moment of start-up (and of the end) --------------------------------------

def _importing_numpy(pid) -> bool:
    """Whether process ``pid`` has begun loading numpy (Linux: /proc/PID/maps), which the
    ``kmc`` program does first thing when it imports ``kmc.checker``."""
    try:
        with open(f"/proc/{pid}/maps") as f:
            return "numpy" in f.read()
    except OSError:
        return False


def _signal_after(delay, signum):
    """Start ``kmc check`` on LE3 and send it ``signum`` ``delay`` seconds after it began
    importing its modules (where /proc tells it; else after its start). Before, the Python
    interpreter is still starting (site, .pth files) and no program can catch a signal."""
    import subprocess
    import sys
    import time

    proc = subprocess.Popen([sys.executable, "-m", "kmc.app.cli", "check", str(LE3)], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if os.path.exists(f"/proc/{proc.pid}/status"):
        deadline = time.monotonic() + 30
        while not _importing_numpy(proc.pid) and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.001)
    time.sleep(delay)
    proc.send_signal(signum)
    out, err = proc.communicate(timeout=60)
    return proc.returncode, out, err


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_signal_during_start_up_ends_in_one_line_and_130_or_143(signum):
    """The delays (from the start of kmc's imports) span the imports (numpy, rich, the model),
    the spec's loading, the search (about 0.3 s here) and the end; whatever the moment, one line on standard error (two
    more, saying no checkpoint was written, when the search itself was stopped), never a
    traceback, never a silent kill; or, when the signal comes after the verdict, that verdict."""
    expected = 128 + signum
    line = "kmc: interrupted" if signum == signal.SIGINT else "kmc: stopped (SIGTERM)"
    for delay in (0.0, 0.03, 0.08, 0.15, 0.25, 0.4, 0.55):
        code, out, err = _signal_after(delay, signum)
        where = f"signal after {delay} s: exit {code}, stderr {err[-300:]!r}"
        assert "Traceback" not in err, where
        if code == 0:  # the signal came after the verdict: it stands
            assert "hold over 50,294 distinct states" in out and err == "", where
            continue
        assert code == expected, where
        lines = err.splitlines()
        if "interrupted before the search was complete" in err:  # the search stopped at a safe point
            assert lines[0] == "kmc: interrupted before the search was complete.", where
            assert "distinct states" in out, where
        else:
            assert lines == [line], where


_IMPORT_EVERYTHING = """
import importlib, pkgutil, signal, sys
SIGNALS = [s for s in signal.Signals if s not in (signal.SIGKILL, signal.SIGSTOP)]
before = {s: signal.getsignal(s) for s in SIGNALS}
names = []
for package in ("kmc.checker", "kmc.model", "kmc.invariants", "kmc.app"):
    module = importlib.import_module(package)
    names += [package] + [m.name for m in pkgutil.walk_packages(module.__path__, package + ".")]
for name in names:
    importlib.import_module(name)
after = {s: signal.getsignal(s) for s in SIGNALS}
changed = [s.name for s in SIGNALS if after[s] is not before[s]]
print(len(names), changed)
"""


def test_importing_every_kmc_module_installs_no_signal_handler(tmp_path):
    # A fresh interpreter imports every module of every kmc package (the command line's
    # too): no signal's handler changes, even in a script named like the program. The
    # program installs its own when it starts (kmc.app.program), a run its own while it
    # runs (StopOnSignals).
    import subprocess
    import sys

    script = tmp_path / "kmc"
    script.write_text(_IMPORT_EVERYTHING)
    proc = subprocess.run([sys.executable, str(script)], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    count, changed = proc.stdout.split(" ", 1)
    assert int(count) > 100 and changed.strip() == "[]", proc.stdout


def test_the_program_protects_its_start_up_and_a_run_restores_the_handlers():
    from kmc.app.program import _exit_at_start_up, protect_start_up

    old = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        assert protect_start_up()
        assert signal.getsignal(signal.SIGINT) is _exit_at_start_up is signal.getsignal(signal.SIGTERM)
    finally:
        for s, handler in old.items():
            signal.signal(s, handler)
    engine = LocalEngine(load_spec(HW_FAST).model())
    with StopOnSignals(engine) as stop:
        assert signal.getsignal(signal.SIGINT) == stop._handle
    assert {s: signal.getsignal(s) for s in old} == old


# -- the command line's own handlers: a signal at the edges of main ---------------------------

def _signal_at(monkeypatch, when):
    """Make ``signal.signal`` in ``kmc.app.cli`` behave as when a SIGINT arrives at an
    edge of ``main``: ``"installed"``, just after SIGINT's handler is set (Python runs the
    new handler as the call returns); ``"restore"``, pending as ``main`` puts the handlers
    back (``signal.signal`` runs the pending handler before it changes anything)."""
    from kmc.app import cli

    real = signal.signal
    fired: list = []
    calls: list = []  # SIGINT's: main installs its handler, then puts the old one back

    def fake(signum, handler):
        if signum == signal.SIGINT:
            calls.append(handler)
        if when == "restore" and len(calls) == 2 and not fired:
            fired.append(signum)
            current = signal.getsignal(signal.SIGINT)
            assert current is cli._interrupt  # main's
            current(signal.SIGINT, None)  # the pending signal's handler runs first: it raises
        previous = real(signum, handler)
        if when == "installed" and len(calls) == 1 and not fired:
            fired.append(signum)
            handler(signal.SIGINT, None)  # what Python runs as the call returns
        return previous

    monkeypatch.setattr(cli.signal, "signal", fake)
    return fired


@pytest.mark.parametrize("when", ["installed", "restore"])
def test_a_sigint_at_the_edges_of_main_is_one_line_and_130(monkeypatch, capsys, when):
    """The race of the start-up test under load: a SIGINT just after ``main`` set its
    handler, or pending as it puts the handlers back after the verdict, used to escape
    ``main`` as a KeyboardInterrupt (a traceback, and the process killed by the signal
    itself: exit -2)."""
    from kmc.app.cli import EXIT_INTERRUPTED, main

    before = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    fired = _signal_at(monkeypatch, when)
    try:
        code = main(["invariants"])
    except KeyboardInterrupt:  # (caught here: pytest would take it for the user's Ctrl-C)
        code = "a KeyboardInterrupt escaped main"
    finally:
        monkeypatch.undo()
    assert fired == [signal.SIGINT]
    err = capsys.readouterr().err
    assert (code, err) == (EXIT_INTERRUPTED, "kmc: interrupted\n")
    assert (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)) == before


def test_an_interrupt_kmc_reported_never_ends_the_process_by_sigint(tmp_path):
    """CPython notes a KeyboardInterrupt that leaves code it ran through its ``PyRun_*`` entry
    points, and kills itself with SIGINT as it exits when the note is set, whatever code was
    chosen: after "kmc: interrupted" the process died by SIGINT (exit -2, not 130) about once
    in twenty interrupts at the end of start-up. kmc reported that interrupt itself, so its
    exit code stands. (The note is set by hand here, as an interrupt in such an import does;
    the program runs as ``python -m``, as the signal tests run kmc.)"""
    import subprocess
    import sys

    (tmp_path / "noted.py").write_text(
        "import ctypes, kmc.app.cli as cli\n"
        "def main():\n"
        "    ctypes.c_int.in_dll(ctypes.pythonapi, '_Py_UnhandledKeyboardInterrupt').value = 1\n"
        "    return 130\n"
        "cli.main = main\n"
        "cli.run()\n"
    )
    proc = subprocess.run([sys.executable, "-m", "noted"], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 130, (proc.returncode, proc.stderr)


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_wrapped_by_the_interpreter_is_still_the_signal(monkeypatch, capsys, signum):
    """A signal that arrives while a module defines a class whose attribute has
    ``__set_name__`` (rich's console, imported at the first output) reaches ``main`` as a
    ``RuntimeError`` whose cause is the signal's exception: it used to end in a traceback
    and exit 1, the code of a violation."""
    from kmc.app import cli

    def interrupted_import():
        class Field:
            def __set_name__(self, owner, name):
                if signum == signal.SIGINT:
                    signal.default_int_handler(signal.SIGINT, None)
                cli._terminate(signum, None)

        class Locals:  # what a module's class body does at import
            buffer = Field()

        return Locals

    monkeypatch.setattr(cli, "consoles", interrupted_import)
    with pytest.raises(RuntimeError) as wrapped:  # what Python itself makes of it
        interrupted_import()
    assert isinstance(wrapped.value.__cause__, (KeyboardInterrupt, cli.Terminated))
    code = cli.main(["invariants"])
    assert (code, capsys.readouterr().err) == (
        128 + signum,
        "kmc: interrupted\n" if signum == signal.SIGINT else "kmc: stopped (SIGTERM)\n",
    )


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_signal_whose_exception_python_dropped_is_still_reported(signum, monkeypatch, capsys):
    """Python drops an exception raised where it cannot propagate (a weakref callback of the
    import machinery, a finalizer) and prints it as "Exception ignored": the signal raised
    there must still end the run in its one line and 130 or 143, with no traceback printed."""
    import gc

    from kmc.app import cli

    class Finalized:
        def __del__(self):
            os.kill(os.getpid(), signum)  # the handler raises here, inside a finalizer

    def a_run_that_drops_the_signal(argv):
        Finalized()
        gc.collect()
        return 0  # (the run went on and ended with a verdict)

    monkeypatch.setattr(cli, "_main", a_run_that_drops_the_signal)
    assert cli.main(["check", "x.toml"]) == 128 + signum
    err = capsys.readouterr().err
    assert err.strip() == ("kmc: interrupted" if signum == signal.SIGINT else "kmc: stopped (SIGTERM)"), err
