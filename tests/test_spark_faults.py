"""Issue 12, Spark faults: a crashed Python worker costs a retry under the default master,
and an interrupt during a Spark job ends in one line.

Each test runs ``kmc check --engine spark`` in a subprocess (a process holds one
SparkContext, and a Ctrl-C reaches a whole process group), with a deterministic fault
from the test hook ``KMC_TEST_SPARK_FAULT`` (``checker.partitioned.tasks.planted_fault``): no sleeps,
no races.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from test_checkpoint import comparable, reference

REPO = Path(__file__).resolve().parents[1]
LE_UNCLEAN = REPO / "specs" / "le-unclean.toml"
TIMEOUT = 240

pytestmark = [
    pytest.mark.spark,
    pytest.mark.skipif(shutil.which("java") is None, reason="the Spark engine needs Java: no 'java' on PATH"),
]


def kmc(*args, fault, timeout=TIMEOUT):
    env = dict(os.environ, KMC_TEST_SPARK_FAULT=fault, SPARK_LOCAL_IP="127.0.0.1")
    # A session of its own: a fault that signals the process group must not reach pytest.
    proc = subprocess.Popen([sys.executable, "-m", "kmc.app.cli", *map(str, args)], cwd=REPO, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    out, err = proc.communicate(timeout=timeout)
    return proc.returncode, out, err


@pytest.mark.skipif(__import__("os").environ.get("KMC_SLOW") != "1", reason="another Spark run of its own (the suite's time): set KMC_SLOW=1")
def test_a_killed_worker_costs_a_retry_under_the_default_master(tmp_path):
    # Partition 0's Python worker dies (SIGKILL) in the first attempt of the first Spark
    # level's expansion; no --master: the default must retry it, and the result must not
    # change.
    marker = tmp_path / "killed"
    code, out, err = kmc("check", LE_UNCLEAN, "--engine", "spark", "--driver-level-limit", "0", "--partitions", "2",
                         "--no-progress", "--no-trace", "--json", tmp_path / "r.json", fault=f"kill:{marker}")
    assert code == 1, err
    assert marker.exists()  # the worker was killed
    assert comparable(json.loads((tmp_path / "r.json").read_text())) == comparable(reference(LE_UNCLEAN))


def test_ctrl_c_during_a_spark_job_is_one_line_and_130(tmp_path):
    marker = tmp_path / "sent"
    code, out, err = kmc("check", LE_UNCLEAN, "--engine", "spark", "--driver-level-limit", "0", "--master", "local[2]",
                         "--partitions", "2", "--no-progress", "--no-trace", fault=f"sigint:{marker}")
    assert marker.exists()  # the SIGINT was sent from inside a running task
    assert code == 130, err
    assert "4,958 distinct states" not in out  # stopped before the end (4,958 in all)
    assert err.splitlines() == ["kmc: interrupted before the search was complete.",
                                "kmc: no checkpoint was written; run with --checkpoint DIR to be able to resume."]
    assert "interrupted" in out
