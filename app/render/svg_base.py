"""The drawing's vocabulary for the swimlane diagram (``render.svg``): its sizes and colours,
text in lines that fit a width, a text element, and the slot of each record in a log's
stack."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kmc.checker.base.text import xml_text

if TYPE_CHECKING:  # for the annotations only
    from .diagram import ReplicaCell

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


def wrap(text: object, width: float, size: float, bold: bool = False) -> list[str]:
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


def svg_text(
    x: float,
    y: float,
    lines: list[str],
    size: float,
    *,
    fill: str = "#222",
    weight: str = "normal",
    family: str = SANS,
    anchor: str = "start",
    extra: str = "",
) -> str:
    """A ``<text>`` element of ``lines``, one ``<tspan>`` a line, at ``(x, y)``."""
    spans = "".join(
        f'<tspan x="{x}" dy="{0 if i == 0 else round(size * 1.2, 1)}">{_x(t)}</tspan>' for i, t in enumerate(lines)
    )
    return (
        f'<text x="{x}" y="{y}" font-family="{family}" font-size="{size}" fill="{fill}" '
        f'font-weight="{weight}" text-anchor="{anchor}"{extra}>{spans}</text>'
    )


def slots(cell: ReplicaCell) -> list[int]:
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
