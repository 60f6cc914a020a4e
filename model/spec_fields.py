"""The checks of a spec's values: each takes the file's path, the key (as a message names it)
and the value, and returns the value or raises a one-line ``SpecError`` naming the file and
the key. The spec reader (``model.spec``) and the application's own tables use them."""

from __future__ import annotations

import difflib
import re
from collections.abc import Collection, Mapping
from typing import Any

from kmc.checker.base.errors import SpecError

BARE_KEY = re.compile(r"^[A-Za-z0-9_-]{1,40}$")


def clip(text: str, width: int) -> str:
    """``text``, cut to ``width`` characters with an ellipsis when longer."""
    return text if len(text) <= width else text[: width - 3] + "..."


def show(value: object) -> str:
    """A value from the file, for a message: its ``repr``, clipped."""
    return clip(repr(value), 40)


def key_name(prefix: str, key: str) -> str:
    """A key from the file, for a message: as written when short and bare, else quoted
    (keys may hold newlines, and a message is one line)."""
    return prefix + (key if BARE_KEY.match(key) else show(key))


def check_keys(path: str, prefix: str, table: Mapping[str, Any], allowed: Collection[str]) -> None:
    """Refuse a key of ``table`` (``prefix``: its name and a dot) not in ``allowed``."""
    for key in table:
        if key not in allowed:
            names = ", ".join(allowed)
            if len(names) > 200:  # a long table: the keys nearest to the typo, else the table's in the README
                near = difflib.get_close_matches(str(key), list(allowed), n=3)
                hint = f"did you mean {' or '.join(near)}?" if near else "the README's table lists the keys"
                raise SpecError(path, key_name(prefix, key), f"unknown key ({hint})")
            raise SpecError(path, key_name(prefix, key), f"unknown key (allowed: {names})")


def check_table(path: str, key: str, value: object, required: bool = False) -> dict[str, Any]:
    """``value``, refused unless it is a table (or, when ``required``, missing)."""
    if value is None and required:
        raise SpecError(path, f"[{key}]", "missing table")
    if not isinstance(value, dict):
        raise SpecError(path, key, f"must be a table, got {show(value)}")
    return value


def check_text(path: str, key: str, value: object) -> str:
    """``value``, refused unless it is a string."""
    if not isinstance(value, str):
        raise SpecError(path, key, f"must be a string, got {show(value)}")
    return value


def check_bool(path: str, key: str, value: object) -> bool:
    """``value``, refused unless it is true or false."""
    if not isinstance(value, bool):
        raise SpecError(path, key, f"must be true or false, got {show(value)}")
    return value


def check_range(path: str, key: str, value: object, lo: int, hi: int) -> int:
    """``value``, refused unless an integer in ``[lo, hi]``."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise SpecError(path, key, f"must be an integer, got {show(value)}")
    if not lo <= value <= hi:
        raise SpecError(path, key, f"must be between {lo} and {hi}, got {show(value)}")
    return value


def check_int(path: str, key: str, value: object, lo: int, hi: int) -> int | None:
    """``value`` (``None`` when absent), refused unless an integer in ``[lo, hi]``."""
    return None if value is None else check_range(path, key, value, lo, hi)


def check_size(path: str, key: str, value: object, lo: int, hi: int) -> int | None:
    """A size in bytes (``None`` when absent): an integer, or a string such as "8G" or
    "512M", in ``[lo, hi]``."""
    raw = value
    if isinstance(value, str):
        from kmc.checker.base.units import parse_size

        try:
            value = parse_size(value)
        except ValueError:
            raise SpecError(path, key, f'must be a size such as "8G" or "512M", got {show(value)}') from None
    if isinstance(value, int) and not isinstance(value, bool):
        from kmc.checker.base.units import check_ceiling

        why = check_ceiling(value)
        if why:
            raise SpecError(path, key, f"{why}, got {show(raw)}")
    return check_int(path, key, value, lo, hi)
