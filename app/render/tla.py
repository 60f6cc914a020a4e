"""Counterexamples as TLC prints them: ``State n: <Action>`` and ``/\\ var = value`` lines.

The text reads like the error trace of TLC, the TLA+ model checker, so that people who
know TLC (or keep a TLA+ rendering of the same rules) can compare the two line by line.
Every variable of docs/model.md ("State") is printed for every state, as a TLA+ value:

- replicas are model values (``A``), "no replica" is the model value ``None``;
- per-replica variables are functions over the replicas: ``(A :> 1 @@ B :> 0)``;
- a log is a sequence of records: ``<<[epoch |-> 0, id |-> 0]>>``;
- an in-flight fetch response (a diverging answer of the fetch path as ``diverging |->
  [epoch, offset]`` in place of ``start`` and ``records``, with KAFKA-14704's ``applied``),
  the controller state and (with ``alter_partition``) its
  AlterPartition request in flight are records (``None`` when there is no request);
- with ``max_controlled_shutdowns``, ``shutting`` (per replica) and ``controlled_shutdowns``
  come last, then ``leader_min_isr_step`` (with ``min_isr_lag``) and ``disk_failures`` (with
  ``max_disk_failures``); the controller's ``min_isr_step`` closes its record (with
  ``min_isr_changes``). Each is left out when its option is off (it is constant then);
- the ISR is a set ``{A, B}``; ``committed`` is the set of ``<<offset, record>>`` pairs.

Variables are printed in docs/model.md's order, not alphabetically. TLC names a state by the
action's definition and its location in the module; kmc has no module, so a header
names the action as ``kmc check`` does, e.g. ``State 3: <Crash(B, keeps 1)>``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kmc.checker.core.result import Path, Violation
    from kmc.model.kafka import KafkaModel
    from kmc.model.state import Fetch, Record, Replica, State

VARIABLES = (
    "alive",
    "log",
    "hw",
    "epoch",
    "leader",
    "remote_leo",
    "inflight",
    "quorum",
    "produced",
    "crashes",
    "committed",
)


def boolean(value: bool) -> str:
    return "TRUE" if value else "FALSE"


def sequence(items: Iterable[str]) -> str:
    return "<<" + ", ".join(items) + ">>"


def tla_set(items: Iterable[str]) -> str:
    return "{" + ", ".join(items) + "}"


def record(fields: Iterable[tuple[str, str]]) -> str:
    """A TLA+ record from ``(field, text)`` pairs, in the given order."""
    return "[" + ", ".join(f"{k} |-> {v}" for k, v in fields) + "]"


def function(pairs: Iterable[tuple[str, str]]) -> str:
    """A function written with TLC's ``:>`` and ``@@`` operators from ``(key, text)``."""
    return "(" + " @@ ".join(f"{k} :> {v}" for k, v in pairs) + ")"


def _replica(model: KafkaModel, r: int | None) -> str:
    return "None" if r is None else model.name(r)


def _record(rec: Record) -> str:
    epoch, rid = rec
    return record((("epoch", str(epoch)), ("id", str(rid))))


def _log(log: Iterable[Record]) -> str:
    return sequence(_record(x) for x in log)


def _fetch(model: KafkaModel, f: Fetch | None) -> str:
    if f is None:
        return "None"
    if f.diverging is not None:  # the fetch path's answer: div(E', O') in place of start and records
        fields = [
            ("leader", _replica(model, f.leader)),
            ("epoch", str(f.epoch)),
            ("diverging", record((("epoch", str(f.diverging)), ("offset", str(f.start))))),
            ("leader_hw", str(f.leader_hw)),
        ]
        if "KAFKA-14704" in model.config.fetch_bugs:  # the applied mark is a variable then
            fields.append(("applied", boolean(f.applied)))
        return record(fields)
    return record(
        (
            ("leader", _replica(model, f.leader)),
            ("epoch", str(f.epoch)),
            ("start", str(f.start)),
            ("records", _log(f.records)),
            ("leader_hw", str(f.leader_hw)),
        )
    )


def state_variables(model: KafkaModel, state: State) -> list[tuple[str, str]]:
    """``(variable, TLA+ value)`` for every variable of a Kafka model state, in
    ``VARIABLES`` order."""
    reps = list(enumerate(state.replicas))
    names = [model.name(r) for r, _ in reps]

    def per_replica(fn: Callable[[Replica], str]) -> str:
        return function((names[r], fn(rep)) for r, rep in reps)

    q = state.quorum
    quorum = [
        ("leader", _replica(model, q.leader)),
        ("epoch", str(q.epoch)),
        ("isr", tla_set(model.name(r) for r in q.isr)),
    ]
    extra = []
    if model.config.eligible_leader_replicas:  # constant otherwise: left out, as before
        quorum.append(("elr", tla_set(model.name(r) for r in q.elr)))
        extra.append(("lossy", per_replica(lambda rep: boolean(rep.lossy))))
    if model.config.alter_partition:  # the AlterPartition request in flight
        a = q.alter
        quorum.append(
            (
                "alter",
                "None"
                if a is None
                else record((("leader", model.name(a[0])), ("change", f'"{a[1]}"'), ("replica", model.name(a[2])))),
            )
        )
    cfg = model.config
    if cfg.min_isr_changes:  # the operator's changes taken: absent otherwise, as before
        quorum.append(("min_isr_step", str(q.min_isr_step)))
    operators = []
    if cfg.min_isr_lag:
        operators.append(("leader_min_isr_step", str(state.leader_min_isr_step)))
    if cfg.max_disk_failures:
        operators.append(("disk_failures", str(state.disk_failures)))
    return [
        ("alive", per_replica(lambda rep: boolean(rep.alive))),
        ("log", per_replica(lambda rep: _log(rep.log))),
        ("hw", per_replica(lambda rep: str(rep.hw))),
        ("epoch", per_replica(lambda rep: str(rep.epoch))),
        ("leader", per_replica(lambda rep: _replica(model, rep.leader))),
        ("remote_leo", per_replica(lambda rep: function((names[i], str(n)) for i, n in enumerate(rep.remote_leo)))),
        ("inflight", per_replica(lambda rep: _fetch(model, rep.inflight))),
        *extra,
        ("quorum", record(quorum)),
        ("produced", str(state.produced)),
        ("crashes", str(state.crashes)),
        (
            "committed",
            tla_set(sequence((str(offset), _record((epoch, rid)))) for offset, epoch, rid in state.committed),
        ),
        *(
            [("acked", tla_set(sequence((str(offset), _record((epoch, rid)))) for offset, epoch, rid in state.acked))]
            if model.config.acks
            else []
        ),
        *(  # the operator's controlled shutdowns: the mark and the count, only with them
            [
                ("shutting", per_replica(lambda rep: boolean(rep.shutting))),
                ("controlled_shutdowns", str(state.controlled_shutdowns)),
            ]
            if model.config.max_controlled_shutdowns
            else []
        ),
        *operators,
    ]


def state_text(model: KafkaModel, state: State) -> str:
    """A state as TLC's conjunction of ``/\\ var = value`` lines."""
    return "\n".join(f"/\\ {name} = {value}" for name, value in state_variables(model, state))


def step_header(model: KafkaModel, index: int, action: Any) -> str:
    """``State 1: <Initial predicate>`` or ``State n: <Action(R)>``."""
    if action is None:
        return f"State {index}: <Initial predicate>"
    return f"State {index}: <{model.format_action(action)}>"


def trace_text(model: KafkaModel, path: Path) -> str:
    """Every state of a ``checker.core.result.Path``, a header and its variables each,
    separated by blank lines."""
    blocks = []
    for index, step in enumerate(path.steps, 1):
        blocks.append(step_header(model, index, step.action) + "\n" + state_text(model, step.state))
    return "\n\n".join(blocks) + "\n"


def lasso_text(model: KafkaModel, path: Path, loop: int) -> str:
    """A lasso the way TLC prints a behaviour that violates a temporal property: the states
    up to the cycle's last one, then ``Back to state k: <Action>`` for the step that closes
    the cycle; or, when the last state stutters for ever, every state and then
    ``State n: Stuttering``."""
    steps = path.steps
    if loop == len(steps) - 1:
        return trace_text(model, path) + f"\nState {len(steps) + 1}: Stuttering\n"
    blocks = [
        step_header(model, index, step.action) + "\n" + state_text(model, step.state)
        for index, step in enumerate(steps[:-1], 1)
    ]
    blocks.append(f"Back to state {loop + 1}: <{model.format_action(steps[-1].action)}>")
    return "\n\n".join(blocks) + "\n"


def violation_text(model: KafkaModel, violation: Violation, stats: dict[str, Any] | None = None) -> str:
    """A violation the way TLC reports one: the error line, the behaviour, then (as a
    TLA+ comment) kmc's explanation, and, given a ``stats`` dict of the JSON result
    format (``distinct_states``, ``states_generated``, ``depth``), TLC's closing counts.
    """
    loop = violation.loop
    if loop is not None:  # a liveness property's lasso, as TLC prints a temporal violation
        lines = [
            "Error: Temporal properties were violated.",
            "Error: The following behavior constitutes a counter-example:",
            lasso_text(model, violation.path, loop),
        ]
    else:
        kind = "Action property" if violation.kind == "step" else "Invariant"
        lines = [
            f"Error: {kind} {violation.property} is violated.",
            "Error: The behavior up to this point is:",
            trace_text(model, violation.path),
        ]
    lines.append(f"\\* {violation.property}: {violation.explanation}")
    if stats:
        lines.append(f"{stats['states_generated']} states generated, {stats['distinct_states']} distinct states found.")
        lines.append(f"The depth of the complete state graph search is {stats['depth']}.")
    return "\n".join(lines) + "\n"


__all__ = [
    "VARIABLES",
    "lasso_text",
    "state_text",
    "state_variables",
    "step_header",
    "trace_text",
    "violation_text",
]
