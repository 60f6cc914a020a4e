"""Availability: can the partition always get a leader again?

``PartitionRecoverable`` is an always-possibly property (AG EF): from every reachable state,
some path reaches an ``Available`` state — one where a replica leads, or where the
controller may elect one. A reachable state from which no path does is a *trap*: the
partition can never get a leader again. The engines compute the traps from the whole
reachable graph; this module gives the goal predicate and says why a trap is one.

The epoch bound is dropped from ``Available``'s election guard: otherwise every state whose
quorum leader is dead once the controller's epoch reaches ``max_leader_epoch`` would be a
trap, an artefact of the bound and not of Kafka. No other bound can block an election
(Restart has none).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np
from kmc.checker.contract.protocol import POSSIBLY, Property


def available(model: Any, state: Any) -> bool:
    """``Available(state)``: some replica leads, or ElectLeader(n) is enabled for some
    ``n`` when ``quorum.epoch < max_leader_epoch`` is dropped from its guard."""
    return state.leader() is not None or bool(model.electable(state))


def available_mask(kernel: Any, rows: np.ndarray) -> np.ndarray:
    """``available`` over the batch kernel's rows: which rows are goal states (some
    replica leads, or some ElectLeader is enabled when the epoch bound is dropped from its
    guard)."""
    lead = kernel.leads(rows)
    out: np.ndarray = lead >= 0
    for _, _, ok in kernel.election_kinds(rows, kernel.alive_mask(rows), lead):
        out |= ok
    return out


def _names(model: Any, ids: Iterable[int]) -> str:
    return "{" + ", ".join(model.name(r) for r in ids) + "}"


def _records(ids: Iterable[int]) -> str:
    ids = sorted(ids)
    if len(ids) == 1:
        return f"record {ids[0]}"
    return "records " + ", ".join(map(str, ids[:-1])) + f" and {ids[-1]}"


def explain_trap(model: Any, state: Any) -> str:
    """Why no replica can ever lead again from ``state`` (a trap), in a few clauses:
    the ISR and the ELR, the election options, and what happened to their members."""
    cfg = model.config
    q = state.quorum
    reps = state.replicas
    parts = [f"ISR {_names(model, q.isr)} and ELR {_names(model, q.elr)}"]
    parts.append("unclean election is off" if not cfg.unclean_leader_election else "unclean election is on")
    if not cfg.last_known_leader:
        parts.append("no last-known-leader election")
    committed = {(o, (e, i)) for o, e, i in state.committed}
    for r in sorted(set(q.isr) | set(q.elr)):
        rep = reps[r]
        name = model.name(r)
        if rep.alive:
            continue
        if rep.lossy:
            lost = {i for o, (e, i) in committed if o >= len(rep.log) or rep.log[o] != (e, i)}
            what = f"lost committed {_records(lost)}" if lost else "lost part of its log"
            parts.append(f"{name}'s {_loss(state, rep)} {what}, so its restart removes it from the ISR and the ELR")
        else:
            parts.append(f"{name} is down")
    return "; ".join(parts) + ": no replica can ever be elected again"


def _loss(state: Any, rep: Any) -> str:
    """What made a replica lossy: a crash, or (it lost its whole log, and a directory failed
    in this behaviour) its failed log directory, or either when both happened."""
    if not state.disk_failures or rep.log:
        return "crash"
    return "crash or failed log directory" if state.crashes else "failed log directory"


PartitionRecoverable = Property(
    "PartitionRecoverable",
    POSSIBLY,
    available,
    "from every reachable state the partition can still get a leader (always possibly: no trap)",
    symmetric=True,
    explain=explain_trap,
    mask=available_mask,
)
