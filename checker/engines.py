"""One factory for every engine: local or Spark, on the per-state or the batch path.

Every engine is the level driver (``checker.core.driver``) over a search object; the Spark
engine (``checker.spark.engine``) runs the same levels in Spark tasks once they outgrow the
driver. Hooks are given here, at construction, never set afterwards.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .base.errors import UsageError
from .contract.protocol import Model, batch_path, with_defaults
from .core.options import Options

if TYPE_CHECKING:
    from .core.driver import LevelDriver

ENGINES = ("local", "spark")


def make_engine(
    model: Model,
    properties=None,
    options=None,
    *,
    engine="local",
    per_state=False,
    progress=None,
    on_level=None,
    on_status=None,
    data_root=None,
    master=None,
    partitions=None,
    verbose=False,
    driver_level_limit=None,
    store_dir=None,
) -> LevelDriver:
    """The engine ``engine`` (``"local"`` or ``"spark"``) for ``model``.

    Args:
        model, properties, options: what to check and how (``Options``).
        per_state: expand one Python state at a time with the model's own successor
            function, even when the model has a batch kernel (for differential testing);
            a model without a batch kernel always runs so, and so does one whose kernel
            cannot run its configuration (``batch_unsupported()``): the engine's
            ``per_state_because`` then says why, in one sentence. With ``options.store``
            ``"disk"``, a local engine keeps its states in a ``checker.stores.disk.DiskStore``,
            the per-state path then on the rows search over
            ``checker.core.states_kernel.StatesKernel`` (the same states in the same order).
        progress: called with a ``Stats`` snapshot now and then, and after every level.
        on_level: called with the engine at every level boundary (a checkpoint writer).
        on_status: called with a short message while Spark starts (Spark only).
        data_root: the checkpoint directory, where the Spark engine and the disk store
            save their files.
        master, partitions, verbose, driver_level_limit, store_dir: the Spark engine's
            (``checker.spark.engine.SparkRowsEngine``).
    """
    options = options or Options()
    model = with_defaults(model)
    kernel, why = (None, None) if per_state else batch_path(model)
    batch = kernel is not None and not per_state
    made: LevelDriver
    if engine == "local":
        if batch or options.store != "memory":
            from .local.rows import BatchEngine
            from .stores.disk import new_store

            # A store other than the per-state search's own runs the rows search; a model
            # on the per-state path then runs there through its states kernel.
            store = new_store(options.store, options.store_dir, data_root)
            if batch:
                made = BatchEngine(model, properties, options, progress, on_level=on_level, kernel=kernel, store=store)
            else:
                from .checkpoints.schema import STATES_ROWS_FORMAT
                from .core.states_kernel import StatesKernel

                states: Any = StatesKernel(model)  # (rows of Python states: see checker.core.states_kernel)
                made = BatchEngine(
                    model,
                    properties,
                    options,
                    progress,
                    on_level=on_level,
                    kernel=states,
                    store=store,
                    snapshot_format=STATES_ROWS_FORMAT,
                )
                made.path = "per-state"
        else:
            from .local.states import LocalEngine

            made = LocalEngine(model, properties, options, progress, on_level=on_level)
    elif engine == "spark":
        from .spark.engine import DRIVER_LEVEL_LIMIT, SparkRowsEngine

        made = SparkRowsEngine(
            model,
            properties,
            options,
            progress,
            master=master,
            partitions=partitions,
            verbose=verbose,
            per_state=not batch,
            on_level=on_level,
            on_status=on_status,
            data_root=data_root,
            store_dir=store_dir,
            driver_level_limit=DRIVER_LEVEL_LIMIT if driver_level_limit is None else driver_level_limit,
        )
    else:
        raise UsageError(f"--engine: unknown engine {engine!r} (known: {', '.join(ENGINES)})")
    if why is not None:
        made.per_state_because = why
    return made
