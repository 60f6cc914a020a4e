"""``kmc check SPEC``: explore every behaviour of a spec and check its invariants."""

from __future__ import annotations

import argparse
import contextlib
import os
from typing import TYPE_CHECKING, Any, cast

from kmc.checker import __version__
from kmc.checker.base import units
from kmc.checker.base.errors import KmcError, ModelError, UsageError
from kmc.checker.base.exitcodes import EXIT_RESOURCE_LIMIT
from kmc.checker.base.signals import StopOnSignals
from kmc.checker.base.text import safe_text
from kmc.checker.checkpoints import file as checkpoint
from kmc.checker.checkpoints import writer as checkpointer
from kmc.checker.core.parts import ResourceStop
from kmc.checker.stores.registry import STORES

from ..outputs import check_diagram_paths, check_output_path
from .check_arguments import add_long_run_arguments, add_output_arguments, add_search_arguments
from .check_report import report
from .check_views import CheckViews
from .common import (
    add_engine_arguments,
    add_kafka_arguments,
    add_model_arguments,
    load_target,
    make_engine,
    options_from,
    require_spark,
    select_properties,
    spark_submit_master,
    with_covers,
    with_deadlock,
)

if TYPE_CHECKING:  # for the annotations only: imported on first use
    from collections.abc import Callable

    from kmc.checker.contract.protocol import Model, Property
    from kmc.checker.core.driver import LevelDriver
    from kmc.checker.core.options import Options
    from kmc.checker.core.result import CheckResult
    from kmc.model.spec import Spec
    from rich.console import Console

    from ..user_model import ModelSpec


def register(p: argparse.ArgumentParser) -> None:
    p.description = (
        "Explore every reachable state of the spec's configuration breadth-first and "
        "check its invariants. Prints either 'all invariants hold over N distinct states' or a "
        "shortest counterexample, step by step, and says whether the result matches the spec's "
        "[expect] table. --model checks a model of your own instead, with the same options "
        "(docs/writing-a-model.md). What the model's variables, actions, truncation rules and invariants "
        "mean, and how states are counted: docs/model.md."
    )
    p.epilog = (
        "Exit codes: 0 every checked invariant holds (or none failed in the part explored, "
        "when a bound stopped the search), 1 a violation, 2 bad input (or --json could not be "
        "written; every output path is checked before the search), 3 with --check-expect: "
        "the result does not match [expect] (a model's expect()) (an unknown verdict does not match), 4 stopped at "
        "--max-memory, 130 interrupted (SIGINT), 143 stopped (SIGTERM)."
    )
    add_search_arguments(p)
    add_output_arguments(p)
    add_long_run_arguments(p)
    add_engine_arguments(p)
    add_model_arguments(p)
    add_kafka_arguments(p)
    p.set_defaults(run=run)


def _from_checkpoint(args: argparse.Namespace, header: dict[str, Any]) -> None:
    """Fill what the command line leaves out from the checkpoint being resumed."""
    opts = header.get("options") or {}
    if "model_ref" in header:  # a model's checkpoint: rebuilt from its reference and parameters
        if args.spec is None and args.model is None:
            args.model = header["model_ref"]
        if args.model is not None and not args.param:
            args.model_params = header.get("model_params") or {}
    elif args.spec is None and args.model is None:
        args.spec = header.get("spec_path")
    if args.max_depth is None:
        args.max_depth = opts.get("max_depth")
    if args.kafka is None and isinstance(opts.get("kafka"), list) and len(opts["kafka"]) == 2:
        args.kafka, args.metadata = opts["kafka"]  # the release --kafka named (compared below, with the options)
    args.keep_going = args.keep_going or bool(opts.get("keep_going"))
    args.symmetry = args.symmetry or bool(opts.get("symmetry"))
    # (A checkpoint of a model resumed for a spec, or the other way round, is refused
    # by checkpointer.ensure_compatible, in one line.)
    if not args.invariants and ("model_ref" in header) == (args.model is not None):
        args.invariants = header.get("properties")
    from kmc.checker.core.deadlock import DEADLOCK

    if args.invariants and DEADLOCK in args.invariants:  # the run checked deadlocks: so does its resumption
        args.deadlock = True
        args.invariants = [n for n in args.invariants if n != DEADLOCK] or None
    if args.engine is None:  # the engine that wrote it; another one is refused
        args.engine = header.get("engine")
    store = header.get("store", "memory")  # named only when not in memory
    if store not in STORES:
        raise checkpoint.CheckpointError(
            f"{checkpoint.checkpoint_file(args.resume)}: corrupted header: store must be one of "
            + ", ".join(map(repr, STORES))
        )
    if args.store is None:  # the store that wrote it; memory to disk goes on, disk to memory is refused
        args.store = store
    elif store == "disk" and args.store != store:
        raise checkpoint.CheckpointError(
            f"{args.resume}: cannot resume, the checkpoint keeps its states in the disk store and this run "
            f"asks for --store {args.store}; resume it with --store disk"
        )


def run(args: argparse.Namespace, out: Console, err: Console) -> int:
    try:
        return _run(args, out, err)
    except ModelError as e:  # an engine's (a Spark task's): named after the model as the others
        if args.model is None or str(e).startswith("--model "):
            raise
        raise ModelError(f"--model {args.model}: {e}") from None
    except (KmcError, MemoryError):
        raise
    except Exception as e:
        if args.model is None:
            raise
        # A model of the user's own raised (the probe before the search calls it on a
        # sample; this is what it did not reach): one line, exit 2, never a verdict.
        from ..user_model import failure

        raise failure(args.model, e) from None


def _resumed_header(directory: str) -> dict[str, Any]:
    """The header of the checkpoint ``--resume`` names. A checkpoint directory without a
    checkpoint (its run was killed before its first one) has the disk store of that run
    removed, and the refusal says so.

    Raises:
        CheckpointError: no checkpoint, or a damaged one (one line).
    """
    try:
        return checkpoint.read_header(directory)
    except checkpoint.CheckpointError as e:
        if checkpoint.exists(directory) or checkpoint.read_manifest(directory) is None:
            raise
        from kmc.checker.stores.disk import remove_stale

        freed = remove_stale(directory)
        if not freed:
            raise
        raise checkpoint.CheckpointError(
            f"{e}; the disk store its run left there when it was killed before its first checkpoint is removed "
            f"({units.format_size(freed)} freed)"
        ) from None


def _run(args: argparse.Namespace, out: Console, err: Console) -> int:
    header = _resumed_header(args.resume) if args.resume else None
    if header is not None:
        _from_checkpoint(args, header)
    elif args.spec is None and args.model is None and not args.param:
        raise UsageError("check: a SPEC is required (or --resume DIR, or --model MODULE:FACTORY)")
    _refuse_empty_directories(args)
    spec = _load_target(args)
    views = CheckViews.of(spec)
    directory = args.checkpoint or args.resume
    protected = [*views.files, *checkpoint.own_files(directory)] if directory else views.files
    check_output_path("--json", args.json, force=args.force, protected=protected)
    check_diagram_paths(args, protected)
    require_spark(spec, args)
    submit = spark_submit_master(spec, args)
    if submit is not None:
        err.print(f"kmc: under spark-submit: running on its master {submit}", markup=False, highlight=False)
    model = spec.model()
    properties = with_deadlock(with_covers(select_properties(spec, args.invariants), spec), spec, args)
    options = options_from(spec, args)
    if views.generic:  # a model of the user's own: called on a sample before the search
        cast("ModelSpec", spec).probe(model, kernel=not args.per_state)
    views.prepare(args, model)
    show_progress = not args.no_progress and err.is_terminal
    identity = _identity(args, views, properties, options)
    resuming_here = args.resume and os.path.realpath(directory) == os.path.realpath(args.resume)
    if directory and not resuming_here and checkpoint.exists(directory):
        raise UsageError(
            f"--checkpoint: {directory} already holds a checkpoint; continue it with "
            f"--resume {directory}, or choose another directory"
        )
    try:
        engine, result, writer, signals = _search(
            args, err, spec, model, properties, options, identity, header, directory, show_progress, views.recorded
        )
    except MemoryError:
        # Outside a level (the driver drops a level that runs out of memory, and the
        # checkpoint of the last one is written below): setting up, or writing a checkpoint.
        err.print(
            "kmc: stopped: out of memory (the process could not allocate: MemoryError) before the search was complete.",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )
        if directory and checkpoint.exists(directory):
            err.print(
                f"kmc: the last checkpoint written is in {directory}; continue with: kmc check --resume "
                f"{directory} (with more memory)",
                markup=False,
                highlight=False,
                soft_wrap=True,
            )
        return EXIT_RESOURCE_LIMIT
    except ResourceStop as e:
        # Outside a level (the driver stops a level at a full disk): storing the initial states.
        err.print(
            f"kmc: stopped: {safe_text(e.detail)}; the search was not complete (no checkpoint was written).",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )
        return EXIT_RESOURCE_LIMIT
    return report(args, err, out, spec, model, result, engine, writer, signals, options, directory, views)


def _refuse_empty_directories(args: argparse.Namespace) -> None:
    """A directory option given as an empty path is refused before anything runs."""
    for option, value in (
        ("--checkpoint", args.checkpoint),
        ("--resume", args.resume),
        ("--spark-store", args.spark_store),
        ("--store-dir", args.store_dir),
    ):
        if value is not None and not value.strip():
            raise UsageError(f"{option}: the path is empty; name a directory")


def _identity(
    args: argparse.Namespace, views: CheckViews, properties: list[Property], options: Options
) -> dict[str, Any]:
    """What a checkpoint's header says of the run, compared on resume: the target, the
    properties and the options that change the state space."""
    identity: dict[str, Any] = {
        "kmc_version": __version__,
        **views.identity,
        "properties": [p.name for p in properties],
        "options": {"max_depth": options.max_depth, "keep_going": options.keep_going},
    }
    if options.symmetry:  # named only when on: checkpoints of runs without it stay compatible
        identity["options"]["symmetry"] = True
    if args.kafka is not None and not views.generic:  # named only when given, as symmetry
        identity["options"]["kafka"] = [args.kafka, args.metadata]
    if options.store != "memory":  # named only when not in memory (a resume takes it over)
        identity["store"] = options.store
    return identity


def _load_target(args: argparse.Namespace) -> Spec | ModelSpec:
    """The spec file, or the model ``--model`` names with its ``--param`` values (or, on
    resume, the parameters its checkpoint recorded)."""
    params = args.model_params
    if args.model is not None and params is not None:
        if args.spec is not None:
            raise UsageError(f"--model: give a SPEC file or --model, not both (got {args.spec})")
        from ..user_model import load_model_spec

        return load_model_spec(args.model, dict(params))
    return load_target(args)


def _search(
    args: argparse.Namespace,
    err: Console,
    spec: Spec | ModelSpec,
    model: Model,
    properties: list[Property],
    options: Options,
    identity: dict[str, Any],
    header: dict[str, Any] | None,
    directory: str | None,
    show_progress: bool,
    recorded: dict[str, Any],
) -> tuple[LevelDriver, CheckResult, checkpointer.Checkpointer | None, StopOnSignals]:
    """Run the search (writing checkpoints when asked); ``(engine, result, writer, signals)``.
    ``identity`` goes into a checkpoint's header and is compared on resume, ``recorded``
    goes into it only."""
    from kmc.app.render import ProgressDisplay

    with contextlib.ExitStack() as stack:
        writer = None
        if directory:  # holds the directory's lock until the final checkpoint is written
            writer = stack.enter_context(
                checkpointer.Checkpointer(
                    directory,
                    {
                        **identity,
                        **recorded,
                        "limits": {"max_states": options.max_states, "max_memory": options.max_memory},
                    },
                    args.checkpoint_every,
                )
            )
        plain_every = None if args.no_progress or err.is_terminal else args.progress_every
        with ProgressDisplay(
            err,
            enabled=show_progress,
            title=safe_text(spec.name),
            every=plain_every,
            levels=(args.engine or spec.engine) == "spark",
        ) as progress:
            hooks = {
                "on_status": progress.status,
                "on_level": writer.on_level if writer else None,
                "data_root": directory or None,
            }
            engine = make_engine(spec, model, properties, options, progress.update, args, **hooks)
            if header is not None:
                checkpointer.ensure_compatible(args.resume, header, {"engine": engine.name, **identity})
                engine = _restore(
                    engine,
                    args.resume,
                    lambda: make_engine(
                        spec,
                        model,
                        properties,
                        options,
                        progress.update,
                        argparse.Namespace(**{**vars(args), "per_state": True}),
                        **hooks,
                    ),
                )
                _say_resumed(err, args.resume, engine)
            with StopOnSignals(engine) as signals:
                result = engine.run()
        if writer:  # first: the work done is worth more than its report
            try:
                writer.save(engine)
            except ResourceStop:  # the checkpoint's disk is full: said by the report (writer.full)
                pass
    return engine, result, writer, signals


def _say_resumed(err: Console, directory: str, engine: LevelDriver) -> None:
    """One line: the depth a resumed run goes on from (the level of that depth is expanded
    again from its start), or that the checkpoint holds a finished search."""
    stats = engine.stats
    size = engine.frontier_size()
    depth = engine.options.max_depth
    if not size:
        what = "its search was complete: the result again"
    elif engine.stop_reason_after_level() is not None or (depth is not None and stats.depth >= depth):
        what = "its search had ended there: the result again"
    else:
        what = f"the {size:,} states of that level are expanded from the start"
    err.print(
        f"kmc: resuming {safe_text(str(directory))} at depth {stats.depth} ({stats.distinct:,} distinct states, "
        f"{stats.generated:,} generated); {what}",
        markup=False,
        highlight=False,
        soft_wrap=True,
    )


def _restore(engine: LevelDriver, directory: str, per_state: Callable[[], LevelDriver]) -> LevelDriver:
    """``engine.restore`` from the checkpoint in ``directory``, a malformed snapshot
    (re-sealed after an edit: the checksum cannot tell) refused in one line. A snapshot
    of the per-state path continues on that path (``per_state()`` makes its engine).
    Returns the engine that restored it."""
    header, snapshot = checkpoint.read(directory)
    if snapshot.get("engine") != header["engine"]:
        raise checkpoint.CheckpointError(
            f"{checkpoint.checkpoint_file(directory)}: corrupted (its states "
            "were written by another engine than its header names)"
        )
    from kmc.checker.checkpoints.schema import path_of

    if engine.path != "per-state" and path_of(snapshot) == "per-state":
        engine = per_state()
    try:
        engine.restore(snapshot, directory)
    except (KeyError, IndexError, TypeError, ValueError, AttributeError) as e:
        raise checkpoint.CheckpointError(
            f"{checkpoint.checkpoint_file(directory)}: corrupted (its states do not "
            f"load: {type(e).__name__}); it cannot be resumed, start a new run"
        ) from None
    return engine
