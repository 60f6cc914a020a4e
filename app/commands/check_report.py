"""The end of ``kmc check``: the result printed, the outputs written, the lines that say why
a run stopped and how to continue it, and the exit code."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import attrs
from kmc.checker.base import memory, units
from kmc.checker.base.exitcodes import EXIT_BAD_INPUT, EXIT_OK, EXIT_RESOURCE_LIMIT, EXIT_UNEXPECTED, EXIT_VIOLATION
from kmc.checker.base.text import safe_text
from kmc.checker.checkpoints import file as checkpoint
from kmc.checker.core.driver import RESOURCE_STOPS

from ..outputs import command_line, write_diagrams

if TYPE_CHECKING:  # for the annotations only
    from kmc.checker.base.signals import StopOnSignals
    from kmc.checker.checkpoints.writer import Checkpointer
    from kmc.checker.contract.protocol import Model
    from kmc.checker.core.driver import Engine
    from kmc.checker.core.options import Options
    from kmc.checker.core.result import CheckResult
    from kmc.model.spec import Spec
    from rich.console import Console

    from ..user_model import ModelSpec
    from .check_views import CheckViews


def report(
    args: argparse.Namespace,
    err: Console,
    out: Console,
    spec: Spec | ModelSpec,
    model: Model,
    result: CheckResult,
    engine: Engine,
    writer: Checkpointer | None,
    signals: StopOnSignals,
    options: Options,
    directory: str | None,
    views: CheckViews,
) -> int:
    """Print the result, write the outputs; the exit code."""
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
    wrote_json = _write_json(args, err, lambda: views.document(model, result, exp))
    wrote = wrote_json is not False
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
    full = writer.full if writer else None  # a checkpoint found its disk full
    say_how_to_continue(
        err,
        result,
        directory if writer else None,
        _ceiling(args, spec, options),
        engine.stop_detail,
        engine.name,
        options.store,
        engine.path,
        full,
    )
    if wrote_json:  # after the lines that say why the run stopped, which come first
        err.print(f"kmc: wrote results to {safe_text(args.json)}", markup=False, highlight=False, soft_wrap=True)
    code = exit_code(args, result, signals, exp)
    if full is not None and result.stopped != "disk-full":  # the final checkpoint, after the search
        err.print(
            f"kmc: stopped: {safe_text(full)}; the final checkpoint was not written"
            + ("; the last one written stands." if directory is not None and checkpoint.exists(directory) else "."),
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


def _ceiling(args: argparse.Namespace, spec: Spec | ModelSpec, options: Options) -> str:
    """The memory ceiling as a stop at it names it: the one given, or the default's share."""
    return (
        f"--max-memory {units.format_size(options.max_memory or 0)}"
        if args.max_memory or spec.max_memory
        else f"{units.format_size(options.max_memory or 0)}, the default ceiling "
        f"({memory.DEFAULT_SHARE:.0%} of the memory this process may use; --max-memory SIZE sets another)"
    )


def _write_json(args: argparse.Namespace, err: Console, document: Callable[[], dict[str, Any]]) -> bool | None:
    """Write ``--json``: ``True`` when written, ``False`` when it could not be (the verdict is
    printed and stands; the lost file is one more line), ``None`` when none was asked for."""
    if not args.json:
        return None
    from kmc.app.render import write_json

    from ..outputs import exclusive

    try:
        write_json(args.json, document(), exclusive=exclusive(args.json))
    except OSError as e:
        err.print(
            f"kmc: error: --json: cannot write {args.json} ({e.strerror or e})",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )
        return False
    return True


def exit_code(args: argparse.Namespace, result: CheckResult, signals: StopOnSignals, exp: dict[str, Any] | None) -> int:
    if result.stopped == "interrupted":  # before --check-expect: a stopped run has not answered
        return signals.exit_code
    if result.stopped in RESOURCE_STOPS and not result.violations:
        return EXIT_RESOURCE_LIMIT  # a resource stop is never a verdict, not even with --check-expect
    if args.check_expect:
        assert exp is not None  # a model without expectations is refused before the search
        return EXIT_OK if exp["matched"] else EXIT_UNEXPECTED
    if result.violations or result.never_reached:  # a cover never reached fails as a violation does
        return EXIT_VIOLATION
    return EXIT_OK


def say_how_to_continue(
    err: Console,
    result: CheckResult,
    directory: str | None,
    ceiling: str,
    detail: str | None = None,
    engine_name: str = "local",
    store: str = "memory",
    path: str = "batch",
    full: str | None = None,
) -> None:
    """What stopped a run before its search was complete, and how to continue it."""
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
