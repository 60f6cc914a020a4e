"""``kmc check SPEC``: explore every behaviour of a spec and check its invariants."""

from __future__ import annotations

import argparse
import contextlib
import os
from typing import TYPE_CHECKING, Any, cast

import attrs
from kmc.checker import __version__
from kmc.checker.base import memory
from kmc.checker.base.errors import KmcError, ModelError, UsageError
from kmc.checker.base.exitcodes import EXIT_BAD_INPUT, EXIT_OK, EXIT_RESOURCE_LIMIT, EXIT_UNEXPECTED, EXIT_VIOLATION
from kmc.checker.base.signals import StopOnSignals
from kmc.checker.base.text import safe_text
from kmc.checker.checkpoints import file as checkpoint
from kmc.checker.checkpoints import writer as checkpointer
from kmc.checker.core.driver import RESOURCE_STOPS
from kmc.checker.core.parts import ResourceStop

from ..diagram_files import add_diagram_arguments, check_diagram_paths, command_line, write_diagrams
from .common import (
    add_engine_arguments,
    add_force_argument,
    add_kafka_arguments,
    add_model_arguments,
    check_output_path,
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
    from kmc.checker.core.driver import LevelDriver
    from kmc.checker.core.result import CheckResult
    from kmc.model.spec import Spec
    from rich.console import RenderableType

    from ..user_model import ModelSpec


def register(sub) -> None:
    p = sub.add_parser(
        "check",
        help="explore every behaviour of a spec and check its invariants",
        description="Explore every reachable state of the spec's configuration breadth-first and "
        "check its invariants. Prints either 'all invariants hold over N distinct states' or a "
        "shortest counterexample, step by step, and says whether the result matches the spec's "
        "[expect] table. --model checks a model of your own instead, with the same options "
        "(docs/writing-a-model.md). What the model's variables, actions, truncation rules and invariants "
        "mean, and how states are counted: docs/model.md.",
        epilog="Exit codes: 0 every checked invariant holds (or none failed in the part explored, "
        "when a bound stopped the search), 1 a violation, 2 bad input (or --json could not be "
        "written; every output path is checked before the search), 3 with --check-expect: "
        "the result does not match [expect] (a model's expect()) (an unknown verdict does not match), 4 stopped at "
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
    p.add_argument(
        "--deadlock",
        action="store_true",
        help="report a reachable state in which no action is enabled (a deadlock, as TLC defines it) with a "
        "shortest trace, exit 1 (default: the spec's [check] deadlock, else off: terminal states are allowed)",
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
        help="exit 0 when the result matches the spec's [expect] table (with --model: the "
        "model's expect()) and 3 when it does not",
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
    add_engine_arguments(p)
    add_model_arguments(p)
    add_kafka_arguments(p)
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
    if store not in ("memory", "disk"):
        raise checkpoint.CheckpointError(
            f"{checkpoint.checkpoint_file(args.resume)}: corrupted header: store must be 'memory' or 'disk'"
        )
    if args.store is None:  # the store that wrote it; memory to disk goes on, disk to memory is refused
        args.store = store
    elif store == "disk" and args.store != store:
        raise checkpoint.CheckpointError(
            f"{args.resume}: cannot resume, the checkpoint keeps its states in the disk store and this run "
            f"asks for --store {args.store}; resume it with --store disk"
        )


def run(args, out, err) -> int:
    try:
        return _run(args, out, err)
    except ModelError as e:  # an engine's (a Spark task's): named after the model as the others
        if getattr(args, "model", None) is None or str(e).startswith("--model "):
            raise
        raise ModelError(f"--model {args.model}: {e}") from None
    except (KmcError, MemoryError):
        raise
    except Exception as e:
        if getattr(args, "model", None) is None:
            raise
        # A model of the user's own raised (the probe before the search calls it on a
        # sample; this is what it did not reach): one line, exit 2, never a verdict.
        from ..user_model import failure

        raise failure(args.model, e) from None


def _resumed_header(directory) -> dict:
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
            f"({memory.format_size(freed)} freed)"
        ) from None


def _run(args, out, err) -> int:
    header = _resumed_header(args.resume) if args.resume else None
    if header is not None:
        _from_checkpoint(args, header)
    elif args.spec is None and args.model is None and not args.param:
        raise UsageError("check: a SPEC is required (or --resume DIR, or --model MODULE:FACTORY)")
    for option, value in (
        ("--checkpoint", args.checkpoint),
        ("--resume", args.resume),
        ("--spark-store", args.spark_store),
        ("--store-dir", args.store_dir),
    ):
        if value is not None and not value.strip():
            raise UsageError(f"{option}: the path is empty; name a directory")
    spec = _load_target(args)
    views = _Views.of(spec)
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
    identity = {
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
    return _report(args, err, out, spec, model, result, engine, writer, signals, options, directory, views)


def _load_target(args) -> Spec | ModelSpec:
    """The spec file, or the model ``--model`` names with its ``--param`` values (or, on
    resume, the parameters its checkpoint recorded)."""
    params = getattr(args, "model_params", None)
    if args.model is not None and params is not None:
        if args.spec is not None:
            raise UsageError(f"--model: give a SPEC file or --model, not both (got {args.spec})")
        from ..user_model import load_model_spec

        return load_model_spec(args.model, dict(params))
    return load_target(args)


@attrs.define
class _Views:
    """What differs between checking a Kafka spec and a model of the user's own: the
    files an output must not replace, what a checkpoint's header records of it (compared
    on resume, and only recorded), and the views of the result (``reports`` for a
    spec, ``render.generic`` for a model)."""

    files: list
    identity: dict
    recorded: dict
    generic: bool
    spec: Any  # a model.spec.Spec, or a user_model.ModelSpec when generic
    expected: dict | None = None  # a model's expect(), read by prepare

    @classmethod
    def of(cls, spec) -> _Views:
        from ..user_model import ModelSpec

        if isinstance(spec, ModelSpec):
            return cls([spec.source] if spec.source else [], spec.checkpoint_identity(), {}, True, spec)
        return cls([spec.path], {"spec_sha256": spec.sha256}, {"spec_path": os.path.abspath(spec.path)}, False, spec)

    def prepare(self, args, model) -> None:
        """Before the search: a model's expectations are read (and checked) now, and
        ``--check-expect`` with a model that declares none is refused."""
        if not self.generic:
            return
        from ..user_model import EXPECT_HOW, expectations

        self.expected = expectations(self.spec, model)
        if args.check_expect and self.expected is None:
            raise UsageError(f"--check-expect: {self.spec.ref} declares no expectations; {EXPECT_HOW}")

    def expectation(self, model, result, options) -> dict | None:
        """The comparison with the expectations (``None``: a model that declares none)."""
        if not self.generic:
            from kmc.app.render import expectation as spec_expectation

            return spec_expectation(self.spec, result)
        from ..user_model import expectation

        return None if self.expected is None else expectation(self.expected, result, options.symmetry)

    def show(self, args, model, result, options, exp) -> RenderableType:
        if not self.generic:
            from kmc.app.render import ResultView

            return ResultView(
                self.spec,
                model,
                result,
                diff=args.diff,
                show_traces=not args.no_trace,
                max_states=options.max_states,
                coverage=args.coverage,
            )
        from kmc.app.render import generic

        view = generic.result_view(
            self.spec, model, result, show_traces=not args.no_trace, diff=args.diff, coverage=args.coverage
        )
        if exp is None:
            return view
        from rich.console import Group
        from rich.text import Text

        undecided = [n for n in exp["expected"] if exp["got"].get(n) == "unknown"]
        if exp["matched"]:
            skipped = f" (not compared: {safe_text(', '.join(exp['unchecked']))})" if exp["unchecked"] else ""
            line = Text(f"This matches the model's expectation{skipped}.", "green")
        elif len(undecided) == len(exp["mismatches"]):  # nothing contradicts it (as for a spec)
            line = Text(
                "The model's expectation is not confirmed yet: the search stopped before deciding "
                f"{safe_text(', '.join(undecided))}.",
                "yellow",
            )
        else:
            line = Text(
                "This does NOT match the model's expectation: " + safe_text("; ".join(exp["mismatches"])) + ".",
                "bold red",
            )
        return Group(view, line)

    def document(self, model, result, exp) -> dict:
        if not self.generic:
            from kmc.app.render import result_to_dict

            return result_to_dict(self.spec, model, result)
        from kmc.app.render import generic

        doc = generic.result_dict(self.spec, model, result)
        if exp is not None:
            doc["expectation"] = exp
        return doc

    def page(self, model, result, command) -> str:
        from kmc.app.render import generic, pictures

        return (generic if self.generic else pictures).result_page(self.spec, model, result, command)

    def mermaid(self, model, result) -> str:
        from kmc.app.render import generic, pictures

        return (generic if self.generic else pictures).result_mermaid(self.spec, model, result)


def _search(
    args, err, spec, model, properties, options, identity, header, directory, show_progress, recorded
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


def _say_resumed(err, directory, engine) -> None:
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


def _report(args, err, out, spec, model, result, engine, writer, signals, options, directory, views) -> int:
    """Print the result, write the outputs; the exit code."""
    from kmc.app.render import write_json

    exp = views.expectation(model, result, options)
    shown = result
    if engine.name == "spark" and engine.not_started:  # what really ran: the header says so
        shown = attrs.evolve(result, engine="spark (no level reached Spark: every level ran on the driver)")
    out.print(views.show(args, model, shown, options, exp))
    if engine.cleaned:
        err.print(f"kmc: {engine.cleaned}", markup=False, highlight=False, soft_wrap=True)
    if engine.not_started:
        err.print(f"kmc: {engine.not_started}", markup=False, highlight=False, soft_wrap=True)
    if engine.per_state_because:
        err.print(
            f"kmc: checked on the per-state path: {engine.per_state_because}",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )
    wrote = True
    wrote_json = False
    if args.json:
        try:
            from ..outputs import exclusive

            write_json(args.json, views.document(model, result, exp), exclusive=exclusive(args.json))
            wrote_json = True
        except OSError as e:
            # The verdict is printed and stands; the lost file is one more line.
            err.print(
                f"kmc: error: --json: cannot write {args.json} ({e.strerror or e})",
                markup=False,
                highlight=False,
                soft_wrap=True,
            )
            wrote = False
    # A model's page is titled by its reference, the same whatever the engine.
    command = "" if views.generic else command_line(args, ["check", spec.path])
    wrote = (
        write_diagrams(
            args,
            err,
            lambda: views.page(model, result, command),
            lambda: views.mermaid(model, result),
        )
        and wrote
    )
    ceiling = (
        f"--max-memory {memory.format_size(options.max_memory)}"
        if getattr(args, "max_memory", None) or spec.max_memory
        else f"{memory.format_size(options.max_memory or 0)}, the default ceiling "
        f"({memory.DEFAULT_SHARE:.0%} of the memory this process may use; --max-memory SIZE sets another)"
    )
    full = writer.full if writer else None  # a checkpoint found its disk full
    _say_how_to_continue(
        err,
        result,
        directory if writer else None,
        ceiling,
        engine.stop_detail,
        engine.name,
        options.store,
        engine.path,
        full,
    )
    if wrote_json:  # after the lines that say why the run stopped, which come first
        err.print(f"kmc: wrote results to {safe_text(args.json)}", markup=False, highlight=False, soft_wrap=True)
    code = _exit_code(args, result, signals, exp)
    if full is not None and result.stopped != "disk-full":  # the final checkpoint, after the search
        err.print(
            f"kmc: stopped: {safe_text(full)}; the final checkpoint was not written"
            + ("; the last one written stands." if checkpoint.exists(directory) else "."),
            markup=False,
            highlight=False,
            soft_wrap=True,
        )
        if code in (EXIT_OK, EXIT_UNEXPECTED):
            code = EXIT_RESOURCE_LIMIT
    # The path was checked before the search, so a write that fails now is rare (a full
    # disk, a folder removed meanwhile); a script reading "1 = see the JSON" must not look
    # for a file that is not there: the verdict is printed, the exit code says the output
    # failed. (A stop by a signal or --max-memory keeps its own code.)
    if not wrote and code in (EXIT_OK, EXIT_VIOLATION, EXIT_UNEXPECTED):
        return EXIT_BAD_INPUT
    return code


def _exit_code(args, result, signals, exp) -> int:
    if result.stopped == "interrupted":  # before --check-expect: a stopped run has not answered
        return signals.exit_code
    if result.stopped in RESOURCE_STOPS and not result.violations:
        return EXIT_RESOURCE_LIMIT  # a resource stop is never a verdict, not even with --check-expect
    if args.check_expect:
        return EXIT_OK if exp["matched"] else EXIT_UNEXPECTED
    if result.violations or result.never_reached:  # a cover never reached fails as a violation does
        return EXIT_VIOLATION
    return EXIT_OK


def _restore(engine, directory, per_state) -> LevelDriver:
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


def _say_how_to_continue(
    err, result, directory, ceiling, detail=None, engine_name="local", store="memory", path="batch", full=None
) -> None:
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
    if directory and full is not None and not checkpoint.exists(directory):
        err.print(
            f"kmc: no checkpoint was written (its disk is full); free space on the disk of {directory}, "
            "or checkpoint into another directory, and start again.",
            markup=False,
            soft_wrap=True,
        )
    elif directory:
        more = {
            "max-memory": " --max-memory LARGER",
            "out-of-memory": " (with more memory)",
            "disk-full": f" {'--store-dir' if engine_name == 'local' else '--spark-store'} DIR (with more free space)",
        }.get(result.stopped, "")
        if full is not None and result.stopped == "disk-full":
            more = f" once its disk has room (or from a copy of {directory} on a disk that has)"
        err.print(
            f"kmc: checkpoint saved in {directory}; continue with: kmc check --resume {directory}{more}",
            markup=False,
            soft_wrap=True,
        )
    else:
        err.print("kmc: no checkpoint was written; run with --checkpoint DIR to be able to resume.", markup=False)
    if result.stopped in ("max-memory", "out-of-memory"):
        disk = ""
        if store == "memory" and engine_name == "local":
            disk = (
                f"--resume {directory} --store disk, " if directory and path != "per-state" else "--store disk, "
            ) + "which keeps the seen states on disk and goes on past the memory, "
        err.print(
            "kmc: to finish, use a machine with more memory (then --resume with a higher --max-memory), "
            f"or {disk}or --engine spark, which keeps its states on the cluster.",
            markup=False,
            soft_wrap=True,
        )
