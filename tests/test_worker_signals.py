"""Signals while the expansion workers run (``checker.local.workers``): the workers die with the
search's process (SIGKILL of the search: the checkpoint's lock is free and ``--resume``
goes on), a SIGTERM to the process group is an interrupt (143), and a stopped (SIGSTOP)
worker hangs nothing: SIGINT and SIGTERM still stop the run, and the workers, promptly.

Each run is ``kmc check`` in a subprocess whose chunks are small and whose workers take a
while over each (the hook below), so that every level past the first few goes through
the workers for several seconds; each worker writes its PID into a directory the test
watches. The test acts once a worker has written it, and polls (never a fixed sleep) with
bounds generous enough for a loaded machine.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import pins
from test_checkpoint import ROOT, SPECS, kmc_run

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux's process model (/proc)")

HW_UNCLEAN = SPECS / "hw-unclean.toml"

_SLOW_WORKERS = r"""
import os, sys, time
import kmc.checker.local.rows as batch
from kmc.app.cli import run

batch.CHUNK_ROWS = 32
pids = os.environ["KMC_TEST_PIDS"]
pause = float(os.environ["KMC_TEST_PAUSE"])
search = os.getpid()
prepare = batch.RowsSearch.prepare_chunk


def slow(self, *task):
    if os.getpid() != search:
        open(os.path.join(pids, str(os.getpid())), "a").close()
        time.sleep(pause)
    return prepare(self, *task)


batch.RowsSearch.prepare_chunk = slow
sys.argv[0] = "kmc"
run()
"""


STARTED: list[subprocess.Popen] = []


@pytest.fixture(autouse=True)
def _end_what_a_test_started():
    """Whatever a test asserts, nothing it started outlives it (the search's process
    group: the search and its workers)."""
    yield
    while STARTED:
        proc = STARTED.pop()
        for sig in (signal.SIGCONT, signal.SIGKILL):
            try:
                os.killpg(proc.pid, sig)
            except OSError:
                pass
        proc.communicate(timeout=60)


def slow_kmc(tmp_path: Path, *args, pause: float = 0.2) -> tuple[subprocess.Popen, Path]:
    """``kmc check`` on hw-unclean with two slow workers, in a session of its own (its own
    process group); returns the process and the directory its workers write their PIDs in."""
    pids = tmp_path / "pids"
    pids.mkdir(exist_ok=True)
    env = dict(os.environ, KMC_TEST_PIDS=str(pids), KMC_TEST_PAUSE=str(pause))
    proc = subprocess.Popen(
        [sys.executable, "-c", _SLOW_WORKERS, "check", str(HW_UNCLEAN), "--workers", "2", "--no-progress", *map(str, args)],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
    )
    STARTED.append(proc)
    return proc, pids


def poll(condition, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


def alive(pid: int) -> bool:
    """Whether ``pid`` is a process that has not ended (a zombie has)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def workers_of(proc: subprocess.Popen, pids: Path) -> list[int]:
    """The workers that have taken a chunk, once both have (and are the search's children)."""
    found = [int(p.name) for p in pids.iterdir()] if pids.is_dir() else []
    if proc.poll() is not None:
        raise AssertionError(f"kmc ended ({proc.returncode}) before its workers ran: {proc.communicate()[1]}")
    return found if len(found) >= 2 else []


def test_sigkill_of_the_search_ends_its_workers_and_frees_the_checkpoint(tmp_path):
    ck = tmp_path / "ck"
    proc, pids = slow_kmc(tmp_path, "--checkpoint", ck, "--checkpoint-every", "0")
    workers = poll(lambda: workers_of(proc, pids), 120, "the workers")
    # Meanwhile the checkpoint is in use, and the refusal names the process that holds it.
    code, _, err = kmc_run("check", "--resume", ck, "--no-progress")
    assert code == 2 and f"in use by another kmc run (process {proc.pid})" in err, err
    proc.kill()
    proc.wait(timeout=60)
    poll(lambda: not any(alive(w) for w in workers), 30, "the workers to end with the search")
    code, _, err = kmc_run("check", "--resume", ck, "--no-progress", "--json", tmp_path / "r.json", timeout=300)
    assert code == 1, err  # hw-unclean: two properties are violated
    stats = json.loads((tmp_path / "r.json").read_text())["stats"]
    pin = pins.PINS["hw-unclean"]
    assert (stats["distinct_states"], stats["states_generated"], stats["depth"]) == (pin.distinct, pin.generated,
                                                                                     pin.depth)


def test_sigterm_to_the_process_group_is_an_interrupt(tmp_path):
    """systemd and batch schedulers end a job by a SIGTERM to its process group: the
    workers get it too, and the run is interrupted (143), never "out of memory"."""
    proc, pids = slow_kmc(tmp_path, "--checkpoint", tmp_path / "ck", "--checkpoint-every", "0")
    workers = poll(lambda: workers_of(proc, pids), 120, "the workers")
    os.killpg(proc.pid, signal.SIGTERM)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 143, err
    assert "kmc: interrupted before the search was complete." in err
    assert "out of memory" not in err and "Traceback" not in err
    assert f"continue with: kmc check --resume {tmp_path / 'ck'}" in err
    poll(lambda: not any(alive(w) for w in workers), 30, "the workers to end")


@pytest.mark.parametrize("sig, code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)], ids=["SIGINT", "SIGTERM"])
def test_a_stopped_worker_does_not_hang_the_run(tmp_path, sig, code):
    proc, pids = slow_kmc(tmp_path, pause=0.05)
    workers = poll(lambda: workers_of(proc, pids), 120, "the workers")
    os.kill(workers[0], signal.SIGSTOP)
    # The search soon waits on the stopped worker (its next answer never comes).
    time.sleep(1)
    os.kill(proc.pid, sig)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == code, err
    assert "kmc: interrupted before the search was complete." in err and "Traceback" not in err
    poll(lambda: not any(alive(w) for w in workers), 30, "the workers to be killed")
