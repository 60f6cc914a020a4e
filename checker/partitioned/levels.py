"""The partitioned level's search object (``checker.core.driver``): the levels past the
hand-over (``checker.partitioned.handover``), each run as two stages of tasks
(``checker.partitioned.stages``) over the rows store (``checker.partitioned.rows``). Nothing
here knows where the tasks run: the back end (``checker.partitioned.ports.Backend``: the
Spark adapter's session) gives the cluster of each level.

See ``checker.spark.engine`` for the design. A partitioned level is a single *piece* of
the level driver: ``PartitionedLevels.expand`` runs the level's tasks and adds their
summaries to the counts and to the level's first violations, so the driver's stop rules,
progress, ``on_level`` hook, violation records and result are the local engines' own.
"""

from __future__ import annotations

import bisect
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from ..base.errors import EngineError
from ..base.memory import release_freed_memory
from ..blobs import Blobs, open_blobs
from ..blobs.posix import PosixBlobs
from ..checkpoints.file import CheckpointError
from ..core.level import LevelStep
from ..core.parts import Found, Search
from ..core.parts import Store as SearchStore
from ..core.result import Path as Trace
from ..core.result import Stats
from ..core.trace import ROOT, parent_chain, path_by_choices
from ..core.visitor import GraphVisitor
from .handover import write_hand_over
from .ports import Backend, DriverSearch, LevelsSetup
from .room import check_room, pack_rows
from .rows import RowsStore, owner_of
from .save import load_saved, relocate, save_level, save_manifest, verify_objects, verify_saved
from .stages import LevelPlan, Runs, absorb, level_tasks, run_stages
from .tasks import read_graph_records

# A checkpoint's snapshot, and the parts of it a search gives (``checker.checkpoints``).
Snapshot = dict[str, Any]
# Where a violation is: a state numbered by the driver (as the rows search records them), a
# state found in the tasks ``(depth, fingerprint)``, or a step found in the tasks ``((depth,
# parent fingerprint), choice)``; ``PartitionedLevels.path`` follows either back to an
# initial state.
Location = int | tuple[int, int] | tuple[tuple[int, int], int]
# The engine's metrics (``checker.spark.engine``), which the levels add to.
Metrics = dict[str, Any]


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
        metrics: Metrics,
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
        self.runs: list[Runs] = []  # per partition: (depth, length) of its seen runs
        self.counts: list[int] = []  # the frontier's count per rank partition
        self.sources: list[list[int]] = []  # per rank partition: the owners that wrote its share
        self.handoff: dict[int, int] = {}  # a handed-over frontier state's fingerprint -> its number
        self.handoff_depth = depth
        self.distinct = 0
        self.next_counts: list[int] | None = None
        self.next_sources: list[list[int]] = []
        self.busy = 0.0
        # The level's directory (None: a manifest, ``manifest``) and files, once saved.
        self.saved: tuple[Path | None, dict[str, Any]] | None = None
        self.manifest: dict[str, Any] | None = None  # an object store's level: the objects it names
        # A saved level that open() loads: its directory, or a manifest's blob store; its snapshot.
        self.resume_from: tuple[Path | Blobs, Snapshot] | None = None
        # The stores whose objects a checkpoint may still name once they are no longer in
        # use: a resumed manifest's (the killed run's prefix), and this run's own after
        # ``close``; ``committed`` deletes what the checkpoint written last does not name.
        self.previous: RowsStore | None = None
        self.kept: RowsStore | None = None
        # The graph visitor (``checker.core.visitor``), the driver's search's: the tasks write
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
        rows: DriverSearch,
        depth: int,
        metrics: Metrics,
        stopping: Callable[[], bool],
    ) -> PartitionedLevels:
        """Write the driver's seen-set (split by owner) and frontier (split by rank) into a new
        store (``rows.store``, made beforehand, or a new one): the later levels are partitioned.
        ``rows``: the driver's rows search with the run's ``setup`` and ``session``."""
        setup, session = rows.setup, rows.session
        n = (setup.partitions or 2) if setup.cluster is not None else session.width()
        levels = cls(setup, session, metrics, stopping, rows.level, rows.symmetry, rows.seen, depth=depth, n=n)
        levels.visitor, levels.numbered = rows.visitor, list(rows.numbered)
        store = rows.store or RowsStore.create(setup.store_dir, digest=setup.data_root is not None)
        rows.store = None  # the partitioned levels' from here on
        try:
            # The hand-over writes the seen-set and the frontier, then the first Spark level runs.
            handed = write_hand_over(store, rows, depth, n, rows.symmetry)
        except BaseException:
            store.remove()
            raise
        levels.runs, levels.handoff = handed.runs, handed.handoff
        levels.counts, levels.sources = handed.counts, handed.sources
        metrics["driver_levels"] = depth
        levels.distinct = len(rows.seen)
        levels.store = store
        if session.on_status is not None:  # where the run's objects are, should it be killed
            session.on_status(f"the run's store: {store.root}")
        rows.queue.clear()
        release_freed_memory()  # what the driver's levels freed: the later levels need none of it
        return levels

    @classmethod
    def saved_level(
        cls,
        rows: DriverSearch,
        metrics: Metrics,
        stopping: Callable[[], bool],
        snapshot: Snapshot,
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

    def following(self, depth: int, metrics: Metrics, stopping: Callable[[], bool]) -> PartitionedLevels:
        """Every later level runs on Spark."""
        return self

    def resumed(self, snapshot: Snapshot, metrics: Metrics, stopping: Callable[[], bool]) -> PartitionedLevels:
        return self

    def prepare(self) -> None:
        """Before the run: load the saved level (a decided run is reported again without
        starting Spark)."""
        self.open()

    def finish(self, stopped: str | None, metrics: Metrics, depth: int, data_root: str | None) -> str | None:
        """After the run: save the last level when the run keeps checkpoints (what
        ``snapshot()`` returns once ``run()`` has returned)."""
        if data_root is not None:
            self.save()
        return None

    # -- the search protocol ------------------------------------------------------------

    @property
    def seen(self) -> SeenCount:
        return SeenCount(self.distinct)

    def start(self, stats: Stats, found: Found) -> None:
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

    def expand(self, piece: int, first: int, stats: Stats, level_found: Found, found: Found) -> bool | None:
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

    def numbers_of(self, fps: np.ndarray) -> np.ndarray:
        """The numbers of the states stored on Spark whose fingerprints are ``fps``."""
        numbered = np.concatenate(self.numbered) if self.numbered else np.zeros(0, np.uint64)
        order = np.argsort(numbered)
        numbers: np.ndarray = order[np.searchsorted(numbered[order], fps)].astype(np.int64)
        return numbers

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

    def _level(self, level: int, stats: Stats, level_found: Found, found: Found) -> bool | None:
        """One level, its two stages run by a cluster (``checker.partitioned.stages``);
        returns False when a stop request cancelled it."""
        setup, metrics = self.setup, self.metrics
        n, store, depth = self.n, self.open(), self.depth
        # The back end's cluster for this level (a level as small as those the driver
        # expands may run its tasks here), unless the run was given one.
        small = level <= setup.driver_level_limit
        cluster = setup.cluster if setup.cluster is not None else self.session.cluster(store, n, small)
        t0 = time.perf_counter()
        pack = pack_rows(level, store)
        check_room(store, level, pack)  # before a byte of the level is written (unless the room is unknown)
        metrics["packed_levels"] += pack
        graph = self.visitor.task if self.visitor.active else None
        shares = (self.counts, self.sources, self.runs)
        plan = LevelPlan(self.step, frozenset(found), self.symmetry, n, depth, *shares, pack, setup.coverage, graph)
        # What the run has seen of each variable (the owners look only at what may be new).
        ranges = stats.coverage.full_ranges() if setup.coverage else None
        # On a short disk the owners remove the successors' files they have read (the
        # store's peak is then the end of the first stage: measured before it, plus what
        # it wrote).
        before = store.disk_bytes() if pack else 0
        where = f"at depth {depth + 1}" + (f" (master {setup.master})" if setup.master else "")
        summaries = run_stages(cluster, n, level_tasks(plan, store, ranges), store, self.stopping, where)
        if summaries is None:
            return False  # cancelled: the level is dropped, the last one stands
        if cluster.in_process:
            metrics["in_process_levels"] += 1
        # Both levels' frontiers, the successors (unless the owners removed them) and the
        # merged runs beside those they replace: the store at its largest, or, when the
        # owners removed the successors, at the end of the first stage.
        first_stage = before + sum(meta[4] for summary in summaries for meta in summary[4]) if pack else 0
        metrics["store_peak_bytes"] = max(metrics["store_peak_bytes"], store.disk_bytes(), first_stage)
        done = absorb(summaries, store, self.runs, self.step, depth + 1, stats, level_found, found)
        self.busy, self.graph_objects = done.busy, done.graph_objects
        self.next_counts, self.next_sources = done.counts, done.sources
        if self.visitor.active:
            self._visit(store, depth)
        seconds = round(time.perf_counter() - t0, 3)
        metrics["spark_levels"].append((sum(done.counts), seconds, done.shipped, round(self.busy, 3)))
        metrics["shuffle_bytes"] += done.shipped
        return None

    # -- results ----------------------------------------------------------------------------

    def path(self, where: Location) -> Trace:
        """The path from an initial state to the state or step ``where`` (``Location``)."""
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

    def committed(self, snapshot: Snapshot) -> None:
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

    def save(self) -> tuple[Path | None, dict[str, Any]]:
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

    def snapshot_parts(self) -> Snapshot:
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

    def restore_parts(self, snapshot: Snapshot, directory: str | Path | None = None) -> None:
        """Take a snapshot's saved level back (see ``SparkRowsEngine.restore``, which checks
        its format once): written into a new store by ``open()``."""
        where: Path | Blobs  # the saved level's directory, or the blob store of a manifest's objects
        if snapshot.get("objects") is not None:  # a manifest: the objects in the killed run's store
            named = self._named_store(snapshot["objects"])
            # Removed once a checkpoint that replaces this one names other objects; kept
            # while the checkpoint resumed from is another directory's (it still names them).
            root = self.setup.data_root
            resumed = root if directory is None else directory
            same = root is not None and resumed is not None and Path(resumed).resolve() == Path(root).resolve()
            self.previous = named if same else None
            verify_objects(named.blobs, snapshot)
            self.manifest = snapshot["objects"]
            where = named.blobs
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

    def _named_store(self, objects: dict[str, Any]) -> RowsStore:
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
