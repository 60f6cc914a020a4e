"""The swimlane picture of a counterexample, as plain values: what each lane shows at each
step, which messages go between lanes, and what the violation marks.

One lane for the controller and one per replica; one column per state of the trace. A
column carries the action that led to its state and the model's sentence for what it did
(``checker.contract.protocol.format_action`` and ``describe_step``, as the terminal shows them),
each replica's log as records with its HW and LEO, the controller's leader, epoch, ISR,
ELR, AlterPartition request in flight and min ISR (with the operator's changes), and the
events of the step: fetch requests and responses between replicas, elections, ISR changes
and leader changes from the controller, a leader's request to change the ISR and the
controller's answer, an operator's controlled shutdown (the broker's request, then the
controller's answer) and a min ISR change reaching the leader's broker; crashes, restarts,
clean stops and failed log directories are marks of a replica's cell.
The renderers (``render.svg``, ``render.mermaid``, ``render.html``) only draw this.
"""

from __future__ import annotations

import builtins
from typing import TYPE_CHECKING, Any

import attrs
from kmc.checker.contract.protocol import action_name
from kmc.model.describe import plural, replica_set
from kmc.model.state import SHRINK, leads

from .diagram_marks import marks
from .state_view import request_text
from .terminal import EPOCH_STYLES, UNCLEAN_NOTE

if TYPE_CHECKING:
    from kmc.checker.core.result import Path, Step, Violation
    from kmc.model.kafka import KafkaModel
    from kmc.model.state import State

    from .diagram_marks import Ghosts, Marked

CONTROLLER = 0  # the controller's lane; replica r is lane r + 1
MARKER = "kmc counterexample diagram"  # every diagram file kmc writes holds this text


HOLDS = "holds"  # a diagram's kind when its last state violates nothing (build_path)


def epoch_colour(epoch: int) -> str:
    """The terminal's colour of a leader epoch (``render.terminal.EPOCH_STYLES``), as
    ``#rrggbb``."""
    from rich.color import Color

    return Color.parse(EPOCH_STYLES[epoch % len(EPOCH_STYLES)]).get_truecolor().hex


def record_text(offset: int, epoch: int, rid: int) -> str:
    """``0:e0·r0``, as the terminal writes a record at an offset."""
    return f"{offset}:e{epoch}·r{rid}"


@attrs.frozen
class Box:
    """A record of a log: its offset, the epoch it was written in and its producer id.
    ``new``: it was not at this offset in the step before; ``lost``: the committed record
    the violation lost (or a record of the divergence, or the uncommitted record a replica
    exposes below its high watermark); ``ghost``: not in the log — where
    the lost record should be, or the unflushed tail a lossy crash dropped."""

    offset: int
    epoch: int
    rid: int
    new: bool = False
    lost: bool = False
    ghost: bool = False
    dropped: bool = False  # a ghost: the unflushed tail a lossy crash dropped

    @property
    def text(self) -> str:
        return record_text(self.offset, self.epoch, self.rid)


@attrs.frozen
class ReplicaCell:
    alive: bool
    lossy: bool
    role: str  # "leader", "follower of A", "deposed", "leader (down)", "—"
    epoch: int
    boxes: tuple[Box, ...]  # by offset (ghosts after the log's end, or in place)
    hw: int
    leo: int
    inflight: str | None  # the fetch response on its way to this replica
    changed: bool
    crashed: bool = False  # this step crashed it
    dropped: int = 0  # records this step removed from its log (a lossy crash, a truncation)
    # the offset this step truncated its log to on a diverging answer (truncate_on_fetch), else None
    truncated_to: int | None = None
    shutting: bool = False  # alive and in controlled shutdown (max_controlled_shutdowns)
    failed_dir: bool = False  # this step failed its log directory (DiskFailure): its log is gone, no crash
    stopped: bool = False  # this step stopped it cleanly (ShutdownComplete): down, its log whole, no crash


@attrs.frozen
class ControllerCell:
    leader: str
    epoch: int
    isr: str
    elr: str | None  # None without eligible leader replicas
    changed: bool
    requests: bool = False  # the configuration sends ISR changes as requests (alter_partition)
    request: str | None = None  # the request in flight ("A asks to add B"), or None
    request_lane: int | None = None  # the lane of the leader that sent it
    request_short: str | None = None  # the same for a narrow column: "A asks +B"
    min_isr: int | None = None  # the controller's min ISR (with min_isr_changes), else None
    leader_min_isr: int | None = None  # the one the leader's broker uses (with min_isr_lag), else None


@attrs.frozen
class Event:
    """A message between two lanes (``source`` and ``target`` are lane numbers)."""

    # fetch-request, fetch-response, diverging-response (the fetch path's answer with a diverging
    # epoch), stale-response, elect, follow, isr, request, answer, refused
    kind: str
    source: int
    target: int
    label: str


@attrs.frozen
class Column:
    number: int  # the state's number in the trace, 1 for the initial state
    action: str  # "initial" for the first column
    name: str  # the action's name ("" for the first column)
    description: str
    controller: ControllerCell
    replicas: tuple[ReplicaCell, ...]
    events: tuple[Event, ...]
    committed: tuple[str, ...] = ()  # record texts this step committed (below a leader's HW for the first time)
    acked: tuple[str, ...] = ()  # record texts the producer was told at this step are written (with acks)


@attrs.frozen
class Diagram:
    lanes: tuple[str, ...]  # lane names: "controller", then the replicas
    columns: tuple[Column, ...]
    property: str
    kind: str  # "always", "step" or "possibly"
    verdict: str  # "CommittedNeverLost is violated in State 10"
    explanation: str
    lost: tuple[str, ...]  # record texts the violation marks
    traps: int | None = None
    note: str = ""
    options: tuple[str, ...] = ()  # the AlterPartition options that are on ("alter_partition", "broker_epochs")
    # A liveness property's lasso: the index of the column where its cycle starts (the last
    # column is that state again), or of the last column when the behaviour stutters there
    # for ever; None for any other counterexample.
    loop: int | None = None

    @builtins.property  # (the field ``property`` hides the builtin here)
    def lasso(self) -> bool:
        return self.loop is not None

    @builtins.property  # (the field ``property`` hides the builtin here)
    def stutters(self) -> bool:
        """The lasso ends in a state where no fair action is enabled (no cycle)."""
        return self.loop is not None and self.loop == len(self.columns) - 1


LIVENESS_KINDS = ("always-eventually", "leads-to")  # checker.contract.protocol's liveness kinds


def cycle_text(d: Diagram) -> str:
    """What a lasso's end does, in a few words: ``back to State 8, for ever`` or ``State 5
    for ever: no fair action is enabled``."""
    if d.stutters:
        return f"State {len(d.columns)} for ever: no fair action is enabled"
    assert d.loop is not None  # a lasso's
    return f"back to State {d.loop + 1}, for ever"


def build(model: KafkaModel, violation: Violation) -> Diagram:
    """The diagram of ``violation``'s path (a ``checker.core.result.Violation``; a liveness
    property's lasso is drawn with its cycle)."""
    return build_path(
        model,
        violation.path,
        violation.property,
        violation.kind,
        violation.explanation,
        violation.traps,
        loop=violation.loop,
        obligation=violation.obligation,
    )


def build_path(
    model: KafkaModel,
    path: Path,
    prop: str = "",
    kind: str = HOLDS,
    explanation: str = "",
    traps: int | None = None,
    *,
    loop: int | None = None,
    obligation: Any = None,
) -> Diagram:
    """The diagram of any path (a ``checker.core.result.Path``): a counterexample's, with the
    property ``prop`` of kind ``kind`` it violates and why, or (``kind`` ``HOLDS``, what
    ``kmc explore`` draws for a walk) a path whose last state violates nothing. A liveness
    property's lasso gives ``loop`` (the index of the state its cycle returns to, the last
    one when it stutters) and, for a leads-to family, the violated ``obligation``."""
    steps = path.steps
    states = [s.state for s in steps]
    marked, ghosts = marks(model, prop, states[-1], obligation)
    columns = []
    for i, step in enumerate(steps):
        prev = states[i - 1] if i else None
        last = i == len(steps) - 1
        columns.append(_column(model, i + 1, step, prev, marked, ghosts if last else {}, last))
    n = len(steps)
    if kind == HOLDS:
        verdict = f"State {n}"
    elif kind == "step" and n > 1:
        verdict = (
            f"{prop} is violated by the last transition, State {n - 1} → "
            f"State {n} ({model.format_action(steps[-1].action)})"
        )
    elif kind == "possibly":
        verdict = f"{prop} fails: State {n} is a trap"
    elif kind in LIVENESS_KINDS and loop is not None:
        verdict = f"{prop} fails"  # where the lasso ends is the explanation's first words
    else:
        verdict = f"{prop} is violated in State {n}"
    note = UNCLEAN_NOTE if (prop == "CommittedNeverLost" and model.config.unclean_leader_election) else ""
    lost = tuple(record_text(*m) for m in sorted(marked))
    options = tuple(n for n in ("alter_partition", "broker_epochs") if getattr(model.config, n))
    return Diagram(
        lanes=("controller",) + tuple(model.config.replicas),
        columns=tuple(columns),
        property=prop,
        kind=kind,
        verdict=verdict,
        explanation=explanation,
        lost=lost,
        traps=traps,
        note=note,
        options=options,
        loop=loop if kind in LIVENESS_KINDS else None,
    )


def _role(model: KafkaModel, state: State, r: int) -> str:
    rep = state.replicas[r]
    if leads(state, r):
        return "leader"
    if rep.leader is None:
        return "—"
    if rep.leader == r:
        return "leader (down)" if not rep.alive else "deposed"
    return f"follower of {model.name(rep.leader)}"


def _replica_cell(
    model: KafkaModel, state: State, prev: State | None, r: int, action: Any, marked: Marked, ghosts: Ghosts
) -> ReplicaCell:
    rep = state.replicas[r]
    old = prev.replicas[r] if prev is not None else None
    boxes = []
    for offset, (epoch, rid) in enumerate(rep.log):
        new = old is not None and (offset >= len(old.log) or old.log[offset] != (epoch, rid))
        boxes.append(Box(offset, epoch, rid, new=new, lost=(offset, epoch, rid) in marked))
    crashed = action is not None and action_name(action) == "Crash" and action.replica == r
    dropped = []  # records this step removed from the log: a lossy crash's tail, or a truncation
    if old is not None:
        for offset, record in enumerate(old.log):
            if offset >= len(rep.log) or rep.log[offset] != record:
                dropped.append((offset,) + tuple(record))
    for offset, epoch, rid in dropped:
        boxes.append(Box(offset, epoch, rid, lost=(offset, epoch, rid) in marked, ghost=True, dropped=True))
    for offset, epoch, rid in ghosts.get(r, ()):
        boxes.append(Box(offset, epoch, rid, lost=True, ghost=True))
    f = rep.inflight
    inflight = None
    if f is not None and f.diverging is not None:
        inflight = f"diverging answer from {model.name(f.leader)}: e{f.diverging} ends @{f.start}, hw {f.leader_hw}"
        if f.applied:
            inflight += " (hw taken; truncation to come)"
    elif f is not None:
        what = plural(len(f.records), "record")
        inflight = f"response from {model.name(f.leader)} on its way: {what}, hw {f.leader_hw}"
    truncated_to = None
    if action is not None and action_name(action) == "FetchResponse" and action.replica == r and old is not None:
        answer = old.inflight
        fresh = answer is not None and old.alive and old.leader == answer.leader and old.epoch == answer.epoch
        if fresh and answer is not None and answer.diverging is not None and rep.inflight is None:
            truncated_to = len(rep.log)
    return ReplicaCell(
        alive=rep.alive,
        lossy=rep.lossy,
        role=_role(model, state, r),
        epoch=rep.epoch,
        boxes=tuple(boxes),
        hw=rep.hw,
        leo=len(rep.log),
        inflight=inflight,
        changed=old is not None and old != rep,
        crashed=crashed,
        dropped=len(dropped),
        truncated_to=truncated_to,
        shutting=rep.shutting,
        failed_dir=action is not None and action_name(action) == "DiskFailure" and action.replica == r,
        stopped=action is not None and action_name(action) == "ShutdownComplete" and action.replica == r,
    )


def _controller_cell(model: KafkaModel, state: State, prev: State | None) -> ControllerCell:
    q = state.quorum
    elr = replica_set(model, q.elr) if model.config.eligible_leader_replicas else None
    requests = bool(model.config.alter_partition)
    pending = q.alter if requests else None
    cfg = model.config
    changes, lag = bool(cfg.min_isr_changes), bool(cfg.min_isr_lag)
    applied = prev is not None and lag and prev.leader_min_isr_step != state.leader_min_isr_step
    return ControllerCell(
        leader=model.name(q.leader),
        epoch=q.epoch,
        isr=replica_set(model, q.isr),
        elr=elr,
        changed=prev is not None and (prev.quorum != q or applied),
        requests=requests,
        request=None if pending is None else request_text(model, pending),
        request_lane=None if pending is None else pending[0] + 1,
        request_short=None
        if pending is None
        else (f"{model.name(pending[0])} asks {'−' if pending[1] == SHRINK else '+'}{model.name(pending[2])}"),
        min_isr=cfg.min_isr_at(q.min_isr_step) if changes else None,
        leader_min_isr=cfg.min_isr_at(state.leader_min_isr_step) if lag else None,
    )


def _column(
    model: KafkaModel, number: int, step: Step, prev: State | None, marked: Marked, ghosts: Ghosts, last: bool
) -> Column:
    state, action = step.state, step.action
    cells = tuple(_replica_cell(model, state, prev, r, action, marked, ghosts) for r in range(len(state.replicas)))
    events: tuple[Event, ...] = ()
    if action is None:
        text, name, description = "initial", "", _initial_text(model, state)
    else:
        assert prev is not None  # a step follows a state
        text, name = model.format_action(action), action_name(action)
        description = model.describe_step(prev, action, state)
        events = _events(model, prev, action, state)
    fresh = () if prev is None else tuple(record_text(*c) for c in state.committed if c not in prev.committed)
    acked = state.acked
    told = () if prev is None else tuple(record_text(*c) for c in acked if c not in prev.acked)
    return Column(
        number=number,
        action=text,
        name=name,
        description=description,
        controller=_controller_cell(model, state, prev),
        replicas=cells,
        events=events,
        committed=fresh,
        acked=told,
    )


def _initial_text(model: KafkaModel, state: State) -> str:
    q = state.quorum
    return f"{model.name(q.leader)} leads in epoch {q.epoch}, ISR {replica_set(model, q.isr)}, every log empty"


def _events(model: KafkaModel, before: State, action: Any, after: State) -> tuple[Event, ...]:
    """The messages of one step between lanes."""
    name, r = action_name(action), action.replica
    lane = r + 1
    if name == "FetchRequest":
        f = after.replicas[r].inflight
        if f.diverging is not None:  # the fetch path: from the log end, naming the last epoch
            log = before.replicas[r].log
            return (Event("fetch-request", lane, f.leader + 1, f"fetch @{len(log)} e{log[-1][0]}"),)
        return (Event("fetch-request", lane, f.leader + 1, f"fetch @{f.start}"),)
    if name == "FetchResponse":
        f = before.replicas[r].inflight
        b = before.replicas[r]
        if not (b.alive and b.leader == f.leader and b.epoch == f.epoch):
            return (Event("stale-response", f.leader + 1, lane, "stale: dropped"),)
        if f.diverging is not None:
            if after.replicas[r].inflight is not None:  # KAFKA-14704's first half
                label = f"hw {f.leader_hw} first"
            else:
                label = f"diverging e{f.diverging} @{f.start}: truncate to {len(after.replicas[r].log)}"
            return (Event("diverging-response", f.leader + 1, lane, label),)
        return (Event("fetch-response", f.leader + 1, lane, f"{plural(len(f.records), 'record')}, hw {f.leader_hw}"),)
    if name == "ElectLeader":
        return (Event("elect", CONTROLLER, lane, f"leader, e{after.quorum.epoch}"),)
    if name == "BecomeFollower":
        return (Event("follow", CONTROLLER, lane, f"follow {model.name(after.quorum.leader)}"),)
    if name in ("ShrinkIsr", "ExpandIsr"):
        sign = "−" if name == "ShrinkIsr" else "+"
        alter = after.quorum.alter
        if alter is not None and before.quorum.alter is None:  # alter_partition: a request only
            return (Event("request", alter[0] + 1, CONTROLLER, f"asks ISR {sign}{model.name(r)}"),)
        return (Event("isr", CONTROLLER, lane, f"ISR {sign}{model.name(r)}"),)
    if name == "AlterPartition" and before.quorum.alter is not None:
        p, change, r = before.quorum.alter
        sign = "−" if change == SHRINK else "+"
        # refused (broker epochs): a replica down or in controlled shutdown, or KAFKA-15221's stale epoch
        if model.config.broker_epochs and change != SHRINK and after.quorum.isr == before.quorum.isr:
            return (Event("refused", CONTROLLER, p + 1, f"refused {sign}{model.name(r)}"),)
        return (Event("answer", CONTROLLER, p + 1, f"ISR {sign}{model.name(r)}"),)
    if name == "ControlledShutdown":
        # the operator's request, then the controller's answer: the ISR without r, or its leadership moved
        out = [Event("request", lane, CONTROLLER, "controlled shutdown")]
        qb, qa = before.quorum, after.quorum
        if qa.leader != qb.leader:
            if qa.leader is not None:
                out.append(Event("elect", CONTROLLER, qa.leader + 1, f"leader, e{qa.epoch}"))
            else:
                out.append(Event("isr", CONTROLLER, lane, f"no leader, e{qa.epoch}"))
        elif r in qb.isr and r not in qa.isr:
            out.append(Event("isr", CONTROLLER, lane, f"ISR −{model.name(r)}"))
        return tuple(out)
    if name == "Restart" and before.quorum.isr != after.quorum.isr:
        return (Event("isr", CONTROLLER, lane, f"ISR −{model.name(r)}"),)
    if name == "DiskFailure" and before.quorum.isr != after.quorum.isr:  # the controller removes it
        return (Event("isr", CONTROLLER, lane, f"ISR −{model.name(r)}"),)
    if name in ("ChangeMinIsr", "ApplyMinIsr"):
        return _min_isr_event(model, before, after, name)
    return ()


def _min_isr_event(model: KafkaModel, before: State, after: State, name: str) -> tuple[Event, ...]:
    """A min ISR change reaching the leader's broker: with ChangeMinIsr when it applies the
    change at once, else with ApplyMinIsr (``min_isr_lag``); none without a quorum leader."""
    cfg = model.config
    q = after.quorum
    if q.leader is None or (name == "ChangeMinIsr" and cfg.min_isr_lag):
        return ()
    step = after.leader_min_isr_step if cfg.min_isr_lag else q.min_isr_step
    return (Event("answer", CONTROLLER, q.leader + 1, f"min ISR {cfg.min_isr_at(step)}"),)


def lost_label(d: Diagram) -> str:
    """What the records ``d.lost`` are: ``"lost record"``, ``"lost acknowledged records"``..."""
    kind = {
        "LogsNeverDiverge": "diverging",
        "AcknowledgedNeverLost": "lost acknowledged",
        "CommittedEventuallyReplicated": "missing",
        "UncommittedNeverExposed": "exposed",
    }.get(d.property, "lost")
    return f"{kind} record{'s' if len(d.lost) > 1 else ''}"


__all__ = [
    "Box",
    "CONTROLLER",
    "Column",
    "ControllerCell",
    "Diagram",
    "Event",
    "MARKER",
    "ReplicaCell",
    "LIVENESS_KINDS",
    "build",
    "cycle_text",
    "lost_label",
    "epoch_colour",
    "record_text",
]
