"""What the partitioned levels (``checker.partitioned.levels``) take from outside: the
engine's arguments (``LevelsSetup``), the back end that gives each level its cluster
(``Backend``: the Spark adapter's session), and the driver's rows search they take over at
the hand-over (``DriverSearch``)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Protocol

import attrs
import numpy as np

from ..contract.protocol import BatchKernel
from ..core.level import LevelStep
from ..core.parts import FrontierQueue, Store
from ..core.visitor import GraphVisitor
from .cluster import Cluster
from .rows import RowsStore


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
    cluster: Cluster | None = None


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


class DriverSearch(Protocol):
    """The driver's rows search as the partitioned levels take it over (the Spark adapter's
    ``checker.spark.search.DriverLevels``, a ``checker.local.rows.RowsSearch``): its store,
    frontier and graph visitor, the run's arguments and back end, and the store made for
    the back end's probe (``store``, taken by the hand-over)."""

    store: RowsStore | None

    @property
    def setup(self) -> LevelsSetup: ...

    @property
    def session(self) -> Backend: ...

    @property
    def level(self) -> LevelStep: ...

    @property
    def kernel(self) -> BatchKernel: ...

    @property
    def symmetry(self) -> bool: ...

    @property
    def seen(self) -> Store: ...

    @property
    def queue(self) -> FrontierQueue: ...

    @property
    def frontier(self) -> list[np.ndarray]: ...

    @property
    def visitor(self) -> GraphVisitor: ...

    @property
    def numbered(self) -> Iterable[np.ndarray]: ...

    def size(self) -> int: ...
