"""The durability × availability atlas (``kmc matrix --atlas``): ATLAS.md and atlas.json, the
page that answers "which Kafka setting is safe, and what does it cost in availability?".

Rows are settings (replicas, min ISR, flushed or lossy crashes, acks all or 1); columns are
the Kafka versions of ``kmc matrix --versions`` (read from its grid) and two with unclean
election. Each cell gives both halves of the trade-off: are acknowledged and committed
records kept (``AcknowledgedNeverLost``, ``CommittedNeverLost``), and can the partition
always get a leader again (``PartitionRecoverable``); every other safety property the
column's options check by default (``invariants.default_properties``: LogsNeverDiverge,
LeaderCandidateCompleteness, UncommittedNeverExposed with the fetch path, ...) counts in
the cell's durability too, and a cell names each one that fails. The page opens with a
conclusion written from the cells. Nothing here runs an engine: the command
(``app/commands/atlas.py``) hands this module plain cell dicts.

A cell::

    {"row": "r2-isr1-c2", "policy": "kip966", "distinct_states": int, "seconds": float,
     "complete": bool,
     "committed": {"verdict": "holds" | "violated" | "unknown", "length": int | null,
                   "trace": "traces/atlas-....json" (when violated)},
     "acknowledged": {...as committed...},
     "availability": {"verdict": ..., "length": int | null, "trap_states": int | null,
                      "trap_share": float | null, "trace": ... (when violated)},
     "safety": {"LogsNeverDiverge": {...as committed...}, ...},  # every other safety
                                       # property the cell checked, in the order checked
     "expected": {"committed": ..., "availability": ...},   # where known, else {}
     "matched": bool | null}
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # for the annotations only: imported on first use
    from kmc.checker.contract.protocol import Property
    from kmc.checker.core.result import CheckResult
    from kmc.model.config import Config

SCHEMA_VERSION = 1
KIND = "kmc-atlas"
MARKER = "<!-- kmc atlas: written by `kmc matrix --atlas` -->"
COMMITTED, AVAILABLE = "CommittedNeverLost", "PartitionRecoverable"
ACKED = "AcknowledgedNeverLost"
PROPERTIES = (COMMITTED, ACKED, AVAILABLE)
HALVES = {COMMITTED: "committed", ACKED: "acknowledged", AVAILABLE: "availability"}

# Every row: 2 records and leader epochs <= 2; 2 crashes with 2 replicas, 1 with 3 (as the
# matrix grid's rows: a three-replica cell with 2 crashes has 0.5 to 1.5 million states, and
# the page is regenerated in about a minute). Row key -> (label, replicas, min ISR, crashes,
# lossy crashes, acks): 2 and 3 replicas, every min ISR from 1 to the replicas, crashes that
# keep the log (flushed) or may drop its unflushed tail (lossy), the producer's acks all and 1.
MESSAGES, EPOCHS = 2, 2
CRASHES = {2: 2, 3: 1}
ROWS: dict[str, tuple[str, int, int, int, bool, str]] = {}
for _n in (2, 3):
    for _isr in range(1, _n + 1):
        for _lossy in (False, True):
            for _acks in ("all", "1"):
                _k = CRASHES[_n]
                ROWS[f"r{_n}-isr{_isr}-{'lossy' if _lossy else 'flushed'}-acks{_acks}"] = (
                    f"{_n} replicas, min ISR {_isr}, {_k} {'lossy' if _lossy else 'flushed'} "
                    f"crash{'es' if _k > 1 else ''}, acks={_acks}",
                    _n,
                    _isr,
                    _k,
                    _lossy,
                    _acks,
                )


def _version_policies() -> dict[str, tuple[str, dict[str, Any]]]:
    """Every Kafka version of ``kmc matrix --versions`` (``model.versions.VERSIONS``), as a
    column: its label and the configuration fields it sets (its rule and options), read
    from the versions grid itself, so that a version added there is a column here too."""
    import attrs
    from kmc.model.config import Config
    from kmc.model.versions import VERSION_CONFIGS, VERSIONS, version_config

    first = next(iter(VERSION_CONFIGS))
    params: dict[str, Any] = dict(VERSION_CONFIGS[first][1])
    base = Config(**params)
    out: dict[str, tuple[str, dict[str, Any]]] = {}
    for version in VERSIONS:
        cfg = version_config(version, VERSION_CONFIGS[first][1])
        settings = {
            f.name: getattr(cfg, f.name)
            for f in attrs.fields(Config)
            if f.name == "truncation" or getattr(cfg, f.name) != getattr(base, f.name)
        }
        out[version] = (VERSIONS[version][0], settings)
    return out


# policy key -> (label, configuration fields): every Kafka version, then two versions with
# unclean leader election on (the setting an operator may turn on for availability).
POLICIES = _version_policies()
for _key, _base in (("v21-unclean", "v21"), ("v41-unclean", "v41")):
    if _base in POLICIES:
        POLICIES[_key] = (
            f"{POLICIES[_base][0]} + unclean election",
            {**POLICIES[_base][1], "unclean_leader_election": True},
        )

_H, _V = "holds", "violated"
# The verdicts an independent TLA+ rendering also gives, where they cover a cell (trace
# lengths in states; acks only records what the producer was told, so both acks rows of a
# configuration share them): (row, policy) -> {"committed": "holds" | length,
# "availability": "holds" | length}.
_TLA: dict[tuple[str, str], dict[str, str | int]] = {
    ("r2-isr1-lossy", "v21"): {"committed": 6, "availability": _H},
    ("r2-isr1-lossy", "v21-gate"): {"committed": 6},
    ("r2-isr1-lossy", "v21-elr"): {"committed": _H, "availability": 4},
    ("r2-isr1-lossy", "v41"): {"committed": 6, "availability": _H},
    ("r2-isr2-lossy", "v21-elr"): {"committed": _H, "availability": 6},
    ("r2-isr2-lossy", "v41"): {"committed": 10, "availability": _H},
    ("r3-isr2-lossy", "v21"): {"committed": 7},
    ("r3-isr2-lossy", "v21-gate"): {"committed": 9},
    ("r3-isr2-lossy", "v21-elr"): {"committed": _H},
}
KNOWN = {
    (f"{row}-acks{acks}", policy): dict(v)
    for (row, policy), v in _TLA.items()
    for acks in ("all", "1")
    if policy in POLICIES
}


def config_of(row: str, policy: str) -> Config:
    """The ``Config`` of one cell."""
    from kmc.model.config import Config

    _, n, isr, crashes, lossy, acks = ROWS[row]
    return Config(
        **{
            "replicas": tuple(chr(ord("A") + i) for i in range(n)),
            "max_messages": MESSAGES,
            "max_crashes": crashes,
            "max_leader_epoch": EPOCHS,
            "min_insync_replicas": isr,
            "unflushed_loss": lossy,
            "acks": acks,
            **POLICIES[policy][1],
        }
    )


def properties_of(row: str, policy: str) -> tuple[Property, ...]:
    """The properties a cell checks: every safety property its configuration checks by
    default (``invariants.default_properties``, which names ``AcknowledgedNeverLost`` for
    every row: each sets ``acks``), then ``PartitionRecoverable``."""
    from kmc.invariants import BY_NAME, default_properties

    props = tuple(default_properties(config_of(row, policy)))
    for name in PROPERTIES:
        if all(p.name != name for p in props):
            props += (BY_NAME[name],)
    return props


def cell_of(row: str, policy: str, result: CheckResult) -> dict[str, Any]:
    """A cell dict from an engine's ``CheckResult`` (checked: ``properties_of``, or any
    list holding ``PROPERTIES``)."""
    distinct = result.stats.distinct
    committed = _half(result, COMMITTED)
    acknowledged = _half(result, ACKED)
    availability = _half(result, AVAILABLE)
    safety = {name: _half(result, name) for name in result.checked if name not in PROPERTIES}
    halves = ((COMMITTED, committed), (ACKED, acknowledged), (AVAILABLE, availability), *safety.items())
    for name, half in halves:
        if name in result.violations:
            half["trace"] = trace_path(row, policy, name)
    v = result.violations.get(AVAILABLE)
    traps = v.traps if v is not None else None
    availability["trap_states"] = traps
    availability["trap_share"] = round(traps / distinct, 6) if traps is not None and distinct else None
    known = KNOWN.get((row, policy), {})
    got = {"committed": committed, "availability": availability}
    matched = None
    if known:
        matched = all(
            (got[h]["verdict"] == _H) if want == _H else (got[h]["verdict"] == _V and got[h]["length"] == want)
            for h, want in known.items()
        )
    return {
        "row": row,
        "policy": policy,
        "distinct_states": distinct,
        "seconds": round(result.stats.seconds, 3),
        "complete": result.complete,
        "committed": committed,
        "acknowledged": acknowledged,
        "availability": availability,
        "safety": safety,
        "expected": dict(known),
        "matched": matched,
    }


def _half(result: CheckResult, name: str) -> dict[str, Any]:
    verdict = result.verdict(name) if name in result.checked else "unknown"
    v = result.violations.get(name)
    return {"verdict": verdict, "length": len(v.path) if v is not None else None}


def trace_path(row: str, policy: str, prop: str) -> str:
    """Where a cell's counterexample is written, relative to ATLAS.md: the JSON trace
    (``kmc replay`` reads it) and, with ``.html``, its diagram."""
    return f"traces/atlas-{row}-{policy}-{prop}.json"


def _links(half: dict[str, Any]) -> str:
    path = half.get("trace")
    if not path:
        return ""
    return f" ([trace]({path}), [diagram]({path[:-5]}.html))"


def atlas_document(cells: Iterable[dict[str, Any]], *, command: str, total_seconds: float) -> dict[str, Any]:
    from kmc.checker import __version__

    return {
        "schema_version": SCHEMA_VERSION,
        "kind": KIND,
        "kmc_version": __version__,
        "command": command,
        "rows": {k: ROWS[k][0] for k in ROWS if any(c["row"] == k for c in cells)},
        "policies": {k: POLICIES[k][0] for k in POLICIES if any(c["policy"] == k for c in cells)},
        "total_seconds": round(total_seconds, 3),
        "cells": list(cells),
    }


def _mark(half: dict[str, Any], availability: bool = False) -> str:
    verdict = half["verdict"]
    if verdict == _H:
        return "✓"
    if verdict != _V:
        return "?"
    text = f"✗ {half['length']}"
    if availability and half.get("trap_share") is not None:
        text += f" ({100 * half['trap_share']:.1f}% traps)"
    return text


def failed_safety(cell: dict[str, Any]) -> list[str]:
    """The safety properties other than the two losses (``cell["safety"]``) that the cell
    finds violated, in the order checked."""
    return [name for name, half in cell.get("safety", {}).items() if half["verdict"] == _V]


def durable(cell: dict[str, Any]) -> bool | None:
    """No record the producer was told is written, and no committed record, is ever lost,
    and every other safety property the cell checked holds (None: not decided)."""
    halves = [cell["committed"], cell.get("acknowledged", {"verdict": _H}), *cell.get("safety", {}).values()]
    if any(h["verdict"] == _V for h in halves):
        return False
    return True if all(h["verdict"] == _H for h in halves) else None


def available(cell: dict[str, Any]) -> bool | None:
    """The partition can always get a leader again (None: not decided)."""
    verdict = cell["availability"]["verdict"]
    return True if verdict == _H else False if verdict == _V else None


# The four answers a cell gives, in the conclusion's order.
VERDICTS = {
    (True, True): "durable and available",
    (True, False): "durable, not always available",
    (False, True): "available, not durable",
    (False, False): "neither durable nor available",
}


def cell_text(cell: dict[str, Any]) -> str:
    """``acked ✓ · committed ✓ · available ✗ 4 (18.4% traps)``: what one cell decided."""
    parts = []
    if "acknowledged" in cell:
        parts.append(f"acked {_mark(cell['acknowledged'])}")
    parts += [f"committed {_mark(cell['committed'])}", f"available {_mark(cell['availability'], True)}"]
    parts += [f"{name} {_mark(half)}" for name, half in cell.get("safety", {}).items() if half["verdict"] != _H]
    text = " · ".join(parts)
    if cell["matched"] is False:
        text += " **UNEXPECTED**"
    return text


def conclusion(doc: dict[str, Any]) -> list[str]:
    """The answer, written from the cells: which settings are durable and available under
    which versions, which only one of the two, which neither (Markdown lines)."""
    groups: dict[str, dict[str, list[str]]] = {answer: {} for answer in VERDICTS.values()}
    undecided = []
    for c in doc["cells"]:
        d, a = durable(c), available(c)
        if d is None or a is None:
            undecided.append(c)
            continue
        groups[VERDICTS[d, a]].setdefault(c["row"], []).append(c["policy"])
    total = len(doc["cells"])
    lines = [
        "## The answer",
        "",
        *_in_short(doc),
        "",
        "*Durable*: no record the producer was told is written (`AcknowledgedNeverLost`) and no "
        "committed record (`CommittedNeverLost`) is ever lost, and every other safety property the "
        "column's options check holds (`HighWatermarkBelowLogEnd`, `LogsNeverDiverge`, "
        "`LeaderEpochMonotonic`, `LeaderCandidateCompleteness` with the 2.1 rule, the HW gate or the "
        "ELR, `UncommittedNeverExposed` with the fetch path). *Available*: from every reachable "
        "state the partition can still get a leader (`PartitionRecoverable`). Of the "
        f"{total} cells (settings × versions):",
        "",
    ]
    for answer, rows in groups.items():
        count = sum(len(p) for p in rows.values())
        lines.append(f"- **{answer}**: {count} cell{'s' if count != 1 else ''}" + (":" if rows else "."))
        for row, policies in rows.items():
            versions = ", ".join(doc["policies"][p] for p in policies)
            every = " (every version)" if len(policies) == len(doc["policies"]) else ""
            lines.append(f"  - {doc['rows'][row]}: {versions}{every}")
    if undecided:
        lines.append(f"- **not decided** (a bound stopped the search): {len(undecided)} cells.")
    safe = groups[VERDICTS[(True, True)]]
    lines.append("")
    if safe:
        lines.append(
            "So the settings that keep every acknowledged record and never strand the partition "
            "are those listed first above, under the versions named there; every other cell "
            "gives up one of the two, and the tables below say which, with the shortest "
            "behaviour that shows it."
        )
    else:
        lines.append(
            "No setting here is both durable and available under any version: every cell gives "
            "up one of the two, and the tables below say which, with the shortest behaviour "
            "that shows it."
        )
    return lines + [""]


def _in_short(doc: dict[str, Any]) -> list[str]:
    """A few sentences, each computed from the cells: what acks, lossy crashes and the
    price in availability come to."""

    def settings(c: dict[str, Any]) -> tuple[str, int, int, int, bool, str]:
        return ROWS[c["row"]]

    cells = [c for c in doc["cells"] if c["row"] in ROWS]  # a cell of a row this atlas knows
    safe = [c for c in cells if durable(c) and available(c)]
    out = ["In short (each sentence counted from the cells below):", ""]
    for acks in ("all", "1"):
        mine = [c for c in cells if settings(c)[5] == acks]
        ok = [c for c in safe if settings(c)[5] == acks]
        if not mine:
            continue
        if ok:
            out.append(f"- `acks={acks}`: {len(ok)} of {len(mine)} cells are durable and available.")
        elif all(c.get("acknowledged", {}).get("verdict") == _V for c in mine):
            out.append(
                f"- `acks={acks}`: none of its {len(mine)} cells is durable: in every one, a record the "
                "producer was told is written can be lost."
            )
        else:
            out.append(f"- `acks={acks}`: none of its {len(mine)} cells is both durable and available.")
    others = [
        c
        for c in cells
        if failed_safety(c) and all(c[h]["verdict"] == _H for h in ("committed", "acknowledged") if h in c)
    ]
    if others:
        where = "; ".join(
            f"{doc['rows'][c['row']]} under {doc['policies'][c['policy']]}: "
            + ", ".join(f"`{n}`" for n in failed_safety(c))
            for c in others
        )
        one = len(others) == 1
        out.append(
            f"- losing no record is not enough: {len(others)} cell{'' if one else 's'} "
            f"{'keeps' if one else 'keep'} every acknowledged and committed record yet "
            f"{'is' if one else 'are'} not durable, because another safety property fails ({where})."
        )
    lossy = [c for c in safe if settings(c)[4]]
    if lossy:
        versions = [doc["policies"][p] for p in doc["policies"] if any(c["policy"] == p for c in lossy)]
        rows = [doc["rows"][r] for r in doc["rows"] if any(c["row"] == r for c in lossy)]
        out.append(
            f"- lossy crashes: durable and available only under {', '.join(versions)}, and only for {'; '.join(rows)}."
        )
    else:
        out.append("- lossy crashes: no cell is both durable and available.")
    traps = [c for c in cells if durable(c) and available(c) is False]
    if traps:
        versions = [doc["policies"][p] for p in doc["policies"] if any(c["policy"] == p for c in traps)]
        worst = max(c["availability"].get("trap_share") or 0 for c in traps)
        out.append(
            f"- the price of durability: under {', '.join(versions)}, {len(traps)} durable "
            f"cell{'s' if len(traps) > 1 else ''} can strand the partition for good (up to "
            f"{100 * worst:.1f}% of the reachable states are traps)."
        )
    return out


def to_markdown(doc: dict[str, Any]) -> str:
    cells = {(c["row"], c["policy"]): c for c in doc["cells"]}
    policies = list(doc["policies"])
    lines = [
        MARKER,
        "",
        "# Which Kafka setting is safe, and what does it cost in availability?",
        "",
        f"Generated by `{doc['command']}` (kmc {doc['kmc_version']}) in "
        f"{doc['total_seconds']:.0f} s. Do not edit by hand: see docs/results.md.",
        "",
        f"Every configuration has {MESSAGES} records and leader epochs ≤ {EPOCHS}, and the crashes its "
        "row names; *flushed* crashes keep a replica's log, *lossy* ones may drop the tail that was not yet "
        "fsynced (`unflushed_loss`). The producer writes with `acks=all` or `acks=1`. Each column is a "
        "Kafka version (its truncation rule and options, as in `kmc matrix --versions`), or one with "
        "unclean leader election turned on. Every cell explores every reachable state.",
        "",
    ]
    lines += conclusion(doc)
    lines += [
        "## Every setting under every version",
        "",
        "- *acked*: `AcknowledgedNeverLost` — ✓ holds; ✗ n: the shortest behaviour that loses a "
        "record the producer was told is written has n states.",
        "- *committed*: `CommittedNeverLost` — the same for a committed record (one a consumer may have read).",
        "- *available*: `PartitionRecoverable` — ✓ holds; ✗ n (p% traps): the shortest behaviour into "
        "a state from which no replica can ever lead again has n states, and p% of the reachable "
        "states are such traps.",
        "- any other safety property the column's options check is named when it fails: `LogsNeverDiverge ✗ n` "
        "(the shortest behaviour that violates it has n states); a cell names none when every one holds.",
        "",
        "| configuration | " + " | ".join(doc["policies"][p] for p in policies) + " |",
        "|---|" + "---|" * len(policies),
    ]
    for row, label in doc["rows"].items():
        line = [label] + [cell_text(cells[(row, p)]) if (row, p) in cells else "" for p in policies]
        lines.append("| " + " | ".join(line) + " |")
    unexpected = [c for c in doc["cells"] if c["matched"] is False]
    lines += [
        "",
        "Cells the independent TLA+ rendering also decides are compared with it: "
        + (f"{len(unexpected)} do not match." if unexpected else "every one matches."),
        "",
        "## Every cell",
        "",
        "| configuration | version | distinct states | seconds | acked | committed | available | other safety |",
        "|---|---|---:|---:|---|---|---|---|",
    ]
    for c in doc["cells"]:
        acked = c.get("acknowledged", {"verdict": "unknown"})
        safety = c.get("safety", {})
        other = "; ".join(f"{n} {_mark(h)}{_links(h)}" for n, h in safety.items() if h["verdict"] != _H)
        if not other:
            other = f"✓ ({len(safety)} checked)" if safety else ""
        lines.append(
            f"| {doc['rows'][c['row']]} | {doc['policies'][c['policy']]} | "
            f"{c['distinct_states']:,} | {c['seconds']:.1f} | {_mark(acked)}{_links(acked)} | "
            f"{_mark(c['committed'])}{_links(c['committed'])} | {_mark(c['availability'], True)}"
            f"{_links(c['availability'])} | {other} |"
        )
    return "\n".join(lines) + "\n"


def is_atlas_markdown(path: str | os.PathLike[str]) -> bool:
    """True when ``path`` is empty or is an ATLAS.md that kmc wrote (its first line)."""
    try:
        with open(path, "rb") as f:
            head = f.read(len(MARKER.encode()) + 8)
    except OSError:
        return False
    return not head.strip() or head.startswith(MARKER.encode())
