"""Untrusted text (spec titles, file names, strings read from result files), made safe to
print on a terminal: every control character is shown as an escape, never sent raw.

A raw ``ESC [`` sequence from a file would move the cursor, recolour, retitle the window
or hide what follows; a bidirectional override would reorder it. Show such text with
``safe_text`` and as a rich ``Text`` (or ``markup=False``), never as markup.
"""

from __future__ import annotations

import re

# C0 controls (newline and tab included: the text is shown on one line), DEL, C1
# controls, and the Unicode bidirectional overrides and isolates.
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def _escape(m) -> str:
    c = ord(m.group())
    return f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}"


def safe_text(text) -> str:
    """``text`` with every control character replaced by its escape (``\\x1b``)."""
    return _UNSAFE.sub(_escape, str(text))
