"""The records a counterexample's diagram marks (``render.diagram``): those the violated
property is about, highlighted wherever they appear, and the committed records missing from
a replica's log in the last state, drawn there as ghosts."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kmc.model.state import leader_of

if TYPE_CHECKING:
    from kmc.model.kafka import KafkaModel
    from kmc.model.state import State

Marked = set[tuple[int, ...]]  # (offset, epoch, id) of the records a violation is about
Ghosts = dict[int, list[tuple[int, int, int]]]  # replica -> the records missing from its log

__all__ = ["Ghosts", "Marked", "marks"]


def marks(model: KafkaModel, prop: str, state: State, obligation: Any = None) -> tuple[Marked, Ghosts]:
    """The records the violation is about: ``(marked, ghosts)`` where ``marked`` is a set
    of ``(offset, epoch, id)`` to highlight wherever they appear, and ``ghosts`` maps a
    replica to the committed records missing from its log in the last state (for
    CommittedEventuallyReplicated: the record of the violated ``obligation``, on every
    replica that lacks it)."""
    marked: Marked = set()
    ghosts: Ghosts = {}
    if prop == "CommittedEventuallyReplicated" and obligation is not None:
        offset, epoch, rid = obligation
        marked.add((offset, epoch, rid))
        for r, rep in enumerate(state.replicas):
            if offset >= len(rep.log) or rep.log[offset] != (epoch, rid):
                ghosts.setdefault(r, []).append((offset, epoch, rid))
    elif prop in ("CommittedNeverLost", "LeaderCandidateCompleteness", "AcknowledgedNeverLost"):
        if prop in ("CommittedNeverLost", "AcknowledgedNeverLost"):
            l = leader_of(state)
            who = [] if l is None else [l]
        else:
            q = state.quorum
            who = [r for r in sorted(set(q.isr).union(q.elr)) if state.replicas[r].alive]
        # the records the property keeps: committed ones, or those the producer was told
        kept = state.acked if prop == "AcknowledgedNeverLost" else state.committed
        for r in who:
            log = state.replicas[r].log
            for offset, epoch, rid in kept:
                if offset >= len(log) or log[offset] != (epoch, rid):
                    marked.add((offset, epoch, rid))
                    ghosts.setdefault(r, []).append((offset, epoch, rid))
    elif prop == "LogsNeverDiverge":
        q = state.quorum
        current = [r for r, rep in enumerate(state.replicas) if rep.alive and rep.epoch == q.epoch]
        for i, a in enumerate(current):
            for b in current[i + 1 :]:
                ra, rb = state.replicas[a], state.replicas[b]
                for offset in range(min(ra.hw, rb.hw, len(ra.log), len(rb.log))):
                    if ra.log[offset] != rb.log[offset]:
                        marked.add((offset,) + tuple(ra.log[offset]))
                        marked.add((offset,) + tuple(rb.log[offset]))
    elif prop == "UncommittedNeverExposed":  # below a live replica's HW, never committed
        committed = set(state.committed)
        for rep in state.replicas:
            if rep.alive:
                for offset in range(min(rep.hw, len(rep.log))):
                    record = (offset,) + tuple(rep.log[offset])
                    if record not in committed:
                        marked.add(record)
    return marked, ghosts
