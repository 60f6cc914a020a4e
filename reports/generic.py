"""A result of any model, shown without knowing the model: the generic trace rendering.

Everything here goes through the model protocol (``checker.protocol``): an action's text
is ``format_action``, a step's sentence ``describe_step``, a state's line
``format_state`` (its fields when the model has no view of its own). The Kafka model's
own views (``reports.result_view``, ``reports.json_result``, ``reports.pictures``) show
more; these show any model a user writes (``kmc check --model``).
"""

from __future__ import annotations

import html as _html
import json
from typing import Any

import attrs
from kmc.checker.protocol import NamesActions, action_name, capable, describe_step, format_action, format_state
from kmc.checker.text import safe_text
from kmc.reports.json_result import cross_checked_text
from rich import box
from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

SCHEMA = "kmc-generic-result-1"


def action_order(model, stats) -> list[str]:
    """Every action name to list: the model's ``action_names()`` when it declares them,
    then any other name that fired, in order of name."""
    names = list(model.action_names()) if capable(model, NamesActions) else []
    return names + sorted(set(stats.fired) - set(names))


def _value(v) -> Any:
    if attrs.has(type(v)):
        return {k: _value(x) for k, x in attrs.asdict(v, recurse=False).items()}
    if isinstance(v, (tuple, list, frozenset, set)):
        items = [_value(x) for x in v]
        return sorted(items, key=repr) if isinstance(v, (set, frozenset)) else items
    if isinstance(v, dict):
        return {str(k): _value(x) for k, x in v.items()}
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    return repr(v)


def trace_steps(model, path) -> list[dict]:
    """The steps of a path: index (from 1), the action (text, name, choice), what it did,
    and the state (its one-line text and its fields)."""
    out = []
    before = None
    for i, step in enumerate(path.steps):
        action = None
        if step.action is not None:
            action = {
                "name": action_name(step.action),
                "text": format_action(model, step.action),
                "choice": path.choices[i - 1],
                "description": describe_step(model, before, step.action, step.state),
            }
        out.append(
            {"index": i + 1, "action": action, "text": format_state(model, step.state), "state": _value(step.state)}
        )
        before = step.state
    return out


def result_dict(spec, model, result) -> dict:
    """A run of a user's model as a JSON-ready dict (``SCHEMA``): the model's reference
    and parameters (what ``kmc replay`` rebuilds it from), the counts, the verdicts, and
    every counterexample's steps."""
    from kmc.checker import __version__

    s = result.stats
    return {
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
    }


def changed_fields(before, after) -> list[str]:
    """``field: old -> new`` for every field of a state's dict (``trace_steps``) that a
    step changed; a state that is no dict shows whole."""
    if not isinstance(before, dict) or not isinstance(after, dict):
        return [] if before == after else [f"{_short(before)} -> {_short(after)}"]
    return [
        f"{key}: {_short(before.get(key))} -> {_short(after.get(key))}"
        for key in dict.fromkeys([*before, *after])
        if before.get(key) != after.get(key)
    ]


def _short(value) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(", ", ": "))


def trace_view(model, violation, diff=False) -> Group:
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
        parts.append(head)
        if diff and before is not None:
            changed = changed_fields(before, step["state"])
            parts += [Text(f"  {safe_text(line)}") for line in changed] or [Text("  (nothing changed)", "dim")]
        else:
            parts.append(Text(f"  {safe_text(step['text'])}"))
        before = step["state"]
    parts.append(Text(f"{violation.property}: {safe_text(violation.explanation)}", "bold red"))
    return Group(*parts)


def result_view(spec, model, result, show_traces=True, diff=False) -> Group:
    """``kmc check --model``'s terminal output: the model, the verdicts, the counts, the
    actions, the counterexamples and a summary."""
    s = result.stats
    props = {p.name: p for p in model.properties()}
    verdicts = Table(box=box.SIMPLE_HEAD, header_style="bold dim", show_edge=False)
    for column in ("property", "verdict", "meaning"):
        verdicts.add_column(column)
    for name in result.checked:
        verdict = result.verdict(name)
        style = {"holds": "green", "violated": "bold red"}.get(verdict, "yellow")
        verdicts.add_row(
            name,
            Text(verdict.upper() if verdict == "violated" else verdict, style),
            props[name].description if name in props else "",
        )
    actions = Table(box=box.SIMPLE_HEAD, header_style="bold dim", show_edge=False)
    for column in ("action", "fired", "new states"):
        actions.add_column(column, justify="left" if column == "action" else "right")
    for name in action_order(model, s):
        actions.add_row(name, f"{s.fired.get(name, 0):,}", f"{s.new.get(name, 0):,}")
    parts: list[RenderableType] = [
        Text(f"kmc check --model {safe_text(spec.ref)}", "bold"),
        Text(f"  {safe_text(repr(model))}", "dim"),
        Text(f"  engine {result.engine}", "dim"),
        Text(""),
        verdicts,
        Text(f"{s.distinct:,} distinct states · {s.generated:,} generated · depth {s.depth} · {s.terminal:,} terminal"),
        *([Text(f"batch kernel: {cross_checked_text(s.cross_checked)}", "dim")] if s.cross_checked else []),
        Text(""),
        actions,
    ]
    if not result.complete:
        parts.append(Text(f"incomplete: the search stopped ({result.stopped})", "yellow"))
    ordered = sorted(result.violations.values(), key=lambda v: (len(v.path), v.path.choices))
    if show_traces:
        for v in ordered:
            parts += [
                Text(""),
                Text(f"Counterexample: {v.property} ({len(v.path)} states)", "bold red"),
                trace_view(model, v, diff=diff),
            ]
    parts.append(Text(""))
    if ordered:
        parts.append(
            Text(
                f"✗ {ordered[0].property} violated: shortest counterexample has {len(ordered[0].path)} states.",
                "bold red",
            )
        )
    elif result.complete:
        parts.append(Text(f"✓ No violation in {s.distinct:,} distinct states.", "bold green"))
    else:  # stopped early (a bound, --max-memory, a signal): nothing is proved
        unknown = [n for n in result.checked if result.verdict(n) == "unknown"]
        parts.append(
            Text(
                f"No violation in {s.distinct:,} distinct states, but the search is incomplete "
                f"({result.stopped}): {len(unknown)} {'property' if len(unknown) == 1 else 'properties'} unknown.",
                "bold yellow",
            )
        )
    return Group(*parts)


def _label(text: str) -> str:
    return text.replace('"', "#quot;")


def _flowchart(model, v, n) -> list[str]:
    lines = ["flowchart TD", f'  subgraph v{n}["{_label(v.property)}: {_label(v.explanation)}"]']
    for step in trace_steps(model, v.path):
        i = step["index"]
        lines.append(f'    v{n}s{i}["{i}. {_label(step["text"])}"]')
        if step["action"] is not None:
            lines.append(f'    v{n}s{i - 1} -->|"{_label(step["action"]["text"])}"| v{n}s{i}')
    lines.append("  end")
    return lines


def violation_mermaid(ref, model, violation) -> str:
    """One counterexample as a Mermaid flowchart (``kmc replay --format mermaid``)."""
    return "\n".join(["%% kmc replay --model " + ref.replace("\n", " "), *_flowchart(model, violation, 0)]) + "\n"


def result_mermaid(spec, model, result) -> str:
    """Every counterexample as a Mermaid flowchart: its states as boxes, its actions as
    arrows."""
    lines = ["%% kmc check --model " + spec.ref.replace("\n", " ")]
    for n, name in enumerate(n for n in result.checked if n in result.violations):
        lines += _flowchart(model, result.violations[name], n)
    if len(lines) == 1:
        lines += ["flowchart TD", f'  ok["no violation in {result.stats.distinct:,} distinct states"]']
    return "\n".join(lines) + "\n"


def _trace_table(model, v) -> str:
    esc = _html.escape
    body = "".join(
        f"<tr><td>{s['index']}</td><td>{esc(s['action']['text']) if s['action'] else ''}</td>"
        f"<td>{esc(s['action']['description']) if s['action'] else ''}</td><td><code>{esc(s['text'])}</code></td></tr>"
        for s in trace_steps(model, v.path)
    )
    return (
        f"<h2>{esc(v.property)}: {esc(v.explanation)}</h2><table><tr><th>#</th><th>action</th>"
        f"<th>what it did</th><th>state</th></tr>{body}</table>"
    )


def violation_page(ref, model, violation) -> str:
    """One counterexample as a self-contained HTML page (``kmc replay --format html``)."""
    esc = _html.escape
    return (
        '<!doctype html><html><head><meta charset="utf-8"><title>kmc replay</title>'
        '<meta name="generator" content="kmc"></head><body>'
        f"<h1>kmc replay: {esc(ref)}</h1>{_trace_table(model, violation)}</body></html>\n"
    )


def violation_dict(model, violation) -> dict:
    """One counterexample as ``result_dict`` writes it."""
    return {
        "property": violation.property,
        "kind": violation.kind,
        "explanation": violation.explanation,
        "trace": {
            "init_index": violation.path.init_index,
            "choices": list(violation.path.choices),
            "steps": trace_steps(model, violation.path),
        },
    }


def result_page(spec, model, result, command="") -> str:
    """A self-contained HTML page: the verdicts, every counterexample as a table of steps,
    and the result as JSON."""
    esc = _html.escape
    rows = []
    for name in result.checked:
        rows.append(f"<tr><td>{esc(name)}</td><td>{esc(result.verdict(name))}</td></tr>")
    traces = [_trace_table(model, result.violations[n]) for n in result.checked if n in result.violations]
    doc = json.dumps(result_dict(spec, model, result), ensure_ascii=False).replace("</", "<\\/")
    return (
        '<!doctype html><html><head><meta charset="utf-8"><title>kmc check '
        f'{esc(spec.ref)}</title><meta name="generator" content="kmc"></head><body>'
        f"<h1>{esc(command or 'kmc check --model ' + spec.ref)}</h1>"
        f"<p>{result.stats.distinct:,} distinct states, depth {result.stats.depth}, engine {esc(result.engine)}</p>"
        f"<table><tr><th>property</th><th>verdict</th></tr>{''.join(rows)}</table>{''.join(traces)}"
        f'<script type="application/json" id="kmc-result">{doc}</script></body></html>\n'
    )
