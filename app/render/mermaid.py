"""A counterexample as a Mermaid ``sequenceDiagram``, for pasting into Markdown (GitHub,
GitLab, Confluence): one participant for the controller and one per replica, one message
or note per step, headed by the step's number, action and the model's sentence for it,
and the violation in a note at the end. Drawn from ``render.diagram``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from kmc.checker.base.text import picture_text

from .diagram import CONTROLLER, MARKER, cycle_text, lost_label
from .headers import config_summary

if TYPE_CHECKING:
    from kmc.model.config import Config

    from .diagram import Column, Diagram, ReplicaCell


def _ids(d: Diagram) -> list[str]:
    """Participant ids: ``ctl`` and ``r0``, ``r1``, ... (a replica's name may hold ``-``,
    which Mermaid would read as part of an arrow)."""
    return ["ctl"] + [f"r{i}" for i in range(len(d.lanes) - 1)]


def escape(text: object) -> str:
    """Text safe inside a Mermaid message or note: ``#`` and ``;`` as entity codes (a
    semicolon would end the statement), line breaks as ``<br/>``, ``<`` and ``>`` as
    entity codes, ``%`` as an entity code (``%%{init: ...}%%`` is a directive Mermaid
    honours anywhere), and what no picture may hold as ``checker.base.text.picture_text``
    shows it."""
    codes = {"#": "#35;", ";": "#59;", "<": "#lt;", ">": "#gt;", "%": "#37;", "\n": "<br/>"}
    return "".join(codes.get(ch, ch) for ch in picture_text(text))


def comment(text: object) -> str:
    """Text safe in a ``%%`` comment line: one line, ``%`` as ``#37;`` (a ``%%{...}%%``
    directive is read even inside a comment), and what no picture may hold escaped."""
    return picture_text(" ".join(str(text).split())).replace("%", "#37;")


def _log(cell: ReplicaCell) -> str:
    records = [b.text for b in cell.boxes if not b.ghost]
    return (" ".join(records) if records else "empty") + f" (hw {cell.hw})"


def _changes(d: Diagram, prev: Column, col: Column) -> list[str]:
    """What changed in the lanes at this step, one short line each."""
    lines = []
    c, pc = col.controller, prev.controller
    if c.changed:
        parts = []
        if (c.leader, c.epoch) != (pc.leader, pc.epoch):
            parts.append(f"leader {c.leader} e{c.epoch}")
        if c.isr != pc.isr:
            parts.append(f"ISR {c.isr}")
        if c.elr is not None and c.elr != pc.elr:
            parts.append(f"ELR {c.elr}")
        if c.min_isr != pc.min_isr:  # the operator's change of min ISR
            parts.append(f"min ISR {c.min_isr}")
        if c.leader_min_isr != pc.leader_min_isr:
            parts.append(f"the leader's min ISR {c.leader_min_isr}")
        if c.request != pc.request:
            parts.append(f"request in flight: {c.request}" if c.request else "no request in flight")
        if parts:
            lines.append("controller: " + ", ".join(parts))
    for name, cell, old in zip(d.lanes[1:], col.replicas, prev.replicas):
        if not cell.changed:
            continue
        if cell.failed_dir:  # its log directory failed: no crash; offline, or re-created empty (KAFKA-16234)
            state = "DOWN (lossy)" if not cell.alive and cell.lossy else "DOWN" if not cell.alive else "up"
            lines.append(f"{name}: log directory failed, {cell.dropped} lost, {state}: {_log(cell)}")
        elif cell.stopped:  # the end of a controlled shutdown
            lines.append(f"{name}: DOWN, a clean stop: {_log(cell)}")
        elif not cell.alive:
            what = "DOWN (lossy)" if cell.lossy else "DOWN"
            if cell.dropped:
                what += f", {cell.dropped} unflushed lost"
            lines.append(f"{name}: {what}")
        elif cell.truncated_to is not None:  # the fetch path: on the leader's diverging answer
            lines.append(f"{name}: truncated to offset {cell.truncated_to} on the answer: {_log(cell)}")
        elif (_log(cell) != _log(old)) or not old.alive:
            lines.append(f"{name}: {_log(cell)}")
    if col.committed:
        lines.append(f"committed: {', '.join(col.committed)}")
    if col.acked:
        lines.append(f"producer told: {', '.join(col.acked)}")
    return lines


def render(d: Diagram, *, title: str = "", config: Config | None = None) -> str:
    """The Mermaid text of a ``render.diagram.Diagram`` (``title``: a comment line;
    ``config``: the model's configuration, a comment line under it)."""
    ids = _ids(d)
    everyone = f"{ids[0]},{ids[-1]}"
    lines = [f"%% {MARKER}: {comment(d.property)}, {len(d.columns)} states"]
    if title:
        lines.append(f"%% {comment(title)}")
    if config is not None:
        lines.append(f"%% {comment(config_summary(config))}")
    if d.options:  # ISR changes go through the controller: say so, as the HTML header does
        lines.append(f"%% ISR changes through the controller: {comment(', '.join(d.options))}")
    lines.append("sequenceDiagram")
    for pid, name in zip(ids, d.lanes):
        lines.append(f"    participant {pid} as {escape(name)}")
    first = d.columns[0]
    start = [f"1. initial: {first.description}"]
    start += [f"{name}: {_log(cell)}" for name, cell in zip(d.lanes[1:], first.replicas)]
    lines.append(f"    Note over {everyone}: " + "<br/>".join(escape(t) for t in start))
    last = len(d.columns) - 1
    for i in range(1, len(d.columns)):
        col = d.columns[i]
        if d.loop is not None and not d.stutters and i == d.loop + 1:
            # a lasso's cycle: Mermaid's loop block, from its first step to its last
            lines.append(f"    loop {escape(cycle_text(d))}")
        elif i == last and not d.lasso:
            colour = "255, 236, 214" if d.kind == "possibly" else "253, 228, 228"
            lines.append(f"    rect rgb({colour})")
        text = [f"{col.number}. {col.action}: {col.description}"] + _changes(d, d.columns[i - 1], col)
        body = "<br/>".join(escape(t) for t in text)
        if col.events:
            # the step's text on its first message; a further one (the controller's answer to a
            # controlled shutdown) with its own label
            for k, ev in enumerate(col.events):
                arrow = {
                    "fetch-request": "->>",
                    "fetch-response": "-->>",
                    "stale-response": "--x",
                    "diverging-response": "--)",
                    "follow": "-->>",
                    "answer": "-->>",
                    "refused": "--x",
                }.get(ev.kind, "->>")
                lines.append(f"    {ids[ev.source]}{arrow}{ids[ev.target]}: {body if k == 0 else escape(ev.label)}")
        else:
            lane = ids[_acting_lane(d, col)]
            lines.append(f"    Note over {lane}: {body}")
        # The AlterPartition request in flight: the controller's activation bar, from the
        # request to its answer (or to the step that drops it).
        before, now = d.columns[i - 1].controller.request, col.controller.request
        if now is not None and before is None:
            lines.append(f"    activate {ids[CONTROLLER]}")
        elif now is None and before is not None:
            lines.append(f"    deactivate {ids[CONTROLLER]}")
        if i == last and d.lasso:
            if now is not None:
                lines.append(f"    deactivate {ids[CONTROLLER]}")
            if not d.stutters:
                lines.append("    end")
            lines.append(f"    Note over {everyone}: {_verdict(d)}")
        elif i == last:
            lines.append(f"    Note over {everyone}: {_verdict(d)}")
            if now is not None:
                lines.append(f"    deactivate {ids[CONTROLLER]}")
            lines.append("    end")
    if len(d.columns) == 1:
        lines.append(f"    Note over {everyone}: {_verdict(d)}")
    return "\n".join(lines) + "\n"


def _acting_lane(d: Diagram, col: Column) -> int:
    """The lane of the replica a step without a message acts on (from its action text)."""
    inside = col.action.partition("(")[2].partition(")")[0].partition(",")[0].strip()
    names = list(d.lanes)
    return names.index(inside) if inside in names[1:] else CONTROLLER


def _verdict(d: Diagram) -> str:
    text = [f"✗ {d.verdict}: {d.explanation}"]
    if d.stutters:
        text.append(f"↺ {cycle_text(d)}")
    if d.lost:
        text.append(f"{lost_label(d)}: {', '.join(d.lost)}")
    if d.kind == "possibly" and d.traps is not None:
        text.append(f"availability trap: one of {d.traps:,} trap states")
    return "<br/>".join(escape(t) for t in text)


def no_counterexample(lanes: Sequence[str], text: str) -> str:
    """A diagram that says no counterexample was found (``lanes``: the participants)."""
    ids = ["ctl"] + [f"r{i}" for i in range(len(lanes) - 1)]
    lines = [f"%% {MARKER}: no counterexample", "sequenceDiagram"]
    lines += [f"    participant {pid} as {name}" for pid, name in zip(ids, lanes)]
    lines.append(f"    Note over {ids[0]},{ids[-1]}: {escape(text)}")
    return "\n".join(lines) + "\n"
