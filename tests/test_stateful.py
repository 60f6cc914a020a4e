"""Hypothesis state machines for the stores and the checkpointer: random sequences of
operations against a plain Python model of what they must hold (cheap settings: a few
dozen short runs each)."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from kmc.checker.checkpoints import file as checkpoint
from kmc.checker.checkpoints import writer as checkpointer
from kmc.checker.stores.seen import CompactSeenSet
from kmc.checker.partitioned.rows import RowsStore, meta_name
from kmc.checker.partitioned.rows_read import load_arrays
from kmc.checker.partitioned.rows_write import save_arrays

CHEAP = settings(max_examples=25, stateful_step_count=15, deadline=None)
FPS = st.integers(min_value=0, max_value=2**64 - 1)


class CompactSeenSetMachine(RuleBasedStateMachine):
    """``CompactSeenSet``: membership, numbering, parents and choices, levels and rollback."""

    def __init__(self):
        super().__init__()
        self.seen = CompactSeenSet()
        self.states: list[tuple[int, int, int]] = []  # (fp, parent, choice) by number
        self.level_start = 0

    @rule(fps=st.lists(FPS, max_size=12, unique=True), data=st.data())
    def add(self, fps, data):
        parents = [data.draw(st.integers(-1, max(len(self.states) - 1, -1))) for _ in fps]
        choices = [data.draw(st.integers(0, 255)) for _ in fps]
        known = {fp for fp, _, _ in self.states}
        new = self.seen.add(np.array(fps, dtype=np.uint64), np.array(parents), np.array(choices))
        assert new.tolist() == [fp not in known for fp in fps]
        self.states += [(fp, p, c) for fp, p, c in zip(fps, parents, choices) if fp not in known]

    @rule()
    def end_level(self):
        self.seen.end_level()
        self.level_start = len(self.states)

    @rule()
    def rollback(self):
        self.seen.rollback()
        del self.states[self.level_start :]

    @rule(probe=FPS)
    def contains(self, probe):
        fps = [fp for fp, _, _ in self.states] + [probe]
        got = self.seen.contains(np.array(fps, dtype=np.uint64))
        assert got.tolist() == [True] * len(self.states) + [probe in fps[:-1]]

    @precondition(lambda self: self.states)
    @rule(data=st.data())
    def parent_and_choice(self, data):
        i = data.draw(st.integers(0, len(self.states) - 1))
        _, parent, choice = self.states[i]
        assert self.seen.parent_and_choice(i) == (parent, choice)

    @invariant()
    def size(self):
        assert len(self.seen) == len(self.states)


class DiskStoreMachine(CompactSeenSetMachine):
    """``checker.stores.disk.DiskStore`` (four buckets), by the same rules, its lookups
    through the protocol's ``contains_sorted``."""

    def __init__(self):
        RuleBasedStateMachine.__init__(self)
        from kmc.checker.stores.disk import DiskStore

        self.seen = DiskStore(bits=2)
        self.states = []
        self.level_start = 0

    def teardown(self):
        self.seen.close()

    @rule(probe=FPS)
    def contains(self, probe):
        fps = sorted({fp for fp, _, _ in self.states} | {probe})
        got = self.seen.contains_sorted(np.array(fps, dtype=np.uint64))
        known = {fp for fp, _, _ in self.states}
        assert got.tolist() == [fp in known for fp in fps]


class FileStoreMachine(RuleBasedStateMachine):
    """The Spark engine's file store: whole-file writes read back exactly (rows of bytes and
    rows of Python objects), parent pointers found by fingerprint, runs dropped."""

    def __init__(self):
        super().__init__()
        self.store = RowsStore.create()
        self.files: dict[str, list] = {}
        self.metas: dict[tuple[int, int], dict[int, tuple[int, int]]] = {}

    def teardown(self):
        self.store.remove()

    @rule(i=st.integers(0, 3), depth=st.integers(0, 3), fps=st.lists(FPS, max_size=10, unique=True))
    def save_run(self, i, depth, fps):
        path = self.store.run(i, depth)
        run = np.array(sorted(fps), dtype=np.uint64)
        self.store.save(path, run)
        self.files[path] = [run]

    @rule(i=st.integers(0, 3), depth=st.integers(0, 3))
    def drop_run(self, i, depth):
        path = self.store.run(i, depth)
        self.store.drop_run(i, depth)
        self.files.pop(path, None)
        assert not Path(self.store.root, path).exists()

    @rule(t=st.integers(0, 2), rows=st.lists(st.tuples(st.integers(0, 9), st.text(max_size=3)), max_size=6))
    def save_objects(self, t, rows):
        path = self.store.front(1, t, 0)
        keys = np.arange(len(rows), dtype=np.int64)
        objects = np.empty(len(rows), dtype=object)
        for k, r in enumerate(rows):
            objects[k] = r
        save_arrays((self.store.blobs, path), keys, objects)
        self.files[path] = [keys, objects]

    @rule(i=st.integers(0, 3), depth=st.integers(1, 3), data=st.data())
    def save_meta(self, i, depth, data):
        entries = data.draw(st.dictionaries(FPS, st.tuples(FPS, st.integers(0, 255)), max_size=8))
        fps = np.array(sorted(entries), dtype=np.uint64)
        parents = np.array([entries[int(fp)][0] for fp in fps], dtype=np.uint64)
        choices = np.array([entries[int(fp)][1] for fp in fps], dtype=np.int16)
        save_arrays((self.store.blobs, meta_name(i, depth)), fps, parents, choices)
        self.metas[(i, depth)] = {fp: (p, c) for fp, (p, c) in entries.items()}

    @precondition(lambda self: any(self.metas.values()))
    @rule(data=st.data())
    def parent(self, data):
        (i, depth), entries = data.draw(st.sampled_from([kv for kv in self.metas.items() if kv[1]]))
        fp = data.draw(st.sampled_from(sorted(entries)))
        assert self.store.parent(i, depth, fp) == entries[fp]

    @invariant()
    def files_read_back(self):
        for path, arrays in self.files.items():
            got = load_arrays((self.store.blobs, path), len(arrays))
            for a, b in zip(got, arrays):
                assert a.dtype == b.dtype and a.tolist() == b.tolist()


class _Engine:
    def __init__(self):
        self.stats = {"depth": 1, "distinct": 1, "generated": 1}
        self.found: dict = {}

    def snapshot(self):
        return {"engine": "local", "stats": dict(self.stats), "found": dict(self.found), "frontier": [],
                "seen": {}}  # fmt: skip

    def committed(self, snapshot):
        pass


RUN = {"kmc_version": "0", "spec_sha256": "0" * 64, "spec_path": "spec.toml", "properties": ["P"],
       "options": {"max_depth": None, "keep_going": False}, "limits": {}}  # fmt: skip


class CheckpointerMachine(RuleBasedStateMachine):
    """The checkpointer: a checkpoint is written when one is due (or on ``save``), never
    twice for one level, and reads back as the last snapshot written."""

    def __init__(self):
        super().__init__()
        self.root = Path(tempfile.mkdtemp(prefix="kmc-stateful-"))
        self.now = 0.0
        self.engine = _Engine()
        self.writer = checkpointer.Checkpointer(self.root / "ck", RUN, every=10.0, clock=lambda: self.now)
        self.writer.__enter__()
        self.last_written = None

    def teardown(self):
        self.writer.__exit__()
        shutil.rmtree(self.root, ignore_errors=True)

    @rule(states=st.integers(1, 50), violation=st.booleans())
    def level(self, states, violation):
        s = self.engine.stats
        s["depth"] += 1
        s["distinct"] += states
        s["generated"] += 2 * states
        if violation:
            self.engine.found.setdefault("P", ("always", "bad", s["distinct"]))

    @rule(seconds=st.floats(0, 20))
    def tick_and_level_boundary(self, seconds):
        self.now += seconds
        due = self.now - self.writer.last >= 10.0
        before = self.last_written
        self.writer.on_level(self.engine)
        if due and self.engine.snapshot()["stats"] != (before or {}).get("stats"):
            self.last_written = self.engine.snapshot()

    @rule()
    def save(self):
        self.writer.save(self.engine)
        self.last_written = self.engine.snapshot()

    @invariant()
    def reads_back(self):
        if self.last_written is None:
            assert not checkpoint.exists(self.root / "ck")
            return
        header, snap = checkpoint.read(self.root / "ck")
        assert snap == self.last_written
        assert header["properties"] == ["P"] and header["distinct"] == snap["stats"]["distinct"]


TestCompactSeenSet = CompactSeenSetMachine.TestCase
TestCompactSeenSet.settings = CHEAP
TestDiskStore = DiskStoreMachine.TestCase
TestDiskStore.settings = CHEAP
TestFileStore = FileStoreMachine.TestCase
TestFileStore.settings = CHEAP
TestCheckpointer = CheckpointerMachine.TestCase
TestCheckpointer.settings = CHEAP


@CHEAP
@given(
    rows=st.integers(0, 40).flatmap(
        lambda k: st.lists(st.lists(st.integers(-128, 127), min_size=6, max_size=6), min_size=k, max_size=k)
    ),
    small=st.booleans(),
    pack=st.booleans(),
)
def test_the_store_gives_back_the_rows_it_saved(rows, small, pack):
    """Packed, rows of -1 to 14 are saved two columns a byte (half the bytes); any rows
    come back as they went in, packed or not."""
    a = np.array(rows, dtype=np.int8).reshape(-1, 6)
    if small:
        a = np.clip(a, -1, 14)
    with tempfile.TemporaryDirectory() as d:
        path = str(Path(d) / "rows.bin")
        written = save_arrays(path, a, np.arange(len(a), dtype=np.uint64), pack=pack)
        back, numbers = load_arrays(path, 2)
        assert back.dtype == np.int8 and back.shape == a.shape and (back == a).all()
        assert numbers.tolist() == list(range(len(a)))
        assert written == Path(path).stat().st_size


def test_rows_of_small_numbers_take_half_the_bytes_in_the_store(tmp_path):
    rows = np.random.default_rng(7).integers(-1, 15, size=(10_000, 64)).astype(np.int8)
    wide = rows.copy()
    wide[0, 0] = 15  # one column out of four bits: saved as it is
    small = save_arrays(str(tmp_path / "small.bin"), rows, pack=True)
    plain = save_arrays(str(tmp_path / "plain.bin"), wide, pack=True)
    assert plain - rows.nbytes < 200 and plain - small > 0.49 * rows.nbytes
    assert save_arrays(str(tmp_path / "unpacked.bin"), rows) == plain  # not asked to pack
    assert (load_arrays(str(tmp_path / "small.bin"), 1)[0] == rows).all()
    assert (load_arrays(str(tmp_path / "plain.bin"), 1)[0] == wide).all()


def test_the_store_s_size_on_disk_is_its_files_sizes(tmp_path):
    store = RowsStore.create(tmp_path)
    owner = (Path(store.root) / "owner").stat().st_size  # the mark naming the run that made it
    assert store.disk_bytes() == owner
    sizes = [save_arrays((store.blobs, store.run(i, 3)), np.arange(10 * (i + 1), dtype=np.uint64)) for i in range(3)]
    sizes.append(save_arrays((store.blobs, store.front(4, 1, 2)), np.zeros((7, 8), dtype=np.int8)))
    assert store.disk_bytes() == sum(sizes) + owner == sum(p.stat().st_size for p in Path(store.root).rglob("*")
                                                            if p.is_file())
    store.remove()
    assert store.disk_bytes() == 0
