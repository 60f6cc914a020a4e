"""The partitioned level's search object (``checker.core.driver``): the levels past the
hand-over, each run as two stages of tasks (``checker.partitioned.cluster``: on a cluster's
machines, or the driver's own tasks for a small level) over the rows store
(``checker.partitioned.rows``), which replaces the driver's rows search at the hand-over
(``PartitionedLevels.hand_over``). Nothing here knows where the tasks run: the back end
(``Backend``: the Spark adapter's session, ``checker.spark.start.Session``) gives the
cluster of each level.

See ``checker.spark.engine`` for the design. A partitioned level is a single *piece* of
the level driver: ``PartitionedLevels.expand`` runs the level's tasks and adds their
summaries to the counts and to the level's first violations, so the driver's stop rules,
progress, ``on_level`` hook, violation records and result are the local engines' own.

Violations found in the tasks are recorded by ``(depth, fingerprint)`` (a state) and
``((depth, parent fingerprint), choice)`` (a step); those found on the driver by state
number, as the rows search records them. ``path`` follows either back to an initial state.
"""

from __future__ import annotations

import bisect
import errno
import re
import shutil
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any, Protocol

import attrs
import numpy as np

from ..base.errors import EngineError
from ..base.memory import format_size
from ..blobs import open_blobs
from ..blobs.posix import PosixBlobs
from ..checkpoints.file import CheckpointError
from ..checkpoints.schema import check_format
from ..contract.kernel_check import KernelMismatchError
from ..contract.model_errors import task_failure
from ..contract.protocol import kernel_fingerprints
from ..core.driver import Search
from ..core.kernel import keep_least
from ..core.keys import add_counts
from ..core.level import LevelStep, record_first
from ..core.parts import ResourceStop
from ..core.parts import Store as SearchStore
from ..core.result import Stats
from ..core.trace import ROOT, parent_chain, path_by_choices
from ..graph.visitor import GraphVisitor
from .cluster import Cluster, one_line
from .rows import RowsStore, owner_of, owners, split_frontier
from .save import (
    load_saved,
    relocate,
    save_level,
    save_manifest,
    verify_objects,
    verify_saved,
)
from .tasks import expand_partition, own_partition, read_graph_records


@attrs.frozen
class LevelsSetup:
    """What the partitioned levels take of the engine's arguments (``checker.spark.engine``).

    ``snapshot_format`` is the engine's checkpoint format (the batch or the per-state path).
    """

    master: str | None
    partitions: int | None
    store_dir: str | None
    driver_level_limit: int
    data_root: str | None
    snapshot_format: str
    coverage: bool = False
    # A ``checker.partitioned.Cluster`` that runs every level past the hand-over, instead of
    # the back end's (tests; other back ends); None: the back end's (``Backend.cluster``).
    cluster: Any = None


class Backend(Protocol):
    """What the partitioned levels ask of the back end that runs their tasks (the Spark
    adapter's session, ``checker.spark.start.Session``)."""

    on_status: Callable[[str], None] | None  # where the run's messages go, or None

    def width(self, n: int | None = None) -> int:
        """The partitions the levels run on: ``n`` (a saved level's), else the back end's."""
        ...

    def cluster(self, store: RowsStore, n: int, small: bool) -> Cluster:
        """The cluster that runs the next level over ``store`` in ``n`` partitions;
        ``small``: the level is no larger than those the driver expands (its tasks may then
        run in this process, ``InProcessCluster``)."""
        ...


class SeenCount:
    """A stand-in for the seen-set once it lives in the store: only its size is known here."""

    def __init__(self, n: int) -> None:
        self.n = n

    def __len__(self) -> int:
        return self.n


class PartitionedLevels(Search):
    """The search once the levels are partitioned: the store and what the driver keeps of
    it (every partition's seen runs, the frontier's count per rank partition and the owners
    that wrote it, the hand-over's fingerprints), one run of a cluster's two stages a level.

    Built by ``hand_over`` (from the driver's search, when a level outgrows
    ``driver_level_limit``) or by ``saved`` (a checkpoint's saved level, loaded by
    ``open()`` when the run starts).

    Args:
        setup: the engine's arguments; session: the back end (``Backend``); metrics: the
            engine's metrics, which the levels add to; stopping: whether a stop was
            requested (a failed job is then a cancelled level).
        step: the rules of a level (``checker.core.level``; its model and kernel);
        symmetry: whether fingerprints are of canonical rows;
        driver_seen: the driver's seen-set, which numbers the handed-over states.
        depth: the frontier's depth; n: the partitions.
    """

    every = 0  # a Spark level is one piece: no look at the memory inside it
    frontier = None

    def __init__(
        self,
        setup: LevelsSetup,
        session: Backend,
        metrics: dict,
        stopping: Callable[[], bool],
        step: LevelStep,
        symmetry: bool,
        driver_seen: SearchStore,
        *,
        depth: int,
        n: int,
    ) -> None:
        self.setup, self.session, self.metrics, self.stopping = setup, session, metrics, stopping
        self.step, self.symmetry, self.driver_seen = step, symmetry, driver_seen
        self.depth, self.n = depth, n  # the frontier's depth (the driver's stats.depth)
        self.store: RowsStore | None = None  # until open() (a saved level) or the hand-over
        self.runs: list[list[tuple[int, int]]] = []  # per partition: (depth, length) of its seen runs
        self.counts: list[int] = []  # the frontier's count per rank partition
        self.sources: list[list[int]] = []  # per rank partition: the owners that wrote its share
        self.handoff: dict[int, int] = {}  # a handed-over frontier state's fingerprint -> its number
        self.handoff_depth = depth
        self.distinct = 0
        self.next_counts: list[int] | None = None
        self.next_sources: list[list[int]] = []
        self.busy = 0.0
        # The level's directory (None: a manifest, ``manifest``) and files, once saved.
        self.saved: tuple[Path | None, dict] | None = None
        self.manifest: dict | None = None  # an object store's level: the objects it names
        self.resume_from: tuple[Any, dict] | None = None  # a saved level that open() loads
        # The stores whose objects a checkpoint may still name once they are no longer in
        # use: a resumed manifest's (the killed run's prefix), and this run's own after
        # ``close``; ``committed`` deletes what the checkpoint written last does not name.
        self.previous: RowsStore | None = None
        self.kept: RowsStore | None = None
        # The graph visitor (``checker.graph.visitor``), the driver's search's: the tasks write
        # their records of each level into the store, and the driver adds them to it once
        # the level is done (``_visit``); the stored fingerprints in number order with them.
        self.visitor = GraphVisitor()
        self.numbered: list[np.ndarray] = []
        self.first = 0  # the number of the frontier's first state
        self.graph_levels: list[tuple[int, int]] = []  # (first number, depth) of each level visited here
        self.graph_objects: list[str] = []  # the graph visitor's objects of the level just expanded

    @classmethod
    def hand_over(
        cls,
        rows: Any,
        depth: int,
        metrics: dict,
        stopping: Callable[[], bool],
    ) -> PartitionedLevels:
        """Write the driver's seen-set (split by owner) and frontier (split by rank) into
        a new store (``rows.store``, made beforehand, or a new one): the levels from here on
        are partitioned. ``rows`` is the driver's rows search (``checker.local.rows.RowsSearch``)
        with the run's ``setup`` and ``session`` (``checker.spark.search.DriverLevels``)."""
        setup, session = rows.setup, rows.session
        n = (setup.partitions or 2) if setup.cluster is not None else session.width()
        levels = cls(setup, session, metrics, stopping, rows.level, rows.symmetry, rows.seen, depth=depth, n=n)
        levels.visitor, levels.numbered = rows.visitor, list(rows.numbered)
        store = rows.store or RowsStore.create(setup.store_dir, digest=setup.data_root is not None)
        rows.store = None  # the partitioned levels' from here on
        try:
            # The hand-over writes the seen-set and the frontier, then the first Spark level runs.
            level = rows.size()
            check_room(store, level, pack_rows(level, store))
            try:
                levels._write_hand_over(store, rows)
            except OSError as e:
                if not disk_full(e):
                    raise
                raise ResourceStop("disk-full", full_line(store, e)) from None
        except BaseException:
            store.remove()
            raise
        levels.store = store
        if session.on_status is not None:  # where the run's objects are, should it be killed
            session.on_status(f"the run's store: {store.root}")
        rows.queue.clear()
        return levels

    def _write_hand_over(self, store: RowsStore, rows: Any) -> None:
        depth, n = self.depth, self.n
        seen = rows.seen
        seen_fps = seen.fingerprints()
        owner = owners(seen_fps, n)
        self.runs = []
        for i in range(n):
            fps = np.sort(seen_fps[owner == i])
            store.save(store.run(i, depth), fps)
            self.runs.append([(depth, len(fps))])
        del seen_fps, owner
        frontier = np.concatenate(rows.frontier)
        fps = kernel_fingerprints(rows.kernel, frontier, self.symmetry)
        self.handoff = {int(fp): len(seen) - len(frontier) + i for i, fp in enumerate(fps.tolist())}
        self.metrics["driver_levels"] = depth
        self.distinct = len(seen)
        keys = np.arange(len(frontier), dtype=np.int64)
        self.counts, self.sources = split_frontier(store, depth, n, keys, fps, frontier)

    @classmethod
    def saved_level(
        cls,
        rows: Any,
        metrics: dict,
        stopping: Callable[[], bool],
        snapshot: dict,
    ) -> PartitionedLevels:
        """The levels of a checkpoint's saved Spark level (``snapshot``), which
        ``restore_parts`` then checks and ``open()`` loads."""
        levels = cls(
            rows.setup,
            rows.session,
            metrics,
            stopping,
            rows.level,
            rows.symmetry,
            snapshot["local_seen"],
            depth=snapshot["stats"]["depth"],
            n=rows.setup.partitions or snapshot["partitions"],
        )
        levels.visitor = rows.visitor  # the driver gives it its logs back (checker.core.driver)
        return levels

    # -- the engine's phases (``DriverLevels``' same calls) ------------------------------

    def following(self, depth: int, metrics: dict, stopping: Callable[[], bool]) -> PartitionedLevels:
        """Every later level runs on Spark."""
        return self

    def resumed(self, snapshot: dict, metrics: dict, stopping: Callable[[], bool]) -> PartitionedLevels:
        return self

    def prepare(self) -> None:
        """Before the run: load the saved level (a decided run is reported again without
        starting Spark)."""
        self.open()

    def finish(self, stopped: str | None, metrics: dict, depth: int, data_root: Any) -> str | None:
        """After the run: save the last level when the run keeps checkpoints (what
        ``snapshot()`` returns once ``run()`` has returned)."""
        if data_root is not None:
            self.save()
        return None

    # -- the search protocol ------------------------------------------------------------

    @property
    def seen(self) -> SeenCount:
        return SeenCount(self.distinct)

    def start(self, stats: Stats, found: dict) -> None:
        """Never called: the Spark levels begin from a hand-over or a saved level."""
        raise EngineError("the Spark levels start from the driver's levels or a saved level")

    def size(self) -> int:
        return sum(self.counts)

    def next_size(self) -> int:
        return sum(self.next_counts) if self.next_counts is not None else 0

    def pieces(self) -> list[int]:
        self.open()
        return [self.size()]

    def piece_len(self, piece: int) -> int:
        return piece

    def begin_level(self, depth: int) -> None:
        self.next_counts = None

    def expand(self, piece: int, first: int, stats: Stats, level_found: dict, found: dict) -> bool | None:
        self.first = first
        return self._level(piece, stats, level_found, found)

    def end_level(self) -> None:
        store, depth = self.open(), self.depth
        store.drop_front(depth)
        store.drop_successors(depth)
        assert self.next_counts is not None  # the level was expanded
        self.counts, self.sources = self.next_counts, self.next_sources
        self.distinct += sum(self.counts)
        self.next_counts = None
        if sum(self.counts):
            self.depth += 1
        self.saved = None  # a new level: saved anew when a snapshot needs it

    def rollback(self) -> None:
        self.next_counts = None  # a cancelled Spark level changed nothing the driver keeps

    def numbers_of(self, fps: Any) -> Any:
        numbered = np.concatenate(self.numbered) if self.numbered else np.zeros(0, np.uint64)
        order = np.argsort(numbered)
        return order[np.searchsorted(numbered[order], fps)].astype(np.int64)

    def _visit(self, store: RowsStore, depth: int) -> None:
        """Hand the graph visitor what the tasks recorded of the level of ``depth`` just
        expanded (``checker.partitioned.tasks.graph_records``), in number order: its states
        (unless the driver stored them: the handed-over frontier) and the edges leaving them."""
        graph = self.visitor.task
        number = self.first
        for name in self.graph_objects:  # the tasks' objects, by the names they returned, in rank order
            for fps, flags, (src, dst, choices, fair) in read_graph_records(graph, store.blobs, name):
                if depth > self.handoff_depth:
                    if number == self.first:
                        self.graph_levels.append((number, depth))
                    self.visitor.add_flags(number, flags)
                    self.numbered.append(fps)
                self.visitor.add_edges(number + src, dst, choices, fair if graph.fairness else None)
                number += len(fps)
        store.drop_graph(depth)

    # -- Spark levels ---------------------------------------------------------------------

    def open(self) -> RowsStore:
        """The store, with the saved level this search resumes written into it first."""
        if self.store is None:
            if self.resume_from is None:
                raise EngineError("the Spark levels have no store")
            where, snap = self.resume_from
            store = RowsStore.create(self.setup.store_dir, digest=self.setup.data_root is not None)
            try:
                self.runs, self.counts, self.sources = load_saved(store, where, snap, self.n, self.depth)
            except BaseException:
                store.remove()
                raise
            self.store, self.resume_from = store, None
        return self.store

    def _level(self, level: int, stats: Stats, level_found: dict, found: dict) -> bool | None:
        """One level, its two stages run by a cluster; returns False when a stop request
        cancelled it."""
        setup, metrics = self.setup, self.metrics
        n, store = self.n, self.open()
        # The back end's cluster for this level (a level as small as those the driver
        # expands may run its tasks here), unless the run was given one.
        small = level <= setup.driver_level_limit
        cluster: Cluster = setup.cluster if setup.cluster is not None else self.session.cluster(store, n, small)
        t0 = time.perf_counter()
        depth = self.depth
        offsets = np.concatenate(([0], np.cumsum(self.counts))).tolist()
        pack = pack_rows(level, store)
        check_room(store, level, pack)  # before a byte of the level is written (unless the room is unknown)
        metrics["packed_levels"] += pack
        done = frozenset(found)
        grow = partial(
            expand_partition,
            self.step,  # the rules of a level (checker.core.level)
            done,
            self.symmetry,
            n,
            offsets,
            store.blobs,
            depth,
            self.sources,
            pack,
            setup.coverage,
            self.visitor.task if self.visitor.active else None,
        )
        # What the run has seen of each variable: an owner looks only at the columns and
        # rows that may hold a value not seen yet.
        ranges = stats.coverage.full_ranges() if setup.coverage else None
        # On a short disk the owners remove the successors' files they have read (the
        # store's peak is then the end of the first stage: measured before it, plus what
        # it wrote).
        before = store.disk_bytes() if pack else 0
        own = partial(
            own_partition,
            self.step,
            done,
            n,
            level,
            store.blobs,
            depth + 1,
            self.runs,
            pack,
            pack,
            ranges,
            store.digest,
        )
        try:
            # The level's two stages (checker.partitioned): the rank partitions expand their
            # share of the frontier, read from the store; the owners merge what was routed
            # to them with their seen runs, check, and write the next frontier.
            summaries = cluster.run_level(n, grow, own)
            if cluster.in_process:
                metrics["in_process_levels"] += 1
        except (KernelMismatchError, MemoryError):
            # a kernel disagreement found by a level run here says it all in its own line; a
            # MemoryError of the driver's own: the level driver stops the run (exit 4, resumable)
            raise
        except Exception as e:
            if self.stopping():
                return False  # cancelled: the level is dropped, the last one stands
            if disk_full(e):  # the level is dropped, the last one stands: resumable
                raise ResourceStop("disk-full", full_line(store, e)) from None
            if out_of_memory(e):  # a task's MemoryError: the same stop as the driver's own
                raise ResourceStop("out-of-memory", f"a Spark task could not allocate: {one_line(e)}") from None
            line = one_line(e)
            if line.startswith("FileNotFoundError") and isinstance(store.blobs, PosixBlobs):
                # an executor that does not see the directory (one the probe's job missed)
                raise StoreUnseenError(unseen_line(store.root, line)) from None
            _head, found_it, tail = line.partition(KernelMismatchError.__name__ + ": ")
            if found_it:  # a task's comparison of the kernel with the model
                raise KernelMismatchError(tail) from None
            where = f" (master {setup.master})" if setup.master else ""
            blamed = task_failure(e, f"in a Spark task at depth {depth + 1}{where}")
            if blamed is not None:  # the model's own code raised: its function, file and line
                raise blamed from None
            raise EngineError(f"a Spark job failed at depth {depth + 1}{where}: {one_line(e)}") from None
        # Both levels' frontiers, the successors (unless the owners removed them) and the
        # merged runs beside those they replace: the store at its largest, or, when the
        # owners removed the successors, at the end of the first stage.
        first_stage = before + sum(meta[4] for summary in summaries for meta in summary[4]) if pack else 0
        metrics["store_peak_bytes"] = max(metrics["store_peak_bytes"], store.disk_bytes(), first_stage)
        shipped = self._absorb(store, summaries, depth + 1, stats, level_found, found)
        if self.visitor.active:
            self._visit(store, depth)
        next_level = sum(self.next_counts or ())
        seconds = round(time.perf_counter() - t0, 3)
        metrics["spark_levels"].append((next_level, seconds, shipped, round(self.busy, 3)))
        metrics["shuffle_bytes"] += shipped
        return None

    def _absorb(
        self, store: RowsStore, summaries: list, depth: int, stats: Stats, level_found: dict, found: dict
    ) -> int:
        """Add a level's summaries to the stats and its first violations to
        ``level_found``; take the owners' new seen runs (dropping the runs they merged).
        Sets the next level's count per rank partition and the owners that wrote a share
        of each; returns the bytes shipped."""
        names, n = self.step.kernel.action_names, self.n
        counts = np.zeros(n, dtype=np.int64)
        sources: list[list[int]] = [[] for _ in range(n)]
        shipped = 0
        candidates: dict[str, tuple] = {}  # property -> (key, kind, explanation, where)
        busy = 0.0
        graph_objects = []
        for index, per_target, new_codes, state_bad, metas, out_bytes, own_busy, runs, cov, digests in sorted(
            summaries, key=lambda s: s[0]
        ):
            store.digests.update(digests)
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
            for terminal, generated, fired, step_bad, in_bytes, expand_busy, expand_cov, graph in metas:
                if graph is not None:
                    graph_objects.append(graph)
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
                store.drop_run(index, d)
            self.runs[index] = runs
        # The local engine checks step properties while expanding a level and state
        # invariants on its new states; either way a property's first violation is the
        # least key of this level.
        for kind in ("step", "always"):
            mine = {prop: (where, why) for prop, (_key, k, why, where) in candidates.items() if k == kind}
            record_first(level_found, found, kind, mine, lambda where: where)
        self.busy = busy
        self.graph_objects = graph_objects
        self.next_counts, self.next_sources = counts.tolist(), sources
        return shipped

    # -- results ----------------------------------------------------------------------------

    def path(self, where: Any) -> Any:
        model = self.step.model
        if not isinstance(where, tuple) and where >= len(self.driver_seen):
            where = self._located(where)  # a state stored on Spark, by its number (the graph visitor's)
        driver = self.driver_seen.parent_and_choice
        if not isinstance(where, tuple):
            return path_by_choices(model, where, driver)
        store = self.open()

        def link(at: tuple[int, int]) -> tuple[Any, Any]:
            """A stored state's parent on Spark; at the hand-over, the driver's number."""
            depth, fp = at
            if depth > self.handoff_depth:
                parent, choice = store.parent(owner_of(fp, self.n), depth, fp)
                return (depth - 1, parent), choice
            if fp not in self.handoff:
                raise EngineError("trace rebuild: reached a handed-over state the driver does not know")
            return ROOT, self.handoff[fp]

        handed, *tail = parent_chain(where, link)
        return path_by_choices(model, handed, driver, tail)

    def _located(self, number: int) -> tuple[int, int]:
        """``(depth, fingerprint)`` of the state numbered ``number``, stored on Spark."""
        firsts = [first for first, _ in self.graph_levels]
        k = bisect.bisect_right(firsts, number) - 1
        if k < 0:
            raise EngineError(f"trace rebuild: no level of the graph visitor holds state {number}")
        numbered = np.concatenate(self.numbered)
        return self.graph_levels[k][1], int(numbered[number])

    def close(self) -> None:
        """Remove the store, unless a checkpoint names its objects (an object store's
        manifest): it is then kept (``committed`` deletes what the last checkpoint does
        not name)."""
        if self.store is not None:
            if self.store.pinned:
                self.kept = self.store
            else:
                self.store.remove()
            self.store = None

    def committed(self, snapshot: dict) -> None:
        """A checkpoint of ``snapshot`` is written (``checker.checkpoints.writer``): the objects
        of the run's stores that no checkpoint names any longer are deleted (those the
        levels dropped while an earlier checkpoint named them; a resumed checkpoint's
        store once this one names another)."""
        objects = snapshot.get("objects") if snapshot.get("phase") == "spark" else None
        named = objects["store"] if objects is not None else None
        names = set(objects["names"].values()) if objects is not None else set()
        for store in (self.store, self.kept):
            if store is not None and store.root.rsplit("/", 1)[-1] == named:
                store.release(names)
        if self.previous is not None and self.previous.root.rsplit("/", 1)[-1] != named:
            self.previous.remove()
            self.previous = None

    # -- checkpoints: see checker.partitioned.save ------------------------------------------------

    def save(self) -> tuple[Path | None, dict]:
        """Save the last complete level, unless done: link the store's files under
        ``data_dir(data_root, depth)`` (a directory store), or name its objects in a
        manifest (an object store: ``manifest``, and no directory); returns that directory
        (or None) and the files' sizes and digests.

        Raises:
            EngineError: no ``data_root``.
            CheckpointError: the level's files cannot be written.
        """
        if self.saved is None:
            if self.store is None or self.setup.data_root is None:
                raise EngineError("snapshot: the level's files were not saved (set data_root before run())")
            if isinstance(self.store.blobs, PosixBlobs):
                self.saved = save_level(
                    self.store, self.runs, self.sources, self.handoff_depth, self.depth, self.setup.data_root
                )
                self.manifest = None
            else:
                files, self.manifest = save_manifest(
                    self.store, self.runs, self.sources, self.handoff_depth, self.depth
                )
                self.saved = (None, files)
        return self.saved

    def snapshot_parts(self) -> dict:
        """The parts of a snapshot the search owns (the driver adds the stats and violations).

        Raises:
            EngineError: the level's files are needed but were never saved (no
                ``data_root`` during ``run()``).
            CheckpointError: the level's files cannot be written.
        """
        where, files = self.save()
        assert self.setup.data_root is not None  # save() needs it
        saved: dict[str, Any] = {"data": None, "objects": self.manifest}
        if where is not None:
            moved = relocate(where, self.setup.data_root, self.depth)
            if moved != where:
                self.saved = where, files = moved, files
            saved = {"data": where.name}
        return {
            "head": {"format": self.setup.snapshot_format},
            "phase": "spark",
            **saved,
            "files": files,
            "runs": self.runs,
            "counts": self.counts,
            "sources": self.sources,
            "handoff": self.handoff,
            "handoff_depth": self.handoff_depth,
            "local_seen": self.driver_seen,
            "partitions": self.n,
            "frontier": sum(self.counts),
            **({"graph_numbered": self.numbered, "graph_levels": self.graph_levels} if self.visitor.active else {}),
        }

    def restore_parts(self, snapshot: dict, directory: Any = None) -> None:
        """Take a snapshot's saved level back (see ``SparkRowsEngine.restore``): checked
        now, written into a new store by ``open()``."""
        check_format(snapshot, self.setup.snapshot_format)
        where: Any
        if snapshot.get("objects") is not None:  # a manifest: the objects in the killed run's store
            where = self._named_store(snapshot["objects"])
            # Removed once a checkpoint that replaces this one names other objects; kept
            # while the checkpoint resumed from is another directory's (it still names them).
            root = self.setup.data_root
            resumed = root if directory is None else directory
            same = root is not None and resumed is not None and Path(resumed).resolve() == Path(root).resolve()
            self.previous = where if same else None
            verify_objects(where.blobs, snapshot)
            self.manifest = snapshot["objects"]
        else:
            where = verify_saved(snapshot, self.setup.data_root if directory is None else directory)
        stats = snapshot["stats"]
        self.resume_from = (where, snapshot)
        self.runs, self.counts, self.sources = snapshot["runs"], snapshot["counts"], snapshot["sources"]
        self.handoff, self.handoff_depth = snapshot["handoff"], snapshot["handoff_depth"]
        self.driver_seen, self.depth = snapshot["local_seen"], stats["depth"]
        self.n = self.setup.partitions or snapshot["partitions"]
        self.distinct = stats["distinct"]
        self.numbered = list(snapshot.get("graph_numbered", []))
        self.graph_levels = list(snapshot.get("graph_levels", []))
        self.saved = (where if isinstance(where, Path) else None, snapshot["files"])
        if isinstance(where, RowsStore):
            self.resume_from = (where.blobs, snapshot)

    def _named_store(self, objects: dict) -> RowsStore:
        """The store of a manifest's objects: its prefix under this run's ``store_dir``,
        which must be the location the checkpoint's run had.

        Raises:
            CheckpointError: this run's store is elsewhere.
        """
        store = RowsStore(open_blobs(self.setup.store_dir or tempfile.gettempdir()).child(objects["store"]))
        if store.root != objects["root"]:
            parent = objects["root"].rsplit("/", 1)[0]
            raise CheckpointError(
                f"the checkpoint's level is in the Spark store {objects['root']}: resume it with --spark-store {parent}"
            )
        return store


# Rows are packed (``checker.partitioned.rows.save_arrays``) in a level whose store files, at
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


def check_room(store, level, pack) -> None:
    """Stop the run (``ResourceStop``, resumable) before a level the store's disk cannot
    hold; nothing where the store cannot tell its room (an object store)."""
    free = _free(store)
    if free is None:
        return
    need = level_bytes(level, pack)
    if need > free:
        raise ResourceStop(
            "disk-full",
            f"the Spark store {_root(store)} has {format_size(free)} free, and the next "
            f"level ({level:,} states) needs at least {format_size(need)}",
        )


def _root(store) -> str:
    return store if isinstance(store, str) else store.root


def _free(store) -> int | None:
    """The free bytes of ``store`` (a ``RowsStore``, or a directory's path), or None."""
    if isinstance(store, str):
        try:
            return shutil.disk_usage(store).free
        except OSError:
            return None
    return store.free_bytes()


# What a full disk looks like: an errno, or numpy's short write (``np.save`` through
# ``fwrite``: "51195 requested and 4592 written"), also inside a Spark task's traceback.
_FULL_ERRNOS = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)
_FULL_TEXT = re.compile(r"No space left on device|Disk quota exceeded|\b\d+ requested and \d+ written\b")


def disk_full(e) -> bool:
    """Whether the exception ``e`` (an ``OSError`` of the driver, or a failed Spark job
    carrying a task's traceback) says that the disk was full."""
    if isinstance(e, OSError) and e.errno in _FULL_ERRNOS:
        return True
    return bool(_FULL_TEXT.search(str(e)) or _FULL_TEXT.search(one_line(e)))


def out_of_memory(e) -> bool:
    """Whether a failed Spark job's error is a task's ``MemoryError`` (its Python traceback)."""
    return "MemoryError" in one_line(e) or bool(re.search(r"^\s*MemoryError\b", str(e), re.M))


def full_line(store, e) -> str:
    free = _free(store)
    room = f" ({format_size(free)} free)" if free is not None else ""
    return f"the Spark store {_root(store)} is full{room}: {one_line(e)}"


def pack_rows(level, store) -> bool:
    """Whether a level's rows are packed: its objects would take a large share of the
    store's free room (never where the room is unknown)."""
    free = _free(store)
    if free is None:
        return False
    return level * PACK_BYTES > PACK_SHARE * free


class StoreUnseenError(EngineError):
    """Some executor cannot read the store (``checker.spark.probe.probe_store``)."""


def unseen_line(root, why) -> str:
    return (
        f"the Spark store {root} is not seen by every executor ({why}): the driver and every executor "
        "must see it (a directory mounted at the same path on every machine, or an object store URL: "
        "s3://, gs://, hdfs://, abfs://)"
    )
