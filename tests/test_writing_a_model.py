"""docs/writing-a-model.md runs: its Python blocks, in order, in one namespace (the one
marked ``# needs Spark`` only where Java is)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parent.parent / "docs" / "writing-a-model.md"


def _blocks():
    return re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.S)


def _run(blocks):
    namespace = {"__name__": "__main__"}  # classes pickled by value, as a user's script's
    for block in blocks:
        exec(compile(block, str(DOC), "exec"), namespace)
    return namespace


def test_the_local_blocks_run():
    blocks = [b for b in _blocks() if not b.startswith("# needs Spark")]
    assert len(blocks) == 7
    namespace = _run(blocks)
    guarded = namespace["GuardedCounters"]()
    assert [g.failing for g in guarded.guards(namespace["Counters"](3, 1))] == [["x = 3 is below n = 3"], []]
    assert namespace["result"].stats.distinct == 16
    assert len(namespace["covered"].witnesses["XTwoYOne"]) == 4  # the cover's witness
    # the step cover's: (0, 0), (1, 0), (1, 1), then IncY from the diagonal to (1, 2)
    assert [(s.x, s.y) for s in namespace["covered"].witnesses["YFromTheDiagonal"].states] == [
        (0, 0), (1, 0), (1, 1), (1, 2)]
    assert namespace["lasso"].loop == 1 and namespace["silent"].verdict("OneLeadsToY") == "violated"


def test_the_page_runs_from_the_command_line(tmp_path):
    """The page's blocks saved as a file, checked with ``kmc check --model``: with its kernel
    at n = 300 (uint16 columns: every state of the model, nothing wrapped) and without."""
    blocks = [b for b in _blocks() if not b.startswith("# needs Spark")]
    (tmp_path / "counters.py").write_text("\n".join(blocks))
    env = dict(os.environ, COLUMNS="200")
    env["PYTHONPATH"] = str(DOC.parent.parent) + os.pathsep + env.get("PYTHONPATH", "")

    def kmc(*args):
        return subprocess.run([sys.executable, "-m", "kmc.app.cli", "check", *args, "--no-progress"],
                              cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)

    fast = kmc("--model", "counters.py:FastCounters", "--param", "n=300", "--param", "limit=1000")
    assert fast.returncode == 0, fast.stderr
    assert "90,601 distinct states · 180,601 generated · depth 601" in fast.stdout
    bare = kmc("--model", "counters.py:TwoCounters", "--keep-going", "--json", "result.json")
    assert bare.returncode == 1 and "x + y = 5 reached 5" in bare.stdout
    assert json.loads((tmp_path / "result.json").read_text())["stats"]["distinct_states"] == 16
    # Its expectations, then a checkpoint and its resume, as the page shows them.
    expected = kmc("--model", "counters.py:TwoCounters", "--keep-going", "--check-expect")
    assert expected.returncode == 0 and "This matches the model's expectation." in expected.stdout
    early = kmc("--model", "counters.py:TwoCounters", "--max-depth", "4", "--check-expect")
    assert early.returncode == 3 and "not confirmed yet: the search stopped before deciding SumBelow." in early.stdout
    big = ["--param", "n=200", "--param", "limit=1000"]
    assert kmc("--model", "counters.py:TwoCounters", *big, "--max-states", "5000", "--checkpoint", "ck").returncode == 0
    resumed = kmc("--resume", "ck", "--check-expect")
    assert resumed.returncode == 0, resumed.stderr
    assert "40,401 distinct states · 80,401 generated · depth 401" in resumed.stdout
    assert "This matches the model's expectation." in resumed.stdout
    other = kmc("--resume", "ck", "--param", "n=100")
    assert other.returncode == 2 and "the checkpoint has params limit=1000, n=200, this run has params n=100" in other.stderr


@pytest.mark.spark
@pytest.mark.skipif(shutil.which("java") is None, reason="the Spark engine needs Java")
def test_the_spark_block_runs(spark_sc):
    assert sum(b.startswith("# needs Spark") for b in _blocks()) == 1
    _run(_blocks())
