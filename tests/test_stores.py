"""The stores (``checker.core.parts.Store``): the contract every store must pass, and every
local engine with every store giving the same results.

The contract (``test_contract_*``) runs over ``STORES``; a new store is one more entry
there. It compares each store with a naive oracle (a dict from fingerprint to number,
parent and choice), never with another store. The engine rows compare every local engine
on every store with the pinned numbers (tests/pins.py) and with the per-state engine's
own run (with the disk store, its frontier is on disk too: ``checker.stores.frontier.DiskQueue``,
whose own contract is tests/test_queues.py). The end-to-end rows kill a run, resume it, and fill the disk through the one
seam the disk store writes through (``checker.stores.disk_files.write_bytes``).
"""

from __future__ import annotations

import errno
import json
import os
import pickle
import signal
from pathlib import Path

import numpy as np
import pytest

from kmc.checker.stores import registry

from kmc.checker.checkpoints import file as checkpoint
from kmc.checker.stores import disk as disk_store
from kmc.checker.stores import disk_files, disk_runs
from kmc.checker.stores.disk import DiskStore
from kmc.checker.engines import make_engine
from kmc.checker.core.options import Options
from kmc.checker.core.parts import Store, path_to
from kmc.checker.stores.seen import CompactSeenSet, PrefixFilter
from kmc.model.spec import load_spec

import pins
from test_checkpoint import SPECS, comparable, kmc_at_level, kmc_run, one_line_error, reference

STORES = {
    "memory": lambda tmp: CompactSeenSet(),
    # 2 bits: four buckets, so that small tests fill every bucket with several runs
    "disk": lambda tmp: DiskStore(tmp, bits=2),
}


class Oracle:
    """What a store must answer, kept naively: fingerprint -> number, and per number its
    parent and choice; levels closed by end_level."""

    def __init__(self):
        self.numbers, self.records, self.boundary = {}, [], 0

    def add(self, fps, parents, choices):
        new = []
        for fp, parent, choice in zip(fps, parents, choices):
            fresh = fp not in self.numbers
            if fresh:
                self.numbers[fp] = len(self.records)
                self.records.append((parent, choice))
            new.append(fresh)
        return new

    def end_level(self):
        self.boundary = len(self.records)

    def rollback(self):
        for fp in [fp for fp, n in self.numbers.items() if n >= self.boundary]:
            del self.numbers[fp]
        del self.records[self.boundary:]


def random_block(rng, known, size):
    """A block mixing new fingerprints, ones stored before and repeats inside it."""
    fresh = rng.integers(0, 1 << 63, size, dtype=np.uint64) * np.uint64(2) + np.uint64(rng.integers(0, 2))
    old = list(known)
    take = [old[i] for i in rng.integers(0, len(old), min(len(old), size // 3))] if old else []
    block = np.concatenate([fresh, np.array(take, dtype=np.uint64), fresh[: size // 5]])
    rng.shuffle(block)
    return block


def agree(store: Store, oracle: Oracle):
    assert len(store) == len(oracle.records)
    fps = np.array(sorted(oracle.numbers), dtype=np.uint64)
    assert store.contains_sorted(fps).all()
    for fp, n in oracle.numbers.items():
        assert store.parent_and_choice(n) == oracle.records[n], (fp, n)
    assert sorted(store.fingerprints().tolist()) == sorted(oracle.numbers)
    parents, choices = store.parents_and_choices()
    assert parents.tolist() == [p for p, _ in oracle.records]
    assert choices.tolist() == [c for _, c in oracle.records]
    # fingerprints never stored: none is found (odd and even, every bucket)
    absent = np.array(sorted(set(range(1, 1 << 20, 4099)) - set(oracle.numbers)), dtype=np.uint64)
    absent = np.sort(np.concatenate([absent, absent | np.uint64(0xC000000000000000)]))
    assert not store.contains_sorted(absent).any()


@pytest.fixture(params=sorted(STORES))
def make(request, tmp_path):
    made = []

    def new():
        store = STORES[request.param](tmp_path)
        made.append(store)
        return store

    yield new
    for store in made:
        if hasattr(store, "close"):
            store.close()


def test_contract_new_and_old_masks_numbering_and_records(make):
    store, oracle = make(), Oracle()
    assert isinstance(store, Store)
    assert len(store) == 0 and not store.contains_sorted(np.zeros(0, dtype=np.uint64)).any()
    assert store.add(np.zeros(0, dtype=np.uint64), np.zeros(0), np.zeros(0)).tolist() == []  # an empty block
    # hand-worked: 7 new, 3 repeated in the block (the first of each is stored), numbered in block order
    block = np.array([70, 10, 70, 30, 10, 20, 5, 30, 1 << 63, 99], dtype=np.uint64)
    new = store.add(block, np.full(10, -1), np.arange(10))
    assert new.tolist() == [True, True, False, True, False, True, True, False, True, True]
    assert [store.parent_and_choice(i) for i in range(7)] == [(-1, 0), (-1, 1), (-1, 3), (-1, 5), (-1, 6), (-1, 8),
                                                              (-1, 9)]
    store.end_level()
    new = store.add(np.array([5, 6, 99, 6, 7], dtype=np.uint64), np.array([0, 1, 2, 3, 4]), np.array([7, 8, 9, 10, 11]))
    assert new.tolist() == [False, True, False, False, True]  # stored in an earlier block: old
    assert store.parent_and_choice(7) == (1, 8) and store.parent_and_choice(8) == (4, 11)
    assert store.parent_and_choice(4) == (-1, 6)
    assert path_to(store, 8) == (6, [11])  # state 8's parent is 4, the initial state of index 6


def test_contract_many_levels_match_the_oracle(make):
    rng = np.random.default_rng(34)
    store, oracle = make(), Oracle()
    for level in range(14):
        for _ in range(3):
            block = random_block(rng, oracle.numbers, int(rng.integers(0, 300)) + (level * 40))
            parents = rng.integers(-1, max(1, len(oracle.records)), len(block))
            choices = rng.integers(0, 256, len(block))
            want = oracle.add(block.tolist(), parents.tolist(), choices.tolist())
            assert store.add(block, parents, choices).tolist() == want
        store.end_level()
        oracle.end_level()
    agree(store, oracle)
    if store.kind == "disk":
        bucket_runs = [len(b) for b in store.buckets]
        assert all(bucket_runs) and max(bucket_runs) > 1  # several runs, every bucket
        assert max(bucket_runs) <= 14  # merged as they grow


def test_contract_sorted_adds_number_in_the_given_order(make):
    store = make()
    fps = np.array([3, 8, 40, 41], dtype=np.uint64)
    assert not store.contains_sorted(fps).any()
    store.add_sorted(fps, np.array([-1, -1, -1, -1]), np.array([2, 0, 3, 1]))  # numbered 0..3 in this order
    store.end_level()
    assert [store.parent_and_choice(i) for i in range(4)] == [(-1, 2), (-1, 0), (-1, 3), (-1, 1)]
    assert store.contains_sorted(np.array([2, 3, 40, 42], dtype=np.uint64)).tolist() == [False, True, True, False]


def test_contract_fingerprints_alike_but_in_other_buckets(make):
    store = make()
    low = np.uint64(0x123456789)
    fps = np.array([low | np.uint64(b << 60) for b in range(16)], dtype=np.uint64)
    store.add(fps[::2], np.full(8, -1), np.zeros(8))  # the even high nibbles
    store.end_level()
    store.add(np.array([7], dtype=np.uint64), np.array([0]), np.array([1]))  # writes the level out (disk)
    store.end_level()
    assert store.contains_sorted(fps).tolist() == [i % 2 == 0 for i in range(16)]


def test_contract_older_levels_stand_still_while_a_level_is_expanded(make):
    """After ``begin_level`` the states of closed levels answer ``contains_older_sorted``
    and this level's ``contains_level_sorted``, and the first do not change while the level
    grows: a process forked at the level's start gets the same answers as the store does
    after the level has stored many more (the expansion workers rely on it)."""
    import multiprocessing

    rng = np.random.default_rng(17)
    store, oracle = make(), Oracle()
    for level in range(5):
        store.begin_level()
        for _ in range(3):
            block = random_block(rng, oracle.numbers, 300 + 50 * level)
            parents = rng.integers(-1, max(1, len(oracle.records)), len(block))
            oracle.add(block.tolist(), parents.tolist(), [1] * len(block))
            store.add(block, parents, np.ones(len(block)))
        store.end_level()
        oracle.end_level()
    older = np.array(sorted(oracle.numbers), dtype=np.uint64)
    store.begin_level()
    ctx = multiprocessing.get_context("fork")

    def child():
        asks.recv()  # after the parent's level has grown
        answers_in.send((store.contains_older_sorted(probe).tolist(), store.contains_level_sorted(probe).tolist()))

    answers, answers_in = ctx.Pipe(duplex=False)
    asks, asks_in = ctx.Pipe(duplex=False)
    newer = np.sort(rng.integers(0, 1 << 63, 2000, dtype=np.uint64) * np.uint64(2) + np.uint64(1))
    newer = newer[~np.isin(newer, older)]
    probe = np.sort(np.concatenate([older[::3], newer[::2]]))
    proc = ctx.Process(target=child)
    proc.start()
    for part in np.array_split(newer, 4):  # the level grows in four blocks (a block may write runs out)
        assert store.add(part, np.zeros(len(part), dtype=np.int64), np.zeros(len(part))).all()
    asks_in.send(True)
    got = answers.recv()
    proc.join()
    in_older = np.isin(probe, older)
    assert store.contains_older_sorted(probe).tolist() == in_older.tolist() == got[0]
    assert store.contains_level_sorted(probe).tolist() == (~in_older).tolist()
    assert got[1] == [False] * len(probe)  # the child was forked before the level stored anything
    assert store.contains_sorted(probe).all()


def test_contract_rollback_to_the_level_boundary(make):
    rng = np.random.default_rng(5)
    store, oracle = make(), Oracle()
    for _ in range(4):
        block = random_block(rng, oracle.numbers, 200)
        parents, choices = np.zeros(len(block), dtype=np.int64), np.ones(len(block), dtype=np.int64)
        oracle.add(block.tolist(), parents.tolist(), choices.tolist())
        store.add(block, parents, choices)
        store.end_level()
        oracle.end_level()
    before = len(store)
    dropped = random_block(rng, oracle.numbers, 300)
    oracle.add(dropped.tolist(), [2] * len(dropped), [3] * len(dropped))
    store.add(dropped, np.full(len(dropped), 2), np.full(len(dropped), 3))
    assert len(store) > before
    store.rollback()
    oracle.rollback()
    assert len(store) == before
    agree(store, oracle)
    # the dropped level comes again, with the same numbers
    again = oracle.add(dropped.tolist(), [4] * len(dropped), [5] * len(dropped))
    assert store.add(dropped, np.full(len(dropped), 4), np.full(len(dropped), 5)).tolist() == again
    store.end_level()
    oracle.end_level()
    agree(store, oracle)


def test_contract_snapshot_and_restore(make, tmp_path):
    rng = np.random.default_rng(9)
    store, oracle = make(), Oracle()
    for _ in range(6):
        block = random_block(rng, oracle.numbers, 250)
        parents = rng.integers(-1, max(1, len(oracle.records)), len(block))
        oracle.add(block.tolist(), parents.tolist(), [1] * len(block))
        store.add(block, parents, np.ones(len(block)))
        store.end_level()
        oracle.end_level()
    parts = pickle.loads(pickle.dumps(store.saved()))
    fresh = make()
    restored = fresh.restored(parts["seen"], None)
    agree(restored, oracle)
    assert restored.kind == store.kind
    # the original goes on: the restored copy does not change with it
    more = random_block(rng, oracle.numbers, 100)
    store.add(more, np.zeros(len(more)), np.zeros(len(more)))
    store.end_level()
    agree(restored, oracle)
    # and the restored one goes on as the oracle does
    want = oracle.add(more.tolist(), [0] * len(more), [0] * len(more))
    assert restored.add(more, np.zeros(len(more)), np.zeros(len(more))).tolist() == want
    restored.end_level()
    oracle.end_level()
    agree(restored, oracle)
    if hasattr(restored, "close"):
        restored.close()


def test_contract_bytes_in_memory_and_on_disk(make):
    store = make()
    n = 5000
    fps = np.arange(1, n + 1, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15)
    store.add(fps, np.full(n, -1), np.zeros(n))
    store.end_level()
    store.add(fps[:10] + np.uint64(1), np.zeros(10), np.zeros(10))  # writes the first level out (disk)
    store.end_level()
    assert store.nbytes() > 0
    if store.kind == "memory":
        assert store.nbytes() >= 13 * n
        assert (store.disk_bytes(), store.peak_disk_bytes(), store.written_bytes()) == (0, 0, 0)
        return
    files = [p for p in Path(store.root).iterdir() if p.is_file() and p.name != disk_store.MARK]
    on_disk = sum(p.stat().st_size for p in files)
    assert store.disk_bytes() == on_disk == 13 * (n + 10) - 8 * 10  # the newest level is still in memory
    assert store.written_bytes() >= on_disk and store.peak_disk_bytes() >= on_disk
    assert store.nbytes() < 8 * n  # the fingerprints written out left memory


def test_a_memory_store_moves_into_a_disk_store(tmp_path):
    rng = np.random.default_rng(3)
    memory, oracle = CompactSeenSet(), Oracle()
    for _ in range(3):
        block = random_block(rng, oracle.numbers, 100)
        parents = rng.integers(-1, max(1, len(oracle.records)), len(block))
        oracle.add(block.tolist(), parents.tolist(), [2] * len(block))
        memory.add(block, parents, np.full(len(block), 2))
        memory.end_level()
        oracle.end_level()
    disk = DiskStore(tmp_path, bits=3)
    moved = disk.restored(pickle.loads(pickle.dumps(memory.saved()))["seen"])
    assert moved is disk and moved.kind == "disk"
    agree(moved, oracle)
    moved.close()


def test_the_disk_store_removes_its_directory_and_stale_ones(tmp_path):
    store = DiskStore(tmp_path)
    root = Path(store.root)
    assert root.is_dir() and root.parent == tmp_path
    store.close()
    assert not root.exists()
    stale = tmp_path / f"{disk_store.PREFIX}dead"
    stale.mkdir()
    from kmc.checker.base.owner import owner_line

    host, namespace, _pid, started = owner_line().split()
    (stale / disk_store.MARK).write_text(f"{host} {namespace} 999999999 {started}\n")  # no such process, here
    foreign = tmp_path / f"{disk_store.PREFIX}foreign"
    foreign.mkdir()  # no mark: not kmc's
    registry.new_store("disk", None, tmp_path).close()
    assert not stale.exists() and foreign.exists()


def test_a_disk_run_finds_each_key_through_its_index_like_a_set(tmp_path):
    """A run of many index blocks (``disk_runs.STRIDE`` fingerprints each), asked about
    its first and last fingerprints, each block's first and last, keys below, above and
    between them: the answers are those of a Python set."""
    rng = np.random.default_rng(256)
    stride = disk_runs.STRIDE
    values = np.unique(rng.integers(1, 1 << 62, 7 * stride + 37, dtype=np.uint64) * np.uint64(2))
    path = tmp_path / "fp-run.u64"
    values.tofile(path)
    run = disk_runs.Run(path.name, len(values))
    present = set(values.tolist())
    edges = [values[i] for k in range(len(values) // stride + 1) for i in (k * stride - 1, k * stride) if 0 <= i < len(values)]
    keys = np.concatenate([
        values, np.array(edges, dtype=np.uint64), values[::7] + np.uint64(1), values[::5] - np.uint64(1),
        np.array([0, 1, values[0] - 1, values[-1] + 1, (1 << 64) - 1], dtype=np.uint64),
        rng.integers(0, 1 << 63, 3000, dtype=np.uint64),
    ])
    keys = np.sort(keys)
    got = run.contains(str(tmp_path), keys)
    assert got.tolist() == [k in present for k in keys.tolist()]
    assert got.sum() > len(values) and not got.all()
    assert len(run.index) == -(-len(values) // stride)
    run.close()


def test_the_level_filter_never_misses_a_key_it_was_given():
    """The disk store's level filter (``checker.stores.seen.PrefixFilter``) grows while keys are
    added; every key added stays "maybe", and most keys never added read "no"."""
    rng = np.random.default_rng(8)
    f = PrefixFilter()
    added = []
    for size in (10, 1000, 40_000, 300_000):  # past its first size: it is rebuilt larger
        fps = np.unique(rng.integers(0, (1 << 64) - 1, size, dtype=np.uint64))
        added.append(fps)
        f.add(fps, added)
        everything = np.concatenate(added)
        assert f.maybe(everything).all()
    assert f.bits > PrefixFilter.MIN_BITS and f.nbytes == (1 << f.bits) // 8
    others = rng.integers(0, (1 << 64) - 1, 100_000, dtype=np.uint64)
    assert f.maybe(others).mean() < 2 / PrefixFilter.LOAD


# -- every local engine x every store: the same results ----------------------------------------

def summary(result):
    st = result.stats
    return (st.distinct, st.generated, st.depth, st.terminal, list(st.levels), dict(st.fired), dict(st.new),
            result.stopped, result.complete, {name: result.verdict(name) for name in result.checked},
            {k: (v.kind, v.explanation, v.path.init_index, v.path.choices, v.loop)
             for k, v in result.violations.items()})


def pinned(name):
    """The pinned row of a shipped spec, from whichever table of tests/pins.py holds it."""
    rows = [table[name] for table in vars(pins).values() if isinstance(table, dict) and name in table]
    assert rows, name
    return rows[0]


# a violation that stops the run, keep_going with two counterexamples, AlterPartition's
# kernel, an always-possibly property (the graph visitor), liveness (a lasso)
ENGINE_SPECS = ["hw-data-loss", "hw-unclean", "ap-c1", "avail-c2", "live-c2"]


@pytest.mark.parametrize("name", ENGINE_SPECS)
@pytest.mark.parametrize("per_state, store", [(False, "memory"), (False, "disk"), (True, "disk")],
                         ids=["batch-memory", "batch-disk", "per-state-disk"])
def test_every_local_engine_on_every_store_gives_the_same_result(name, per_state, store, explorations, tmp_path):
    if per_state and name != "hw-data-loss" and os.environ.get("KMC_SLOW") != "1":
        pytest.skip("the per-state path on the disk store with another spec: set KMC_SLOW=1")
    spec, model, want = explorations[name]  # the per-state engine, in memory (the reference)
    options = Options(keep_going=spec.keep_going, max_depth=spec.max_depth, max_states=spec.max_states,
                      store=store, store_dir=str(tmp_path))
    engine = make_engine(model, spec.properties(), options, per_state=per_state)
    assert engine.search.seen.kind == store
    got = engine.run()
    assert summary(got) == summary(want)
    pin = pinned(name)
    assert (got.stats.distinct, got.stats.generated, got.stats.depth) == (pin.distinct, pin.generated, pin.depth)
    queue = engine.search.queue  # the frontier queue that goes with the store (checker.stores.frontier)
    assert queue.kind == store
    if store == "disk":
        seen = engine.search.seen
        assert seen.written_bytes() <= 3 * 13 * len(seen) + 8 * 4 * 64  # at most 3x the final store
        # every stored state went through the queue's files once, and the levels expanded are gone
        layout = queue.layout
        if per_state:
            assert layout.dtype is None and queue.written_bytes() > 8 * pin.distinct  # pickled blocks
        else:
            row_bytes = np.dtype(layout.dtype).itemsize * int(np.prod(layout.shape))
            assert queue.written_bytes() == row_bytes * pin.distinct
        assert queue.disk_bytes() < queue.written_bytes() and queue.nbytes() == 0
        seen.close()
        assert not any(tmp_path.iterdir())


# -- end to end: kill and resume, a full disk, the memory ceiling --------------------------------

HW_UNCLEAN = SPECS / "hw-unclean.toml"


@pytest.mark.slow
@pytest.mark.parametrize("store, path", [("memory", []), ("disk", []), pytest.param("disk", ["--per-state"], marks=pytest.mark.skipif(
    os.environ.get("KMC_SLOW") != "1", reason="a third killed run: set KMC_SLOW=1"))],
                         ids=["memory", "disk", "disk-per-state"])
def test_sigkill_then_resume_with_each_store(tmp_path, store, path):
    ck = tmp_path / "ck"
    proc = kmc_at_level("check", HW_UNCLEAN, "--store", store, *path, "--checkpoint", ck, "--checkpoint-every", "0",
                        "--no-progress", depth=9, signals=("KILL",))
    proc.communicate(timeout=120)
    assert proc.returncode == -signal.SIGKILL
    assert checkpoint.read_header(ck).get("store", "memory") == store
    # (resumed without --per-state: the checkpoint's path goes on)
    code, out, err = kmc_run("check", "--resume", ck, "--no-progress", "--json", tmp_path / "r.json")
    assert code == 1, err  # hw-unclean: CommittedNeverLost and LogsNeverDiverge fail
    doc = json.loads((tmp_path / "r.json").read_text())
    assert (doc["stats"]["kernel_cross_checked"] == 0) == bool(path)  # the per-state path has no kernel to compare
    assert comparable(json.loads((tmp_path / "r.json").read_text())) == comparable(reference(HW_UNCLEAN))
    assert not list(ck.glob(f"{disk_store.PREFIX}*"))  # the killed run's store is gone, and the resumed one's
    if store == "disk":
        assert len(list(ck.glob("level-*"))) == 1  # the final checkpoint's files only


def test_a_disk_checkpoint_is_not_resumed_in_memory(tmp_path):
    ck = tmp_path / "ck"
    code, _, err = kmc_run("check", HW_UNCLEAN, "--store", "disk", "--max-depth", "3", "--checkpoint", ck,
                           "--no-progress")
    assert code == 0, err
    code, _, err = kmc_run("check", "--resume", ck, "--store", "memory", "--no-progress")
    assert code == 2
    assert "--store disk" in one_line_error(err)


def test_a_per_state_checkpoint_in_memory_resumes_as_a_batch_one_does(tmp_path):
    """The per-state path keeps its states in the rows search's store: its checkpoint in
    memory resumes under --store disk as the batch path's does (the store stays as saved)."""
    for path in (["--per-state"], []):
        ck = tmp_path / f"ck{len(path)}"
        code, _, err = kmc_run("check", HW_UNCLEAN, *path, "--max-depth", "3", "--checkpoint", ck, "--no-progress")
        assert code == 0, err
        code, out, err = kmc_run("check", "--resume", ck, "--store", "disk", "--no-progress")
        assert code == 0, err
        assert "17 distinct states" in out


def _full_after(calls):
    """A ``write_bytes`` that finds the disk full from its ``calls``-th write on."""
    real = disk_files.write_bytes
    count = [0]

    def write(path, data, append=False):
        count[0] += 1
        if count[0] >= calls:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), path)
        real(path, data, append)

    return write


@pytest.mark.slow
def test_a_full_disk_stops_cleanly_and_resumes(tmp_path, monkeypatch, capsys):
    from kmc.app.cli import main

    ck = tmp_path / "ck"
    monkeypatch.setattr(disk_files, "write_bytes", _full_after(40))
    code = main(["check", str(HW_UNCLEAN), "--store", "disk", "--checkpoint", str(ck), "--checkpoint-every", "0",
                 "--no-progress", "--no-trace", "--json", str(tmp_path / "a.json")])
    out, err = capsys.readouterr()
    monkeypatch.undo()
    assert code == 4, err
    doc = json.loads((tmp_path / "a.json").read_text())
    assert doc["stopped"] == "disk-full" and doc["complete"] is False
    lines = [line for line in err.splitlines() if line.strip()]
    assert lines[0].startswith("kmc: stopped: the disk store ") and "is full" in lines[0]
    assert "--resume" in err and "--store-dir" in err and "Traceback" not in err
    code, out, err = kmc_run("check", "--resume", ck, "--no-progress", "--json", tmp_path / "b.json")
    assert code == 1, err
    assert comparable(json.loads((tmp_path / "b.json").read_text())) == comparable(reference(HW_UNCLEAN))


def test_a_disk_full_from_the_first_write_is_one_line(tmp_path, monkeypatch, capsys):
    from kmc.app.cli import main

    monkeypatch.setattr(disk_files, "write_bytes", _full_after(1))  # the initial states' records
    code = main(["check", str(HW_UNCLEAN), "--store", "disk", "--store-dir", str(tmp_path), "--no-progress"])
    _, err = capsys.readouterr()
    assert code == 4
    line = one_line_error(err)
    assert line.startswith("kmc: stopped: the disk store ") and "No space left on device" in line


@pytest.mark.slow
def test_the_memory_ceiling_names_the_disk_store_which_goes_on(tmp_path, monkeypatch, capsys):
    from kmc.app.cli import main
    from kmc.checker.core import driver

    ck = tmp_path / "ck"
    monkeypatch.setattr(driver, "resident_bytes", lambda: 1 << 40)  # past any ceiling at once
    code = main(["check", str(HW_UNCLEAN), "--max-memory", "128M", "--checkpoint", str(ck), "--no-progress"])
    _, err = capsys.readouterr()
    monkeypatch.undo()
    assert code == 4, err
    assert f"--resume {ck} --store disk" in err
    code, _, err = kmc_run("check", "--resume", ck, "--store", "disk", "--no-progress", "--json", tmp_path / "b.json")
    assert code == 1, err
    assert comparable(json.loads((tmp_path / "b.json").read_text())) == comparable(reference(HW_UNCLEAN))
    assert checkpoint.read_header(ck)["store"] == "disk"


# -- choosing a store ---------------------------------------------------------------------------

def test_a_spec_chooses_the_store_and_a_bad_one_is_refused_in_one_line(tmp_path):
    text = HW_UNCLEAN.read_text()
    good = tmp_path / "good.toml"
    good.write_text(text.replace("[check]", '[check]\nstore = "disk"') if "[check]" in text
                    else text + '\n[check]\nstore = "disk"\n')
    assert load_spec(good).store == "disk"
    bad = tmp_path / "bad.toml"
    bad.write_text(good.read_text().replace('store = "disk"', 'store = "ssd"'))
    code, _, err = kmc_run("check", bad, "--no-progress")
    assert code == 2
    line = one_line_error(err)
    assert str(bad) in line and "check.store" in line and "'disk'" in line


def test_the_disk_store_is_the_local_engine_s():
    code, _, err = kmc_run("check", HW_UNCLEAN, "--store", "disk", "--engine", "spark", "--no-progress")
    assert code == 2
    assert "--spark-store" in one_line_error(err)


def test_the_stores_agree_under_symmetry(tmp_path):
    spec = load_spec(SPECS / "le-three-replicas.toml")
    model = spec.model()
    results = [
        make_engine(model, spec.properties(), Options(symmetry=True, store=store, store_dir=str(tmp_path))).run()
        for store in ("memory", "disk")
    ]
    assert summary(results[0]) == summary(results[1])
    assert results[0].stats.distinct < pinned("le-three-replicas").distinct  # orbits: fewer states


def test_kmc_bench_compares_the_stores(tmp_path):
    code, out, err = kmc_run("bench", SPECS / "hw-data-loss.toml", "--compare-stores", "--json", tmp_path / "b.json")
    assert code == 0, err
    doc = json.loads((tmp_path / "b.json").read_text())
    memory, disk = doc["runs"]
    assert (memory["store"], disk["store"]) == ("memory", "disk") and doc["same"] is True
    pin = pinned("hw-data-loss")
    assert disk["distinct_states"] == pin.distinct and disk["states_generated"] == pin.generated
    # what it wrote: every state's 5-byte parent and choice, and fingerprints (of all but the
    # levels still in memory at the end), at most three times the 13 bytes a state it keeps
    assert 5 * pin.distinct < disk["disk_written_bytes"] <= 3 * 13 * pin.distinct
    assert 0 < disk["disk_peak_bytes"] <= 16 * pin.distinct
    assert "disk_peak_bytes" not in memory
    # the frontier's files (checker.stores.frontier.DiskQueue): every state's row written once, two levels at most kept
    assert 0 < disk["queue_disk_peak_bytes"] < disk["queue_written_bytes"]
    assert disk["queue_written_bytes"] % pin.distinct == 0 and "queue_written_bytes" not in memory
    assert "Both stores explored the same state space" in out
