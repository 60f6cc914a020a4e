"""Runs that meet the end of a resource: memory that cannot be allocated (an address-space
or a control group's limit), a Spark store whose disk is full, and the stores that killed
Spark runs left behind. Each ends in one line and exit code 4, with the checkpoint of the
last complete level, and the next run removes (or names) what a killed run left.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from kmc.app.cli import main

REPO = Path(__file__).resolve().parent.parent
SPECS = REPO / "specs"


def run(capsys, *args):
    code = main([str(a) for a in args])
    cap = capsys.readouterr()
    assert "Traceback" not in cap.out + cap.err
    return code, cap.out, cap.err


# -- memory ----------------------------------------------------------------------------------

def test_a_memory_error_in_a_level_stops_with_the_last_levels_checkpoint(tmp_path, capsys, monkeypatch):
    from kmc.checker.local import rows as batch

    real = batch.RowsSearch.expand
    calls = {"n": 0}

    def expand(self, *args):
        calls["n"] += 1
        if calls["n"] == 8:  # a level past the first few
            raise MemoryError()
        return real(self, *args)

    monkeypatch.setattr(batch.RowsSearch, "expand", expand)
    ck = tmp_path / "ck"
    code, _out, err = run(capsys, "check", SPECS / "le-data-loss.toml", "--no-progress", "--no-trace",
                          "--checkpoint", ck, "--checkpoint-every", "0", "--json", tmp_path / "a.json")
    assert code == 4, err
    doc = json.loads((tmp_path / "a.json").read_text())
    assert doc["stopped"] == "out-of-memory" and doc["complete"] is False
    assert "kmc: stopped: out of memory before the search was complete: the process could not allocate " \
           "(MemoryError)." in err.splitlines()
    assert f"continue with: kmc check --resume {ck}" in err
    monkeypatch.setattr(batch.RowsSearch, "expand", real)
    code, _out, err = run(capsys, "check", "--resume", ck, "--no-progress", "--no-trace", "--json", tmp_path / "b.json")
    whole = tmp_path / "whole.json"
    assert run(capsys, "check", SPECS / "le-data-loss.toml", "--no-progress", "--no-trace", "--json", whole)[0] == code
    got, want = json.loads((tmp_path / "b.json").read_text()), json.loads(whole.read_text())
    for key in ("distinct_states", "states_generated", "depth"):
        assert got["stats"][key] == want["stats"][key], key


def test_a_memory_error_outside_a_search_is_one_line_and_4(capsys, monkeypatch):
    from kmc.app import cli

    def broken(*args, **kwargs):
        raise MemoryError()

    monkeypatch.setattr(cli, "build_parser", broken)
    assert cli.main(["check", str(SPECS / "hw-data-loss.toml")]) == 4
    assert capsys.readouterr().err == "kmc: stopped: out of memory (the process could not allocate: MemoryError)\n"


def test_the_default_ceiling_counts_an_address_space_limit():
    code = ("import resource; from kmc.checker.base import memory; "
            "resource.setrlimit(resource.RLIMIT_AS, (1 << 30, resource.RLIM_INFINITY)); "
            "print(memory.default_ceiling())")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert 0 < int(out) < 0.8 * (1 << 30)


@pytest.mark.slow
def test_an_address_space_limit_stops_a_run_in_one_line_with_its_checkpoint(tmp_path):
    import resource

    def limit():
        resource.setrlimit(resource.RLIMIT_AS, (200 << 20, resource.RLIM_INFINITY))

    ck = tmp_path / "ck"
    spec = str(SPECS / "three-replicas-large.toml")
    proc = subprocess.run([sys.executable, "-m", "kmc.app.cli", "check", spec, "--no-progress", "--no-trace",
                           "--checkpoint", str(ck)], capture_output=True, text=True,
                          preexec_fn=limit, timeout=300)
    assert proc.returncode == 4, proc.stderr
    assert "Traceback" not in proc.stderr and "kmc: stopped: " in proc.stderr
    assert (ck / "checkpoint.kmc").exists()


# -- the Spark store's disk ------------------------------------------------------------------

def test_a_full_disk_is_told_from_other_failures():
    from kmc.checker.partitioned.room import disk_full

    assert disk_full(OSError(28, "No space left on device"))
    assert disk_full(OSError("51195 requested and 4592 written"))  # numpy's short write
    assert disk_full(RuntimeError("Job aborted ... OSError: 51195 requested and 4592 written\n  at ..."))
    assert not disk_full(OSError(13, "Permission denied"))
    assert not disk_full(RuntimeError("a task failed: ValueError: bad row"))


def test_a_task_s_memory_error_is_told_from_other_failures():
    from kmc.checker.partitioned.room import out_of_memory

    assert out_of_memory(RuntimeError("Job aborted: ...\n  File \"x\", line 1\nMemoryError\n"))
    assert out_of_memory(RuntimeError("... numpy._core._exceptions._ArrayMemoryError: Unable to allocate"))
    assert not out_of_memory(RuntimeError("a task failed: ValueError: bad row"))


def test_a_level_the_store_cannot_hold_is_not_started(tmp_path, monkeypatch):
    from kmc.checker.partitioned import room as spark_search
    from kmc.checker.core.parts import ResourceStop

    monkeypatch.setattr(spark_search.shutil, "disk_usage", lambda root: shutil._ntuple_diskusage(1, 1, 1000))
    with pytest.raises(ResourceStop) as e:
        spark_search.check_room(str(tmp_path), 10, False)
    assert e.value.reason == "disk-full" and "has 1000B free" in e.value.detail
    monkeypatch.setattr(spark_search.shutil, "disk_usage", lambda root: shutil._ntuple_diskusage(1, 1, 1 << 40))
    spark_search.check_room(str(tmp_path), 10, False)


@pytest.mark.spark
@pytest.mark.skipif(shutil.which("java") is None, reason="the Spark engine needs Java")
def test_a_full_spark_store_stops_cleanly_and_resumes(spark_sc, tmp_path, monkeypatch, capsys):
    from kmc.checker.partitioned import rows as spark_rows_store

    real = spark_rows_store.save_arrays
    saved = {"n": 0}

    def save(path, *arrays, **kw):
        saved["n"] += 1
        if saved["n"] > 3:  # the hand-over's third file: the disk is full
            raise OSError("51195 requested and 4592 written")
        return real(path, *arrays, **kw)

    monkeypatch.setattr(spark_rows_store, "save_arrays", save)
    spec, ck = SPECS / "le-data-loss.toml", tmp_path / "ck"
    code, out, err = run(capsys, "check", spec, "--engine", "spark", "--driver-level-limit", "5", "--no-progress",
                         "--no-trace", "--spark-store", tmp_path / "store", "--checkpoint", ck,
                         "--checkpoint-every", "0", "--json", tmp_path / "a.json")
    assert code == 4, err
    assert json.loads((tmp_path / "a.json").read_text())["stopped"] == "disk-full"
    lines = [line for line in err.splitlines() if line.startswith("kmc: stopped")]
    assert len(lines) == 1 and "is full" in lines[0] and "51195 requested and 4592 written" in lines[0]
    assert "Spark was" not in err
    assert os.listdir(tmp_path / "store") == []  # the store is removed
    monkeypatch.setattr(spark_rows_store, "save_arrays", real)
    code, out, err = run(capsys, "check", "--resume", ck, "--no-progress", "--no-trace", "--json", tmp_path / "b.json")
    whole = tmp_path / "whole.json"
    assert run(capsys, "check", spec, "--no-progress", "--no-trace", "--json", whole)[0] == code
    got, want = json.loads((tmp_path / "b.json").read_text()), json.loads(whole.read_text())
    for key in ("distinct_states", "states_generated", "depth"):
        assert got["stats"][key] == want["stats"][key], key


# -- stores that killed runs left ------------------------------------------------------------

def _dead_pid():
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_a_store_whose_owner_is_gone_is_removed_and_counted(tmp_path):
    import socket

    from kmc.checker.partitioned.rows import OWNER, RowsStore
    from kmc.checker.partitioned.rows_stale import clean_stale

    mine = RowsStore.create(tmp_path)  # this process: alive
    dead = tmp_path / "kmc-rows-dead"
    (dead / "seen" / "0000").mkdir(parents=True)
    (dead / "seen" / "0000" / "run-000001.npy").write_bytes(b"x" * (3 << 20))
    (dead / OWNER).write_text(f"{socket.gethostname()} {_dead_pid()} 12345\n")
    elsewhere = tmp_path / "kmc-rows-elsewhere"  # a shared store of a run on another host
    elsewhere.mkdir()
    (elsewhere / OWNER).write_text("another-host 1 1\n")
    old = tmp_path / "kmc-rows-old"  # an older kmc's store: no owner mark, idle for an hour
    (old / "seen").mkdir(parents=True)
    busy = tmp_path / "kmc-rows-busy"  # one an older kmc is still writing: not named
    (busy / "seen").mkdir(parents=True)
    for path in (old / "seen", old):
        os.utime(path, (time.time() - 3600, time.time() - 3600))
    line = clean_stale(str(tmp_path))
    assert not dead.exists() and Path(mine.root).exists() and elsewhere.exists() and old.exists() and busy.exists()
    assert str(busy) not in line
    assert line.startswith(f"removed 1 Spark store of runs that were killed (3M freed in {tmp_path})")
    assert str(old) in line and "without an owner mark" in line
    again = clean_stale(str(tmp_path))
    assert again == f"1 store without an owner mark (an older kmc's; remove it if no run uses it): {old}"
    shutil.rmtree(old)
    assert clean_stale(str(tmp_path)) is None


def test_a_reused_pid_is_not_the_owner(tmp_path):
    import socket

    from kmc.checker.partitioned.rows import OWNER
    from kmc.checker.partitioned.rows_stale import clean_stale

    store = tmp_path / "kmc-rows-reused"
    store.mkdir()
    (store / OWNER).write_text(f"{socket.gethostname()} {os.getpid()} 1\n")  # this pid, another start time
    assert "removed 1 Spark store" in clean_stale(str(tmp_path)) and not store.exists()
