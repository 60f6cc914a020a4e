"""The command line of ``kmc check``: its options by group, and the types that read a
number of seconds and a memory size."""

from __future__ import annotations

import argparse

from kmc.checker.base import memory, units
from kmc.checker.base.exitcodes import EXIT_RESOURCE_LIMIT

from ..outputs import add_diagram_arguments
from .common import add_force_argument, positive_int


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
