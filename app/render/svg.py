"""A counterexample as a swimlane diagram in SVG (``render.diagram`` draws nothing itself).

Lanes run across (the controller on top, then the replicas), steps run down the columns,
left to right. The drawing is self-contained: generic font families, no script, no link,
no image; it is sized to fit 1280 pixels for traces of up to 15 steps, and grows wider
for longer ones.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kmc.checker.base.text import xml_text as _x

from .diagram import CONTROLLER, MARKER, cycle_text, epoch_colour, lost_label
from .svg_base import (
    BLUE,
    CURRENT,
    GREEN,
    GREY,
    LABEL_W,
    MAGENTA,
    MONO,
    ORANGE,
    PAD,
    PURPLE,
    RED,
    WIDTH,
    ZOOM,
    svg_text,
    wrap,
)
from .svg_boxes import (
    Layout,
    controller,
    pending,
    replica,
)

if TYPE_CHECKING:
    from .diagram import Diagram, Event


def render(d: Diagram, *, standalone: bool = True, title: str = "") -> str:
    """The SVG document of a ``render.diagram.Diagram`` (``standalone``: with an XML
    declaration, for a file of its own; ``title``: a line above the diagram)."""
    lay = Layout(d)
    out: list[str] = []
    _columns_and_lanes(out, d, lay)
    for i, col in enumerate(d.columns):
        x = lay.col_x(i)
        controller(out, col, x, lay.lane_y[CONTROLLER], lay)
        for r, cell in enumerate(col.replicas):
            replica(
                out, cell, x, lay.lane_y[r + 1], lay, f'data-step="{col.number}" data-replica="{_x(d.lanes[r + 1])}"'
            )
        if col.controller.request_lane is not None:
            pending(out, col, x, lay)
        for k, ev in enumerate(col.events):  # several (a controlled shutdown's request and answer): side by side
            _event(out, ev, x - (len(col.events) - 1 - k) * EVENT_GAP, lay)
    y = _cycle(out, d, lay) if d.lasso else lay.lanes_bottom
    y = _verdict(out, d, lay, y)
    y = _legend(out, d, lay, y)
    lines = wrap(" ".join(str(title).split()), lay.width - 2 * PAD, 13, bold=True) if title else []
    top = len(lines) * 16 + 6 if lines else 0
    height = round(y + PAD + top)
    head = '<?xml version="1.0" encoding="UTF-8"?>\n' if standalone else ""
    heading = (svg_text(PAD + 2, PAD + 12, lines, 13, weight="bold") + "\n") if lines else ""
    zoom = max(1.0, min(ZOOM, WIDTH / lay.width))
    return (
        f'{head}<svg xmlns="http://www.w3.org/2000/svg" width="{round(lay.width * zoom)}" '
        f'height="{round(height * zoom)}" '
        f'viewBox="0 0 {lay.width} {height}" role="img" class="kmc-diagram" '
        f'data-lanes="{len(d.lanes)}" data-columns="{len(d.columns)}">\n'
        f"<!-- {MARKER} -->\n<title>{_x(d.verdict)}</title>\n"
        f"<defs>{_markers(d.columns[0].controller.requests, _diverges(d), d.lasso)}</defs>\n"
        f'<rect x="0" y="0" width="{lay.width}" height="{height}" fill="#ffffff"/>\n{heading}'
        f'<g transform="translate(0,{top})">\n' + "\n".join(out) + "\n</g>\n</svg>\n"
    )


def _diverges(d: Diagram) -> bool:
    """Does the diagram draw a diverging answer (truncate_on_fetch)? Its arrow has a marker
    of its own, defined only then (every other picture is as it always was)."""
    return any(ev.kind == "diverging-response" for col in d.columns for ev in col.events)


def _markers(requests: bool = False, diverging: bool = False, cycle: bool = False) -> str:
    colours = (("blue", BLUE), ("purple", PURPLE), ("grey", GREY)) + ((("orange", ORANGE),) if requests else ())
    colours += (("magenta", MAGENTA),) if diverging else ()
    colours += (("red", RED),) if cycle else ()
    return "".join(
        f'<marker id="arrow-{name}" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" '
        f'orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="{colour}"/></marker>'
        for name, colour in colours
    )


def _columns_and_lanes(out: list[str], d: Diagram, lay: Layout) -> None:
    last = len(d.columns) - 1
    for i, (col, (action, words)) in enumerate(zip(d.columns, lay.heads)):
        x = lay.col_x(i)
        shade = "#f7f7f9" if i % 2 else "#ffffff"
        out.append(
            f'<g class="column" data-step="{col.number}"><title>{_x(col.action)}: {_x(col.description)}</title>'
            f'<rect x="{x}" y="{PAD}" width="{lay.col_w}" height="{lay.lanes_bottom - PAD}" fill="{shade}"/>'
        )
        out.append(svg_text(x + 4, PAD + 10, [f"State {col.number}"], 8, fill="#777"))
        head = ("#8a6d00" if d.kind == "holds" else RED) if i == last else "#1a1a1a"  # red only where it fails
        out.append(svg_text(x + 4, PAD + 21, action, lay.head_size, weight="bold", fill=head))
        out.append(svg_text(x + 4, PAD + 21 + len(action) * 11.5, words, 8.5, fill="#555"))
        out.append("</g>")
    for lane, (name, y, h) in enumerate(zip(d.lanes, lay.lane_y, lay.lane_h)):
        out.append(
            f'<g class="lane" data-lane="{_x(name)}">'
            f'<line x1="{PAD}" y1="{y}" x2="{lay.width - PAD}" y2="{y}" stroke="#c8c8c8"/>'
        )
        label = "controller" if lane == CONTROLLER else f"replica {name}"
        out.append(
            svg_text(
                PAD + 2,
                y + 14,
                wrap(label, LABEL_W - 6, 10.5, bold=True),
                10.5,
                weight="bold",
                fill=PURPLE if lane == CONTROLLER else "#1a1a1a",
            )
        )
        out.append("</g>")
    out.append(
        f'<line x1="{PAD}" y1="{lay.lanes_bottom}" x2="{lay.width - PAD}" y2="{lay.lanes_bottom}" stroke="#c8c8c8"/>'
    )
    # red where something fails; a path that violates nothing (the explorer's walk) has its
    # current state framed in the colour of the page's current step
    colour = ORANGE if d.kind == "possibly" else CURRENT if d.kind == "holds" else RED
    first = d.loop if d.loop is not None else last  # a lasso frames its whole cycle
    x = lay.col_x(first)
    cls = "cycle" if d.lasso else "trap" if d.kind == "possibly" else "current" if d.kind == "holds" else "violation"
    dash = ' stroke-dasharray="6 3"' if d.lasso and not d.stutters else ""
    out.append(
        f'<rect class="{cls}" x="{x + 1}" y="{PAD + 1}" width="{(last - first + 1) * lay.col_w - 2}" '
        f'height="{lay.lanes_bottom - PAD - 2}" fill="none" stroke="{colour}" stroke-width="2.5"{dash}/>'
    )


_EVENT_STYLE = {
    "fetch-request": (BLUE, "blue", "4 3"),
    "fetch-response": (BLUE, "blue", ""),
    "stale-response": (GREY, "grey", "2 3"),
    "diverging-response": (MAGENTA, "magenta", "6 2"),  # no records: where the epochs diverge
    "elect": (PURPLE, "purple", ""),
    "follow": (PURPLE, "purple", "4 3"),
    "isr": (PURPLE, "purple", ""),
    "request": (ORANGE, "orange", "4 3"),  # a leader asks the controller to change the ISR
    "answer": (PURPLE, "purple", ""),  # the controller's answer: the ISR changes
    "refused": (GREY, "grey", "2 3"),  # the controller refuses it
}


def _event(out: list[str], ev: Event, x: float, lay: Layout) -> None:
    colour, marker, dash = _EVENT_STYLE[ev.kind]
    ax = x + lay.col_w - 11
    down = ev.source < ev.target
    y1 = lay.lane_y[ev.source] + lay.lane_h[ev.source] * (0.2 if down else 0.85)
    y2 = lay.lane_y[ev.target] + lay.lane_h[ev.target] * (0.8 if down else 0.2)
    dash_attr = f' stroke-dasharray="{dash}"' if dash else ""
    mid = (y1 + y2) / 2
    out.append(
        f'<g class="event {ev.kind}"><title>{_x(ev.label)}</title>'
        f'<line x1="{ax}" y1="{y1}" x2="{ax}" y2="{y2}" stroke="{colour}" stroke-width="1.8"{dash_attr} '
        f'marker-end="url(#arrow-{marker})"/>'
        + svg_text(
            ax + 9.5,
            mid,
            [ev.label],
            8.5,
            fill=colour,
            anchor="middle",
            extra=f' transform="rotate(-90 {ax + 9.5} {mid})" stroke="#fff" stroke-width="3" paint-order="stroke"',
        )
        + "</g>"
    )


EVENT_GAP = 18  # between the arrows of one step (a controlled shutdown's request and answer)

CYCLE_H = 34  # the band under the lanes where a lasso's cycle arrow runs


def _cycle(out: list[str], d: Diagram, lay: Layout) -> float:
    """A lasso's end under the lanes: an arrow from the last column back to the column
    where the cycle starts (the same state), or, when the last state stutters, a loop on
    it; with what it means in words. Returns the band's bottom."""
    last = len(d.columns) - 1
    top = lay.lanes_bottom
    x_last = lay.col_x(last) + lay.col_w / 2
    label = cycle_text(d)
    if d.stutters:
        path = f"M{x_last + 8},{top + 2} C{x_last + 26},{top + 24} {x_last - 26},{top + 24} {x_last - 8},{top + 3}"
        tx, anchor, ty = (lay.col_x(last) - 4, "end", top + 16) if last else (x_last + 24, "start", top + 16)
    else:
        assert d.loop is not None  # a lasso's
        x_loop = lay.col_x(d.loop) + lay.col_w / 2
        path = f"M{x_last},{top + 2} L{x_last},{top + 18} L{x_loop},{top + 18} L{x_loop},{top + 3}"
        tx, anchor, ty = (x_last + x_loop) / 2, "middle", top + 28
    out.append(
        f'<g class="cycle-arrow"><title>{_x(label)}</title>'
        f'<path d="{path}" fill="none" stroke="{RED}" stroke-width="1.6" marker-end="url(#arrow-red)"/>'
        + svg_text(tx, ty, [label], 9, fill=RED, weight="bold", anchor=anchor)
        + "</g>"
    )
    return top + CYCLE_H


def _verdict(out: list[str], d: Diagram, lay: Layout, top: float | None = None) -> float:
    y = (lay.lanes_bottom if top is None else top) + 10
    colour = ORANGE if d.kind == "possibly" else GREEN if d.kind == "holds" else RED
    width = lay.width - 2 * PAD
    head = (
        f"✓ {d.verdict}: {d.explanation or 'no property is violated'}"
        if d.kind == "holds"
        else f"✗ {d.verdict}: {d.explanation}"
    )
    lines = wrap(head, width - 16, 10.5)
    extra = []
    if d.lost:
        extra.append(
            lost_label(d)
            + ": "
            + ", ".join(d.lost)
            + (
                " (red, dashed where it is missing)"
                if d.property not in ("LogsNeverDiverge", "UncommittedNeverExposed")
                else " (red)"
            )
        )
    if d.kind == "possibly" and d.traps is not None:
        extra.append(
            f"availability trap: the last state is one of {d.traps:,} trap states "
            "(no goal state is reachable from any of them)"
        )
    if d.note:
        extra += wrap(d.note, width - 16, 9)
    h = 10 + len(lines) * 12.6 + len(extra) * 11 + 6
    fill = "#e8f5e9" if d.kind == "holds" else "#fdecea"
    out.append(
        f'<g class="verdict"><rect x="{PAD}" y="{y}" width="{width}" height="{h}" fill="{fill}" '
        f'stroke="{colour}" rx="4"/>'
    )
    out.append(svg_text(PAD + 8, y + 15, lines, 10.5, fill=colour, weight="bold"))
    if extra:
        out.append(svg_text(PAD + 8, y + 15 + len(lines) * 12.6, extra, 9, fill="#5d1a1a"))
    out.append("</g>")
    return y + h


def _legend(out: list[str], d: Diagram, lay: Layout, y: float) -> float:
    y += 16
    x: float = PAD
    parts = ['<g class="legend">']
    epochs = sorted({b.epoch for c in d.columns for cell in c.replicas for b in cell.boxes})
    for e in epochs:
        colour = epoch_colour(e)
        parts.append(
            f'<rect x="{x}" y="{y - 9}" width="22" height="12" fill="{colour}" fill-opacity="0.16" '
            f'stroke="{colour}" rx="2"/>' + svg_text(x + 11, y, [f"e{e}"], 8.5, family=MONO, anchor="middle")
        )
        x += 26
    items = [
        ("epoch colours; offset:epoch·record", None),
        ("— high watermark", "#111"),
        ("bold border: new record", "#333"),
        (
            {
                "LogsNeverDiverge": "red: the records that disagree",
                "AcknowledgedNeverLost": "red: the lost acknowledged record",
                "CommittedEventuallyReplicated": "red: the committed record some replica lacks for ever",
                "UncommittedNeverExposed": "red: the never-committed record below a follower's high watermark",
            }.get(d.property, "red: the lost record"),
            RED,
        ),
        ("dashed: not in the log (missing, truncated, lost in a crash)", GREY),
        ("fetch request ⇢", BLUE),
        ("fetch response →", BLUE),
        ("controller →", PURPLE),
        ("yellow: changed", "#8a6d00"),
        ("grey: down", "#777"),
        ("✕ crash", RED),
    ]
    if _diverges(d):  # the fetch path's answer, and KAFKA-14704's first half ("hw N first")
        items[-3:-3] = [("diverging answer →", MAGENTA)]
        if any(ev.kind == "diverging-response" and ev.label.endswith(" first") for c in d.columns for ev in c.events):
            items[-3:-3] = [("hw N first: KAFKA-14704, the high watermark taken before the truncation", MAGENTA)]
    if d.columns[0].controller.requests:
        items[-3:-3] = [("ISR request ⇢", ORANGE), ("┆ request in flight", ORANGE)]
        items.append(("ISR changes through the controller: " + ", ".join(d.options), PURPLE))
    if (d.lasso or d.kind == "holds") and not d.lost:  # no record marked (EventuallyLeader's lasso, a walk)
        items = [item for item in items if not item[0].startswith("red: ")]
    if d.lasso:
        items.append(
            ("red frame: the state it stays in for ever", RED)
            if d.stutters
            else ("dashed red frame: the cycle, repeated for ever", RED)
        )
    if any(c.acked for c in d.columns):
        items.append(("producer told: acknowledged to the producer", BLUE))
    if any(cell.stopped for c in d.columns for cell in c.replicas):
        items.append(("clean stop: the end of a controlled shutdown, nothing lost (not a crash)", "#1b7d1b"))
    if any(cell.failed_dir for c in d.columns for cell in c.replicas):
        items.append(("dir failed: a failed log directory, its log gone (not a crash)", RED))
    for text, fill in items:
        w = 12 + len(text) * 4.9
        if x + w > lay.width - PAD:
            x, y = PAD, y + 14
        parts.append(svg_text(x + 4, y, [text], 8.5, fill=fill or "#555"))
        x += w
    parts.append("</g>")
    out.extend(parts)
    return y + 4
