"""``kmc check SPEC``: explore every behaviour of a spec and check its invariants."""

from __future__ import annotations

import argparse
import contextlib
import os
from typing import TYPE_CHECKING, Any, cast

from kmc.checker import __version__
from kmc.checker.base import memory, units
from kmc.checker.base.errors import KmcError, ModelError, UsageError
from kmc.checker.base.exitcodes import EXIT_RESOURCE_LIMIT
from kmc.checker.base.signals import StopOnSignals
from kmc.checker.base.text import safe_text
from kmc.checker.checkpoints import file as checkpoint
from kmc.checker.checkpoints import writer as checkpointer
from kmc.checker.core.parts import ResourceStop

from ..outputs import add_diagram_arguments, check_diagram_paths, check_output_path
from .check_report import report
from .check_resume import from_checkpoint, restore, resumed_header, say_resumed
from .check_views import CheckViews
from .common import (
    add_engine_arguments,
    add_force_argument,
    add_kafka_arguments,
    add_model_arguments,
    load_target,
    make_engine,
    options_from,
    positive_int,
    require_spark,
    select_properties,
    spark_submit_master,
    with_covers,
    with_deadlock,
)

if TYPE_CHECKING:  # for the annotations only: imported on first use
    from collections.abc import Sequence

    from kmc.checker.contract.protocol import Model, Property
    from kmc.checker.core.driver import Engine
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


def add_search_arguments(p: argparse.ArgumentParser) -> None:
    """The spec and what to check in it, how far."""
    p.add_argument(
        "spec",
        metavar="SPEC",
        nargs="?",
        help="the spec file (TOML), e.g. specs/hw-data-loss.toml (optional with --resume or --model)",
    )
    p.add_argument(
        "--invariant",
        action="append",
        metavar="NAME",
        dest="invariants",
        help="check only this invariant (repeatable; default: the spec's list, else all; see 'kmc invariants')",
    )
    p.add_argument(
        "--max-depth",
        type=positive_int,
        metavar="N",
        help="do not explore past depth N (the initial state has depth 1)",
    )
    p.add_argument(
        "--max-states",
        type=positive_int,
        metavar="N",
        help="stop at the end of the first level that brings the distinct states to N or more "
        "(so the count may exceed N); undecided invariants are then 'unknown'",
    )
    p.add_argument(
        "--keep-going", action="store_true", help="after a violation, keep exploring to decide every other invariant"
    )
    p.add_argument(
        "--deadlock",
        action="store_true",
        help="report a reachable state in which no action is enabled (a deadlock, as TLC defines it) with a "
        "shortest trace, exit 1 (default: the spec's [check] deadlock, else off: terminal states are allowed)",
    )


def add_output_arguments(p: argparse.ArgumentParser) -> None:
    """What is printed and written of the result, and how the exit code reads it."""
    p.add_argument("--json", metavar="PATH", help="also write the result as JSON (schema in docs/json-schema.md)")
    add_diagram_arguments(p)
    add_force_argument(p)
    p.add_argument("--diff", action="store_true", help="show only what changes at each step of a counterexample")
    p.add_argument(
        "--coverage",
        action="store_true",
        help="also print the coverage: per action how often it was enabled, fired and found a new "
        "state, per kind, per variable its distinct values (always in --json)",
    )
    p.add_argument("--no-trace", action="store_true", help="do not print counterexample traces")
    p.add_argument("--no-progress", action="store_true", help="no progress output at all")
    p.add_argument(
        "--progress-every",
        type=_seconds,
        default=30.0,
        metavar="SECONDS",
        help="when standard error is not a terminal (CI, nohup, 2> log), write a plain "
        "progress line every SECONDS (default 30): time, distinct, generated, queue, "
        "depth, states/s",
    )
    p.add_argument(
        "--check-expect",
        action="store_true",
        help="exit 0 when the result matches the spec's [expect] table (with --model: the "
        "model's expect()) and 3 when it does not",
    )


def add_long_run_arguments(p: argparse.ArgumentParser) -> None:
    """Checkpoints, resumption and the memory ceiling."""
    g = p.add_argument_group("long runs (see docs/long-runs.md)")
    g.add_argument(
        "--checkpoint", metavar="DIR", help="write checkpoints into DIR at level boundaries and when the run stops"
    )
    g.add_argument(
        "--checkpoint-every",
        type=_seconds,
        default=60.0,
        metavar="SECONDS",
        help="at most one level-boundary checkpoint every SECONDS (default 60; 0: every level)",
    )
    g.add_argument(
        "--resume",
        metavar="DIR",
        help="continue the run checkpointed in DIR (and keep checkpointing there); the spec, or the "
        "model and its --param values, come from the checkpoint when not given",
    )
    g.add_argument(
        "--max-memory",
        type=_size,
        metavar="SIZE",
        help=f"stop cleanly (exit {EXIT_RESOURCE_LIMIT}) once resident memory passes SIZE, e.g. 8G or 512M "
        f"(default {round(memory.DEFAULT_SHARE * 100)}%% of the memory this process may use: the machine's, "
        "or its control group's or address-space limit when lower)",
    )


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not 0 <= value < float("inf"):
        raise argparse.ArgumentTypeError(f"must be at least 0, got {text}")
    return value


def _size(text: str) -> int:
    try:
        value = units.parse_size(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    why = units.check_ceiling(value)
    if why:
        raise argparse.ArgumentTypeError(f"{why}, got {text}")
    return value


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


def _run(args: argparse.Namespace, out: Console, err: Console) -> int:
    header = resumed_header(args.resume) if args.resume else None
    if header is not None:
        from_checkpoint(args, header)
    elif args.spec is None and args.model is None and not args.param:
        raise UsageError("check: a SPEC is required (or --resume DIR, or --model MODULE:FACTORY)")
    _refuse_empty_directories(args)
    spec = _load_target(args)
    views = CheckViews.of(spec)
    directory = args.checkpoint or args.resume
    protected: Sequence[str | os.PathLike[str]] = (
        [*views.files, *checkpoint.own_files(directory)] if directory else views.files
    )
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
) -> tuple[Engine, CheckResult, checkpointer.Checkpointer | None, StopOnSignals]:
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
                engine = restore(
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
                say_resumed(err, args.resume, engine)
            with StopOnSignals(engine) as signals:
                result = engine.run()
        if writer:  # first: the work done is worth more than its report
            try:
                writer.save(engine)
            except ResourceStop:  # the checkpoint's disk is full: said by the report (writer.full)
                pass
    return engine, result, writer, signals
