"""``kmc check --resume DIR``: the options a checkpoint gives the run, its header and
snapshot read back, and the line that says where the run goes on."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from kmc.checker.base import units
from kmc.checker.base.text import safe_text
from kmc.checker.checkpoints import file as checkpoint
from kmc.checker.stores.registry import STORES

if TYPE_CHECKING:  # for the annotations only
    from kmc.checker.core.driver import Engine
    from rich.console import Console


def from_checkpoint(args: argparse.Namespace, header: dict[str, Any]) -> None:
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


def resumed_header(directory: str) -> dict[str, Any]:
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


def say_resumed(err: Console, directory: str, engine: Engine) -> None:
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


def restore(engine: Engine, directory: str, per_state: Callable[[], Engine]) -> Engine:
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
