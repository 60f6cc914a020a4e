"""A result of any model, shown without knowing the model: the generic trace rendering.

Everything here goes through the model protocol (``checker.contract.protocol``): an action's text
is ``format_action``, a step's sentence ``describe_step``, a state's line
``format_state`` (its fields when the model has no view of its own). The Kafka model's
own views (``render.result_view``, ``render.json_result``, ``render.pictures``) show
more; these show any model a user writes (``kmc check --model``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

from kmc.checker.base.text import safe_text, xml_text
from kmc.checker.contract.protocol import action_name
from rich import box
from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from . import html, mermaid
from .counterexample import (
    by_path,
    covers_to_dict,
    cross_checked_text,
    json_value,
    lasso_dict,
    lasso_mark,
    lasso_summary,
)
from .coverage import coverage_view
from .diagram import MARKER

if TYPE_CHECKING:
    from kmc.checker.contract.protocol import Model
    from kmc.checker.core.result import CheckResult, Path, Stats, Violation

SCHEMA = "kmc-generic-result-1"


class ModelRef(Protocol):
    """What these views read of a user's model spec (``app.user_model.ModelSpec``): its
    reference, and the identity ``kmc replay`` rebuilds the model from."""

    @property
    def ref(self) -> str: ...

    def identity(self) -> dict[str, Any]: ...


def action_order(model: Model, stats: Stats) -> list[str]:
    """Every action name to list: the model's ``action_names()`` when it declares them,
    then any other name that fired, in order of name."""
    names = list(model.action_names() or ())
    return names + sorted(set(stats.fired) - set(names))


def trace_steps(model: Model, path: Path) -> list[dict[str, Any]]:
    """The steps of a path: index (from 1), the action (text, name, choice), what it did,
    and the state (its one-line text and its fields)."""
    out = []
    before = None
    for i, step in enumerate(path.steps):
        action = None
        if step.action is not None:
            action = {
                "name": action_name(step.action),
                "text": model.format_action(step.action),
                "choice": path.choices[i - 1],
                "description": model.describe_step(before, step.action, step.state),
            }
        out.append(
            {"index": i + 1, "action": action, "text": model.format_state(step.state), "state": json_value(step.state)}
        )
        before = step.state
    return out


def result_dict(spec: ModelRef, model: Model, result: CheckResult) -> dict[str, Any]:
    """A run of a user's model as a JSON-ready dict (``SCHEMA``): the model's reference
    and parameters (what ``kmc replay`` rebuilds it from), the counts, the verdicts, and
    every counterexample's steps."""
    from kmc.checker import __version__

    s = result.stats
    return {
        "schema_version": 1,  # first, as in every JSON document kmc writes (app.outputs)
        "schema": SCHEMA,
        "kmc_version": __version__,
        "model": spec.identity(),
        "engine": result.engine,
        "checked": list(result.checked),
        "complete": result.complete,
        "stopped": result.stopped,
        "max_depth": result.max_depth,
        "stats": {
            "distinct_states": s.distinct,
            "states_generated": s.generated,
            "depth": s.depth,
            "terminal_states": s.terminal,
            "levels": list(s.levels),
            "kernel_cross_checked": s.cross_checked,
            "actions": {n: {"fired": s.fired.get(n, 0), "new": s.new.get(n, 0)} for n in action_order(model, s)},
        },
        "verdicts": {name: result.verdict(name) for name in result.checked},
        "violations": [violation_dict(model, result.violations[n]) for n in result.checked if n in result.violations],
        **covers_to_dict(result, lambda path: _trace_dict(model, path)),
    }


def changed_fields(before: Any, after: Any) -> list[str]:
    """``field: old -> new`` for every field of a state's dict (``trace_steps``) that a
    step changed; a state that is no dict shows whole."""
    if not isinstance(before, dict) or not isinstance(after, dict):
        return [] if before == after else [f"{_short(before)} -> {_short(after)}"]
    return [
        f"{key}: {_short(before.get(key))} -> {_short(after.get(key))}"
        for key in dict.fromkeys([*before, *after])
        if before.get(key) != after.get(key)
    ]


def _short(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(", ", ": "))


def trace_view(model: Model, violation: Violation, diff: bool = False) -> Group:
    """A counterexample as the terminal shows it: one block a step; with ``diff``, after
    the first state only the fields each step changed."""
    parts = []
    before = None
    for step in trace_steps(model, violation.path):
        head = Text(f"State {step['index']}", "bold")
        if step["action"] is not None:
            head.append(f"  {safe_text(step['action']['text'])}", "bold cyan")
            if step["action"]["description"]:
                head.append(f"  {safe_text(step['action']['description'])}", "dim")
        mark = lasso_mark(violation, step["index"])
        if mark is not None:
            head.append(f"  ↺ {mark}", "bold magenta")
        parts.append(head)
        if diff and before is not None:
            changed = changed_fields(before, step["state"])
            parts += [Text(f"  {safe_text(line)}") for line in changed] or [Text("  (nothing changed)", "dim")]
        else:
            parts.append(Text(f"  {safe_text(step['text'])}"))
        before = step["state"]
    parts.append(_verdict_line(violation))
    return Group(*parts)


def _verdict_line(violation: Violation) -> Text:
    """The line under a trace: the violation's explanation, or where a cover's witness is
    reached (its last state, or its last step)."""
    name, n = safe_text(violation.property), len(violation.path)
    if violation.kind == "cover":
        return Text(f"{name}: reached in State {n}", "bold green")
    if violation.kind == "step-cover":
        return Text(f"{name}: reached by the last step, State {n - 1} → State {n}", "bold green")
    return Text(f"{name}: {safe_text(violation.explanation)}", "bold red")


def _plain(text: object) -> Text:
    """A user's text as a table cell: never read as markup, controls escaped."""
    return Text(safe_text(text))


def result_view(
    spec: ModelRef,
    model: Model,
    result: CheckResult,
    show_traces: bool = True,
    diff: bool = False,
    coverage: bool = False,
) -> Group:
    """``kmc check --model``'s terminal output: the model, the verdicts, the counts, the
    actions (with ``coverage``: the coverage tables instead), the counterexamples and a
    summary."""
    s = result.stats
    from kmc.checker.core.deadlock import Deadlock

    props = {p.name: p for p in (*model.properties(), Deadlock)}
    verdicts = Table(box=box.SIMPLE_HEAD, header_style="bold dim", show_edge=False)
    for column in ("property", "verdict", "meaning"):
        verdicts.add_column(column)
    for name in result.checked:
        verdict = result.verdict(name)
        style = {"holds": "green", "violated": "bold red"}.get(verdict, "yellow")
        verdicts.add_row(
            _plain(name),
            Text(verdict.upper() if verdict == "violated" else verdict, style),
            _plain(props[name].description if name in props else ""),
        )
    actions = Table(box=box.SIMPLE_HEAD, header_style="bold dim", show_edge=False)
    for column in ("action", "fired", "new states"):
        actions.add_column(column, justify="left" if column == "action" else "right")
    for name in action_order(model, s):
        actions.add_row(_plain(name), f"{s.fired.get(name, 0):,}", f"{s.new.get(name, 0):,}")
    parts: list[RenderableType] = [
        Text(f"kmc check --model {safe_text(spec.ref)}", "bold"),
        Text(f"  {safe_text(repr(model))}", "dim"),
        Text(f"  engine {result.engine}", "dim"),
        Text(""),
        verdicts,
        Text(f"{s.distinct:,} distinct states · {s.generated:,} generated · depth {s.depth} · {s.terminal:,} terminal"),
        *([Text(f"batch kernel: {cross_checked_text(s.cross_checked)}", "dim")] if s.cross_checked else []),
        Text(""),
        coverage_view(result.stats) if coverage else actions,
    ]
    if not result.complete:
        parts.append(Text(f"incomplete: the search stopped ({result.stopped})", "yellow"))
    ordered = sorted(result.violations.values(), key=lambda v: (len(v.path), v.path.choices))
    if show_traces:
        for v, *also in by_path(ordered):  # a path several properties share: once
            names = ", ".join(safe_text(x.property) for x in (v, *also))
            parts += [
                Text(""),
                Text(f"Counterexample: {names} ({lasso_summary(v)})", "bold red"),
                trace_view(model, v, diff=diff),
            ]
            parts += [Text(f"{safe_text(x.property)}: {safe_text(x.explanation)}", "bold red") for x in also]
    parts += _covers_view(model, result, show_traces, diff)
    parts.append(Text(""))
    parts.append(_summary(result, ordered))
    return Group(*parts)


def _summary(result: CheckResult, ordered: list[Violation]) -> Text:
    """The run's last line: its first violation, the covers never reached, or that no
    property failed (over every reachable state, or before the search stopped)."""
    s = result.stats
    if ordered:
        return Text(
            f"✗ {safe_text(ordered[0].property)} violated: "
            + (
                f"counterexample is {lasso_summary(ordered[0])}."
                if ordered[0].loop is not None
                else f"shortest counterexample has {len(ordered[0].path)} states."
            ),
            "bold red",
        )
    if result.never_reached:
        names = ", ".join(safe_text(n) for n in result.never_reached)
        return Text(f"✗ No violation, but never reached: {names} (a cover must be reached).", "bold red")
    if result.complete:
        return Text(f"✓ No violation in {s.distinct:,} distinct states.", "bold green")
    # stopped early (a bound, --max-memory, a signal): nothing is proved
    unknown = [n for n in result.checked if result.verdict(n) == "unknown"]
    return Text(
        f"No violation in {s.distinct:,} distinct states, but the search is incomplete "
        f"({result.stopped}): {len(unknown)} {'property' if len(unknown) == 1 else 'properties'} unknown.",
        "bold yellow",
    )


def _covers_view(model: Model, result: CheckResult, show_traces: bool, diff: bool) -> list[RenderableType]:
    """The covers a run checked: each reached one with its shortest witness, each never
    reached (a failure) or undecided."""
    parts: list[RenderableType] = []
    if not result.covers:
        return parts
    parts += [Text(""), Text("covers (each must be reached):", "bold")]
    for name in result.covers:
        parts.append(cover_line(result, name))
    if show_traces:
        for name, path in result.witnesses.items():
            parts += [
                Text(""),
                Text(f"Witness: {safe_text(name)} ({len(path)} states)", "bold green"),
                trace_view(model, result.witness(name), diff=diff),
            ]
    return parts


def cover_line(result: CheckResult, name: str) -> Text:
    """One cover's answer in a line: reached (with its witness's length), never reached,
    or unknown."""
    verdict = result.cover_verdict(name)
    if verdict == "reached":
        length = len(result.witnesses[name])
        return Text(f"  ✓ {safe_text(name)} reached: a shortest witness has {length} states", "green")
    if verdict == "never reached":
        return Text(
            f"  ✗ {safe_text(name)} NEVER REACHED in {result.stats.distinct:,} distinct states (every reachable state)",
            "bold red",
        )
    return Text(f"  ? {safe_text(name)} unknown: the search stopped before reaching it", "yellow")


def _label(text: object) -> str:
    """Text inside a quoted Mermaid flowchart label: ``render.mermaid.escape`` (the
    escape of every Mermaid kmc writes), and the quote and the backquote (which would end
    the label or make it Markdown) as entity codes."""
    return mermaid.escape(text).replace('"', "#quot;").replace("`", "#96;")


def _flowchart(model: Model, group: Sequence[Violation], n: int) -> list[str]:
    """One counterexample as a subgraph (``group``: the violations of one path, ``by_path``)."""
    v = group[0]
    title = "; ".join(f"{_label(x.property)}: {_label(x.explanation)}" for x in group)
    lines = [f'  subgraph v{n}["{title}"]']
    steps = trace_steps(model, v.path)
    loop = v.loop
    for step in steps:
        i = step["index"]
        if loop is not None and i == len(steps) and i - 1 != loop:
            # a lasso's last step leads back to the state its cycle starts at (the last
            # state is that state again): the back edge, and no box of its own
            lines.append(f'    v{n}s{i - 1} -->|"{_label(step["action"]["text"])}"| v{n}s{loop + 1}')
            continue
        lines.append(f'    v{n}s{i}["{i}. {_label(step["text"])}"]')
        if step["action"] is not None:
            lines.append(f'    v{n}s{i - 1} -->|"{_label(step["action"]["text"])}"| v{n}s{i}')
    if loop is not None:
        mark = lasso_mark(v, loop + 1) if loop != len(steps) - 1 else lasso_mark(v, len(steps))
        lines.append(f'    v{n}s{loop + 1} -.- v{n}c["↺ {_label(mark or "")}"]')
        lines.append(f"    style v{n}s{loop + 1} stroke:#c62828,stroke-width:3px")
    lines.append("  end")
    return lines


def _mermaid_head(what: str, ref: str) -> str:
    """The first line of every Mermaid text kmc writes (``app.outputs`` knows it by it)."""
    return f"%% {MARKER}: {mermaid.comment(what + ' ' + ref)}"


def violation_mermaid(ref: str, model: Model, violation: Violation) -> str:
    """One counterexample as a Mermaid flowchart (``kmc replay --format mermaid``)."""
    lines = [_mermaid_head("kmc replay --model", ref), "flowchart TD", *_flowchart(model, [violation], 0)]
    return "\n".join(lines) + "\n"


def result_mermaid(spec: ModelRef, model: Model, result: CheckResult) -> str:
    """Every counterexample as one Mermaid flowchart, a subgraph each (a path several
    properties share, once): its states as boxes, its actions as arrows."""
    lines = [_mermaid_head("kmc check --model", spec.ref), "flowchart TD"]
    for n, group in enumerate(by_path(_in_order(result))):
        lines += _flowchart(model, group, n)
    if len(lines) == 2:
        lines.append(f'  ok["no violation in {result.stats.distinct:,} distinct states"]')
    return "\n".join(lines) + "\n"


def _in_order(result: CheckResult) -> list[Violation]:
    """The violations, in the order of the checked properties."""
    return [result.violations[n] for n in result.checked if n in result.violations]


def _trace_section(model: Model, group: Sequence[Violation]) -> str:
    """One counterexample (``group``: the violations of one path, ``by_path``)."""
    x = xml_text
    v = group[0]
    steps = trace_steps(model, v.path)
    rows = []
    loop = v.loop
    for s in steps:
        action = s["action"]
        i = s["index"]
        cls = "last" if i == len(steps) else "cycle" if loop is not None and i > loop else ""
        mark = lasso_mark(v, i)
        back = f' <span class="cycle">↺ {x(mark)}</span>' if mark else ""
        attr = f' class="{cls}"' if cls else ""
        rows.append(
            f'<tr{attr}><td class="n">{i}</td>'
            f'<td class="action">{x(action["text"]) if action else ""}</td>'
            f'<td class="desc">{x(action["description"]) if action else ""}</td>'
            f'<td class="state">{x(s["text"])}{back}</td></tr>'
        )
    size = f"a counterexample of {len(steps)} states" if loop is None else lasso_summary(v)
    return "\n".join(
        [
            f'<section class="trace" data-property="{x(", ".join(g.property for g in group))}"'
            + (f' data-cycle-start="{loop + 1}"' if loop is not None else "")
            + ">",
            f'<h2 class="violation">✗ {x(", ".join(g.property for g in group))}: {x(size)}</h2>',
            *(f'<p class="note">{x(g.property)}: {x(g.explanation)}</p>' for g in group),
            '<table class="steps"><tr><th>#</th><th>action</th><th>what it did</th><th>state</th></tr>',
            *rows,
            "</table>",
            "</section>",
        ]
    )


def violation_page(ref: str, model: Model, violation: Violation) -> str:
    """One counterexample as a self-contained HTML page (``kmc replay --format html``),
    styled as every page kmc writes."""
    parts = html.head(f"kmc replay: {ref}")
    parts += ["</header>", _trace_section(model, [violation]), *html.foot(f"kmc replay --model {ref}")]
    return "\n".join(parts) + "\n"


def _trace_dict(model: Model, path: Path) -> dict[str, Any]:
    return {"init_index": path.init_index, "choices": list(path.choices), "steps": trace_steps(model, path)}


def violation_dict(model: Model, violation: Violation) -> dict[str, Any]:
    """One counterexample as ``result_dict`` writes it."""
    lasso = lasso_dict(violation)
    return {
        "property": violation.property,
        "kind": violation.kind,
        "explanation": violation.explanation,
        **({"lasso": lasso} if lasso is not None else {}),
        "trace": {
            "init_index": violation.path.init_index,
            "choices": list(violation.path.choices),
            "steps": trace_steps(model, violation.path),
        },
    }


def result_page(spec: ModelRef, model: Model, result: CheckResult, command: str = "") -> str:
    """A self-contained HTML page, styled as a Kafka spec's: the model and the run's
    counts, the verdicts, every counterexample as a table of steps, and the result as
    JSON."""
    x = xml_text
    s = result.stats
    parts = html.head(command or f"kmc check --model {spec.ref}")
    facts = [
        ("model", repr(model)),
        ("engine", result.engine),
        ("distinct states", f"{s.distinct:,}"),
        ("states generated", f"{s.generated:,}"),
        ("depth", str(s.depth)),
    ]
    if not result.complete:
        facts.append(("incomplete", f"the search stopped ({result.stopped})"))
    parts.append('<dl class="facts">' + "".join(f"<dt>{x(k)}</dt><dd>{x(v)}</dd>" for k, v in facts) + "</dl>")
    parts.append("</header>")
    parts.append('<table class="verdicts"><tr><th>property</th><th>verdict</th></tr>')
    for name in result.checked:
        verdict = result.verdict(name)
        parts.append(f'<tr><td>{x(name)}</td><td class="{x(verdict)}">{x(verdict)}</td></tr>')
    parts.append("</table>")
    traces = [_trace_section(model, group) for group in by_path(_in_order(result))]
    if not traces:
        parts.append(
            f'<p class="note">No counterexample: no checked property failed in {s.distinct:,} distinct states.</p>'
        )
    parts += traces
    # Inside the page, every character but printable ASCII is an escape, and so is "<" (no
    # text of the model can end the element or read as a tag).
    doc = json.dumps(result_dict(spec, model, result)).replace("<", "\\u003c")
    parts.append(f'<script type="application/json" id="kmc-result">{doc}</script>')
    parts += html.foot(f"kmc check --model {spec.ref}")
    return "\n".join(parts) + "\n"
