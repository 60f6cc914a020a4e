"""docs/writing-a-model.md runs: its Python blocks, in order, in one namespace (the one
marked ``# needs Spark`` only where Java is)."""

from __future__ import annotations

import re
import shutil
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
    assert len(blocks) == 4
    namespace = _run(blocks)
    assert namespace["result"].stats.distinct == 16


@pytest.mark.spark
@pytest.mark.skipif(shutil.which("java") is None, reason="the Spark engine needs Java")
def test_the_spark_block_runs(spark_sc):
    assert sum(b.startswith("# needs Spark") for b in _blocks()) == 1
    _run(_blocks())
