"""A counterexample as values every report shares: how paths are grouped, where a lasso's
cycle starts, a value as JSON holds it, a kernel's cross-check in one line. Imports no
other report module, so that every one of them may import it."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

import attrs

if TYPE_CHECKING:
    from kmc.checker.core.result import CheckResult, Path, Violation


def cross_checked_text(count: int) -> str:
    """What a result says of its batch kernel's comparison with the model (``checker.contract.kernel_check``)."""
    return f"cross-checked with the model on {count:,} states (their successors, rows and property masks)"


def by_path(violations: Iterable[Violation]) -> list[list[Violation]]:
    """``violations`` (in their order) grouped by counterexample: those whose paths are
    the same (same initial state, same choices, and for a lasso the same cycle) in one
    group, so that a path two properties share is shown once, with both verdicts."""
    groups: dict[tuple[int, tuple[int, ...], int | None], list[Violation]] = {}
    for v in violations:
        groups.setdefault((v.path.init_index, tuple(v.path.choices), v.loop), []).append(v)
    return list(groups.values())


def json_value(v: Any) -> Any:
    """A value as JSON holds it: attrs classes and dicts as objects, tuples, lists and sets
    as arrays (a set sorted), scalars as they are, anything else as its ``repr``."""
    if attrs.has(type(v)):
        return {k: json_value(x) for k, x in attrs.asdict(v, recurse=False).items()}
    if isinstance(v, (tuple, list, frozenset, set)):
        items = [json_value(x) for x in v]
        return sorted(items, key=repr) if isinstance(v, (set, frozenset)) else items
    if isinstance(v, dict):
        return {str(k): json_value(x) for k, x in v.items()}
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    return repr(v)


def lasso_mark(violation: Violation, index: int) -> str | None:
    """What a trace says beside state ``index`` (from 1) of a liveness counterexample (a
    lasso, ``checker.core.result.Violation.loop``): where its cycle starts, that its last state
    goes back there, or that its last state stutters; ``None`` elsewhere and for the other
    kinds."""
    loop = violation.loop
    if loop is None:
        return None
    n = len(violation.path)
    start = loop + 1
    if loop == n - 1:
        return "stutters here for ever: no fair action is enabled in this state" if index == n else None
    if index == start:
        return "the cycle starts here"
    if index == n:
        return f"back to state {start}: the cycle repeats for ever"
    return None


def lasso_dict(violation: Violation) -> dict[str, Any] | None:
    """A liveness counterexample's lasso as JSON writes it (``None`` for the other kinds):
    the state its cycle starts at (from 1), whether it stutters instead, and the violated
    obligation of a leads-to family (``null`` for one)."""
    loop = violation.loop
    if loop is None:
        return None
    return {
        "cycle_start": loop + 1,
        "stutters": loop == len(violation.path) - 1,
        "obligation": json_value(violation.obligation),
    }


def lasso_summary(violation: Violation) -> str:
    """A counterexample's size for a summary line: ``"5 states"``, or for a lasso ``"a
    lasso of 5 states, its cycle from state 2"`` / ``"... stuttering in state 5"``."""
    n = len(violation.path)
    loop = violation.loop
    if loop is None:
        return f"{n} states"
    if loop == n - 1:
        return f"a lasso of {n} states, stuttering in state {n}"
    return f"a lasso of {n} states, its cycle from state {loop + 1} back to it"


__all__ = [
    "by_path",
    "covers_to_dict",
    "cross_checked_text",
    "json_value",
    "lasso_dict",
    "lasso_mark",
    "lasso_summary",
]


def covers_to_dict(result: CheckResult, trace: Callable[[Path], Any]) -> dict[str, Any]:
    """``{"covers": [...]}`` when the run checked covers (else ``{}``): each cover's name,
    its kind (``"cover"``: the witness's last state is the scenario; ``"step-cover"``: its
    last step is), its verdict (``"reached"``, ``"never reached"``, ``"unknown"``) and, when
    reached, its shortest witness as ``trace(path)`` writes a trace."""
    covers = result.covers
    if not covers:
        return {}
    steps = result.step_covers
    out = []
    for name in covers:
        kind = "step-cover" if name in steps else "cover"
        doc: dict[str, Any] = {"name": name, "kind": kind, "verdict": result.cover_verdict(name)}
        if name in result.witnesses:
            doc["trace"] = trace(result.witnesses[name])
        out.append(doc)
    return {"covers": out}
