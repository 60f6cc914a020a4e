"""Coverage as a report shows it: plain data for the JSON result, a rich table for the
terminal (``kmc check --coverage``), and the lines of its warnings.

The counts are ``checker.core.coverage.Coverage``'s (kept in ``Stats.coverage``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kmc.checker.base.text import safe_text
from kmc.checker.core.coverage import coverage_warnings

if TYPE_CHECKING:  # for the annotations only: rich is imported on first use
    from kmc.checker.core.coverage import Coverage
    from kmc.checker.core.result import Stats
    from rich.console import RenderableType

__all__ = ["coverage_to_dict", "coverage_view"]


def coverage_to_dict(stats: Stats) -> dict[str, Any] | None:
    """The ``coverage`` section of the JSON result (docs/json-schema.md), or ``None``
    when the run did not count it."""
    from kmc.checker.core.coverage import NoCoverage

    cov: Coverage | None = stats.coverage
    if cov is None or isinstance(cov, NoCoverage):
        return None
    text = cov.names.text
    actions: dict[str, dict[str, Any]] = {}
    for name in _action_order(cov, stats):
        entry: dict[str, Any] = {
            "enabled": cov.enabled.get(name, 0),
            "fired": stats.fired.get(name, 0),
            "new": stats.new.get(name, 0),
        }
        if name in cov.kinds:
            entry["kinds"] = dict(cov.kinds[name])
        actions[name] = entry
    variables = {
        var: {"distinct": len(vals), "values": [text(var, v) for v in vals]}
        for var, vals in cov.distinct_values().items()
    }
    return {"actions": actions, "variables": variables, "warnings": coverage_warnings(cov, stats.fired)}


def _action_order(cov: Coverage, stats: Stats) -> list[str]:
    names = list(cov.enabled)
    return names + [n for n in stats.fired if n not in cov.enabled]


def coverage_view(stats: Stats, max_values: int = 12) -> RenderableType:
    """The coverage tables and warnings of a run (a rich renderable)."""
    from rich import box
    from rich.console import Group, JustifyMethod
    from rich.table import Table
    from rich.text import Text

    doc = coverage_to_dict(stats)
    if doc is None:
        return Text("no coverage was counted", "dim")
    actions = Table(
        title="Coverage: actions", title_justify="left", box=box.SIMPLE_HEAD, header_style="bold dim", show_edge=False
    )
    columns: tuple[tuple[str, JustifyMethod], ...] = (
        ("action", "left"),
        ("enabled in", "right"),
        ("fired", "right"),
        ("new states", "right"),
        ("kinds fired", "left"),
    )
    for col, just in columns:
        actions.add_column(col, justify=just, no_wrap=col == "action")
    for name, a in doc["actions"].items():
        kinds = ", ".join(f"{k} {n:,}" for k, n in a.get("kinds", {}).items())
        style = "yellow" if not a["fired"] else None
        actions.add_row(
            Text(safe_text(name), style or ""),
            f"{a['enabled']:,}",
            f"{a['fired']:,}",
            f"{a['new']:,}",
            Text(safe_text(kinds)),
        )
    variables = Table(
        title="Coverage: variables", title_justify="left", box=box.SIMPLE_HEAD, header_style="bold dim", show_edge=False
    )
    variables.add_column("variable", no_wrap=True)
    variables.add_column("distinct", justify="right")
    variables.add_column("values")
    for var, v in doc["variables"].items():
        shown = v["values"][:max_values]
        more = f" … ({v['distinct'] - len(shown)} more)" if v["distinct"] > len(shown) else ""
        variables.add_row(Text(safe_text(var)), str(v["distinct"]), Text(safe_text(", ".join(shown) + more)))
    parts: list[RenderableType] = [actions, Text(""), variables]
    for line in doc["warnings"]:
        parts.append(Text(f"⚠ {safe_text(line)}", "yellow"))
    return Group(*parts)
