"""The engines by name, and one factory for every engine: local or Spark, on the per-state or
the batch path.

``ENGINES`` is the one place the engines' names are written (the spec's ``check.engine`` and
the CLI's ``--engine`` read it). An engine is a factory called with one ``EngineRequest``
(what to check, how, and the hooks) that returns a level driver (``checker.core.driver``)
over a search object; the Spark engine (``checker.spark.engine``) runs the same levels in
Spark tasks once they outgrow the driver, and is imported only when it is made (pyspark is
optional). Hooks are given here, at construction, never set afterwards.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Final

import attrs

from .base.errors import UsageError
from .contract.protocol import BatchKernel, Model, Property, batch_path, with_defaults
from .core.options import Options

if TYPE_CHECKING:
    from .core.driver import Engine, OnLevel, Progress


@attrs.frozen
class EngineRequest:
    """What an engine is made from.

    Attributes:
        model, properties, options: what to check and how (``properties`` ``None``: the
            model's own).
        kernel: the batch kernel to run on, or ``None``: the per-state path (the model's
            own successor function, as rows of Python states where the engine needs rows).
        progress: called with a ``Stats`` snapshot now and then, and after every level.
        on_level: called with the engine at every level boundary (a checkpoint writer).
        on_status: called with a short message while Spark starts (Spark only).
        data_root: the checkpoint directory, where the Spark engine and the disk store save
            their files.
        master, partitions, verbose, driver_level_limit, store_dir: the Spark engine's
            (``checker.spark.engine.SparkRowsEngine``).
    """

    model: Model
    properties: Sequence[Property] | None
    options: Options
    kernel: BatchKernel | None
    progress: Progress | None = None
    on_level: OnLevel | None = None
    on_status: Callable[[str], None] | None = None
    data_root: str | None = None
    master: str | None = None
    partitions: int | None = None
    verbose: bool = False
    driver_level_limit: int | None = None
    store_dir: str | None = None


EngineFactory = Callable[[EngineRequest], "Engine"]


def local_engine(r: EngineRequest) -> Engine:
    """The local engine: the rows search in this process (``checker.local.rows``) over the
    model's batch kernel, or over its Python states on the per-state path
    (``checker.local.states``), its states in the store the options name."""
    from .local.rows import BatchEngine
    from .local.states import LocalEngine
    from .stores.registry import new_store

    store = new_store(r.options.store, r.options.store_dir, r.data_root)
    if r.kernel is None:
        return LocalEngine(r.model, r.properties, r.options, r.progress, on_level=r.on_level, store=store)
    return BatchEngine(r.model, r.properties, r.options, r.progress, on_level=r.on_level, kernel=r.kernel, store=store)


def spark_engine(r: EngineRequest) -> Engine:
    """The Spark engine (``checker.spark.engine.SparkRowsEngine``)."""
    from .spark.engine import DRIVER_LEVEL_LIMIT, SparkRowsEngine

    return SparkRowsEngine(
        r.model,
        r.properties,
        r.options,
        r.progress,
        master=r.master,
        partitions=r.partitions,
        verbose=r.verbose,
        per_state=r.kernel is None,
        on_level=r.on_level,
        on_status=r.on_status,
        data_root=r.data_root,
        store_dir=r.store_dir,
        driver_level_limit=DRIVER_LEVEL_LIMIT if r.driver_level_limit is None else r.driver_level_limit,
    )


ENGINES: Final[dict[str, EngineFactory]] = {"local": local_engine, "spark": spark_engine}


def register_engine(name: str, factory: EngineFactory) -> None:
    """Add the engine ``name``; a name already taken is refused (never replaced silently)."""
    if name in ENGINES:
        raise UsageError(f"engine {name!r} is registered already")
    ENGINES[name] = factory


def make_engine(
    model: Model,
    properties: Sequence[Property] | None = None,
    options: Options | None = None,
    *,
    engine: str = "local",
    per_state: bool = False,
    progress: Progress | None = None,
    on_level: OnLevel | None = None,
    on_status: Callable[[str], None] | None = None,
    data_root: str | None = None,
    master: str | None = None,
    partitions: int | None = None,
    verbose: bool = False,
    driver_level_limit: int | None = None,
    store_dir: str | None = None,
) -> Engine:
    """The engine ``engine`` (a name of ``ENGINES``) for ``model``.

    Args:
        model, properties, options: what to check and how (``Options``).
        per_state: expand one Python state at a time with the model's own successor
            function, even when the model has a batch kernel (for differential testing);
            a model without a batch kernel always runs so, and so does one whose kernel
            cannot run its configuration (``batch_unsupported()``): the engine's
            ``per_state_because`` then says why, in one sentence. With ``options.store``
            other than ``"memory"``, a local engine keeps its states in that store
            (``checker.stores.registry``), the per-state path then on the rows search over
            ``checker.core.states_kernel.StatesKernel`` (the same states in the same order).
        progress, on_level, on_status, data_root, master, partitions, verbose,
        driver_level_limit, store_dir: the hooks and settings of ``EngineRequest``.
    """
    factory = ENGINES.get(engine)
    if factory is None:
        raise UsageError(f"--engine: unknown engine {engine!r} (known: {', '.join(ENGINES)})")
    model = with_defaults(model)
    kernel, why = (None, None) if per_state else batch_path(model)
    made = factory(
        EngineRequest(
            model,
            properties,
            options or Options(),
            kernel,
            progress,
            on_level,
            on_status,
            data_root,
            master,
            partitions,
            verbose,
            driver_level_limit,
            store_dir,
        )
    )
    if why is not None:
        made.per_state_because = why
    return made
