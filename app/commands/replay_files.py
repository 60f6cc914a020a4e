"""A saved result document as ``kmc replay``, ``kmc explore`` and ``kmc why-not`` read it:
the JSON object of a file, bounded and checked, and the counterexample entries it holds."""

from __future__ import annotations

import json
from typing import Any

from kmc.checker.base.errors import KmcError, UsageError
from kmc.checker.base.text import safe_text

MAX_BYTES = 256 << 20


class ReplayError(KmcError):
    """A saved trace cannot be read or does not replay."""


def load_document(path: str) -> dict[str, Any]:
    """The JSON object in ``path``.

    Raises:
        ReplayError: the file is missing, unreadable, too large, not JSON, or not an object.
    """
    from ..outputs import check_regular_input

    try:
        check_regular_input(path, path)  # a named pipe would block the read
    except UsageError as e:
        raise ReplayError(str(e)) from None
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_BYTES + 1)
    except FileNotFoundError:
        raise ReplayError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise ReplayError(f"{path}: is a directory, not a result file") from None
    except OSError as e:
        raise ReplayError(f"{path}: cannot read the file ({e.strerror or e})") from None
    if len(data) > MAX_BYTES:
        raise ReplayError(f"{path}: larger than {MAX_BYTES >> 20} MiB")
    try:
        doc = json.loads(data.decode("utf-8"))
    except UnicodeDecodeError:
        raise ReplayError(f"{path}: not UTF-8 text") from None
    except json.JSONDecodeError as e:
        raise ReplayError(f"{path}: not JSON ({e.msg} at line {e.lineno}, column {e.colno})") from None
    except RecursionError:
        raise ReplayError(f"{path}: not JSON (nested too deeply)") from None
    if not isinstance(doc, dict):
        raise ReplayError(f"{path}: not a kmc result (a JSON object was expected)")
    return doc


def violations_of(path: str, doc: dict[str, Any]) -> list[dict[str, Any]]:
    """The ``{"property", "kind", "explanation", "trace"}`` entries a document holds."""
    version = doc.get("schema_version")
    if type(version) is not int or version != 1:  # (True == 1 in Python)
        raise ReplayError(f"{path}: schema_version is {version!r}; this kmc reads version 1")
    if doc.get("kind") == "kmc-matrix":
        raise ReplayError(f"{path}: a matrix summary; replay one of the files in its traces/ directory")
    found: list[dict[str, Any]]
    if isinstance(doc.get("violations"), list):  # kmc check --json, matrix traces
        found = doc["violations"]
    elif "violation" in doc:  # kmc simulate --json
        found = [] if doc["violation"] is None else [doc["violation"]]
    elif "trace" in doc:  # kmc replay --format json
        found = [doc]
    else:
        raise ReplayError(f"{path}: holds no 'violations', 'violation' or 'trace': not a kmc result")
    for v in found:
        if not isinstance(v, dict) or not isinstance(v.get("trace"), dict) or not isinstance(v.get("property"), str):
            raise ReplayError(f"{path}: a violation entry has no 'property' or 'trace'")
    return found


def headline(found: list[dict[str, Any]]) -> dict[str, Any]:
    """Of the violation entries ``found``, the one ``kmc check`` heads its summary with:
    the shortest counterexample, the first in the order of its choices among equals."""

    def key(entry: dict[str, Any]) -> tuple[int, int, list[int]]:
        choices = entry.get("trace", {}).get("choices") if isinstance(entry.get("trace"), dict) else None
        if isinstance(choices, list) and all(type(c) is int for c in choices):
            return (0, len(choices), choices)
        return (1, 0, [])  # a malformed trace: after every other (its replay will say why)

    return min(found, key=key)


def select_entry(path: str, doc: dict[str, Any], invariant: str | None = None) -> dict[str, Any]:
    """The violation entry of ``doc`` to replay: the one ``kmc check``'s summary names
    first (``headline``), or the one of ``invariant``."""
    found = violations_of(path, doc)
    if not found:
        raise ReplayError(f"{path}: holds no counterexample (every checked invariant held)")
    if invariant is None:
        return headline(found)
    matches = [v for v in found if v["property"] == invariant]
    if not matches:
        names = ", ".join(safe_text(v["property"]) for v in found)
        raise ReplayError(
            f"{path}: --invariant: no counterexample of {invariant!r} (it has counterexamples of: {names})"
        )
    return matches[0]
