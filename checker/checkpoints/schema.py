"""The schema of a checkpoint's snapshot: which search wrote it, and the one reader of the
shapes older kmc versions wrote.

A snapshot (``checker.core.driver.LevelDriver.snapshot``) is a dict of the search's
parts, each saved by the part itself: ``"stats"`` and ``"found"`` (the counters and the
violations so far), ``"seen"`` (the store, ``checker.core.parts.SavedStore``), ``"queue"``
(the frontier queue, ``checker.core.parts.SavedQueue``), the graph clients' logs, and on
the Spark engine its partitioned level (``checker.partitioned.save``). Its ``"format"``
names the search that wrote it, one tag per engine and path, all in ``FORMATS``:

    rows-1          the local rows search over the model's batch kernel
    rows-states-1   the local rows search over the model's Python states (the per-state path)
    spark-rows-1    the Spark engine over the batch kernel
    spark-states-1  the Spark engine over Python states

``check_format`` is the one test of a snapshot against the engine that restores it, and
``upgrade`` the one reader of older shapes: every snapshot an engine restores goes
through both, once, in that order (``restore_snapshot``), and the app asks ``path_of``
which path a checkpoint continues on.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import attrs
import numpy as np

from ..base.errors import EngineError
from .file import CheckpointError

__all__ = [
    "FORMATS",
    "OLD_STATES",
    "OldFrontier",
    "ROWS_FORMAT",
    "SNAPSHOT_FORMAT",
    "STATES_FORMAT",
    "STATES_ROWS_FORMAT",
    "check_format",
    "format_of",
    "path_of",
    "restore_snapshot",
    "upgrade",
]

ROWS_FORMAT = "rows-1"
STATES_ROWS_FORMAT = "rows-states-1"
SNAPSHOT_FORMAT = "spark-rows-1"
STATES_FORMAT = "spark-states-1"
# A snapshot of the per-state search of an older kmc (untagged, its states by fingerprint):
# ``upgrade`` tags it so; its engine derives the rest (``checker.local.states``).
OLD_STATES = "states-0"

# (engine, path) -> the format its snapshots are tagged with
FORMATS: dict[tuple[str, str], str] = {
    ("local", "batch"): ROWS_FORMAT,
    ("local", "per-state"): STATES_ROWS_FORMAT,
    ("spark", "batch"): SNAPSHOT_FORMAT,
    ("spark", "per-state"): STATES_FORMAT,
}
_PATHS = {tag: path for (_engine, path), tag in FORMATS.items()} | {OLD_STATES: "per-state"}


@attrs.frozen
class OldFrontier:
    """A level's rows as an older kmc kept them in a snapshot (a list of row arrays): a
    ``checker.core.parts.SavedQueue`` of the memory queue's kind, whose rows any queue
    takes back."""

    rows: tuple[np.ndarray, ...]

    kind = "memory"

    def blocks(self, directory: Any = None) -> Iterator[np.ndarray]:
        return iter(self.rows)


def format_of(engine: str, path: str) -> str:
    """The format tag of the snapshots of ``engine`` (``"local"``, ``"spark"``) on
    ``path`` (``"batch"``, ``"per-state"``)."""
    return FORMATS[engine, path]


def upgrade(snapshot: dict[str, Any]) -> dict[str, Any]:
    """The snapshot in the shape this kmc writes, from any shape an older kmc wrote:
    the per-state search's untagged snapshot is tagged ``OLD_STATES``; a rows search's
    frontier kept as a list of row arrays (``"frontier"``) becomes its memory queue's
    part (``"queue"``); a part pickled before a field of its class was added has that
    field's default (``_with_defaults``). A snapshot already of this kmc is returned as it
    is."""
    for part in snapshot.values():
        _with_defaults(part)
    tag = snapshot.get("format")
    if tag is None and snapshot.get("engine") == "local":
        return {**snapshot, "format": OLD_STATES}
    if tag in (ROWS_FORMAT, STATES_ROWS_FORMAT) and "queue" not in snapshot and "frontier" in snapshot:
        new = {k: v for k, v in snapshot.items() if k != "frontier"}
        new["queue"] = OldFrontier(tuple(snapshot["frontier"]))
        return new
    return snapshot


def _with_defaults(part: Any) -> None:
    """Give a part the defaults of the fields its pickle lacks. An attrs class unpickles
    only the fields its pickle holds, so a part written before a field was added has that
    field unset; with its default (such as ``files`` of the disk store's parts: ``None``,
    which their ``reopen`` refuses in one line) it reads as this kmc's parts do."""
    if not attrs.has(type(part)):
        return
    for field in attrs.fields(type(part)):
        if field.default is attrs.NOTHING or hasattr(part, field.name):
            continue
        default = field.default
        # (attrs types Factory as a function; at run time it is the class of a factory default)
        if isinstance(default, attrs.Factory):  # type: ignore[arg-type]
            default = default.factory(part) if default.takes_self else default.factory()
        object.__setattr__(part, field.name, default)


def path_of(snapshot: dict[str, Any]) -> str | None:
    """The path (``"batch"``, ``"per-state"``) a snapshot continues on; ``None`` when its
    format is not one this kmc reads (``check_format`` says why)."""
    return _PATHS.get(upgrade(snapshot).get("format", ""))


def check_format(snapshot: dict[str, Any], expected: str) -> None:
    """Refuse a snapshot that the search whose snapshots are tagged ``expected`` cannot
    continue.

    Raises:
        CheckpointError: its format is not one this kmc reads.
        EngineError: it was written on another path (the message says how to resume it).
    """
    tag = snapshot.get("format")
    if tag == expected or (tag == OLD_STATES and expected == STATES_ROWS_FORMAT):
        return
    spark = expected in (SNAPSHOT_FORMAT, STATES_FORMAT)
    if spark and tag not in (SNAPSHOT_FORMAT, STATES_FORMAT):
        raise CheckpointError(
            "the checkpoint was written by the retired per-state Spark engine, whose "
            "format this kmc no longer reads; start a new run"
        )
    if spark:
        how = "--per-state" if tag == STATES_FORMAT else "without --per-state"
        raise EngineError(f"the checkpoint was written on the other path of the Spark engine; resume it {how}")
    if tag == ROWS_FORMAT:
        raise EngineError("the checkpoint was written on the batch path; resume it without --per-state")
    if tag in (STATES_ROWS_FORMAT, OLD_STATES):
        raise EngineError("the checkpoint was written on the per-state path; resume it with --per-state")
    raise CheckpointError(f"the checkpoint's format {str(tag)[:20]!r} is not one this kmc reads; start a new run")


def restore_snapshot(snapshot: dict[str, Any], expected: str) -> dict[str, Any]:
    """``snapshot`` in this kmc's shape (``upgrade``), once ``check_format`` has found
    that the search whose snapshots are tagged ``expected`` continues it."""
    new = upgrade(snapshot)
    check_format(new, expected)
    return new
