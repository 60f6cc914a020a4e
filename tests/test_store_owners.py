"""A disk store left behind is removed by the next run only when its run surely ended
(``checker.stores.disk.remove_stale``, ``checker.base.owner``): its mark records the host, the
PID namespace, the PID and the process's start time, and a store that might be alive (a
run on another host, or in another container sharing the directory, or a PID in use by
the process that made the store) is never removed."""

from __future__ import annotations

import os
import socket
import subprocess
import sys

import pytest

from kmc.checker.stores import registry

from kmc.checker.stores import disk as disk_store
from kmc.checker.base import owner
from kmc.checker.stores.disk import MARK, PREFIX, DiskStore

pytestmark = pytest.mark.skipif(not os.path.isdir("/proc/self/ns"), reason="a /proc with PID namespaces (Linux)")


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def _store(parent, name, mark):
    path = parent / f"{PREFIX}{name}"
    path.mkdir()
    (path / MARK).write_text(mark)
    (path / "fp-00-00000001.u64").write_bytes(bytes(800))
    return path


def test_a_store_records_its_host_namespace_pid_and_start_time(tmp_path):
    store = DiskStore(tmp_path)
    host, namespace, pid, started = (tmp_path / os.path.basename(store.root) / MARK).read_text().split()
    assert (host, pid) == (socket.gethostname(), str(os.getpid()))
    assert namespace == str(os.stat("/proc/self/ns/pid").st_ino)
    with open("/proc/self/stat") as f:
        assert started == f.read().rsplit(")", 1)[1].split()[19]
    assert disk_store.remove_stale(tmp_path) == 0 and os.path.isdir(store.root)  # its own: alive
    store.close()


def test_only_a_store_whose_run_surely_ended_is_removed(tmp_path):
    host, ns = socket.gethostname(), owner.pid_namespace()
    parent_pid = os.getppid()
    alive_start = owner.start_time(parent_pid)
    dead = _dead_pid()
    stores = {
        # removed: this host and namespace, and the PID runs no more, or runs another process
        "dead": (f"{host} {ns} {dead} 12345\n", False),
        "reused-pid": (f"{host} {ns} {parent_pid} {int(alive_start) + 1}\n", False),
        # kept: might be alive
        "alive": (f"{host} {ns} {parent_pid} {alive_start}\n", True),
        "other-host": (f"another-host {ns} {dead} 12345\n", True),
        "other-namespace": (f"{host} {int(ns) + 1} {dead} 12345\n", True),  # a container's PID: not ours to test
        "namespace-unknown": (f"{host} - {dead} 12345\n", True),
        "older-kmc": (f"{dead}\n", True),  # a PID alone says nothing of where it ran
        "not-a-mark": ("my notes\n", True),
    }
    paths = {name: _store(tmp_path, name, mark) for name, (mark, _) in stores.items()}
    freed = disk_store.remove_stale(tmp_path)
    for name, (_, kept) in stores.items():
        assert paths[name].is_dir() == kept, name
    assert freed == sum(800 + len(mark) for mark, kept in stores.values() if not kept)


def test_a_live_run_in_another_pid_namespace_keeps_its_store(tmp_path):
    """The store of a run in a container sharing the directory: its PID, seen from here,
    names no process (or another one); it is left alone all the same."""
    store = DiskStore(tmp_path)
    mark = tmp_path / os.path.basename(store.root) / MARK
    host, ns, _pid, started = mark.read_text().split()
    mark.write_text(f"{host} {int(ns) + 7} {_dead_pid()} {started}\n")
    registry.new_store("disk", checkpoint_dir=tmp_path).close()  # the next run's start removes stale stores
    assert os.path.isdir(store.root)
    store.close()


_KILLED_EARLY = r"""
import os, signal, sys
from kmc.checker.stores import disk as disk_store
from kmc.app.cli import main

end_level = disk_store.DiskStore.end_level
levels = []


def end_level_then_die(self):
    end_level(self)
    levels.append(1)
    if len(levels) == 5:
        os.kill(os.getpid(), signal.SIGKILL)


disk_store.DiskStore.end_level = end_level_then_die
sys.exit(main(sys.argv[1:]))
"""


def test_a_run_killed_before_its_first_checkpoint_leaves_no_store_behind_a_resume(tmp_path):
    from test_checkpoint import ROOT, SPECS, kmc_run, one_line_error

    ck = tmp_path / "ck"
    proc = subprocess.run([sys.executable, "-c", _KILLED_EARLY, "check", str(SPECS / "hw-unclean.toml"), "--store",
                           "disk", "--checkpoint", str(ck), "--checkpoint-every", "3600", "--no-progress"],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == -9, proc.stderr
    assert list(ck.glob(f"{PREFIX}*")) and not (ck / "checkpoint.kmc").exists()
    code, _, err = kmc_run("check", "--resume", ck, "--no-progress")
    assert code == 2
    line = one_line_error(err)
    assert "no checkpoint here" in line and "killed before its first checkpoint is removed" in line, line
    assert not list(ck.glob(f"{PREFIX}*"))


def test_a_spark_store_records_its_namespace_and_one_of_another_namespace_is_kept(tmp_path):
    from kmc.checker.partitioned.rows import OWNER, RowsStore
    from kmc.checker.partitioned.rows_stale import clean_stale

    mine = RowsStore.create(tmp_path)
    host, ns, pid, started = (tmp_path / os.path.basename(mine.root) / OWNER).read_text().split()
    assert (host, ns, pid) == (socket.gethostname(), owner.pid_namespace(), str(os.getpid()))
    dead = _dead_pid()
    container = tmp_path / "kmc-rows-container"  # a live run's, in another PID namespace
    container.mkdir()
    (container / OWNER).write_text(f"{host} {int(ns) + 1} {dead} {started}\n")
    gone = tmp_path / "kmc-rows-gone"
    gone.mkdir()
    (gone / OWNER).write_text(f"{host} {ns} {dead} {started}\n")
    line = clean_stale(str(tmp_path))
    assert container.is_dir() and not gone.exists() and os.path.isdir(mine.root)
    assert line.startswith("removed 1 Spark store of runs that were killed")
