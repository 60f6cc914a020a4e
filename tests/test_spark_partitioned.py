"""The partitioned level as an algorithm (``checker.partitioned``): the same levels on any
``Cluster`` that runs their two stages. On the in-process cluster, and on a fake cluster
that runs every task in a process of its own (forked: a task sees only its arguments and
the store), in a shuffled order, with its records shuffled, some tasks run twice (a retry,
the first output dropped), the results are the batch engine's: counts, level sizes,
action counters, verdicts, counterexamples and trap counts. None of it needs Spark."""

from __future__ import annotations

import os
import pickle
import random
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import assert_same_spark_result as assert_same
from kmc.app.specs import load_spec
from kmc.checker.local.rows import BatchEngine
from kmc.checker.local.states import Options
from kmc.checker.partitioned import InProcessCluster
from kmc.checker.spark.engine import SparkRowsEngine

REPO = Path(__file__).resolve().parents[1]


class ShuffledCluster:
    """Runs each task in a forked process, the tasks of a stage in a random order, the
    records given to an owner in a random order, and a random third of the expansion
    tasks twice (the first run's records dropped, as after a lost executor)."""

    in_process = False

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.tasks = self.retried = 0

    def _run(self, task, index, records) -> list:
        self.tasks += 1
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:  # the "executor": only its arguments and the store
            os.close(read)
            try:
                out = pickle.dumps((True, list(task(index, iter(records)))))
            except BaseException as e:  # noqa: BLE001 (reported to the driver)
                out = pickle.dumps((False, f"{type(e).__name__}: {e}"))
            with os.fdopen(write, "wb") as f:
                f.write(out)
            os._exit(0)
        os.close(write)
        with os.fdopen(read, "rb") as f:
            data = f.read()
        os.waitpid(pid, 0)
        ok, value = pickle.loads(data)
        if not ok:
            raise RuntimeError(value)
        return value

    def run_level(self, n, expand, own) -> list:
        routed: list[list] = [[] for _ in range(n)]
        for j in self.rng.sample(range(n), n):
            if self.rng.random() < 1 / 3:
                self._run(expand, j, [])  # a first attempt whose output is lost
                self.retried += 1
            for owner, payload in self._run(expand, j, []):
                routed[owner].append((owner, payload))
        summaries = []
        for i in self.rng.sample(range(n), n):
            records = list(routed[i])
            self.rng.shuffle(records)
            summaries += self._run(own, i, records)
        self.rng.shuffle(summaries)
        return summaries

    def cancel(self) -> None:
        pass

    def close(self) -> None:
        pass


CASES = {
    # name: (spec, options, partitions, driver level limit)
    "hw-unclean keep going": ("hw-unclean", dict(max_depth=8, keep_going=True), 3, 0),
    "le-unflushed hand-over": ("le-unflushed", None, 2, 200),
    "symmetry": ("kip279-isr-expansion", dict(max_depth=14, keep_going=True, symmetry=True), 3, 1500),
    "always-possibly traps": ("avail-c2-elr", dict(keep_going=True), 3, 100),
}


def _case(name):
    spec_name, options, partitions, limit = CASES[name]
    spec = load_spec(REPO / "specs" / f"{spec_name}.toml")
    if options is None:
        options = dict(max_depth=spec.max_depth, keep_going=spec.keep_going, max_states=spec.max_states)
    return spec, Options(**options), partitions, limit


@pytest.mark.parametrize("cluster", ["in-process", "shuffled"])
@pytest.mark.parametrize("name", list(CASES))
def test_the_partitioned_levels_on_any_cluster_are_the_batch_engine_s(name, cluster):
    spec, options, partitions, limit = _case(name)
    want = BatchEngine(spec.model(), spec.properties(), options).run()
    ported = InProcessCluster() if cluster == "in-process" else ShuffledCluster(seed=len(name))
    engine = SparkRowsEngine(spec.model(), spec.properties(), options, partitions=partitions,
                             driver_level_limit=limit, cluster=ported)
    got = engine.run()
    assert_same(got, want)
    assert [getattr(v, "traps", None) for v in got.violations.values()] == [
        getattr(v, "traps", None) for v in want.violations.values()]
    levels = len(engine.metrics["spark_levels"])
    assert levels > 1 and engine.session.sc is None and engine.session.starter is None  # no Spark at all
    if cluster == "shuffled":
        assert ported.tasks >= 2 * partitions * levels and ported.retried > 0
    else:
        assert engine.metrics["in_process_levels"] == levels


def test_the_driver_hands_back_what_its_levels_freed_once_at_the_hand_over(monkeypatch):
    """Once the driver's levels are handed over it keeps none of the memory they freed
    (``release_freed_memory``, glibc's ``malloc_trim``; its effect: tests/test_spark_rows.py):
    asked once, right after the hand-over, before the first partitioned level."""
    from kmc.checker.partitioned import levels as partitioned

    spec, options, partitions, limit = _case("le-unflushed hand-over")
    asked = []
    monkeypatch.setattr(partitioned, "release_freed_memory",
                        lambda: asked.append(len(engine.metrics.get("spark_levels", []))) or True)
    engine = SparkRowsEngine(spec.model(), spec.properties(), options, partitions=partitions,
                             driver_level_limit=limit, cluster=InProcessCluster())
    engine.run()
    assert asked == [0] and engine.metrics["driver_levels"] > 0 and len(engine.metrics["spark_levels"]) > 1


def test_the_algorithm_runs_without_pyspark():
    # pyspark made unimportable: the engine's modules import, and the levels run on the
    # in-process cluster.
    code = (
        "import sys; sys.modules['pyspark'] = None\n"
        "from kmc.app.specs import load_spec\n"
        "from kmc.checker.partitioned import InProcessCluster\n"
        "from kmc.checker.spark.engine import SparkRowsEngine\n"
        f"spec = load_spec({str(REPO / 'specs' / 'hw-data-loss.toml')!r})\n"
        "e = SparkRowsEngine(spec.model(), spec.properties(), partitions=3, driver_level_limit=0,"
        " cluster=InProcessCluster())\n"
        "r = e.run()\n"
        "print(r.stats.distinct, r.stats.depth, len(e.metrics['spark_levels']), 'pyspark' in sys.modules and"
        " sys.modules['pyspark'] is not None)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["1834", "10", "9", "False"]  # tests/pins.py: hw-data-loss


# Made unimportable: every attempt to import pyspark is recorded, then refused.
PYSPARK_BLOCKER = """
import importlib.abc, sys
tried = []
class NoPyspark(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "pyspark" or name.startswith("pyspark."):
            tried.append(name)
            raise ImportError(f"no {name} here")
        return None
sys.meta_path.insert(0, NoPyspark())
"""


def test_the_partitioned_package_imports_without_pyspark():
    # Every module of the algorithm's package and of the stores imports with pyspark made
    # unimportable, without trying to import it; the per-state path (rows of Python states,
    # pickled) runs on the in-process cluster with the standard library's pickle.
    code = PYSPARK_BLOCKER + (
        "import importlib, pkgutil\n"
        "import kmc.checker.partitioned as partitioned, kmc.checker.blobs as blobs\n"
        "names = sorted(m.name for p in (partitioned, blobs) for m in pkgutil.iter_modules(p.__path__, p.__name__ + '.'))\n"
        "for name in names:\n"
        "    importlib.import_module(name)\n"
        "print(' '.join(names), tried)\n"
        "from kmc.app.specs import load_spec\n"
        "from kmc.checker.partitioned import InProcessCluster\n"
        "from kmc.checker.spark.engine import SparkRowsEngine\n"
        f"spec = load_spec({str(REPO / 'specs' / 'hw-data-loss.toml')!r})\n"
        "e = SparkRowsEngine(spec.model(), spec.properties(), partitions=3, driver_level_limit=0, per_state=True,"
        " cluster=InProcessCluster())\n"
        "r = e.run()\n"
        "print(e.path, r.stats.distinct, r.stats.depth)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    *modules, tried = done.stdout.splitlines()[0].split(" ")
    assert tried == "[]"
    assert modules == [f"kmc.checker.blobs.{m}" for m in ("arrow", "posix")] + [
        f"kmc.checker.partitioned.{m}" for m in (
            "cluster", "digests", "handover", "levels", "ports", "room", "rows", "rows_read", "rows_stale",
            "rows_write", "save", "stages", "tasks",
        )
    ]
    assert done.stdout.splitlines()[1].split() == ["per-state", "1834", "10"]  # tests/pins.py: hw-data-loss


def _imports_of(path: Path) -> set[str]:
    import ast

    names = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module)
    return names


def test_only_the_spark_adapter_imports_pyspark():
    # Every import of pyspark in kmc's source, at any depth of a module (a function's own
    # import too), is in the Spark adapter's folder.
    importers = set()
    for folder in ("app", "checker", "invariants", "model"):
        for path in sorted((REPO / folder).rglob("*.py")):
            if any(name == "pyspark" or name.startswith("pyspark.") for name in _imports_of(path)):
                importers.add(path.relative_to(REPO).as_posix())
    outside = sorted(path for path in importers if not path.startswith("checker/spark/"))
    assert outside == []
    assert {"checker/spark/session.py", "checker/spark/tasks.py", "checker/spark/engine.py"} <= importers
