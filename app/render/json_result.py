"""The machine-readable result of ``kmc check`` (schema documented in docs/json-schema.md).

Everything here is plain data: dicts, lists, strings, numbers, booleans and ``None``,
ready for ``json.dumps``. Nothing imports rich. ``kmc replay`` reads these documents
back, so a change to their shape is a change to ``SCHEMA_VERSION``.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from kmc.checker.contract.protocol import action_name
from kmc.checker.core.result import UNKNOWN
from kmc.model.actions import ACTION_NAMES, action_names
from kmc.model.state import EXPAND, SHRINK, Fetch, Quorum, Replica, State

from .counterexample import covers_to_dict, lasso_dict
from .coverage import coverage_to_dict

if TYPE_CHECKING:
    from kmc.checker.core.result import CheckResult, Path, Stats, Violation
    from kmc.model.kafka import KafkaModel
    from kmc.model.spec import Spec
    from kmc.model.state import Record

SCHEMA_VERSION = 1
# Fields added within a version raise the minor version (docs/json-schema.md lists them);
# readers of version 1 ignore the fields they do not know.
SCHEMA_MINOR = 3


# -- verdicts and expectations ----------------------------------------------------------


def verdicts(result: CheckResult) -> dict[str, str]:
    """``{property: "holds" | "violated" | "unknown"}`` for every checked property, in order."""
    return {name: result.verdict(name) for name in result.checked}


def expectation(spec: Spec | None, result: CheckResult) -> dict[str, Any]:
    """Compare the verdicts of a run with the ``[expect]`` table of its spec.

    Only the properties that were checked are compared: ``--invariant X`` with a spec
    that also expects a verdict for ``Y`` does not contradict that expectation, it leaves
    it out (``unchecked``).

    Args:
        spec: the ``model.spec.Spec`` that was checked, or ``None``.
        result: the ``CheckResult``.

    Returns:
        ``{"expected": {name: verdict}, "got": {name: verdict}, "matched": bool,
        "mismatches": [str, ...], "unchecked": [name, ...]}``. ``expected`` is the spec's
        whole table; ``got`` holds the verdict of every checked property. An expected
        verdict of a checked property is missed when the property was decided otherwise
        or was left ``unknown`` (the search stopped before deciding it). ``unchecked``
        names the expected properties that were not checked. Without a spec or an
        ``[expect]`` table, ``expected`` is ``{}`` and ``matched`` is True.
    """
    expected = dict(spec.expect) if spec is not None and spec.expect else {}
    return compare_expected(expected, verdicts(result))


def compare_expected(expected: dict[str, Any], got: dict[str, Any]) -> dict[str, Any]:
    """``expectation``'s document for an ``expected`` table and what the run ``got`` (a
    verdict or a count by name; a name the run did not check is absent): the one rule by
    which a spec's and a model's expectations are compared."""
    mismatches: list[str] = []
    unchecked: list[str] = []
    for name, want in expected.items():
        have = got.get(name)
        if have is None:
            unchecked.append(name)
        elif have == UNKNOWN:
            mismatches.append(f"{name}: expected {want}, got unknown (the search stopped before deciding it)")
        elif have != want:
            mismatches.append(f"{name}: expected {want}, got {have}")
    return {
        "expected": expected,
        "got": got,
        "matched": not mismatches,
        "mismatches": mismatches,
        "unchecked": unchecked,
    }


# -- states and traces --------------------------------------------------------------------


def _records(records: Iterable[Record]) -> list[list[int]]:
    return [[epoch, rid] for epoch, rid in records]


def _name(model: KafkaModel, r: int | None) -> str | None:
    return None if r is None else model.name(r)


def state_to_dict(model: KafkaModel, state: State) -> dict[str, Any]:
    """Every variable of a model state, replicas named as in the spec.

    Args:
        model: the ``KafkaModel`` the state belongs to (for the replica names).
        state: a ``model.state.State``.
    """
    replicas: dict[str, dict[str, Any]] = {}
    # The ELR and "lossy" only exist with eligible_leader_replicas (constant otherwise), so
    # every other document is exactly as it always was.
    elr_on = model.config.eligible_leader_replicas
    # The controlled shutdown's mark and count exist only with max_controlled_shutdowns.
    shutdowns = model.config.max_controlled_shutdowns
    for r, rep in enumerate(state.replicas):
        f = rep.inflight
        replicas[model.name(r)] = {
            "alive": rep.alive,
            "log": _records(rep.log),
            "leo": len(rep.log),
            "hw": rep.hw,
            "epoch": rep.epoch,
            "leader": _name(model, rep.leader),
            "remote_leo": {model.name(i): n for i, n in enumerate(rep.remote_leo)},
            "inflight": None if f is None else _fetch(model, f),
        }
        if elr_on:
            replicas[model.name(r)]["lossy"] = rep.lossy
        if shutdowns:
            replicas[model.name(r)]["shutting"] = rep.shutting
    q = state.quorum
    quorum: dict[str, Any] = {"leader": _name(model, q.leader), "epoch": q.epoch, "isr": [model.name(r) for r in q.isr]}
    if elr_on:
        quorum["elr"] = [model.name(r) for r in q.elr]
    if model.config.alter_partition:  # the request in flight: absent otherwise
        quorum["alter"] = (
            None
            if q.alter is None
            else {"leader": model.name(q.alter[0]), "change": q.alter[1], "replica": model.name(q.alter[2])}
        )
    doc: dict[str, Any] = {
        "replicas": replicas,
        "quorum": quorum,
        "produced": state.produced,
        "crashes": state.crashes,
        "committed": [list(c) for c in state.committed],
    }
    if model.config.acks:  # tracked only with acks: absent otherwise, as before
        doc["acked"] = [list(c) for c in state.acked]
    if shutdowns:
        doc["controlled_shutdowns"] = state.controlled_shutdowns
    # The operator's min ISR changes and disk failures: absent without their options, as before.
    if model.config.min_isr_changes:
        quorum["min_isr_step"] = q.min_isr_step
    if model.config.min_isr_lag:
        doc["leader_min_isr_step"] = state.leader_min_isr_step
    if model.config.max_disk_failures:
        doc["disk_failures"] = state.disk_failures
    return doc


def _fetch(model: KafkaModel, f: Fetch) -> dict[str, Any]:
    """A response in flight; a diverging one (``truncate_on_fetch``) adds ``diverging`` (its
    epoch; ``start`` is then its offset) and ``applied`` (KAFKA-14704's mark), which no other
    response has, so every other document is as it always was."""
    out: dict[str, Any] = {
        "leader": model.name(f.leader),
        "epoch": f.epoch,
        "start": f.start,
        "records": _records(f.records),
        "leader_hw": f.leader_hw,
    }
    if f.diverging is not None:
        out["diverging"] = f.diverging
        out["applied"] = f.applied
    return out


def state_from_dict(model: KafkaModel, doc: dict[str, Any]) -> State:
    """The inverse of ``state_to_dict`` (``kmc replay`` and the tests use it to check that
    a document describes a state completely).

    Raises:
        KeyError, ValueError, TypeError: the document does not describe a state of
            ``model`` (an unknown replica name, a missing field).
    """
    index = {name: i for i, name in enumerate(model.config.replicas)}

    def num(name: str | None) -> int | None:
        return None if name is None else index[name]

    def recs(rows: Iterable[Iterable[Any]]) -> tuple[tuple[int, int], ...]:
        return tuple((int(e), int(i)) for e, i in rows)

    names = list(doc["replicas"])
    if names != list(model.config.replicas):
        raise ValueError(f"the state names replicas {names}, the model {list(model.config.replicas)}")
    replicas = []
    for name in names:
        d = doc["replicas"][name]
        f = d["inflight"]
        fetch = None
        if f is not None:
            diverging = f.get("diverging")
            fetch = Fetch(
                index[f["leader"]],
                f["epoch"],
                f["start"],
                recs(f["records"]),
                f["leader_hw"],
                None if diverging is None else int(diverging),
                bool(f.get("applied", False)),
            )
        replicas.append(
            Replica(
                alive=bool(d["alive"]),
                log=recs(d["log"]),
                hw=d["hw"],
                epoch=d["epoch"],
                leader=num(d["leader"]),
                remote_leo=tuple(d["remote_leo"][n] for n in names),
                inflight=fetch,
                lossy=bool(d.get("lossy", False)),
                shutting=bool(d.get("shutting", False)),
            )
        )
    q = doc["quorum"]
    a = q.get("alter")
    if a is not None and a["change"] not in (SHRINK, EXPAND):
        raise ValueError(f"the request in flight changes {a['change']!r}, not {SHRINK!r} or {EXPAND!r}")
    alter = None if a is None else (index[a["leader"]], a["change"], index[a["replica"]])
    quorum = Quorum(
        num(q["leader"]),
        q["epoch"],
        tuple(sorted(index[n] for n in q["isr"])),
        tuple(sorted(index[n] for n in q.get("elr", ()))),
        alter,
        int(q.get("min_isr_step", 0)),
    )
    return State(
        replicas=tuple(replicas),
        quorum=quorum,
        produced=doc["produced"],
        crashes=doc["crashes"],
        committed=tuple(tuple(c) for c in doc["committed"]),
        acked=tuple(tuple(c) for c in doc.get("acked", ())),
        controlled_shutdowns=int(doc.get("controlled_shutdowns", 0)),
        leader_min_isr_step=int(doc.get("leader_min_isr_step", 0)),
        disk_failures=int(doc.get("disk_failures", 0)),
    )


def action_to_dict(model: KafkaModel, action: Any) -> dict[str, Any] | None:
    """``{"name", "replica", "cut", "text"}`` of an action, ``None`` for no action."""
    if action is None:
        return None
    return {
        "name": action_name(action),
        "replica": model.name(action.replica),
        "cut": action.cut,
        "text": model.format_action(action),
    }


def trace_to_dict(model: KafkaModel, path: Path) -> dict[str, Any]:
    """A counterexample path: how to replay it, and every state along it.

    ``init_index`` and ``choices`` replay the path with ``checker.replay_choices``; the
    steps are numbered from 1 like the terminal trace (``State 1`` is the initial state).
    """
    return {
        "init_index": path.init_index,
        "choices": list(path.choices),
        "length": len(path),
        "steps": [
            {"index": i, "action": action_to_dict(model, step.action), "state": state_to_dict(model, step.state)}
            for i, step in enumerate(path.steps, 1)
        ],
    }


# -- the whole result ---------------------------------------------------------------------


def spec_to_dict(spec: Spec | None, model: KafkaModel) -> dict[str, Any]:
    """The spec's identity and the constants that were actually run (``model.config``,
    which command-line overrides may have changed); path, sha256 and title are ``None``
    when the run had no spec file."""
    out: dict[str, Any] = {
        "path": None if spec is None else spec.path,
        "sha256": None if spec is None else spec.sha256,
        "title": None if spec is None else spec.title,
        "model": model.config.as_dict(),
    }
    kafka = None if spec is None else spec.kafka  # the Kafka release the model was read from: only then
    if kafka is not None:
        out["kafka"] = {
            "release": kafka.release.version,
            "metadata": kafka.release.metadata,
            "from": kafka.given,
            "overrides": {k: {"spec": _plain(v), "release": _plain(r)} for k, v, r in kafka.overrides},
        }
    return out


def _plain(value: Any) -> Any:
    """A ``[model]`` value as JSON writes it (a tuple of ids as a list)."""
    return list(value) if isinstance(value, tuple) else value


def stats_to_dict(stats: Stats, names: Iterable[str] = ACTION_NAMES) -> dict[str, Any]:
    return {
        "distinct_states": stats.distinct,
        "states_generated": stats.generated,
        "depth": stats.depth,
        "seconds": round(stats.seconds, 6),
        "states_per_second": round(stats.states_per_second, 1),
        "terminal_states": stats.terminal,
        "queue": stats.queue,
        "fingerprint_collision_probability": stats.collision_probability,
        "levels": list(stats.levels),
        "kernel_cross_checked": stats.cross_checked,
        "actions": {name: {"fired": stats.fired.get(name, 0), "new": stats.new.get(name, 0)} for name in names},
    }


def result_to_dict(spec: Spec | None, model: KafkaModel, result: CheckResult) -> dict[str, Any]:
    """The whole outcome of a run as a JSON-ready dict (schema version ``SCHEMA_VERSION``).

    Args:
        spec: the ``Spec`` that was checked, or ``None``.
        model: the ``KafkaModel`` that was explored.
        result: the engine's ``CheckResult``.
    """
    from kmc.checker import __version__

    return {
        "schema_version": SCHEMA_VERSION,
        "schema_minor": SCHEMA_MINOR,
        "kmc_version": __version__,
        "spec": spec_to_dict(spec, model),
        "engine": result.engine,
        "checked": list(result.checked),
        "complete": result.complete,
        "stopped": result.stopped,
        "max_depth": result.max_depth,
        "stats": stats_to_dict(result.stats, action_names(model.config)),
        "coverage": coverage_to_dict(result.stats),
        "verdicts": verdicts(result),
        "unknown": dict(result.unknown),
        "expectation": expectation(spec, result),
        "violations": [
            _violation_to_dict(model, v)
            for v in (result.violations[name] for name in result.checked if name in result.violations)
        ],
        **covers_to_dict(result, lambda path: trace_to_dict(model, path)),
    }


def _violation_to_dict(model: KafkaModel, v: Violation) -> dict[str, Any]:
    """One violation; an always-possibly one also carries ``trap_states``: how many
    distinct states (orbits under symmetry reduction) are traps; a liveness one its
    ``lasso`` (``render.counterexample.lasso_dict``)."""
    doc: dict[str, Any] = {"property": v.property, "kind": v.kind, "explanation": v.explanation}
    traps = v.traps
    if traps is not None:
        doc["trap_states"] = int(traps)
    lasso = lasso_dict(v)
    if lasso is not None:  # a liveness property's counterexample
        doc["lasso"] = lasso
    doc["trace"] = trace_to_dict(model, v.path)
    return doc


_SURROGATE = re.compile("[\ud800-\udfff]")


def json_text(doc: Any, indent: int | None = 2) -> str:
    """``doc`` as the JSON text kmc writes and prints: UTF-8 characters as they are, but a
    lone surrogate (a file name's undecodable byte, a model's broken string) as its JSON
    escape (``\\udcff``), which no encoding refuses and ``json.loads`` reads back as the
    same string."""
    text = json.dumps(doc, indent=indent, ensure_ascii=False)
    return _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def write_json(path: str | os.PathLike[str], doc: Any, *, exclusive: bool = False) -> None:
    """Write ``doc`` to ``path`` as UTF-8 JSON (``json_text``: indent 2, keys in insertion
    order), whole (``checker.base.files.write_file``: a reader never sees half a document,
    an interrupted write leaves the old file in place; flushed to the disk before the
    rename).

    Args:
        exclusive: fail rather than replace a file at ``path`` (one that appeared since
            the path was checked).

    Raises:
        OSError: the directory is missing or not writable, the write fails, or
            ``exclusive`` and a file is there.
    """
    from kmc.checker.base.files import write_file

    write_file(path, (json_text(doc) + "\n").encode("utf-8"), exclusive=exclusive, sync=True)


__all__ = [
    "SCHEMA_VERSION",
    "action_to_dict",
    "expectation",
    "json_text",
    "result_to_dict",
    "spec_to_dict",
    "state_from_dict",
    "state_to_dict",
    "stats_to_dict",
    "trace_to_dict",
    "verdicts",
    "write_json",
]
