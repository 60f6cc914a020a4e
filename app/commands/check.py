"""``kmc check SPEC``: explore every behaviour of a spec and check its invariants."""

from __future__ import annotations

import argparse
import contextlib
import os

from kmc.checker import __version__, checkpoint, checkpointer, memory
from kmc.checker.driver import RESOURCE_STOPS
from kmc.checker.errors import UsageError
from kmc.checker.exitcodes import EXIT_BAD_INPUT, EXIT_OK, EXIT_RESOURCE_LIMIT, EXIT_UNEXPECTED, EXIT_VIOLATION
from kmc.checker.signals import StopOnSignals
from kmc.checker.text import safe_text

from ..diagram_files import add_diagram_arguments, check_diagram_paths, command_line, write_diagrams
from .common import (
    add_engine_arguments,
    add_force_argument,
    add_model_arguments,
    check_output_path,
    load,
    load_target,
    make_engine,
    options_from,
    positive_int,
    require_spark,
    select_properties,
)


def register(sub) -> None:
    p = sub.add_parser(
        "check",
        help="explore every behaviour of a spec and check its invariants",
        description="Explore every reachable state of the spec's configuration breadth-first and "
        "check its invariants. Prints either 'all invariants hold over N distinct states' or a "
        "shortest counterexample, step by step, and says whether the result matches the spec's "
        "[expect] table. What the model's variables, actions, truncation rules and invariants "
        "mean, and how states are counted: docs/model.md.",
        epilog="Exit codes: 0 every checked invariant holds (or none failed in the part explored, "
        "when a bound stopped the search), 1 a violation, 2 bad input (or --json could not be "
        "written; every output path is checked before the search), 3 with --check-expect: "
        "the result does not match [expect] (an unknown verdict does not match), 4 stopped at "
        "--max-memory, 130 interrupted (SIGINT), 143 stopped (SIGTERM).",
    )
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
        help="exit 0 when the result matches the spec's [expect] table and 3 when it does not",
    )
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
        "--resume", metavar="DIR", help="continue the run checkpointed in DIR (and keep checkpointing there)"
    )
    g.add_argument(
        "--max-memory",
        type=_size,
        metavar="SIZE",
        help=f"stop cleanly (exit {EXIT_RESOURCE_LIMIT}) once resident memory passes SIZE, e.g. 8G or 512M "
        f"(default {round(memory.DEFAULT_SHARE * 100)}%% of the memory this process may use: the machine's, "
        "or its control group's or address-space limit when lower)",
    )
    add_engine_arguments(p)
    add_model_arguments(p)
    p.set_defaults(run=run)


def _seconds(text) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not 0 <= value < float("inf"):
        raise argparse.ArgumentTypeError(f"must be at least 0, got {text}")
    return value


def _size(text) -> int:
    try:
        value = memory.parse_size(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    why = memory.check_ceiling(value)
    if why:
        raise argparse.ArgumentTypeError(f"{why}, got {text}")
    return value


def _from_checkpoint(args, header) -> None:
    """Fill what the command line leaves out from the checkpoint being resumed."""
    opts = header.get("options") or {}
    if args.spec is None:
        args.spec = header.get("spec_path")
    if args.max_depth is None:
        args.max_depth = opts.get("max_depth")
    args.keep_going = args.keep_going or bool(opts.get("keep_going"))
    args.symmetry = args.symmetry or bool(opts.get("symmetry"))
    if not args.invariants:
        args.invariants = header.get("properties")
    if args.engine is None:  # the engine that wrote it; another one is refused
        args.engine = header.get("engine")


def run(args, out, err) -> int:
    if args.model is not None or args.param:
        return _run_model(args, out, err)
    header = checkpoint.read_header(args.resume) if args.resume else None
    if header is not None:
        _from_checkpoint(args, header)
    elif args.spec is None:
        raise UsageError("check: a SPEC is required (or --resume DIR)")
    for option, value in (
        ("--checkpoint", args.checkpoint),
        ("--resume", args.resume),
        ("--spark-store", args.spark_store),
    ):
        if value is not None and not value.strip():
            raise UsageError(f"{option}: the path is empty; name a directory")
    spec = load(args.spec)
    directory = args.checkpoint or args.resume
    protected = [spec.path, *checkpoint.own_files(directory)] if directory else [spec.path]
    check_output_path("--json", args.json, force=args.force, protected=protected)
    check_diagram_paths(args, protected)
    require_spark(spec, args)
    model = spec.model()
    properties = select_properties(spec, args.invariants)
    options = options_from(spec, args)
    show_progress = not args.no_progress and err.is_terminal
    identity = {
        "kmc_version": __version__,
        "spec_sha256": spec.sha256,
        "properties": [p.name for p in properties],
        "options": {"max_depth": options.max_depth, "keep_going": options.keep_going},
    }
    if options.symmetry:  # named only when on: checkpoints of runs without it stay compatible
        identity["options"]["symmetry"] = True
    resuming_here = args.resume and os.path.realpath(directory) == os.path.realpath(args.resume)
    if directory and not resuming_here and checkpoint.exists(directory):
        raise UsageError(
            f"--checkpoint: {directory} already holds a checkpoint; continue it with "
            f"--resume {directory}, or choose another directory"
        )
    try:
        engine, result, writer, signals = _search(
            args, err, spec, model, properties, options, identity, header, directory, show_progress
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
    return _report(args, err, out, spec, model, result, engine, writer, signals, options, directory)


def _search(args, err, spec, model, properties, options, identity, header, directory, show_progress):
    """Run the search (writing checkpoints when asked); ``(engine, result, writer, signals)``."""
    from kmc.reports import ProgressDisplay

    with contextlib.ExitStack() as stack:
        writer = None
        if directory:  # holds the directory's lock until the final checkpoint is written
            writer = stack.enter_context(
                checkpointer.Checkpointer(
                    directory,
                    {
                        **identity,
                        "spec_path": os.path.abspath(spec.path),
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
            with StopOnSignals(engine) as signals:
                result = engine.run()
        if writer:  # first: the work done is worth more than its report
            writer.save(engine)
    return engine, result, writer, signals


def _report(args, err, out, spec, model, result, engine, writer, signals, options, directory) -> int:
    """Print the result, write the outputs; the exit code."""
    from kmc.reports import ResultView, expectation, pictures, result_to_dict, write_json

    out.print(
        ResultView(spec, model, result, diff=args.diff, show_traces=not args.no_trace, max_states=options.max_states)
    )
    if args.coverage:
        from kmc.reports.coverage import coverage_view

        out.print()
        out.print(coverage_view(result.stats))
    if engine.cleaned:
        err.print(f"kmc: {engine.cleaned}", markup=False, highlight=False, soft_wrap=True)
    if engine.not_started:
        err.print(f"kmc: {engine.not_started}", markup=False, highlight=False, soft_wrap=True)
    wrote = True
    if args.json:
        try:
            write_json(args.json, result_to_dict(spec, model, result))
        except OSError as e:
            # The verdict is printed and stands; the lost file is one more line.
            err.print(
                f"kmc: error: --json: cannot write {args.json} ({e.strerror or e})",
                markup=False,
                highlight=False,
                soft_wrap=True,
            )
            wrote = False
    command = command_line(args, ["check", spec.path])
    wrote = (
        write_diagrams(
            args,
            err,
            lambda: pictures.result_page(spec, model, result, command),
            lambda: pictures.result_mermaid(spec, model, result),
        )
        and wrote
    )
    ceiling = (
        f"--max-memory {memory.format_size(options.max_memory)}"
        if getattr(args, "max_memory", None) or spec.max_memory
        else f"{memory.format_size(options.max_memory or 0)}, the default ceiling "
        f"({memory.DEFAULT_SHARE:.0%} of the memory this process may use; --max-memory SIZE sets another)"
    )
    _say_how_to_continue(err, result, directory if writer else None, ceiling, engine.stop_detail)
    code = _exit_code(args, spec, result, signals, expectation)
    # The path was checked before the search, so a write that fails now is rare (a full
    # disk, a folder removed meanwhile); a script reading "1 = see the JSON" must not look
    # for a file that is not there: the verdict is printed, the exit code says the output
    # failed. (A stop by a signal or --max-memory keeps its own code.)
    if not wrote and code in (EXIT_OK, EXIT_VIOLATION, EXIT_UNEXPECTED):
        return EXIT_BAD_INPUT
    return code


def _run_model(args, out, err) -> int:
    """``kmc check --model MODULE:FACTORY``: a user's model, with the generic views
    (``reports.generic``)."""
    from kmc.reports import ProgressDisplay, generic, write_json

    for option in ("checkpoint", "resume", "check_expect"):
        if getattr(args, option):
            raise UsageError(f"--{option.replace('_', '-')}: not available with --model (a spec file's option)")
    spec = load_target(args)
    protected = [spec.source] if spec.source else []
    check_output_path("--json", args.json, force=args.force, protected=protected)
    check_diagram_paths(args, protected)
    require_spark(spec, args)
    model = spec.model()
    properties = spec.properties(args.invariants)
    options = options_from(spec, args)
    plain_every = None if args.no_progress or err.is_terminal else args.progress_every
    with ProgressDisplay(
        err,
        enabled=not args.no_progress and err.is_terminal,
        title=safe_text(spec.ref),
        every=plain_every,
        levels=args.engine == "spark",
    ) as progress:
        engine = make_engine(spec, model, properties, options, progress.update, args, on_status=progress.status)
        with StopOnSignals(engine) as signals:
            result = engine.run()
    out.print(generic.result_view(spec, model, result, show_traces=not args.no_trace))
    if engine.not_started:
        err.print(f"kmc: {engine.not_started}", markup=False, highlight=False, soft_wrap=True)
    wrote = True
    if args.json:
        try:
            write_json(args.json, generic.result_dict(spec, model, result))
        except OSError as e:
            err.print(
                f"kmc: error: --json: cannot write {args.json} ({e.strerror or e})",
                markup=False,
                highlight=False,
                soft_wrap=True,
            )
            wrote = False
    wrote = (
        write_diagrams(
            args,
            err,
            lambda: generic.result_page(spec, model, result),
            lambda: generic.result_mermaid(spec, model, result),
        )
        and wrote
    )
    _say_how_to_continue(err, result, None, "--max-memory")
    code = _exit_code(args, spec, result, signals, None)
    if not wrote and code in (EXIT_OK, EXIT_VIOLATION):
        return EXIT_BAD_INPUT
    return code


def _exit_code(args, spec, result, signals, expectation) -> int:
    if result.stopped == "interrupted":  # before --check-expect: a stopped run has not answered
        return signals.exit_code
    if result.stopped in RESOURCE_STOPS and not result.violations:
        return EXIT_RESOURCE_LIMIT  # a resource stop is never a verdict, not even with --check-expect
    if args.check_expect:
        return EXIT_OK if expectation(spec, result)["matched"] else EXIT_UNEXPECTED
    if result.violations:
        return EXIT_VIOLATION
    return EXIT_OK


def _restore(engine, directory, per_state):
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
    from kmc.checker.spark_rows import STATES_FORMAT

    # A snapshot of the per-state path continues on that path (a local one has no format).
    if engine.path != "per-state" and (
        (engine.name == "local" and "format" not in snapshot) or snapshot.get("format") == STATES_FORMAT
    ):
        engine = per_state()
    try:
        engine.restore(snapshot, directory)
    except (KeyError, IndexError, TypeError, ValueError, AttributeError) as e:
        raise checkpoint.CheckpointError(
            f"{checkpoint.checkpoint_file(directory)}: corrupted (its states do not "
            f"load: {type(e).__name__}); it cannot be resumed, start a new run"
        ) from None
    return engine


def _say_how_to_continue(err, result, directory, ceiling, detail=None) -> None:
    if result.stopped not in ("interrupted", *RESOURCE_STOPS):
        return
    if result.stopped == "max-memory":
        err.print(
            f"kmc: stopped: resident memory passed {ceiling} before the search was complete.",
            markup=False,
            soft_wrap=True,
        )
    elif result.stopped == "out-of-memory":
        err.print(
            f"kmc: stopped: out of memory before the search was complete: {safe_text(detail or 'MemoryError')}.",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )
    elif result.stopped == "disk-full":
        err.print(
            f"kmc: stopped: {safe_text(detail or 'the Spark store is full')}; the search was not complete.",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )
    else:
        err.print("kmc: interrupted before the search was complete.", markup=False)
    if directory:
        more = {
            "max-memory": " --max-memory LARGER",
            "out-of-memory": " (with more memory)",
            "disk-full": " --spark-store DIR (with more free space)",
        }.get(result.stopped, "")
        err.print(
            f"kmc: checkpoint saved in {directory}; continue with: kmc check --resume {directory}{more}",
            markup=False,
            soft_wrap=True,
        )
    else:
        err.print("kmc: no checkpoint was written; run with --checkpoint DIR to be able to resume.", markup=False)
    if result.stopped in ("max-memory", "out-of-memory"):
        err.print(
            "kmc: to finish, use a machine with more memory (then --resume with a higher --max-memory), "
            "or --engine spark, which keeps its states on the cluster.",
            markup=False,
            soft_wrap=True,
        )
