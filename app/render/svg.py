"""A counterexample as a swimlane diagram in SVG (``render.diagram`` draws nothing itself).

Lanes run across (the controller on top, then the replicas), steps run down the columns,
left to right. The drawing is self-contained: generic font families, no script, no link,
no image; it is sized to fit 1280 pixels for traces of up to 15 steps, and grows wider
for longer ones.
"""

from __future__ import annotations

from kmc.checker.base.text import xml_text

from .diagram import CONTROLLER, MARKER, cycle_text, epoch_colour, lost_label

SANS = "Helvetica, Arial, 'DejaVu Sans', sans-serif"
MONO = "Menlo, Consolas, 'DejaVu Sans Mono', monospace"
WIDTH = 1232  # what a diagram aims to fit: a 1280-pixel window less the margins and a scroll bar
LABEL_W = 78
PAD = 8
COL_MIN, COL_MAX = 76, 104
ZOOM = 1.25  # a short trace is drawn larger, up to this much, to fill WIDTH
BOX_H, BOX_GAP = 15, 2
LINE = 11
RED, ORANGE, BLUE, PURPLE, GREY = "#c62828", "#e65100", "#1f5fbf", "#6a3fb5", "#9e9e9e"
CURRENT = "#c9a400"  # the explorer's current state, where nothing fails
MAGENTA = "#ad1457"  # a diverging answer (truncate_on_fetch) and the truncation it causes
GREEN = "#2e7d32"


_x = xml_text


def wrap(text, width, size, bold=False) -> list[str]:
    """``text`` in lines of at most ``width`` pixels of a ``size``-pixel font (estimated:
    a sans-serif character is at most about 0.53 of the size wide on average, 0.58 in
    bold). Lines break at spaces, else before a ``(``, else inside a word too long for a
    line."""
    per = max(4, int(width / (size * (0.58 if bold else 0.53))))
    pieces = []  # (text, glued to the piece before)
    for word in str(text).split(" "):
        parts = word.replace("(", "\0(").split("\0")
        for k, part in enumerate(parts):
            if part:
                pieces.append((part, k > 0 and any(parts[:k])))
    lines, line = [], ""
    for part, glued in pieces:
        joined = line + part if glued else (f"{line} {part}" if line else part)
        if len(joined) <= per or not line:
            line = joined
        else:
            lines.append(line)
            line = part
        while len(line) > per:  # a piece longer than a line
            lines.append(line[:per])
            line = line[per:]
    if line:
        lines.append(line)
    return lines or [""]


def _text(x, y, lines, size, *, fill="#222", weight="normal", family=SANS, anchor="start", extra="") -> str:
    spans = "".join(
        f'<tspan x="{x}" dy="{0 if i == 0 else round(size * 1.2, 1)}">{_x(t)}</tspan>' for i, t in enumerate(lines)
    )
    return (
        f'<text x="{x}" y="{y}" font-family="{family}" font-size="{size}" fill="{fill}" '
        f'font-weight="{weight}" text-anchor="{anchor}"{extra}>{spans}</text>'
    )


def slots(cell) -> list[int]:
    """The row of each of ``cell.boxes`` in its stack: a record at its offset; a missing
    record whose offset holds another one after the end of the log."""
    used: set[int] = set()
    out = []
    for b in cell.boxes:
        slot = b.offset
        if slot in used or (b.ghost and b.offset < cell.leo):
            slot = max(used | {cell.leo - 1}) + 1
        used.add(slot)
        out.append(slot)
    return out


class _Layout:
    """Where everything goes: column width, header height, every lane's top and height."""

    def __init__(self, d) -> None:
        n = len(d.columns)
        self.col_w = max(COL_MIN, min(COL_MAX, (WIDTH - LABEL_W - 2 * PAD) // n))
        inner = self.col_w - 8
        self.head_size = 9.5 if self.col_w >= 96 else 9  # so that FetchResponse fits a narrow column
        self.heads = [
            (wrap(c.action, inner, self.head_size, bold=True), wrap(c.description, inner, 8.5)) for c in d.columns
        ]
        self.head_h = 20 + max(len(a) * 11.5 + len(b) * 10.2 for a, b in self.heads)
        boxes = max((max(slots(cell), default=-1) + 1 for c in d.columns for cell in c.replicas), default=0)
        flight = max(
            (len(wrap(cell.inflight, inner, 8)) for c in d.columns for cell in c.replicas if cell.inflight), default=0
        )
        self.stack_h = max(1, boxes) * (BOX_H + BOX_GAP)
        # A replica's role ("follows broker-east-1 e0") and the controller's lines wrap in
        # their column: long replica names make the lanes taller, never wider.
        roles = max((len(_role_lines(cell, self.col_w)) for c in d.columns for cell in c.replicas), default=1)
        self.role_extra = (roles - 1) * LINE
        replica_h = 18 + self.role_extra + self.stack_h + 14 + flight * 9.6 + 8
        self.commit_lines = max((len(_history_lines(c, inner)) for c in d.columns), default=0)
        self.controller_lines = max(
            len(_controller_lines(c.controller, inner)) + len(_request_lines(c.controller, inner)) for c in d.columns
        )
        controller_h: float = 10 + LINE * self.controller_lines + 10
        controller_h += self.commit_lines * 10.2
        self.lane_h = [controller_h] + [replica_h] * (len(d.lanes) - 1)
        top = PAD + self.head_h
        self.lane_y = []
        for h in self.lane_h:
            self.lane_y.append(top)
            top += h
        self.lanes_bottom = top
        self.width = LABEL_W + n * self.col_w + 2 * PAD

    def col_x(self, i) -> float:
        return PAD + LABEL_W + i * self.col_w


def render(d, *, standalone=True, title="") -> str:
    """The SVG document of a ``render.diagram.Diagram`` (``standalone``: with an XML
    declaration, for a file of its own; ``title``: a line above the diagram)."""
    lay = _Layout(d)
    out: list[str] = []
    _columns_and_lanes(out, d, lay)
    for i, col in enumerate(d.columns):
        x = lay.col_x(i)
        _controller(out, col, x, lay.lane_y[CONTROLLER], lay)
        for r, cell in enumerate(col.replicas):
            _replica(
                out, cell, x, lay.lane_y[r + 1], lay, f'data-step="{col.number}" data-replica="{_x(d.lanes[r + 1])}"'
            )
        if col.controller.request_lane is not None:
            _pending(out, col, x, lay)
        for k, ev in enumerate(col.events):  # several (a controlled shutdown's request and answer): side by side
            _event(out, ev, x - (len(col.events) - 1 - k) * EVENT_GAP, lay)
    y = _cycle(out, d, lay) if d.lasso else lay.lanes_bottom
    y = _verdict(out, d, lay, y)
    y = _legend(out, d, lay, y)
    lines = wrap(" ".join(str(title).split()), lay.width - 2 * PAD, 13, bold=True) if title else []
    top = len(lines) * 16 + 6 if lines else 0
    height = round(y + PAD + top)
    head = '<?xml version="1.0" encoding="UTF-8"?>\n' if standalone else ""
    heading = (_text(PAD + 2, PAD + 12, lines, 13, weight="bold") + "\n") if lines else ""
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


def _diverges(d) -> bool:
    """Does the diagram draw a diverging answer (truncate_on_fetch)? Its arrow has a marker
    of its own, defined only then (every other picture is as it always was)."""
    return any(ev.kind == "diverging-response" for col in d.columns for ev in col.events)


def _markers(requests=False, diverging=False, cycle=False) -> str:
    colours = (("blue", BLUE), ("purple", PURPLE), ("grey", GREY)) + ((("orange", ORANGE),) if requests else ())
    colours += (("magenta", MAGENTA),) if diverging else ()
    colours += (("red", RED),) if cycle else ()
    return "".join(
        f'<marker id="arrow-{name}" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" '
        f'orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="{colour}"/></marker>'
        for name, colour in colours
    )


def _columns_and_lanes(out, d, lay) -> None:
    last = len(d.columns) - 1
    for i, (col, (action, words)) in enumerate(zip(d.columns, lay.heads)):
        x = lay.col_x(i)
        shade = "#f7f7f9" if i % 2 else "#ffffff"
        out.append(
            f'<g class="column" data-step="{col.number}"><title>{_x(col.action)}: {_x(col.description)}</title>'
            f'<rect x="{x}" y="{PAD}" width="{lay.col_w}" height="{lay.lanes_bottom - PAD}" fill="{shade}"/>'
        )
        out.append(_text(x + 4, PAD + 10, [f"State {col.number}"], 8, fill="#777"))
        head = ("#8a6d00" if d.kind == "holds" else RED) if i == last else "#1a1a1a"  # red only where it fails
        out.append(_text(x + 4, PAD + 21, action, lay.head_size, weight="bold", fill=head))
        out.append(_text(x + 4, PAD + 21 + len(action) * 11.5, words, 8.5, fill="#555"))
        out.append("</g>")
    for lane, (name, y, h) in enumerate(zip(d.lanes, lay.lane_y, lay.lane_h)):
        out.append(
            f'<g class="lane" data-lane="{_x(name)}">'
            f'<line x1="{PAD}" y1="{y}" x2="{lay.width - PAD}" y2="{y}" stroke="#c8c8c8"/>'
        )
        label = "controller" if lane == CONTROLLER else f"replica {name}"
        out.append(
            _text(
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
    first = d.loop if d.lasso else last  # a lasso frames its whole cycle
    x = lay.col_x(first)
    cls = "cycle" if d.lasso else "trap" if d.kind == "possibly" else "current" if d.kind == "holds" else "violation"
    dash = ' stroke-dasharray="6 3"' if d.lasso and not d.stutters else ""
    out.append(
        f'<rect class="{cls}" x="{x + 1}" y="{PAD + 1}" width="{(last - first + 1) * lay.col_w - 2}" '
        f'height="{lay.lanes_bottom - PAD - 2}" fill="none" stroke="{colour}" stroke-width="2.5"{dash}/>'
    )


def _controller(out, col, x, y, lay) -> None:
    c = col.controller
    fill = "#fff3c4" if c.changed else "none"
    out.append(
        f'<g class="cell controller" data-step="{col.number}"><rect x="{x + 1}" y="{y + 1}" '
        f'width="{lay.col_w - 2}" height="{lay.lane_h[CONTROLLER] - 2}" fill="{fill}" rx="3"/>'
    )
    inner = lay.col_w - 8
    lines = _controller_lines(c, inner)
    out.append(_text(x + 4, y + 16, lines, 9, fill=PURPLE))
    request = _request_lines(c, inner)
    if c.request is not None:  # the AlterPartition request in flight, under the ISR
        out.append(
            _text(
                x + 4,
                y + 16 + len(lines) * LINE,
                request,
                8.5,
                fill=ORANGE,
                weight="bold",
                extra=' class="request"',
            )
        )
    lines = lines + request
    lines += [""] * (lay.controller_lines - len(lines))  # what follows starts at one height
    if col.committed:  # the history variable: records that went below a leader's HW here
        out.append(
            _text(
                x + 4,
                y + 18 + len(lines) * LINE,
                wrap("commits " + ", ".join(col.committed), lay.col_w - 8, 8.5),
                8.5,
                fill="#1b7d1b",
                weight="bold",
                extra=' class="commits"',
            )
        )
    if col.acked:  # what the producer was told is written (with acks), under the commits
        below = len(wrap("commits " + ", ".join(col.committed), lay.col_w - 8, 8.5)) if col.committed else 0
        out.append(
            _text(
                x + 4,
                y + 18 + len(lines) * LINE + below * 10.2,
                _acked_lines(col, lay.col_w - 8),
                8.5,
                fill=BLUE,
                weight="bold",
                extra=' class="acked"',
            )
        )
    out.append("</g>")


def _controller_lines(c, inner) -> list[str]:
    """The controller's leader, epoch, ISR (and ELR, and with the operator's changes its min ISR
    and the leader's broker's) in a column ``inner`` pixels wide."""
    lines = [f"leader {c.leader} · e{c.epoch}", f"ISR {c.isr}"] + ([f"ELR {c.elr}"] if c.elr is not None else [])
    if c.min_isr is not None:
        lines.append(f"min ISR {c.min_isr}")
    if c.leader_min_isr is not None:
        lines.append(f"leader's min ISR {c.leader_min_isr}")
    return [part for line in lines for part in wrap(line, inner, 9)]


def _request_lines(c, inner) -> list[str]:
    """The AlterPartition request in flight (one empty line held for it in every column
    of a configuration that sends requests)."""
    if c.request is not None:
        return wrap(c.request_short, inner, 8.5, bold=True)
    return [""] if c.requests else []


def _acked_lines(col, inner) -> list[str]:
    return wrap("producer told: " + ", ".join(col.acked), inner, 8.5) if col.acked else []


def _history_lines(col, inner) -> list[str]:
    """The controller lane's lines of what a step committed and acknowledged."""
    commits = wrap("commits " + ", ".join(col.committed), inner, 8.5) if col.committed else []
    return commits + _acked_lines(col, inner)


def _role_text(cell) -> tuple[str, str, str]:
    if not cell.alive:
        return ("DOWN (lossy)" if cell.lossy else "DOWN"), RED, "bold"
    if cell.role == "leader":
        return f"leader e{cell.epoch}", "#1b7d1b", "bold"
    if cell.role.startswith("follower of "):
        return f"follows {cell.role[12:]} e{cell.epoch}", "#333", "normal"
    if cell.role == "—":
        return f"no leader e{cell.epoch}", "#777", "normal"
    return f"{cell.role} e{cell.epoch}", ORANGE, "bold"


def _role_lines(cell, col_w) -> list[str]:
    """A replica's role in its column (room kept at the right for a crash's mark); a replica in
    controlled shutdown says so."""
    text, _colour, weight = _role_text(cell)
    if cell.alive and cell.shutting:
        text += ", shutting down"
    return wrap(text, col_w - 22, 9, bold=weight == "bold")


def _replica(out, cell, x, y, lay, data) -> None:
    h = lay.lane_h[1]
    fill = "#e4e4e4" if not cell.alive else "#fff3c4" if cell.changed else "none"
    classes = "cell replica" + ("" if cell.alive else " down") + (" lossy" if cell.lossy else "")
    out.append(
        f'<g class="{classes}" {data}><rect x="{x + 1}" y="{y + 1}" width="{lay.col_w - 2}" height="{h - 2}" '
        f'fill="{fill}" rx="3"/>'
    )
    out.append(f'<g opacity="{1 if cell.alive else 0.55}">')
    _role, colour, weight = _role_text(cell)
    out.append(_text(x + 4, y + 13, _role_lines(cell, lay.col_w), 9, fill=colour, weight=weight))
    box_w = lay.col_w - 30
    top = y + 18 + lay.role_extra
    for slot, b in zip(slots(cell), cell.boxes):
        out.append(_box(b, x + 4, top + slot * (BOX_H + BOX_GAP), box_w))
    hw_y = top + cell.hw * (BOX_H + BOX_GAP) - BOX_GAP / 2
    out.append(
        f'<line class="hw" x1="{x + 2}" y1="{hw_y}" x2="{x + box_w + 7}" y2="{hw_y}" stroke="#111" '
        f'stroke-width="2"/>' + _text(x + box_w + 8, hw_y + 3, ["HW"], 6.5, weight="bold")
    )
    info_y = top + lay.stack_h + 10
    out.append(_text(x + 4, info_y, [f"hw {cell.hw} · leo {cell.leo}"], 8.5, fill="#333"))
    if cell.inflight:
        out.append(
            _text(x + 4, info_y + 11, wrap(cell.inflight, lay.col_w - 8, 8), 8, fill=BLUE, extra=' font-style="italic"')
        )
    out.append("</g>")
    if cell.crashed:
        cx, cy, k = x + lay.col_w - 13, y + 11, 6
        out.append(
            f'<g class="crash{" lossy-crash" if cell.dropped else ""}">'
            f'<path d="M{cx - k},{cy - k} L{cx + k},{cy + k} M{cx + k},{cy - k} '
            f'L{cx - k},{cy + k}" stroke="{RED}" stroke-width="3"/>'
        )
        if cell.dropped:
            out.append(_text(x + 4, y + h - 5, [f"lossy: {cell.dropped} lost"], 8.5, fill=RED, weight="bold"))
        out.append("</g>")
    elif cell.truncated_to is not None:  # the fetch path: on the leader's diverging answer
        out.append(
            _text(
                x + 4,
                y + h - 5,
                [f"truncated to {cell.truncated_to} on answer"],
                8.5,
                fill=MAGENTA,
                weight="bold",
                extra=' class="truncated on-answer"',
            )
        )
    elif cell.stopped:  # the end of a controlled shutdown: down, but no crash and nothing lost
        out.append(
            _text(x + 4, y + h - 5, ["clean stop"], 8.5, fill="#1b7d1b", weight="bold", extra=' class="clean-stop"')
        )
    elif cell.failed_dir:  # its log directory failed: the log is gone, with no crash (up again under KAFKA-16234)
        out.append(
            _text(
                x + 4,
                y + h - 5,
                [f"dir failed: {cell.dropped} lost" if cell.dropped else "dir failed"],
                8.5,
                fill=RED,
                weight="bold",
                extra=' class="disk-failure"',
            )
        )
    elif cell.dropped:
        out.append(
            _text(
                x + 4,
                y + h - 5,
                [f"truncated: {cell.dropped}"],
                8.5,
                fill=ORANGE,
                weight="bold",
                extra=' class="truncated"',
            )
        )
    out.append("</g>")


def _box(b, x, y, w) -> str:
    colour = epoch_colour(b.epoch)
    if b.ghost:
        stroke = RED if b.lost else GREY
        cls = "record ghost" + (" lost" if b.lost else "") + (" dropped" if b.dropped else "")
        return (
            f'<g class="{cls}" data-epoch="{b.epoch}"><rect x="{x}" y="{y}" width="{w}" height="{BOX_H}" '
            f'fill="#fff" stroke="{stroke}" stroke-width="1.6" stroke-dasharray="3 2" rx="2"/>'
            + _text(
                x + w / 2,
                y + 11,
                [b.text],
                8,
                family=MONO,
                anchor="middle",
                fill=stroke,
                weight="bold" if b.lost else "normal",
                extra=' text-decoration="line-through"' if b.dropped else "",
            )
            + "</g>"
        )
    stroke, width = (RED, 2.4) if b.lost else (colour, 2 if b.new else 1)
    cls = "record lost" if b.lost else "record"
    return (
        f'<g class="{cls}" data-epoch="{b.epoch}"><rect x="{x}" y="{y}" width="{w}" height="{BOX_H}" '
        f'fill="{colour}" fill-opacity="0.16" stroke="{stroke}" stroke-width="{width}" rx="2"/>'
        + _text(
            x + w / 2,
            y + 11,
            [b.text],
            8.5,
            family=MONO,
            anchor="middle",
            fill="#111",
            weight="bold" if b.new or b.lost else "normal",
        )
        + "</g>"
    )


def _pending(out, col, x, lay) -> None:
    """The AlterPartition request in flight: a dashed orange line from the lane of the
    leader that sent it up to the controller's, at the column's left edge, in every column
    from the request to the answer (or until a Restart or an election drops it)."""
    c = col.controller
    lane = c.request_lane
    y1 = lay.lane_y[lane] + lay.lane_h[lane] * 0.5
    y2 = lay.lane_y[CONTROLLER] + lay.lane_h[CONTROLLER] - 3
    out.append(
        f'<g class="request-pending" data-step="{col.number}"><title>in flight: {_x(c.request)}</title>'
        f'<line x1="{x + 2.5}" y1="{y1}" x2="{x + 2.5}" y2="{y2}" stroke="{ORANGE}" stroke-width="1.6" '
        f'stroke-dasharray="2 2"/></g>'
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


def _event(out, ev, x, lay) -> None:
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
        + _text(
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


def _cycle(out, d, lay) -> float:
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
        x_loop = lay.col_x(d.loop) + lay.col_w / 2
        path = f"M{x_last},{top + 2} L{x_last},{top + 18} L{x_loop},{top + 18} L{x_loop},{top + 3}"
        tx, anchor, ty = (x_last + x_loop) / 2, "middle", top + 28
    out.append(
        f'<g class="cycle-arrow"><title>{_x(label)}</title>'
        f'<path d="{path}" fill="none" stroke="{RED}" stroke-width="1.6" marker-end="url(#arrow-red)"/>'
        + _text(tx, ty, [label], 9, fill=RED, weight="bold", anchor=anchor)
        + "</g>"
    )
    return top + CYCLE_H


def _verdict(out, d, lay, top=None) -> float:
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
    out.append(_text(PAD + 8, y + 15, lines, 10.5, fill=colour, weight="bold"))
    if extra:
        out.append(_text(PAD + 8, y + 15 + len(lines) * 12.6, extra, 9, fill="#5d1a1a"))
    out.append("</g>")
    return y + h


def _legend(out, d, lay, y) -> float:
    y += 16
    x: float = PAD
    parts = ['<g class="legend">']
    epochs = sorted({b.epoch for c in d.columns for cell in c.replicas for b in cell.boxes})
    for e in epochs:
        colour = epoch_colour(e)
        parts.append(
            f'<rect x="{x}" y="{y - 9}" width="22" height="12" fill="{colour}" fill-opacity="0.16" '
            f'stroke="{colour}" rx="2"/>' + _text(x + 11, y, [f"e{e}"], 8.5, family=MONO, anchor="middle")
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
        parts.append(_text(x + 4, y, [text], 8.5, fill=fill or "#555"))
        x += w
    parts.append("</g>")
    out.extend(parts)
    return y + 4
