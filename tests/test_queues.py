"""The frontier queues (``checker.core.parts.FrontierQueue``): the contract every queue must
pass, the disk queue under every local engine, its checkpoints (and an older checkpoint's
frontier of row arrays), and a full disk while it writes.

The contract (``test_contract_*``) runs over ``QUEUES`` and over two kinds of rows (fixed
width, as a batch kernel's, and Python states, as ``checker.core.states_kernel``'s); a new
queue is one more entry there. Each queue is compared with plain lists of the blocks
appended, never with another queue.
"""

from __future__ import annotations

import errno
import json
import os
import pickle
from pathlib import Path

import numpy as np
import pytest

from kmc.checker.stores import disk_files
from kmc.checker.stores.disk import DiskStore
from kmc.checker.core.parts import ResourceStop
from kmc.checker.engines import make_engine
from kmc.checker.stores.frontier import DiskQueue, MemoryQueue, MemorySaved
from kmc.checker.core.options import Options
from kmc.checker.core.parts import FrontierQueue
from kmc.checker.stores.seen import CompactSeenSet
from kmc.model.spec import load_spec

from test_checkpoint import SPECS, comparable, kmc_run, reference
from test_stores import summary


class Parts:
    """A queue and the store it goes with (a disk queue's files are in its store's directory)."""

    def __init__(self, kind, tmp):
        self.kind, self.tmp = kind, tmp
        self.store = CompactSeenSet() if kind == "memory" else DiskStore(tmp)
        self.queue: FrontierQueue = MemoryQueue() if kind == "memory" else DiskQueue(self.store.root)

    def files(self):
        if self.kind == "memory":
            return []
        return sorted(p for p in Path(self.store.root).iterdir() if p.name.startswith("q-"))

    def close(self):
        if self.kind == "disk":
            self.store.close()


QUEUES = ("memory", "disk")


def fixed_rows(start, n):
    """``n`` rows of five ``uint16`` columns, numbered from ``start`` (each row unique)."""
    base = np.arange(start, start + n, dtype=np.uint16)[:, None]
    return base * np.uint16(7) + np.arange(5, dtype=np.uint16)


def state_rows(start, n):
    """``n`` rows of Python states (a one-dimensional ``object`` array)."""
    out = np.empty(n, dtype=object)
    for i in range(n):
        out[i] = ("state", start + i, frozenset({start + i, -1}))
    return out


ROWS = {"fixed": fixed_rows, "states": state_rows}


@pytest.fixture(params=QUEUES)
def parts(request, tmp_path):
    made = Parts(request.param, tmp_path)
    yield made
    made.close()


@pytest.fixture(params=sorted(ROWS))
def rows_of(request):
    return ROWS[request.param]


def same(got, want):
    """The same rows in the same order (of either kind)."""
    assert got.dtype == want.dtype and got.shape == want.shape
    assert got.tolist() == want.tolist()


def test_contract_order_and_chunks_across_blocks(parts, rows_of):
    q = parts.queue
    assert isinstance(q, FrontierQueue)
    assert len(q) == 0 and q.next_len() == 0 and list(q.chunks(4)) == []
    sizes = [3, 0, 5, 1, 7]  # 16 rows in blocks that no chunk boundary follows; one block empty
    blocks, start = [], 0
    for n in sizes:
        blocks.append(rows_of(start, n))
        start += n
        q.append(blocks[-1])
    assert q.next_len() == 16 and len(q) == 0  # appended to the next level
    q.swap()
    assert len(q) == 16 and q.next_len() == 0
    want = np.concatenate(blocks)
    for size, lengths in [(4, [4, 4, 4, 4]), (5, [5, 5, 5, 1]), (16, [16]), (100, [16]), (1, [1] * 16)]:
        got = list(q.chunks(size))
        assert [len(c) for c in got] == lengths
        same(np.concatenate(got), want)
    assert len(q) == 16  # reading does not consume


def test_contract_swap_drops_the_finished_level_and_rollback_the_next(parts, rows_of):
    q = parts.queue
    q.append(rows_of(0, 6))
    q.swap()
    q.append(rows_of(100, 4))
    q.append(rows_of(104, 2))
    assert (len(q), q.next_len()) == (6, 6)
    q.rollback()  # the next level dropped, the current one stands
    assert (len(q), q.next_len()) == (6, 0)
    same(np.concatenate(list(q.chunks(4))), rows_of(0, 6))
    if parts.kind == "disk":
        assert len(parts.files()) == 1
    q.append(rows_of(200, 3))  # the level again, as a rerun after a stop finds it
    q.swap()  # the level of six is finished: dropped
    same(np.concatenate(list(q.chunks(2))), rows_of(200, 3))
    if parts.kind == "disk":
        files = parts.files()
        assert len(files) == 1 and q.disk_bytes() == files[0].stat().st_size
    q.swap()  # an empty level follows
    assert len(q) == 0 and list(q.chunks(3)) == [] and q.next_len() == 0
    if parts.kind == "disk":
        assert parts.files() == [] and q.disk_bytes() == 0
    q.append(rows_of(300, 2))
    q.clear()
    assert (len(q), q.next_len()) == (0, 0) and parts.files() == []


def test_contract_snapshot_and_restore(parts, rows_of, tmp_path):
    q = parts.queue
    q.append(rows_of(0, 5))
    q.append(rows_of(5, 4))
    q.swap()
    q.append(rows_of(50, 3))  # a next level in progress: not part of the boundary's snapshot
    q.rollback()
    beside = parts.store.saved()
    saved = pickle.loads(pickle.dumps(q.saved(beside)))["queue"]
    assert saved.kind == parts.kind
    # the original goes on and drops its level: the saved one does not change with it
    q.append(rows_of(60, 2))
    q.swap()
    for kind in QUEUES:  # into a queue of the same kind (linked) and of the other (moved)
        other = Parts(kind, tmp_path / f"into-{kind}")
        restored = other.queue.restored(saved, None)
        assert restored.kind == kind and (len(restored), restored.next_len()) == (9, 0)
        same(np.concatenate(list(restored.chunks(4))), rows_of(0, 9))
        restored.append(rows_of(9, 1))  # and it goes on as a queue
        restored.swap()
        same(np.concatenate(list(restored.chunks(4))), rows_of(9, 1))
        other.close()


def test_contract_an_empty_level_is_saved_and_restored(parts, tmp_path):
    q = parts.queue
    saved = pickle.loads(pickle.dumps(q.saved(parts.store.saved())))["queue"]
    for kind in QUEUES:
        other = Parts(kind, tmp_path / f"empty-{kind}")
        restored = other.queue.restored(saved, None)
        assert len(restored) == 0 and list(restored.chunks(8)) == []
        other.close()


def test_contract_bytes_in_memory_and_on_disk(parts):
    q = parts.queue
    rows = fixed_rows(0, 1000)  # 10,000 bytes
    q.append(rows[:400])
    q.append(rows[400:])
    q.swap()
    if parts.kind == "memory":
        assert q.nbytes() == rows.nbytes
        assert (q.disk_bytes(), q.peak_disk_bytes(), q.written_bytes()) == (0, 0, 0)
        return
    assert q.nbytes() == 0 and q.disk_bytes() == rows.nbytes == sum(p.stat().st_size for p in parts.files())
    q.append(rows[:10])
    q.swap()  # the level of 1,000 rows dropped
    assert q.disk_bytes() == rows[:10].nbytes
    assert q.peak_disk_bytes() == rows.nbytes + rows[:10].nbytes and q.written_bytes() == rows.nbytes + rows[:10].nbytes


def test_an_older_checkpoint_s_frontier_of_row_arrays_is_read():
    blocks = (fixed_rows(0, 3), fixed_rows(3, 2))
    restored = MemoryQueue().restored(MemorySaved(blocks))
    same(np.concatenate(list(restored.chunks(10))), fixed_rows(0, 5))


# -- a full disk while the queue writes -------------------------------------------------------


def _full_on_queue(after=1):
    """A ``write_bytes`` that finds the disk full at the queue's ``after``-th write and on."""
    real = disk_files.write_bytes
    count = [0]

    def write(path, data, append=False):
        if os.path.basename(path).startswith("q-"):
            count[0] += 1
            if count[0] >= after:
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), path)
        real(path, data, append)

    return write


def test_a_full_disk_while_the_queue_writes_is_a_resource_stop(tmp_path, monkeypatch):
    made = Parts("disk", tmp_path)
    q = made.queue
    q.append(fixed_rows(0, 4))
    q.swap()
    monkeypatch.setattr(disk_files, "write_bytes", _full_on_queue())
    with pytest.raises(ResourceStop) as stop:
        q.append(fixed_rows(4, 4))
    assert stop.value.reason == "disk-full"
    assert stop.value.detail.startswith(f"the disk store {made.store.root} is full")
    q.rollback()  # what the driver does: the level dropped, the last boundary stands
    assert q.next_len() == 0 and len(made.files()) == 1
    same(np.concatenate(list(q.chunks(3))), fixed_rows(0, 4))
    made.close()


HW_UNCLEAN = SPECS / "hw-unclean.toml"


@pytest.mark.slow
def test_a_full_disk_under_the_queue_stops_cleanly_and_resumes(tmp_path, monkeypatch, capsys):
    from kmc.app.cli import main

    ck = tmp_path / "ck"
    monkeypatch.setattr(disk_files, "write_bytes", _full_on_queue(after=5))  # a few levels in, before a violation
    code = main(["check", str(HW_UNCLEAN), "--store", "disk", "--checkpoint", str(ck), "--checkpoint-every", "0",
                 "--no-progress", "--no-trace", "--json", str(tmp_path / "a.json")])
    _, err = capsys.readouterr()
    monkeypatch.undo()
    assert code == 4, err
    doc = json.loads((tmp_path / "a.json").read_text())
    assert doc["stopped"] == "disk-full" and doc["complete"] is False and doc["stats"]["depth"] > 2
    assert err.strip().splitlines()[0].startswith("kmc: stopped: the disk store ") and "Traceback" not in err
    code, _, err = kmc_run("check", "--resume", ck, "--no-progress", "--json", tmp_path / "b.json")
    assert code == 1, err
    assert comparable(json.loads((tmp_path / "b.json").read_text())) == comparable(reference(HW_UNCLEAN))


# -- the engines: the disk queue under every local engine, and its checkpoints ---------------


def disk_engine(spec, per_state, tmp_path, on_level=None, root=None):
    options = Options(keep_going=spec.keep_going, max_depth=spec.max_depth, store="disk",
                      store_dir=str(tmp_path / "stores"))
    return make_engine(spec.model(), spec.properties(), options, per_state=per_state, on_level=on_level,
                       data_root=root)


@pytest.mark.parametrize("per_state", [False, True], ids=["batch", "per-state"])
def test_a_checkpoint_with_the_disk_queue_resumes_identically(per_state, tmp_path):
    spec = load_spec(HW_UNCLEAN)
    whole = disk_engine(spec, per_state, tmp_path)
    want = whole.run()
    assert whole.search.queue.kind == "disk" and whole.search.queue.written_bytes() > 0
    whole.search.seen.close()

    snaps = {}

    def keep(e):  # the snapshot at depth 4, pickled as a checkpoint writes it
        if e.stats.depth == 4:
            snaps["at 4"] = pickle.dumps(e.snapshot())

    first = disk_engine(spec, per_state, tmp_path, keep, root=tmp_path / "ck")
    assert summary(first.run()) == summary(want)
    snap = pickle.loads(snaps["at 4"])
    assert "frontier" not in snap and snap["queue"].kind == "disk" and snap["queue"].count == snap["stats"]["levels"][3]
    first.search.seen.close()  # the run's own files are gone: the checkpoint's links stand

    resumed = disk_engine(spec, per_state, tmp_path)
    resumed.restore(snap, tmp_path / "ck")
    assert resumed.search.size() == snap["stats"]["levels"][3]
    assert summary(resumed.run()) == summary(want)
    resumed.search.seen.close()


def test_an_older_checkpoint_s_frontier_resumes_on_the_disk_queue(tmp_path):
    spec = load_spec(HW_UNCLEAN)
    whole = disk_engine(spec, False, tmp_path)
    want = whole.run()
    whole.search.seen.close()
    # a checkpoint of an older kmc: the store in memory, the frontier a list of row arrays
    early = make_engine(spec.model(), spec.properties(), Options(keep_going=spec.keep_going, max_depth=4))
    assert early.run().stopped == "max-depth"
    old = early.snapshot()
    level = np.concatenate(old.pop("queue").rows)
    assert len(level) == old["stats"]["levels"][-1] > 10
    old["frontier"] = [level[:10], level[10:]]  # the level in arrays, as it was found
    resumed = disk_engine(spec, False, tmp_path)
    resumed.restore(pickle.loads(pickle.dumps(old)))
    assert resumed.search.queue.kind == "disk"
    assert resumed.search.size() == sum(len(a) for a in old["frontier"]) == old["stats"]["levels"][-1]
    assert summary(resumed.run()) == summary(want)
    resumed.search.seen.close()
