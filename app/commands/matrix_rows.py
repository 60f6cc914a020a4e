"""The rows ``kmc matrix`` runs, from its command line: the default grid of configurations
(truncation rule × replicas × min ISR × unclean election × unflushed loss), a directory of
specs, or the Kafka versions' grid (safety, or liveness under fairness); and the command
line that makes the same table again."""

from __future__ import annotations

import argparse
import shlex
from collections.abc import Callable, Collection
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kmc.checker.base.errors import UsageError
from kmc.model.spec import ACKED_PROPERTY, EXPOSED_PROPERTY
from kmc.model.versions import OPERATOR_VERSIONS, VERSION_CONFIGS, VERSIONS

from ..matrix_grids import (
    LIVENESS_PROPERTIES,
    RULE_ALIASES,
    RowItem,
    grid,
    liveness_grid,
    row_id,
    version_grid,
)

if TYPE_CHECKING:  # for the annotations only
    from kmc.model.config import Config

_GRID_OPTIONS = ("rules", "replicas", "min_isr", "unclean", "unflushed", "messages", "crashes", "epochs")
_VERSION_OPTIONS = ("versions", "liveness", "configs", "kafka")
OPTIONS = _GRID_OPTIONS + _VERSION_OPTIONS + ("max_states", "jobs", "title")


# -- the configurations ---------------------------------------------------------------------


def _list(text: str, option: str, parse: Callable[[str], Any], valid: str | None = None) -> list[Any]:
    """The distinct values of a comma-separated list, each read by ``parse``."""
    items = [t.strip() for t in text.split(",") if t.strip()]
    if not items:
        raise UsageError(f"{option}: give a comma-separated list")
    out = []
    for t in items:
        try:
            value = parse(t)
        except (ValueError, KeyError):
            hint = f" (use {valid})" if valid else ""
            raise UsageError(f"{option}: {t!r} is not a valid value{hint}") from None
        if value not in out:
            out.append(value)
    return out


def _one_of(names: Collection[str]) -> Callable[[str], str]:
    """A parse of ``_list`` that takes one of ``names`` as it is."""

    def parse(t: str) -> str:
        if t not in names:
            raise KeyError(t)
        return t

    return parse


def _on_off(t: str) -> bool:
    return {"on": True, "off": False, "true": True, "false": False}[t.lower()]


def _bounded(option: str, value: int | None, lo: int, hi: int) -> int | None:
    if value is not None and not lo <= value <= hi:
        raise UsageError(f"{option}: must be between {lo} and {hi}, got {value}")
    return value


# -- the rows -------------------------------------------------------------------------------

Rows = tuple[list[RowItem], str, dict[int, dict[str, int]], str | None]


def row_items(args: argparse.Namespace) -> Rows:
    """``(items, source, constants, spec_dir)`` from the command line."""
    changed_versions = [f"--{k}" for k in ("liveness", "configs", "kafka") if vars(args)[k] != args._defaults[k]]
    if changed_versions and not args.versions:
        raise UsageError(f"{', '.join(changed_versions)}: only with --versions")
    if args.versions:
        changed = [f"--{k.replace('_', '-')}" for k in _GRID_OPTIONS if vars(args)[k] != args._defaults[k]]
        if changed or args.spec_dir is not None:
            raise UsageError(f"{', '.join(changed) or 'SPEC_DIR'}: cannot be combined with --versions")
        return _version_items(args)
    if args.spec_dir is not None:
        changed = [f"--{k.replace('_', '-')}" for k in _GRID_OPTIONS if vars(args)[k] != args._defaults[k]]
        if changed:
            raise UsageError(f"{', '.join(changed)}: grid options cannot be combined with SPEC_DIR")
        return _spec_dir_items(args)
    return _grid_items(args)


def _version_items(args: argparse.Namespace) -> Rows:
    """The Kafka versions' grid: ``--configs`` × ``--kafka``, for safety or (``--liveness``)
    for liveness under fairness."""
    configs = (
        None
        if args.configs == "all"
        else _list(args.configs, "--configs", _one_of(VERSION_CONFIGS), ", ".join(VERSION_CONFIGS))
    )
    versions = None if args.kafka == "all" else _list(args.kafka, "--kafka", _one_of(VERSIONS), ", ".join(VERSIONS))
    from kmc.invariants import ALL

    every = tuple(p.name for p in ALL)

    def checked(c: Config) -> tuple[str, ...]:
        # AcknowledgedNeverLost only on the rows that track acknowledgements, and
        # UncommittedNeverExposed only on those of the fetch path (every other row as before)
        return tuple(
            n for n in every if (n != ACKED_PROPERTY or c.acks) and (n != EXPOSED_PROPERTY or c.truncate_on_fetch)
        )

    if args.liveness:
        return (
            [
                (rid, c, None, args.max_states, known, LIVENESS_PROPERTIES)
                for rid, c, known in liveness_grid(configs, versions)
            ],
            "versions",
            {},
            None,
        )
    items: list[RowItem] = [
        (rid, c, None, args.max_states, known, checked(c)) for rid, c, known in version_grid(configs, versions)
    ]
    if not items:
        raise UsageError(
            "--configs, --kafka: no cell of the grid (the operators' rows run on "
            f"{', '.join(OPERATOR_VERSIONS)} only, a failed directory from 3.7 on)"
        )
    return items, "versions", {}, None


def _spec_dir_items(args: argparse.Namespace) -> Rows:
    """Every spec file of SPEC_DIR, each read (and so checked) before any row runs."""
    d = Path(args.spec_dir)
    if not d.is_dir():
        raise UsageError(f"SPEC_DIR: {args.spec_dir}: no such directory")
    files = sorted(d.glob("*.toml"))
    if not files:
        raise UsageError(f"SPEC_DIR: {args.spec_dir} holds no spec files (*.toml)")
    from ..specs import load_spec

    specs = [load_spec(f) for f in files]  # every file is checked before any row runs
    items: list[RowItem] = [(s.name, s.config, s, args.max_states) for s in specs]
    return items, "specs", {}, str(d)


def _grid_items(args: argparse.Namespace) -> Rows:
    """The default grid, its lists read from the grid options and every row validated as
    a spec file would be."""
    rules = _list(
        args.rules,
        "--rules",
        lambda t: RULE_ALIASES[t.lower()],
        "hw, le, kip279 or the full names high-watermark, leader-epoch, leader-epoch-kip279",
    )
    from kmc.checker.base.errors import SpecError
    from kmc.model.spec import MODEL_BOUNDS, config_from_table

    lo, hi = MODEL_BOUNDS["replicas"]
    replicas = _list(args.replicas, "--replicas", int, f"whole numbers from {lo} to {hi}")
    for n in replicas:
        _bounded("--replicas", n, lo, hi)
    min_isr = None
    if args.min_isr.strip().lower() != "all":
        min_isr = _list(args.min_isr, "--min-isr", int, f"'all', or whole numbers from {lo} to {hi}")
    for k in min_isr or ():
        _bounded("--min-isr", k, *MODEL_BOUNDS["min_insync_replicas"])
    unclean = _list(args.unclean, "--unclean", _on_off, "off, on")
    unflushed = _list(args.unflushed, "--unflushed", _on_off, "off, on")
    _bounded("--messages", args.messages, *MODEL_BOUNDS["max_messages"])
    _bounded("--crashes", args.crashes, *MODEL_BOUNDS["max_crashes"])
    _bounded("--epochs", args.epochs, *MODEL_BOUNDS["max_leader_epoch"])
    configs = grid(rules, replicas, min_isr, unclean, unflushed, args.messages, args.crashes, args.epochs)
    if not configs:
        raise UsageError("--min-isr: no value fits any replica count, so the grid is empty")
    for c in configs:  # every row passes the spec loader's validator, as a spec file would
        try:
            config_from_table(c.as_dict(), f"kmc matrix row {row_id(c)}")
        except SpecError as e:
            raise UsageError(str(e)) from None
    constants: dict[int, dict[str, int]] = {}
    for c in configs:
        constants.setdefault(
            c.n, {"max_messages": c.max_messages, "max_crashes": c.max_crashes, "max_leader_epoch": c.max_leader_epoch}
        )
    items: list[RowItem] = [(row_id(c), c, None, args.max_states) for c in configs]
    return items, "grid", constants, None


def command_line(args: argparse.Namespace) -> str:
    """The command that makes the same table: SPEC_DIR, the options that differ from
    their defaults (except --jobs, which changes nothing in it), and --out."""
    words = ["kmc", "matrix"]
    if args.spec_dir is not None:
        words.append(args.spec_dir)
    for k in OPTIONS:
        value = vars(args)[k]
        if k != "jobs" and value != args._defaults[k]:
            words += [f"--{k.replace('_', '-')}"] if value is True else [f"--{k.replace('_', '-')}", str(value)]
    words += ["--out", args.out]
    return " ".join(shlex.quote(w) for w in words)
