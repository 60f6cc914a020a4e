"""The Spark engine's search object (``checker.driver``): the rows search on the driver
while the levels are small, then one Spark job a level over the file store.

See ``checker.spark_rows`` for the design. Here a level handed to Spark is a single
*piece* of the level driver: ``expand`` runs the level's job and adds its summaries to
the counts and to the level's first violations, so the driver's stop rules, progress,
``on_level`` hook, violation records and result are the local engines' own.

Violations found on Spark are recorded by ``(depth, fingerprint)`` (a state) and
``((depth, parent fingerprint), choice)`` (a step); those found on the driver by state
number, as the rows search records them. ``path`` follows either back to an initial state.
"""

from __future__ import annotations

import errno
import re
import shutil
import time
from functools import partial

import numpy as np

from .batch import RowsSearch, add_counts
from .driver import ResourceStop, Search
from .errors import EngineError
from .kernel import keep_least
from .kernel_check import KernelMismatchError, kernel_check
from .memory import format_size
from .spark_rows_store import Store, _owner_of, _owners, _split_frontier
from .spark_rows_tasks import _expand_partition, _fingerprints, _own_partition, _owner
from .spark_session import _one_line
from .spark_start import EARLY, SessionStarter
from .trace import replay_choices


class _Count:
    """A stand-in for the seen-set once it lives in the store: only its size is known here."""

    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n


class SparkSearch(SessionStarter, Search):
    """The search object of ``checker.spark_rows.SparkRowsEngine`` (``engine``)."""

    def __init__(self, engine, kernel, symmetry):
        self.engine = engine
        self.kernel = kernel
        self.symmetry = symmetry
        self.check = kernel_check(engine.model, kernel, engine.properties, engine.options)
        self.rows = RowsSearch(engine.model, kernel, engine.invariants, engine.step_props, symmetry, self.check)
        self.phase = "driver"  # then "spark", once the store holds the search
        self.store = None
        self.n = None  # partitions
        self.sc = None
        self.owned = False
        self.runs = self.counts = self.sources = None
        self.handoff = self.handoff_depth = None
        self.distinct = 0
        self.resume_from = None  # (directory, snapshot) of a saved Spark level to load
        self.next_counts = None
        self.busy = 0.0
        self.starter = None  # the thread of _start_early, and what it started (or its error)
        self.early = None
        self.abandoned = False  # the search ended while the early start was still under way
        self.waited = False  # a level past the limit ran on the driver while the session started

    # -- the search protocol ------------------------------------------------------------

    @property
    def every(self):
        return 1 if self.phase == "driver" else 0  # a Spark level: no look at the memory inside it

    @property
    def seen(self):
        return self.rows.seen if self.phase == "driver" else _Count(self.distinct)

    @property
    def frontier(self):
        return self.rows.frontier if self.phase == "driver" else None

    @property
    def possibly(self):
        return []

    @possibly.setter
    def possibly(self, _value):
        pass  # the Spark engine refuses always-possibly properties

    def start(self, stats, found):
        self.rows.start(stats, found)

    def size(self) -> int:
        return self.rows.size() if self.phase == "driver" else sum(self.counts)

    def next_size(self) -> int:
        if self.phase == "driver":
            return self.rows.next_size()
        return sum(self.next_counts) if self.next_counts is not None else 0

    def pieces(self):
        limit = self.engine.driver_level_limit
        if self.phase == "driver" and self.rows.size() > limit:
            if self._still_starting(limit):
                self.waited = True
            else:
                self._hand_over()
        elif self.phase == "driver" and self.rows.size() * EARLY > limit > 0 and self.sc is None:
            self._start_early()
        elif self.phase == "spark" and self.store is None:
            self._load_saved()
        if self.phase == "driver":
            return self.rows.pieces()
        return [self.size()]

    def piece_len(self, piece) -> int:
        return self.rows.piece_len(piece) if self.phase == "driver" else piece

    def begin_level(self):
        if self.phase == "driver":
            self.rows.begin_level()
        self.next_counts = None

    def expand(self, piece, first, stats, level_found, found):
        if self.phase == "driver":
            return self.rows.expand(piece, first, stats, level_found, found)
        return self._spark_level(piece, stats, level_found, found)

    def end_level(self):
        if self.phase == "driver":
            self.rows.end_level()
            return
        depth = self.depth
        self.store.drop_front(depth)
        self.store.drop_successors(depth)
        self.counts, self.sources = self.next_counts, self.next_sources
        self.distinct += sum(self.counts)
        self.next_counts = None

    def rollback(self):
        if self.phase == "driver":
            self.rows.rollback()
        self.next_counts = None  # a cancelled Spark level changed nothing the driver keeps

    def memory_reserve(self) -> int:
        return self.rows.memory_reserve() if self.phase == "driver" else 0

    def numbers_of(self, fps):
        raise EngineError("the Spark engine does not number its states")

    # -- Spark levels ---------------------------------------------------------------------

    def _hand_over(self):
        """Write the driver's seen-set (split by owner) and frontier (split by rank) into
        a new store: the levels from here on run on Spark."""
        self.session()
        if self.store is None:
            self.store = self._create_store()
        # The hand-over writes the seen-set and the frontier, then the first Spark level runs.
        level, root = self.rows.size(), self.store.root
        _check_room(root, level, _pack_rows(level, root))
        try:
            self._write_hand_over()
        except OSError as e:
            if not disk_full(e):
                raise
            raise ResourceStop("disk-full", _full_line(self.store.root, e)) from None

    def _create_store(self):
        return Store.create(self.engine.store_dir)

    def _write_hand_over(self):
        rows_search, depth = self.rows, self.engine.stats.depth
        store = self.store
        n = self.n
        seen = rows_search.seen
        seen_fps = np.concatenate(seen._runs + seen._level_runs)
        owners = _owners(seen_fps, n)
        self.runs = []
        for i in range(n):
            fps = np.sort(seen_fps[owners == i])
            store.save(store.run(i, depth), fps)
            self.runs.append([(depth, len(fps))])
        del seen_fps, owners
        rows = np.concatenate(rows_search.frontier)
        fps = _fingerprints(self.kernel, rows, self.symmetry)
        self.handoff = {int(fp): len(seen) - len(rows) + i for i, fp in enumerate(fps.tolist())}
        self.handoff_depth = self.engine.metrics["driver_levels"] = depth
        self.distinct = len(seen)
        self.counts, self.sources = _split_frontier(store, depth, n, np.arange(len(rows), dtype=np.int64), fps, rows)
        rows_search.frontier = []
        self.phase = "spark"

    def _load_saved(self):
        from .spark_save import load_saved

        where, snap = self.resume_from
        self.store = self._create_store()
        self.n = self.engine.partitions or snap["partitions"]
        self.runs, self.counts, self.sources = load_saved(self.store, where, snap, self.n, self.engine.stats.depth)

    def _spark_level(self, level, stats, level_found, found):
        """One level as one Spark job; returns False when a stop request cancelled it."""
        engine = self.engine
        # A level as small as those the driver expands runs its tasks here (the test hook
        # of a failing first attempt needs Spark's retries).
        here = level <= engine.driver_level_limit and not engine.fail_first_attempt
        sc = None if here else self.session()
        n, store = self.n, self.store
        t0 = time.perf_counter()
        depth = self.depth = stats.depth
        offsets = np.concatenate(([0], np.cumsum(self.counts))).tolist()
        pack = _pack_rows(level, store.root)
        _check_room(store.root, level, pack)  # before a byte of the level is written
        engine.metrics["packed_levels"] += pack
        done = frozenset(found)
        grow = partial(
            _expand_partition,
            self.rows.level,  # the rules of a level (checker.level)
            done,
            self.symmetry,
            n,
            offsets,
            store.root,
            depth,
            self.sources,
            pack,
            engine.fail_first_attempt,
            engine.options.coverage,
        )
        own = partial(
            _own_partition,
            self.rows.level,
            done,
            n,
            level,
            store.root,
            depth + 1,
            self.runs,
            pack,
            engine.options.coverage,
        )
        try:
            if here:
                summaries = _in_process(n, grow, own)
                engine.metrics["in_process_levels"] += 1
            else:
                # One job, two stages: the rank partitions (expand their share of the
                # frontier, read from the store) and, after the shuffle to the owners,
                # the owners (merge with the seen runs, check, write the next frontier).
                job = sc.parallelize(range(n), n).mapPartitionsWithIndex(grow).partitionBy(n, _owner)
                summaries = job.mapPartitionsWithIndex(own).collect()
        except (KernelMismatchError, MemoryError):
            # a kernel disagreement found by a level run here says it all in its own line; a
            # MemoryError of the driver's own: the level driver stops the run (exit 4, resumable)
            raise
        except Exception as e:
            if engine.stop_requested is not None:
                return False  # cancelled: the level is dropped, the last one stands
            if disk_full(e):  # the level is dropped, the last one stands: resumable
                raise ResourceStop("disk-full", _full_line(store.root, e)) from None
            if _out_of_memory(e):  # a task's MemoryError: the same stop as the driver's own
                raise ResourceStop("out-of-memory", f"a Spark task could not allocate: {_one_line(e)}") from None
            line = _one_line(e)
            _head, found_it, tail = line.partition(KernelMismatchError.__name__ + ": ")
            if found_it:  # a task's comparison of the kernel with the model
                raise KernelMismatchError(tail) from None
            where = f" (master {engine.master})" if engine.master else ""
            raise EngineError(f"a Spark job failed at depth {depth + 1}{where}: {_one_line(e)}") from None
        # Both levels' frontiers, the successors and the merged runs beside those they
        # replace: the store at its largest.
        engine.metrics["store_peak_bytes"] = max(engine.metrics["store_peak_bytes"], store.disk_bytes())
        shipped = self._absorb(summaries, depth + 1, stats, level_found, found)
        next_level = sum(self.next_counts)
        seconds = round(time.perf_counter() - t0, 3)
        engine.metrics["spark_levels"].append((next_level, seconds, shipped, round(self.busy, 3)))
        engine.metrics["shuffle_bytes"] += shipped
        return None

    def _absorb(self, summaries, depth, stats, level_found, found):
        """Add a level's summaries to the stats and its first violations to
        ``level_found``; take the owners' new seen runs (dropping the runs they merged).
        Sets the next level's count per rank partition and the owners that wrote a share
        of each; returns the bytes shipped."""
        names, n = self.kernel.action_names, self.n
        counts = np.zeros(n, dtype=np.int64)
        sources: list[list[int]] = [[] for _ in range(n)]
        shipped = 0
        candidates: dict[str, tuple] = {}  # property -> (key, kind, explanation, where)
        busy = 0.0
        for index, per_target, new_codes, state_bad, metas, out_bytes, own_busy, runs, cov in sorted(
            summaries, key=lambda s: s[0]
        ):
            counts += per_target
            for t in np.flatnonzero(per_target).tolist():
                sources[t].append(index)
            shipped += out_bytes
            busy += own_busy
            add_counts(stats.new, names, new_codes)
            if cov is not None:
                stats.coverage.add_task(names, cov)
            for prop, (key, why, fp) in state_bad.items():
                keep_least(candidates, prop, (key, "always", why, (depth, fp)))
            for terminal, generated, fired, step_bad, in_bytes, expand_busy, expand_cov in metas:
                if expand_cov is not None:
                    stats.coverage.add_task(names, expand_cov)
                shipped += in_bytes
                busy += expand_busy
                stats.terminal += terminal
                stats.generated += generated
                add_counts(stats.fired, names, fired)
                for prop, (key, why, pfp, choice) in step_bad.items():
                    keep_least(candidates, prop, (key, "step", why, ((depth - 1, pfp), choice)))
            stale = {d for d, _ in self.runs[index]} - {d for d, _ in runs}
            for d in stale:
                self.store.drop_run(index, d)
            self.runs[index] = runs
        # The local engine checks step properties while expanding a level and state
        # invariants on its new states; either way a property's first violation is the
        # least key of this level.
        for prop, (_key, kind, why, where) in candidates.items():
            if prop not in found and prop not in level_found:
                level_found[prop] = (kind, why, where)
        self.busy = busy
        self.next_counts, self.next_sources = counts.tolist(), sources
        return shipped

    # -- results ----------------------------------------------------------------------------

    def path(self, where):
        if not isinstance(where, tuple):
            return self.rows.path(where)
        depth, fp = where
        tail = []
        while depth > self.handoff_depth:
            parent, choice = self.store.parent(_owner_of(fp, self.n), depth, fp)
            tail.append(choice)
            fp, depth = parent, depth - 1
        if fp not in self.handoff:
            raise EngineError("trace rebuild: reached a handed-over state the driver does not know")
        init, choices = self.rows.seen.path_to(self.handoff[fp])
        return replay_choices(self.engine.model, init, choices + tail[::-1])

    def close(self, leave_running=False):
        """Stop the session this search started, remove the store."""
        if self.sc is None and self.starter is not None and not leave_running and not self._abandon_early():
            try:
                self.sc = self._adopt_early()  # started early, up, then never needed
            except BaseException:
                pass  # nothing to stop: the early start failed, and no level needed Spark
        sc, owned = self.sc, self.owned
        self.sc = None
        if owned and not leave_running:
            sc.stop()
        if self.store is not None:
            self.store.remove()
            self.store = None

    # -- checkpoints: see checker.spark_save ------------------------------------------------

    def snapshot_parts(self) -> dict:
        from .spark_save import snapshot_parts

        return snapshot_parts(self)

    def restore_parts(self, snapshot, directory=None):
        from .spark_save import restore_parts

        restore_parts(self, snapshot, directory)


# Rows are packed (``checker.spark_rows_store._pack``) in a level whose store files, at
# about PACK_BYTES a frontier state (successors and both frontiers, unpacked), would take
# more than PACK_SHARE of the store's free disk space.
PACK_BYTES = 300
PACK_SHARE = 0.1


def level_bytes(level, pack) -> int:
    """The least a level of ``level`` states writes to the store: its successors and the
    next frontier, ``PACK_BYTES`` a state, half of it packed (the billion-state run wrote
    about 270 bytes a state of its largest level, packed: docs/spark.md). A lower bound, so
    that a level that would fit is never refused; one that fills the disk all the same
    stops the run in the same way, the level dropped."""
    return level * (PACK_BYTES // 2 if pack else PACK_BYTES)


def _check_room(root, level, pack):
    """Stop the run (``ResourceStop``, resumable) before a level the store's disk cannot hold."""
    try:
        free = shutil.disk_usage(root).free
    except OSError:
        return
    need = level_bytes(level, pack)
    if need > free:
        raise ResourceStop(
            "disk-full",
            f"the Spark store {root} has {format_size(free)} free, and the next "
            f"level ({level:,} states) needs at least {format_size(need)}",
        )


# What a full disk looks like: an errno, or numpy's short write (``np.save`` through
# ``fwrite``: "51195 requested and 4592 written"), also inside a Spark task's traceback.
_FULL_ERRNOS = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)
_FULL_TEXT = re.compile(r"No space left on device|Disk quota exceeded|\b\d+ requested and \d+ written\b")


def disk_full(e) -> bool:
    """Whether the exception ``e`` (an ``OSError`` of the driver, or a failed Spark job
    carrying a task's traceback) says that the disk was full."""
    if isinstance(e, OSError) and e.errno in _FULL_ERRNOS:
        return True
    return bool(_FULL_TEXT.search(str(e)) or _FULL_TEXT.search(_one_line(e)))


def _out_of_memory(e) -> bool:
    """Whether a failed Spark job's error is a task's ``MemoryError`` (its Python traceback)."""
    return "MemoryError" in _one_line(e) or bool(re.search(r"^\s*MemoryError\b", str(e), re.M))


def _full_line(root, e) -> str:
    try:
        free = f" ({format_size(shutil.disk_usage(root).free)} free)"
    except OSError:
        free = ""
    return f"the Spark store {root} is full{free}: {_one_line(e)}"


def _pack_rows(level, root) -> bool:
    try:
        free = shutil.disk_usage(root).free
    except OSError:
        return True
    return level * PACK_BYTES > PACK_SHARE * free


def _in_process(n, grow, own):
    """A level's two stages run here, one task after the other, without Spark: for a level
    of at most ``driver_level_limit`` states (the shrinking tail of a search), whose job
    would cost more than its work. The tasks are the same functions over the same files,
    and an owner's result does not depend on the order of its records, so the summaries
    are those the Spark job returns."""
    routed: list[list] = [[] for _ in range(n)]
    for j in range(n):
        for owner, payload in grow(j, iter(())):
            routed[owner].append((owner, payload))
    return [summary for i in range(n) for summary in own(i, iter(routed[i]))]
