"""The Spark engine's search object while the levels run on the driver (``DriverLevels``:
the rows search, which starts the Spark session in the background as the levels grow and
hands over to the partitioned level, ``checker.partitioned.levels``), which runs the store's
probe job (``checker.spark.probe``) before the first Spark level."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path

from ..checkpoints.schema import ROWS_FORMAT
from ..contract.kernel_check import KernelCheck
from ..contract.protocol import BatchKernel, Model, Property
from ..core.visitor import GraphVisitor
from ..local.rows import RowsSearch
from ..partitioned.levels import Metrics, PartitionedLevels, Snapshot
from ..partitioned.ports import LevelsSetup
from ..partitioned.room import StoreUnseenError
from ..partitioned.rows import RowsStore
from .probe import probe_store
from .start import EARLY, Session


class DriverLevels(RowsSearch):
    """The rows search (``checker.local.rows``) while the levels run on the driver: it starts
    the Spark session in the background once a level nears ``setup.driver_level_limit``
    and says when a level has outgrown it (``outgrown``); the engine then replaces it with
    ``PartitionedLevels.hand_over(...)``."""

    def __init__(
        self,
        model: Model,
        kernel: BatchKernel,
        invariants: Sequence[Property],
        step_props: Sequence[Property],
        symmetry: bool,
        check: KernelCheck | None,
        *,
        setup: LevelsSetup,
        session: Session,
        visitor: GraphVisitor | None = None,
    ) -> None:
        super().__init__(model, kernel, invariants, step_props, symmetry, check, visitor=visitor)
        self.setup, self.session = setup, session
        self.waited = False  # a level past the limit ran here while the session started
        # The run's store, made when the session starts in the background so that its probe
        # job runs then (``probe_store``), before the driver's last levels; the hand-over's.
        self.store: RowsStore | None = None

    # -- the engine's phases (checker.spark.engine): the same calls on both search objects ----

    def following(self, depth: int, metrics: Metrics, stopping: Callable[[], bool]) -> DriverLevels | PartitionedLevels:
        """At a level boundary: the search of the next level, Spark's once a level has
        outgrown the driver."""
        return PartitionedLevels.hand_over(self, depth, metrics, stopping) if self.outgrown() else self

    def resumed(
        self, snapshot: Snapshot, metrics: Metrics, stopping: Callable[[], bool]
    ) -> DriverLevels | PartitionedLevels:
        """The search that takes a checkpoint's ``snapshot`` back: Spark's for a saved
        Spark level."""
        return (
            PartitionedLevels.saved_level(self, metrics, stopping, snapshot) if snapshot["phase"] == "spark" else self
        )

    def prepare(self) -> None:
        """Before the run: nothing to load."""

    def finish(self, stopped: str | None, metrics: Metrics, depth: int, data_root: str | None) -> str | None:
        """After the run: why Spark was never used, in one line (``None`` after a stop on
        a full disk at the hand-over, said by the stop's own line)."""
        if stopped == "disk-full":
            return None
        metrics["driver_levels"] = depth
        return self.not_started()

    def committed(self, snapshot: Snapshot) -> None:
        """A checkpoint is written: nothing of the driver's levels lives outside the process."""

    def close(self) -> None:
        """Remove the store made for the session's probe, unless handed over."""
        if self.store is not None:
            self.store.remove()
            self.store = None

    def outgrown(self) -> bool:
        """At a level boundary: whether the level is to run on Spark (it has more than
        ``driver_level_limit`` states, and the session is not still starting); starts the
        session early when a level passes ``driver_level_limit / EARLY`` states."""
        size, limit, session = self.size(), self.setup.driver_level_limit, self.session
        if session.failed_early(StoreUnseenError):
            session.context()  # raises it now (a store an executor cannot see), not after more levels
        if size > limit:
            if session.still_starting(size, limit):
                self.waited = True
                return False
            return True
        if size * EARLY > limit > 0 and session.sc is None and self.setup.cluster is None:
            if session.starter is None:
                store = self.store = RowsStore.create(self.setup.store_dir, digest=self.setup.data_root is not None)
                session.probe = partial(probe_store, store=store)
            session.start_early()
        return False

    def not_started(self) -> str:
        """Why this run never used Spark, in one line (every level stayed on the driver)."""
        limit, session = self.setup.driver_level_limit, self.session
        if session.starter is None:
            head = "Spark was not started"
        elif session.abandon_early():  # the search is over: not a second more for the JVM
            head = "Spark was being started in advance; that start was abandoned, not waited for"
        else:
            head = "Spark was started in advance, then not used"
        if self.waited:
            return (
                f"{head}: the driver expanded the levels past {limit:,} states "
                f"(--driver-level-limit {limit}) while the session was starting, and the search ended "
                "before it was up."
            )
        return (
            f"{head}: every level it expanded had at most {limit:,} states "
            f"(--driver-level-limit {limit}), so the driver ran them all itself, as the local engine does."
        )

    def snapshot_parts(self) -> Snapshot:
        return {
            "head": {"format": self.setup.snapshot_format},
            "phase": "driver",
            "local": {
                "format": ROWS_FORMAT,
                "frontier": self.frontier,
                "seen": self.seen,
                **({"numbered": self.numbered} if self.numbered else {}),
            },
        }

    def restore_parts(self, snapshot: Snapshot, directory: str | Path | None = None) -> None:
        # (checked once, by the engine's restore: ``checker.checkpoints.schema``)
        super().restore_parts(snapshot["local"])
