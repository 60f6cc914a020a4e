"""The Spark engine on a standalone cluster whose machines share no directory.

A master and two one-core workers started from pyspark's ``bin/spark-class`` on 127.0.0.1,
each worker in a private mount namespace (``unshare -m``) with a tmpfs of its own mounted
over the directory the driver's store is in: what the driver writes there no executor sees,
as on machines that share no file system. The S3 store (a moto server on 127.0.0.1) gives
the local engine's results; the directory store stops before any Spark level with the one
line that says the driver and every executor must see it; a worker's JVM killed with
SIGKILL in the middle of a run changes nothing.

Needs root (for the mount namespaces) and takes minutes: run with KMC_SLOW=1.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SPEC = REPO / "specs" / "le-unflushed.toml"  # two violations, a dozen levels
START_SECONDS = 240
RUN_SECONDS = 600

pytestmark = [
    pytest.mark.spark,
    pytest.mark.slow,
    pytest.mark.skipif(os.environ.get("KMC_SLOW") != "1", reason="a standalone cluster of three JVMs: set KMC_SLOW=1"),
    pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0,
                       reason="the workers' private mount namespaces (unshare -m) need root"),
    pytest.mark.skipif(shutil.which("unshare") is None or shutil.which("java") is None,
                       reason="needs unshare (util-linux) and Java"),
]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _spark_class() -> str:
    pyspark = pytest.importorskip("pyspark")
    return str(Path(pyspark.__file__).parent / "bin" / "spark-class")


class Cluster:
    """The master and the workers this test started (each in a process group of its own)."""

    def __init__(self, root: Path, hidden: Path) -> None:
        self.root, self.hidden, self.procs, self.workers = root, hidden, [], []
        self.port = _free_port()
        self.url = f"spark://127.0.0.1:{self.port}"

    def start(self) -> None:
        env = dict(os.environ, SPARK_LOCAL_IP="127.0.0.1", SPARK_NO_DAEMONIZE="1")
        spark_class = _spark_class()
        master = [spark_class, "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port",
                  str(self.port), "--webui-port", str(_free_port())]
        self.procs.append(self._spawn(master, env, "master"))
        for w in ("w1", "w2"):
            work = self.root / w
            work.mkdir()
            # A private mount namespace, with a tmpfs over the driver's store directory.
            script = (f"mount --make-rprivate / && mount -t tmpfs tmpfs {self.hidden} && exec {spark_class} "
                      f"org.apache.spark.deploy.worker.Worker --host 127.0.0.1 --cores 1 --memory 1g "
                      f"--webui-port 0 --work-dir {work} {self.url}")
            proc = self._spawn(["unshare", "-m", "sh", "-c", script], env, w)
            self.procs.append(proc)
            self.workers.append(proc)
        deadline = time.monotonic() + START_SECONDS
        while time.monotonic() < deadline:
            logs = [(self.root / f"{w}.log").read_text(errors="replace") for w in ("w1", "w2")]
            if all("Successfully registered with master" in log for log in logs):
                return
            if any(p.poll() is not None for p in self.procs):
                break
            time.sleep(1)
        raise AssertionError("the standalone cluster did not come up:\n" + "\n".join(
            (self.root / f"{n}.log").read_text(errors="replace")[-2000:] for n in ("master", "w1", "w2")))

    def _spawn(self, command, env, name) -> subprocess.Popen:
        log = open(self.root / f"{name}.log", "w")
        return subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)

    def executors(self, worker: subprocess.Popen) -> list[int]:
        """The executor JVMs the worker ``worker`` runs (its children)."""
        found = []
        for pid in (int(p) for p in os.listdir("/proc") if p.isdigit()):
            try:
                stat = Path(f"/proc/{pid}/stat").read_text()
                cmd = Path(f"/proc/{pid}/cmdline").read_bytes()
            except OSError:
                continue
            if int(stat[stat.rfind(")") + 2:].split()[1]) == worker.pid and b"CoarseGrainedExecutorBackend" in cmd:
                found.append(pid)
        return found

    def stop(self) -> None:
        for proc in reversed(self.procs):
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
        for proc in self.procs:
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    root = tmp_path_factory.mktemp("cluster")
    hidden = root / "shared"  # the store's directory: the driver's only
    hidden.mkdir()
    c = Cluster(root, hidden)
    try:
        c.start()
        yield c
    finally:
        c.stop()


def kmc(*args, timeout=RUN_SECONDS) -> subprocess.Popen:
    env = dict(os.environ, SPARK_LOCAL_IP="127.0.0.1")
    return subprocess.Popen([sys.executable, "-m", "kmc.app.cli", *map(str, args)], cwd=REPO, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)


def _doc(path: Path) -> dict:
    doc = json.loads(path.read_text())
    return {key: doc[key] for key in ("stats", "verdicts", "violations", "complete", "stopped")}


@pytest.fixture(scope="module")
def local_result(tmp_path_factory):
    out = tmp_path_factory.mktemp("local") / "local.json"
    proc = kmc("check", SPEC, "--no-progress", "--no-trace", "--json", out)
    proc.communicate(timeout=RUN_SECONDS)
    return _doc(out)


def _same(got: dict, want: dict) -> None:
    for key in ("distinct_states", "states_generated", "depth", "levels", "fired", "new"):
        if key in want["stats"]:
            assert got["stats"][key] == want["stats"][key], key
    assert got["verdicts"] == want["verdicts"]
    assert got["violations"] == want["violations"]  # the counterexamples, state by state


@pytest.mark.parametrize("limit", [0, 500])  # the first level on Spark; probed as the session started in advance
def test_a_directory_the_executors_do_not_see_stops_in_one_line(cluster, limit):
    proc = kmc("check", SPEC, "--engine", "spark", "--master", cluster.url, "--partitions", "2",
               "--driver-level-limit", limit, "--no-progress", "--spark-store", cluster.hidden)
    out, err = proc.communicate(timeout=RUN_SECONDS)
    lines = [line for line in err.splitlines() if line.startswith("kmc:")]
    assert proc.returncode == 2 and len(lines) == 1, err
    assert lines[0].startswith(f"kmc: error: the Spark store {cluster.hidden}/kmc-rows-")
    assert "is not seen by every executor" in lines[0] and "the driver and every executor must see it" in lines[0]
    assert "distinct states" not in out and "Traceback" not in err


def test_the_s3_store_gives_the_local_engine_s_results(cluster, s3_url, local_result, tmp_path):
    out = tmp_path / "spark.json"
    proc = kmc("check", SPEC, "--engine", "spark", "--master", cluster.url, "--partitions", "2",
               "--driver-level-limit", "0", "--no-progress", "--no-trace", "--spark-store", s3_url, "--json", out)
    _stdout, err = proc.communicate(timeout=RUN_SECONDS)
    assert proc.returncode == 1, err  # le-unflushed: two violations
    _same(_doc(out), local_result)


def test_a_worker_killed_mid_run_changes_nothing(cluster, s3_url, local_result, tmp_path):
    out = tmp_path / "spark.json"
    proc = kmc("check", SPEC, "--engine", "spark", "--master", cluster.url, "--partitions", "2",
               "--driver-level-limit", "0", "--no-progress", "--no-trace", "--spark-store", s3_url, "--json", out)
    victim = cluster.workers[0]
    deadline = time.monotonic() + RUN_SECONDS
    while not cluster.executors(victim) and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.2)
    time.sleep(3)  # a few levels in
    assert proc.poll() is None, "the run ended before the worker could be killed"
    os.kill(victim.pid, signal.SIGKILL)  # the worker's JVM
    for pid in cluster.executors(victim):
        os.kill(pid, signal.SIGKILL)  # and its executor's, as a machine that is lost
    _stdout, err = proc.communicate(timeout=RUN_SECONDS)
    assert proc.returncode == 1, err
    _same(_doc(out), local_result)
