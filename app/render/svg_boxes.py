"""The boxes of the swimlane diagram (``render.svg``): the controller's cell, a replica's cell
(its role, its log's records, its high watermark and what it has in flight) and the
pending requests under a column."""

from __future__ import annotations

from kmc.checker.base.text import xml_text as _x

from .diagram import CONTROLLER, Box, Column, ControllerCell, Diagram, ReplicaCell, epoch_colour
from .svg_base import (
    BLUE,
    BOX_GAP,
    BOX_H,
    COL_MAX,
    COL_MIN,
    GREY,
    LABEL_W,
    LINE,
    MAGENTA,
    MONO,
    ORANGE,
    PAD,
    PURPLE,
    RED,
    WIDTH,
    slots,
    svg_text,
    wrap,
)


class Layout:
    """Where everything goes: column width, header height, every lane's top and height."""

    def __init__(self, d: Diagram) -> None:
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
        roles = max((len(role_lines(cell, self.col_w)) for c in d.columns for cell in c.replicas), default=1)
        self.role_extra = (roles - 1) * LINE
        replica_h = 18 + self.role_extra + self.stack_h + 14 + flight * 9.6 + 8
        self.commit_lines = max((len(history_lines(c, inner)) for c in d.columns), default=0)
        self.controller_lines = max(
            len(controller_lines(c.controller, inner)) + len(request_lines(c.controller, inner)) for c in d.columns
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

    def col_x(self, i: int) -> float:
        """The left edge of column ``i``."""
        return PAD + LABEL_W + i * self.col_w


def controller(out: list[str], col: Column, x: float, y: float, lay: Layout) -> None:
    """The controller's cell of column ``col``."""
    c = col.controller
    fill = "#fff3c4" if c.changed else "none"
    out.append(
        f'<g class="cell controller" data-step="{col.number}"><rect x="{x + 1}" y="{y + 1}" '
        f'width="{lay.col_w - 2}" height="{lay.lane_h[CONTROLLER] - 2}" fill="{fill}" rx="3"/>'
    )
    inner = lay.col_w - 8
    lines = controller_lines(c, inner)
    out.append(svg_text(x + 4, y + 16, lines, 9, fill=PURPLE))
    request = request_lines(c, inner)
    if c.request is not None:  # the AlterPartition request in flight, under the ISR
        out.append(
            svg_text(
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
            svg_text(
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
            svg_text(
                x + 4,
                y + 18 + len(lines) * LINE + below * 10.2,
                acked_lines(col, lay.col_w - 8),
                8.5,
                fill=BLUE,
                weight="bold",
                extra=' class="acked"',
            )
        )
    out.append("</g>")


def controller_lines(c: ControllerCell, inner: float) -> list[str]:
    """The controller's leader, epoch, ISR (and ELR, and with the operator's changes its min ISR
    and the leader's broker's) in a column ``inner`` pixels wide."""
    lines = [f"leader {c.leader} · e{c.epoch}", f"ISR {c.isr}"] + ([f"ELR {c.elr}"] if c.elr is not None else [])
    if c.min_isr is not None:
        lines.append(f"min ISR {c.min_isr}")
    if c.leader_min_isr is not None:
        lines.append(f"leader's min ISR {c.leader_min_isr}")
    return [part for line in lines for part in wrap(line, inner, 9)]


def request_lines(c: ControllerCell, inner: float) -> list[str]:
    """The AlterPartition request in flight (one empty line held for it in every column
    of a configuration that sends requests)."""
    if c.request is not None:
        return wrap(c.request_short, inner, 8.5, bold=True)
    return [""] if c.requests else []


def acked_lines(col: Column, inner: float) -> list[str]:
    return wrap("producer told: " + ", ".join(col.acked), inner, 8.5) if col.acked else []


def history_lines(col: Column, inner: float) -> list[str]:
    """The controller lane's lines of what a step committed and acknowledged."""
    commits = wrap("commits " + ", ".join(col.committed), inner, 8.5) if col.committed else []
    return commits + acked_lines(col, inner)


def _role_text(cell: ReplicaCell) -> tuple[str, str, str]:
    if not cell.alive:
        return ("DOWN (lossy)" if cell.lossy else "DOWN"), RED, "bold"
    if cell.role == "leader":
        return f"leader e{cell.epoch}", "#1b7d1b", "bold"
    if cell.role.startswith("follower of "):
        return f"follows {cell.role[12:]} e{cell.epoch}", "#333", "normal"
    if cell.role == "—":
        return f"no leader e{cell.epoch}", "#777", "normal"
    return f"{cell.role} e{cell.epoch}", ORANGE, "bold"


def role_lines(cell: ReplicaCell, col_w: float) -> list[str]:
    """A replica's role in its column (room kept at the right for a crash's mark); a replica in
    controlled shutdown says so."""
    text, _colour, weight = _role_text(cell)
    if cell.alive and cell.shutting:
        text += ", shutting down"
    return wrap(text, col_w - 22, 9, bold=weight == "bold")


def replica(out: list[str], cell: ReplicaCell, x: float, y: float, lay: Layout, data: str) -> None:
    """A replica's cell: its role, its log's records, its HW, LEO and what it has in flight."""
    h = lay.lane_h[1]
    fill = "#e4e4e4" if not cell.alive else "#fff3c4" if cell.changed else "none"
    classes = "cell replica" + ("" if cell.alive else " down") + (" lossy" if cell.lossy else "")
    out.append(
        f'<g class="{classes}" {data}><rect x="{x + 1}" y="{y + 1}" width="{lay.col_w - 2}" height="{h - 2}" '
        f'fill="{fill}" rx="3"/>'
    )
    out.append(f'<g opacity="{1 if cell.alive else 0.55}">')
    _role, colour, weight = _role_text(cell)
    out.append(svg_text(x + 4, y + 13, role_lines(cell, lay.col_w), 9, fill=colour, weight=weight))
    box_w = lay.col_w - 30
    top = y + 18 + lay.role_extra
    for slot, b in zip(slots(cell), cell.boxes):
        out.append(_box(b, x + 4, top + slot * (BOX_H + BOX_GAP), box_w))
    hw_y = top + cell.hw * (BOX_H + BOX_GAP) - BOX_GAP / 2
    out.append(
        f'<line class="hw" x1="{x + 2}" y1="{hw_y}" x2="{x + box_w + 7}" y2="{hw_y}" stroke="#111" '
        f'stroke-width="2"/>' + svg_text(x + box_w + 8, hw_y + 3, ["HW"], 6.5, weight="bold")
    )
    info_y = top + lay.stack_h + 10
    out.append(svg_text(x + 4, info_y, [f"hw {cell.hw} · leo {cell.leo}"], 8.5, fill="#333"))
    if cell.inflight:
        flight = wrap(cell.inflight, lay.col_w - 8, 8)
        out.append(svg_text(x + 4, info_y + 11, flight, 8, fill=BLUE, extra=' font-style="italic"'))
    out.append("</g>")
    if cell.crashed:
        cx, cy, k = x + lay.col_w - 13, y + 11, 6
        out.append(
            f'<g class="crash{" lossy-crash" if cell.dropped else ""}">'
            f'<path d="M{cx - k},{cy - k} L{cx + k},{cy + k} M{cx + k},{cy - k} '
            f'L{cx - k},{cy + k}" stroke="{RED}" stroke-width="3"/>'
        )
        if cell.dropped:
            out.append(svg_text(x + 4, y + h - 5, [f"lossy: {cell.dropped} lost"], 8.5, fill=RED, weight="bold"))
        out.append("</g>")
    elif cell.truncated_to is not None:  # the fetch path: on the leader's diverging answer
        out.append(
            svg_text(
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
            svg_text(x + 4, y + h - 5, ["clean stop"], 8.5, fill="#1b7d1b", weight="bold", extra=' class="clean-stop"')
        )
    elif cell.failed_dir:  # its log directory failed: the log is gone, with no crash (up again under KAFKA-16234)
        out.append(
            svg_text(
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
            svg_text(
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


def _box(b: Box, x: float, y: float, w: float) -> str:
    colour = epoch_colour(b.epoch)
    if b.ghost:
        stroke = RED if b.lost else GREY
        cls = "record ghost" + (" lost" if b.lost else "") + (" dropped" if b.dropped else "")
        return (
            f'<g class="{cls}" data-epoch="{b.epoch}"><rect x="{x}" y="{y}" width="{w}" height="{BOX_H}" '
            f'fill="#fff" stroke="{stroke}" stroke-width="1.6" stroke-dasharray="3 2" rx="2"/>'
            + svg_text(
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
        + svg_text(
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


def pending(out: list[str], col: Column, x: float, lay: Layout) -> None:
    """The AlterPartition request in flight: a dashed orange line from the lane of the
    leader that sent it up to the controller's, at the column's left edge, in every column
    from the request to the answer (or until a Restart or an election drops it)."""
    c = col.controller
    lane = c.request_lane
    assert lane is not None  # drawn only for a column with a request in flight
    y1 = lay.lane_y[lane] + lay.lane_h[lane] * 0.5
    y2 = lay.lane_y[CONTROLLER] + lay.lane_h[CONTROLLER] - 3
    out.append(
        f'<g class="request-pending" data-step="{col.number}"><title>in flight: {_x(c.request)}</title>'
        f'<line x1="{x + 2.5}" y1="{y1}" x2="{x + 2.5}" y2="{y2}" stroke="{ORANGE}" stroke-width="1.6" '
        f'stroke-dasharray="2 2"/></g>'
    )
