"""The durability × availability atlas (``kmc matrix --atlas``): ATLAS.md and atlas.json.

Rows are configurations that lose unflushed records in crashes; columns are the election
and ISR policies of successive Kafka versions. Each cell gives both halves of the
trade-off: are committed records kept (``CommittedNeverLost``), and can the partition always
get a leader again (``PartitionRecoverable``). Nothing here runs an engine: the command
(``app/commands/atlas.py``) hands this module plain cell dicts.

A cell::

    {"row": "r2-isr1-c2", "policy": "kip966", "distinct_states": int, "seconds": float,
     "complete": bool,
     "committed": {"verdict": "holds" | "violated" | "unknown", "length": int | null,
                   "trace": "traces/atlas-....json" (when violated)},
     "availability": {"verdict": ..., "length": int | null, "trap_states": int | null,
                      "trap_share": float | null, "trace": ... (when violated)},
     "expected": {"committed": ..., "availability": ...},   # where known, else {}
     "matched": bool | null}
"""

from __future__ import annotations

SCHEMA_VERSION = 1
KIND = "kmc-atlas"
MARKER = "<!-- kmc atlas: written by `kmc matrix --atlas` -->"
COMMITTED, AVAILABLE = "CommittedNeverLost", "PartitionRecoverable"

# row key -> (label, replicas, min ISR, crashes); every row: 2 messages, leader epochs <= 2,
# unflushed loss (a crash may drop the not-yet-fsynced tail of a log).
ROWS = {}
for _n in (2, 3):
    for _isr in (1, 2):
        for _crashes in (1, 2):
            ROWS[f"r{_n}-isr{_isr}-c{_crashes}"] = (
                f"{_n} replicas, min ISR {_isr}, {_crashes} crash{'es' if _crashes > 1 else ''}",
                _n, _isr, _crashes)

# policy key -> (label, options); every policy uses the 2.1 truncation rule.
_GATE = {"hw_requires_min_isr": True}
_ELR = {**_GATE, "eligible_leader_replicas": True}
POLICIES = {
    "v21": ("2.1 (clean elections)", {}),
    "v21-unclean": ("2.1 + unclean election", {"unclean_leader_election": True}),
    "v37": ("3.7: HW gate", _GATE),
    "kip966": ("KIP-966: ELR as written", _ELR),
    "v41": ("4.1: ELR + last known leader", {**_ELR, "last_known_leader": True}),
    "elr-unclean": ("ELR + unclean election", {**_ELR, "unclean_leader_election": True}),
}

_H, _V = "holds", "violated"
# The known verdicts (trace lengths in states) where they cover a cell: (row, policy) ->
# {"committed": "holds" | length, "availability": "holds" | length}.
KNOWN = {
    ("r2-isr1-c2", "v21"): {"committed": 6, "availability": _H},
    ("r2-isr1-c2", "v37"): {"committed": 6},
    ("r2-isr1-c2", "kip966"): {"committed": _H, "availability": 4},
    ("r2-isr1-c2", "v41"): {"committed": 6, "availability": _H},
    ("r2-isr1-c2", "elr-unclean"): {"availability": _H},
    ("r2-isr2-c2", "kip966"): {"committed": _H, "availability": 6},
    ("r2-isr2-c2", "v41"): {"committed": 10, "availability": _H},
    ("r2-isr2-c2", "elr-unclean"): {"availability": _H},
    ("r3-isr2-c1", "v21"): {"committed": 7},
    ("r3-isr2-c1", "v37"): {"committed": 9},
    ("r3-isr2-c1", "kip966"): {"committed": _H},
    ("r3-isr2-c2", "v21"): {"committed": 7, "availability": _H},
    ("r3-isr2-c2", "v37"): {"committed": 9},
    ("r3-isr2-c2", "kip966"): {"committed": _H, "availability": 7},
    ("r3-isr2-c2", "v41"): {"committed": 11, "availability": _H},
    ("r3-isr2-c2", "elr-unclean"): {"availability": _H},
}


def config_of(row: str, policy: str):
    """The ``Config`` of one cell."""
    from kmc.model.config import LEADER_EPOCH_21, Config

    _, n, isr, crashes = ROWS[row]
    return Config(replicas=tuple(chr(ord("A") + i) for i in range(n)), max_messages=2,
                  max_crashes=crashes, max_leader_epoch=2, truncation=LEADER_EPOCH_21,
                  min_insync_replicas=isr, unflushed_loss=True, **POLICIES[policy][1])


def cell_of(row: str, policy: str, result) -> dict:
    """A cell dict from an engine's ``CheckResult`` (checked: COMMITTED and AVAILABLE)."""
    distinct = result.stats.distinct
    committed = _half(result, COMMITTED)
    availability = _half(result, AVAILABLE)
    for name, half in ((COMMITTED, committed), (AVAILABLE, availability)):
        if name in result.violations:
            half["trace"] = trace_path(row, policy, name)
    v = result.violations.get(AVAILABLE)
    traps = getattr(v, "traps", None) if v is not None else None
    availability["trap_states"] = traps
    availability["trap_share"] = round(traps / distinct, 6) if traps is not None and distinct else None
    known = KNOWN.get((row, policy), {})
    got = {"committed": committed, "availability": availability}
    matched = None
    if known:
        matched = all((got[h]["verdict"] == _H) if want == _H else
                      (got[h]["verdict"] == _V and got[h]["length"] == want)
                      for h, want in known.items())
    return {"row": row, "policy": policy, "distinct_states": distinct,
            "seconds": round(result.stats.seconds, 3), "complete": result.complete,
            "committed": committed, "availability": availability,
            "expected": dict(known), "matched": matched}


def _half(result, name) -> dict:
    verdict = result.verdict(name)
    v = result.violations.get(name)
    return {"verdict": verdict, "length": len(v.path) if v is not None else None}


def trace_path(row: str, policy: str, prop: str) -> str:
    """Where a cell's counterexample is written, relative to ATLAS.md: the JSON trace
    (``kmc replay`` reads it) and, with ``.html``, its diagram."""
    return f"traces/atlas-{row}-{policy}-{prop}.json"


def _links(half) -> str:
    path = half.get("trace")
    if not path:
        return ""
    return f" ([trace]({path}), [diagram]({path[:-5]}.html))"


def atlas_document(cells, *, command: str, total_seconds: float) -> dict:
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


def _mark(half, availability=False) -> str:
    verdict = half["verdict"]
    if verdict == _H:
        return "✓"
    if verdict != _V:
        return "?"
    text = f"✗ {half['length']}"
    if availability and half.get("trap_share") is not None:
        text += f" ({100 * half['trap_share']:.1f}% traps)"
    return text


def cell_text(cell) -> str:
    """``durable ✓ · available ✗ 4 (18.4% traps)``: both halves of one cell."""
    text = f"durable {_mark(cell['committed'])} · available {_mark(cell['availability'], True)}"
    if cell["matched"] is False:
        text += " **UNEXPECTED**"
    return text


def to_markdown(doc) -> str:
    cells = {(c["row"], c["policy"]): c for c in doc["cells"]}
    policies = list(doc["policies"])
    lines = [MARKER, "", "# kmc atlas: durability × availability", "",
             f"Generated by `{doc['command']}` (kmc {doc['kmc_version']}) in "
             f"{doc['total_seconds']:.0f} s.", "",
             "Every configuration has 2 records, leader epochs ≤ 2 and unflushed loss (a crash may "
             "drop the tail of a log that was not yet fsynced), under the 2.1 truncation rule. "
             "Each cell gives both halves of the trade-off:", "",
             "- *durable*: `CommittedNeverLost` — no committed record is ever lost. ✓ holds; "
             "✗ n: the shortest behaviour that loses one has n states.",
             "- *available*: `PartitionRecoverable` — from every reachable state the partition "
             "can still get a leader. ✓ holds; ✗ n (p% traps): the shortest behaviour into a state "
             "from which no replica can ever lead again has n states, and p% of the reachable "
             "states are such traps.", "",
             "| configuration | " + " | ".join(doc["policies"][p] for p in policies) + " |",
             "|---|" + "---|" * len(policies)]
    for row, label in doc["rows"].items():
        line = [label] + [cell_text(cells[(row, p)]) if (row, p) in cells else "" for p in policies]
        lines.append("| " + " | ".join(line) + " |")
    unexpected = [c for c in doc["cells"] if c["matched"] is False]
    lines += ["", "Cells the independent TLA+ rendering also decides are compared with it: "
              + (f"{len(unexpected)} do not match." if unexpected else "every one matches."), "",
              "## Every cell", "", "| configuration | policy | distinct states | seconds | durable | available |",
              "|---|---|---:|---:|---|---|"]
    for c in doc["cells"]:
        lines.append(f"| {doc['rows'][c['row']]} | {doc['policies'][c['policy']]} | "
                     f"{c['distinct_states']:,} | {c['seconds']:.1f} | {_mark(c['committed'])}"
                     f"{_links(c['committed'])} | {_mark(c['availability'], True)}"
                     f"{_links(c['availability'])} |")
    return "\n".join(lines) + "\n"


def is_atlas_markdown(path) -> bool:
    """True when ``path`` is empty or is an ATLAS.md that kmc wrote (its first line)."""
    try:
        with open(path, "rb") as f:
            head = f.read(len(MARKER.encode()) + 8)
    except OSError:
        return False
    return not head.strip() or head.startswith(MARKER.encode())
