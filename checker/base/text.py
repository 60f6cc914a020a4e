"""Untrusted text (spec titles, file names, strings read from result files), made safe to
print on a terminal: every control character is shown as an escape, never sent raw.

A raw ``ESC [`` sequence from a file would move the cursor, recolour, retitle the window
or hide what follows; a bidirectional override would reorder it. Show such text with
``safe_text`` and as a rich ``Text`` (or ``markup=False``), never as markup.
"""

from __future__ import annotations

import os
import re

# C0 controls (newline and tab included: the text is shown on one line), DEL, C1
# controls, the Unicode bidirectional overrides and isolates, and lone surrogates (no
# encoding writes them: the terminal's write would fail).
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


def _escape(m: re.Match[str]) -> str:
    c = ord(m.group())
    return f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}"


def safe_text(text: object) -> str:
    """``text`` with every control character replaced by its escape (``\\x1b``)."""
    return _UNSAFE.sub(_escape, str(text))


# What a picture (HTML, SVG, Mermaid) may not hold as is, besides the controls and
# bidirectional marks above: lone surrogates (no encoding writes them; the write would
# fail), and the noncharacters U+FFFE and U+FFFF (not legal in XML: a browser refuses the
# whole SVG) with the other noncharacters of every plane and U+FDD0–U+FDEF.
_UNSAFE_IN_PICTURES = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff\ufdd0-\ufdef"
    "\ufffe\uffff\U0001fffe\U0001ffff\U0002fffe\U0002ffff\U0003fffe\U0003ffff\U0004fffe\U0004ffff"
    "\U0005fffe\U0005ffff\U0006fffe\U0006ffff\U0007fffe\U0007ffff\U0008fffe\U0008ffff"
    "\U0009fffe\U0009ffff\U000afffe\U000affff\U000bfffe\U000bffff\U000cfffe\U000cffff"
    "\U000dfffe\U000dffff\U000efffe\U000effff\U000ffffe\U000fffff\U0010fffe\U0010ffff]"
)


def _escape_wide(m: re.Match[str]) -> str:
    c = ord(m.group())
    if c < 0x100:
        return f"\\x{c:02x}"
    return f"\\u{c:04x}" if c < 0x10000 else f"\\U{c:08x}"


def picture_text(text: object) -> str:
    """``text`` as every picture writer (``render.html``, ``render.svg``,
    ``render.mermaid``) shows it: what ``safe_text`` escapes, and what cannot be
    encoded or is not legal in XML, replaced by its visible escape (``\\ud800``, ``\\ufffe``).
    Line breaks and tabs stay (each format lays them out in its own way)."""
    return _UNSAFE_IN_PICTURES.sub(_escape_wide, str(text))


def xml_text(text: object) -> str:
    """``text`` inside an HTML or SVG element or attribute: ``picture_text``, then ``&``,
    ``<``, ``>`` and both quotes as entities (every HTML and SVG writer's one escape)."""
    import html

    return html.escape(picture_text(text), quote=True)


def display_path(path: str | os.PathLike[str]) -> str:
    """A path as a page meant to be shared shows it: relative to the current directory
    when it lies under it, else as given."""
    text = str(path)
    if os.path.isabs(text):
        try:
            rel = os.path.relpath(text)
        except ValueError:
            return text
        if not rel.startswith(os.pardir):
            return rel
    return text
