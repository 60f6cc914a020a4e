"""``kmc bench`` measures the whole process tree (``checker.base.tree_usage``): a grandchild's
CPU time and memory count, which ``getrusage`` of the kmc process does not see while the
grandchild runs."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kmc.checker.base.tree_usage import TreeUsage

ROOT = Path(__file__).resolve().parents[1]
HW = ROOT / "specs" / "hw-data-loss.toml"  # stops at a violation: 1834 distinct states, depth 10

# A child that starts a grandchild which spins for 0.8 s of CPU holding 200 MB, then both
# wait: neither is reaped by this process before the measurement ends (the grandchild ends
# by itself).
_BURN = (
    "import time\n"
    "block = bytearray(200_000_000)\n"
    "for i in range(0, len(block), 4096): block[i] = 1\n"
    "t = time.process_time()\n"
    "while time.process_time() - t < 0.8: pass\n"
    "time.sleep(4)\n"
)
_PARENT = f"import subprocess, sys, time\nsubprocess.Popen([sys.executable, '-c', {_BURN!r}])\ntime.sleep(30)\n"


def test_a_grandchild_s_cpu_and_memory_count():
    # The tree of the child (not of this process: a test session may hold a JVM of its own).
    child = subprocess.Popen([sys.executable, "-c", _PARENT])
    tree = TreeUsage(pid=child.pid, interval=0.05).start()
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and sum(tree.cpu.values()) < 0.8:
            time.sleep(0.05)
        usage = tree.stop()
    finally:
        child.kill()
        child.wait()
    assert usage["processes"] == 2  # the child, the grandchild
    assert usage["cpu_seconds"] >= 0.8  # the grandchild's spin, at least
    kinds = usage["cpu_seconds_by_kind"]  # both are Python processes
    assert kinds["python"] >= 0.8 and kinds["jvm"] == kinds["other"] == 0
    assert abs(sum(kinds.values()) - usage["cpu_seconds"]) < 0.01
    assert usage["peak_rss_bytes"] >= 200_000_000  # its block, counted while it lived
    assert "/proc sampled" in usage["method"]


def test_a_tree_measured_from_outside_starts_from_zero():
    spin = "import time\nt=time.process_time()\nwhile time.process_time()-t<0.3: pass\nprint('spun', flush=True)\ntime.sleep(30)"
    child = subprocess.Popen([sys.executable, "-c", spin], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline() == "spun\n"  # the child has spent its 0.3 s before the measurement starts
        time.sleep(0.1)
        tree = TreeUsage(pid=child.pid, interval=0.05).start()
        time.sleep(0.2)
        usage = tree.stop()
    finally:
        child.kill()
        child.wait()
    assert usage["processes"] == 1 and usage["cpu_seconds"] < 0.1  # the earlier 0.3 s is not counted


@pytest.mark.spark
@pytest.mark.slow
@pytest.mark.skipif(os.environ.get("KMC_SLOW") != "1", reason="two kmc processes and a JVM (~25 s): set KMC_SLOW=1")
@pytest.mark.skipif(shutil.which("java") is None, reason="the Spark engine needs Java: no 'java' on PATH")
def test_compare_engines_runs_both_and_counts_spark_s_whole_tree(tmp_path):
    out = tmp_path / "cmp.json"
    proc = subprocess.run(
        [sys.executable, "-m", "kmc.app.cli", "bench", str(HW), "--compare-engines", "--master", "local[2]",
         "--driver-level-limit", "0", "--json", str(out)],
        cwd=ROOT, capture_output=True, text=True, timeout=150,
    )
    assert proc.returncode == 0, proc.stderr
    assert "Both engines explored the same state space (counts, depth, verdicts)." in proc.stdout
    assert "spark / local" in proc.stdout and "tree cpu seconds" in proc.stdout
    doc = json.loads(out.read_text())
    local, spark = doc["runs"]
    for run in (local, spark):  # tests/pins.py: hw-data-loss stops at its violation of CommittedNeverLost
        assert (run["distinct_states"], run["states_generated"], run["depth"]) == (1834, 3455, 10)
        assert run["verdicts"]["CommittedNeverLost"] == "violated"
    assert local["tree_processes"] == 1
    # kmc, the JVM and at least one Python worker; the JVM alone spends more CPU than a
    # local run of 1,834 states.
    assert spark["tree_processes"] >= 3 and spark["tree_cpu_seconds"] > local["tree_cpu_seconds"]
    assert spark["tree_cpu_seconds_jvm"] > 0.5 and spark["tree_cpu_seconds_python"] > 0  # the JVM, the workers
    assert "tree_cpu_seconds_jvm" not in local
    assert spark["tree_peak_rss_bytes"] > spark["peak_rss_bytes"]
    assert doc["ratio"]["tree_cpu_seconds"] == spark["tree_cpu_seconds"] / local["tree_cpu_seconds"]


def test_this_process_s_own_cpu_counts():
    tree = TreeUsage(interval=0.05).start()
    t = time.process_time()
    while time.process_time() - t < 0.3:
        pass
    usage = tree.stop()
    assert usage["cpu_seconds"] >= 0.3 and usage["peak_rss_bytes"] > 0
