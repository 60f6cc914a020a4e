"""The results of a grid of configurations (``kmc matrix``): RESULTS.md and results.json.

``kmc matrix`` runs one configuration per row and hands this module plain row dicts;
here they become a versioned JSON document (``results_document``), checked against the
documented schema (``validate``, see docs/results.md), and a Markdown table
(``to_markdown``). Nothing here runs an engine.

A row (schema version 1)::

    {"id": "hw-r2-isr1-clean-flushed",   # also the stem of its trace files
     "spec": null | "specs/x.toml",       # the spec file, for a directory of specs
     "title": str,
     "model": {...},                      # model.config.Config.as_dict()
     "verdicts": {invariant: "holds" | "violated" | "unknown"},
     "expected": {invariant: "holds" | "violated"},   # {} when nothing is expected
     "expected_from": null | "spec" | "docs/model.md",
     "matched": null | bool,              # null when nothing is expected
     "mismatches": [str],
     "distinct_states": int, "states_generated": int, "depth": int, "seconds": float,
     "complete": bool, "stopped": null | str,
     "counterexamples": {invariant: {"length": int, "kind": str, "explanation": str,
                                     "trace": "traces/<id>-<invariant>.json",
                                     "trap_states": int}}}   # trap_states: "possibly" only
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from kmc.checker.contract.protocol import LIVENESS as LIVENESS_KINDS
from kmc.checker.core.result import HOLDS, UNKNOWN, VIOLATED

SCHEMA_VERSION = 1
KIND = "kmc-matrix"

SHORT = {
    "HighWatermarkBelowLogEnd": "HWLE",
    "CommittedNeverLost": "CNL",
    "LogsNeverDiverge": "LND",
    "LeaderEpochMonotonic": "LEM",
    "LeaderCandidateCompleteness": "LCC",
    "AcknowledgedNeverLost": "ANL",
    "UncommittedNeverExposed": "UNE",
    "PartitionRecoverable": "PR",
    "EventuallyLeader": "EL",
    "CommittedEventuallyReplicated": "CER",
}
LIVENESS_NAMES = ("EventuallyLeader", "CommittedEventuallyReplicated")  # the Kafka model's liveness properties

_ROW_FIELDS: dict[str, type | tuple[type, ...]] = {
    "id": str,
    "spec": (str, type(None)),
    "title": str,
    "model": dict,
    "verdicts": dict,
    "expected": dict,
    "expected_from": (str, type(None)),
    "matched": (bool, type(None)),
    "mismatches": list,
    "distinct_states": int,
    "states_generated": int,
    "depth": int,
    "seconds": (int, float),
    "complete": bool,
    "stopped": (str, type(None)),
    "counterexamples": dict,
}
_DOC_FIELDS: dict[str, type | tuple[type, ...]] = {
    "schema_version": int,
    "kind": str,
    "kmc_version": str,
    "command": str,
    "title": str,
    "source": str,
    "spec_dir": (str, type(None)),
    "invariants": list,
    "constants": dict,
    "max_states": (int, type(None)),
    "total_seconds": (int, float),
    "rows": list,
}


def results_document(
    *,
    rows: Iterable[dict[str, Any]],
    command: str,
    title: str,
    source: str,
    invariants: Iterable[str],
    constants: Mapping[Any, Mapping[str, Any]],
    spec_dir: str | None = None,
    max_states: int | None = None,
    total_seconds: float = 0.0,
    note: str = "",
) -> dict[str, Any]:
    """The whole results.json document (schema version ``SCHEMA_VERSION``).

    Args:
        rows: the row dicts, in table order.
        command: the command line that produced them (shown in RESULTS.md).
        title: a one-line title.
        source: ``"grid"``, ``"versions"`` or ``"specs"``.
        invariants: the invariant names every row was checked against, in order.
        constants: for a grid, ``{replica count: {"max_messages", "max_crashes",
            "max_leader_epoch"}}`` (keys are strings in JSON); ``{}`` for specs.
        spec_dir: the directory of spec files, for ``source == "specs"``.
        max_states: the per-row state limit.
        total_seconds: the wall time of the whole matrix.
        note: a paragraph shown under the title (why the constants are what they are).
    """
    from kmc.checker import __version__

    return {
        "schema_version": SCHEMA_VERSION,
        "kind": KIND,
        "kmc_version": __version__,
        "command": command,
        "title": title,
        "note": note,
        "source": source,
        "spec_dir": spec_dir,
        "invariants": list(invariants),
        "constants": {str(k): dict(v) for k, v in constants.items()},
        "max_states": max_states,
        "total_seconds": round(total_seconds, 3),
        "rows": list(rows),
    }


def validate(doc: Any) -> list[str]:
    """The ways ``doc`` departs from the results.json schema (version 1); ``[]`` if none."""
    errors = []
    if not isinstance(doc, dict):
        return ["the document is not a JSON object"]
    for key, kind in _DOC_FIELDS.items():
        if key not in doc:
            errors.append(f"missing key {key!r}")
        elif not isinstance(doc[key], kind) or isinstance(doc[key], bool) and kind is int:
            errors.append(f"{key!r} has the wrong type")
    if errors:
        return errors
    if doc["schema_version"] != SCHEMA_VERSION:
        errors.append(f"schema_version is {doc['schema_version']}, expected {SCHEMA_VERSION}")
    if doc["kind"] != KIND:
        errors.append(f"kind is {doc['kind']!r}, expected {KIND!r}")
    if doc["source"] not in ("grid", "versions", "specs"):
        errors.append(f"source is {doc['source']!r}")
    ids = set()
    for i, row in enumerate(doc["rows"]):
        where = f"rows[{i}]"
        if not isinstance(row, dict):
            errors.append(f"{where} is not an object")
            continue
        for key, kind in _ROW_FIELDS.items():
            if key not in row:
                errors.append(f"{where}: missing key {key!r}")
            elif not isinstance(row[key], kind) or isinstance(row[key], bool) and kind is int:
                errors.append(f"{where}: {key!r} has the wrong type")
        if any(e.startswith(where + ":") for e in errors):
            continue
        if row["id"] in ids:
            errors.append(f"{where}: duplicate id {row['id']!r}")
        ids.add(row["id"])
        for name, verdict in row["verdicts"].items():
            if verdict not in (HOLDS, VIOLATED, UNKNOWN):
                errors.append(f"{where}: verdict of {name} is {verdict!r}")
            if (verdict == VIOLATED) != (name in row["counterexamples"]):
                errors.append(
                    f"{where}: {name} is {verdict} but its counterexample is "
                    f"{'present' if name in row['counterexamples'] else 'missing'}"
                )
        for name, verdict in row["expected"].items():
            if verdict not in (HOLDS, VIOLATED):
                errors.append(f"{where}: expected verdict of {name} is {verdict!r}")
        if (row["matched"] is None) != (not row["expected"]):
            errors.append(f"{where}: 'matched' must be null exactly when nothing is expected")
        for name, cx in row["counterexamples"].items():
            if (
                not isinstance(cx, dict)
                or not isinstance(cx.get("length"), int)
                or not isinstance(cx.get("trace"), str)
                or not cx["trace"].startswith("traces/")
            ):
                errors.append(
                    f"{where}: counterexample of {name} needs an int 'length' and a 'trace' path under traces/"
                )
    return errors


# -- Markdown -----------------------------------------------------------------------------


def _seconds(s: float) -> str:
    if s < 60:
        return f"{s:.1f} s"
    return f"{int(s // 60)} min {s % 60:.0f} s"


def _cell(row: dict[str, Any], name: str) -> str:
    verdict: str | None = row["verdicts"].get(name)
    if verdict is None:
        return "–"
    if verdict == VIOLATED:
        cx = row["counterexamples"][name]
        diagram = cx["trace"][: -len(".json")] + ".html" if cx["trace"].endswith(".json") else None
        link = f" ([diagram]({diagram}))" if diagram else ""
        return f"**violated** [{cx['length']} states]({cx['trace']}){link}"
    return verdict


def _expected_cell(row: dict[str, Any]) -> str:
    if row["matched"] is None:
        return ""
    if row["matched"]:
        src = " (docs/model.md)" if row["expected_from"] == "docs/model.md" else ""
        return f"as expected{src}"
    return "**unexpected**: " + "; ".join(row["mismatches"])


def _flag(value: object) -> str:
    return "on" if value else "off"


# The model's fields a row shows in columns of their own (or in the bounds' first words).
_OWN_COLUMNS = (
    "replicas",
    "truncation",
    "min_insync_replicas",
    "unclean_leader_election",
    "unflushed_loss",
    "max_messages",
    "max_crashes",
    "max_leader_epoch",
)
_BOUND_LABELS = {
    "preferred_election": "preferred",
    "hw_requires_min_isr": "HW gate",
    "eligible_leader_replicas": "ELR",
    "last_known_leader": "last known leader",
    "truncate_on_fetch": "fetch path",
}


def _bounds(m: dict[str, Any]) -> str:
    """The bounds and every other option a row's model sets (``ELR, last known leader``,
    ``acks all``): any field the other columns do not show and that is on, so that two
    versions that differ only in an option (KIP-966's ELR, 4.1's ELR + last known leader)
    never read the same, and an option added later shows without being named here."""
    text = f"{m['max_messages']} msg, {m['max_crashes']} crash, ep ≤ {m['max_leader_epoch']}"
    for key, value in m.items():
        if key in _OWN_COLUMNS or value in (False, None, []) or (key == "initial_leader" and value == "first"):
            continue
        label = _BOUND_LABELS.get(key, key.replace("_", " "))
        if isinstance(value, list):  # fetch_bugs: the ids
            value = " ".join(map(str, value))
        text += f", {label}" if value is True else f", {label} {value}"
    return text


def _constants_text(constants: dict[str, Any]) -> str:
    parts = []
    for r, c in constants.items():
        crashes = c["max_crashes"]
        parts.append(
            f"{r} replicas: {c['max_messages']} messages, {crashes} "
            f"crash{'es' if crashes != 1 else ''}, leader epochs ≤ {c['max_leader_epoch']}"
        )
    return "; ".join(parts)


def _version_cell(row: dict[str, Any]) -> str:
    """``✓`` when every checked property holds, else the violated ones with their
    shortest counterexample's length (in states)."""
    bad = [n for n, v in row["verdicts"].items() if v != HOLDS]
    if not bad:
        return "✓ holds"
    parts = []
    for n in bad:
        cx = row["counterexamples"].get(n)
        if cx and cx.get("trap_states") is not None and row["distinct_states"]:
            share = 100 * cx["trap_states"] / row["distinct_states"]
            parts.append(f"{SHORT.get(n, n)} ({cx['length']}; {share:.1f}% traps)")
            continue
        if cx and cx.get("kind") in LIVENESS_KINDS and "max_leader_epoch" in (cx.get("explanation") or ""):
            parts.append(f"{SHORT.get(n, n)} ({cx['length']}, at the bound)")
            continue
        parts.append(f"{SHORT.get(n, n)} ({cx['length']})" if cx else f"{SHORT.get(n, n)} {row['verdicts'][n]}")
    return "✗ " + ", ".join(parts)


def versions_table(doc: dict[str, Any]) -> str:
    """The "Kafka through the versions" table of a ``kmc matrix --versions`` document:
    one line per configuration, one column per version, each cell the violated properties
    and their shortest counterexamples' lengths (``✓ holds`` when none is)."""
    from kmc.model.versions import VERSION_CONFIGS, VERSIONS

    cells = {}
    for row in doc["rows"]:
        ck, _, vk = row["id"].partition("-")
        cells[(ck, vk)] = row
    configs = [c for c in VERSION_CONFIGS if any(k[0] == c for k in cells)]
    versions = [v for v in VERSIONS if any(k[1] == v for k in cells)]
    lines = [
        "| configuration | " + " | ".join(VERSIONS[v][0] for v in versions) + " |",
        "|---|" + "---|" * len(versions),
    ]
    for c in configs:
        row = [VERSION_CONFIGS[c][0]]
        row += [_version_cell(cells[(c, v)]) if (c, v) in cells else "" for v in versions]
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


def to_markdown(doc: dict[str, Any]) -> str:
    """RESULTS.md for a results document: a header saying how it was made, then one
    table row per configuration."""
    inv = doc["invariants"]
    # a table of liveness properties only (``kmc matrix --versions --liveness``): its
    # counterexamples are lassos, each the one kmc prints (not a shortest one)
    lasso = bool(inv) and all(n in LIVENESS_NAMES for n in inv)
    lines = _heading(doc, lasso) + _how_to_read(doc, inv, lasso) + _summary(doc["rows"]) + _table(doc["rows"], inv)
    lines.append("")
    return "\n".join(lines)


def _heading(doc: dict[str, Any], lasso: bool) -> list[str]:
    """The title, how the page was made, its constants and note, and (the versions grid) the
    versions table."""
    lines = [f"# {doc['title']}", ""]
    lines.append(
        f"Generated by `{doc['command']}` (kmc {doc['kmc_version']}) in "
        f"{_seconds(doc['total_seconds'])}. Do not edit by hand: see docs/results.md."
    )
    lines.append("")
    if doc["constants"]:
        lines.append(f"Constants: {_constants_text(doc['constants'])}.")
        lines.append("")
    if doc.get("note"):
        lines.append(doc["note"])
        lines.append("")
    if doc["source"] == "versions":
        lines += [
            "## Kafka through the versions" + (", under fairness" if lasso else ""),
            "",
            "A cell lists the violated properties, each with the length of its "
            + ("lasso" if lasso else "shortest counterexample")
            + " in states (the initial state included).",
            "",
            versions_table(doc),
            "",
            "## Every row",
            "",
        ]
    return lines


def _how_to_read(doc: dict[str, Any], inv: list[str], lasso: bool) -> list[str]:
    """How the rows were explored, what a cell links to, and the properties' short names."""
    every = "all four" if len(inv) == 4 else f"all {len(inv)}" if len(inv) > 1 else "the"
    lines = [
        f"Every configuration is explored completely, breadth-first, checking {every} "
        + ("properties" if lasso else "invariants")
        + " and keeping going after a violation, so each "
        + ("property" if lasso else "invariant")
        + " gets a verdict. A violated cell links to "
        + (
            "its lasso (the path, then the cycle back to one of its states or the last state kept for ever; "
            if lasso
            else "the shortest counterexample ("
        )
        + "its length in states, the initial state included) and to its diagram (an HTML page); "
        + (
            "`kmc replay <trace file>` shows it. "
            if lasso
            else "`kmc replay <trace file>` shows it, `--format tla` as TLC would. "
        )
        + "Bounds: messages produced, crashes, highest leader epoch."
    ]
    lines.append("")
    kind = "Properties" if lasso else "Invariants"
    lines.append(f"{kind}: " + ", ".join(f"{SHORT.get(n, n)} = `{n}`" for n in inv) + ".")
    limit = doc.get("max_states")
    if limit:
        lines.append(f"A run stops at {limit:,} distinct states; its undecided {kind.lower()} then read *unknown*.")
    lines.append("")
    return lines


def _summary(rows: list[dict[str, Any]]) -> list[str]:
    """The rows, states and violated verdicts in all, and how many expectations match."""
    violated = sum(1 for r in rows for v in r["verdicts"].values() if v == VIOLATED)
    expected = [r for r in rows if r["matched"] is not None]
    unexpected = [r for r in expected if not r["matched"]]
    return [
        f"{len(rows)} configurations, {sum(r['distinct_states'] for r in rows):,} "
        f"distinct states in all, {violated} violated verdicts; "
        f"{len(expected) - len(unexpected)} of {len(expected)} rows with an expected "
        "verdict match it.",
        "",
    ]


def _table(rows: list[dict[str, Any]], inv: list[str]) -> list[str]:
    """The table: one row per configuration."""
    head = ["configuration", "rule", "replicas", "bounds", "min ISR", "unclean", "unflushed"]
    head += [SHORT.get(n, n) for n in inv]
    head += ["states", "depth", "time", "expected"]
    lines = ["| " + " | ".join(head) + " |"]
    align = ["---"] * 7 + [":---:"] * len(inv) + ["---:", "---:", "---:", "---"]
    lines.append("|" + "|".join(align) + "|")
    for row in rows:
        m = row["model"]
        cells = [
            f"`{row['id']}`",
            m["truncation"],
            str(len(m["replicas"])),
            _bounds(m),
            str(m["min_insync_replicas"]),
            _flag(m["unclean_leader_election"]),
            _flag(m["unflushed_loss"]),
        ]
        cells += [_cell(row, n) for n in inv]
        cells += [f"{row['distinct_states']:,}", str(row["depth"]), _seconds(row["seconds"]), _expected_cell(row)]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


__all__ = [
    "KIND",
    "SCHEMA_VERSION",
    "SHORT",
    "results_document",
    "to_markdown",
    "validate",
    "versions_table",
]
