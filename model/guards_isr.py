"""The guards of the ISR: ShrinkIsr, ExpandIsr and AlterPartition."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kmc.checker.contract.protocol import Guard

from .actions import ALTER_PARTITION, EXPAND_ISR, SHRINK_ISR, Action
from .config import LEADER_EPOCH_21
from .guard_conditions import Condition, has_leader_condition, not_shutting, set_words
from .state import State, leader_of, leso

if TYPE_CHECKING:
    from .views import ModelView


def isr_guards(model: ModelView, state: State) -> list[Guard]:
    """ShrinkIsr of each replica, ExpandIsr of each, then (with ``alter_partition``)
    AlterPartition of each."""
    cfg = model.config
    reps = state.replicas
    q = state.quorum
    n = len(reps)
    name = model.name
    lead = leader_of(state)
    out: list[Guard] = []
    has_leader = has_leader_condition(lead)
    # 8. ShrinkIsr, 9. ExpandIsr
    no_request: list[Condition] = (
        [("no AlterPartition request is in flight", q.alter is None)] if cfg.alter_partition else []
    )
    led = reps[lead] if lead is not None else None
    for r in range(n):
        shrink: list[Condition] = [has_leader, *no_request]
        behind = led is not None and (not reps[r].alive or led.remote_leo[r] < len(led.log))
        shrink += [
            (f"{name(r)} is in the ISR {set_words(model, q.isr)}", r in q.isr),
            (f"{name(r)} is not the leader", r != lead),
            (
                f"{name(r)} is down, or the leader knows it is behind the leader's log end"
                + (f" ({name(r)} has fetched up to {led.remote_leo[r]} of {len(led.log)})" if led is not None else ""),
                behind,
            ),
        ]
        out.append(Guard(Action(SHRINK_ISR, r), tuple(shrink)))
    v21 = cfg.truncation == LEADER_EPOCH_21
    floor = leso(state, lead) if v21 and lead is not None else 0
    for r in range(n):
        f_rep = reps[r]
        fetched = led.remote_leo[r] if led is not None else 0
        expand: list[Condition] = [has_leader, *no_request]
        expand += [
            (f"{name(r)} is not in the ISR {set_words(model, q.isr)}", r not in q.isr),
            (f"{name(r)} is up", f_rep.alive),
            (
                f"{name(r)} follows the leader (it follows {name(f_rep.leader)})",
                lead is not None and f_rep.leader == lead,
            ),
            (f"{name(r)} is in the controller's epoch {q.epoch} (it is in {f_rep.epoch})", f_rep.epoch == q.epoch),
            *not_shutting(model, state, r, "join the ISR"),
            (
                f"the leader knows {name(r)} has fetched up to its high watermark"
                + (f" {led.hw} ({name(r)} has fetched up to {fetched})" if led is not None else ""),
                led is not None and fetched >= led.hw,
            ),
        ]
        if v21:  # KAFKA-7128
            expand.append(
                (
                    f"the leader knows {name(r)} has fetched up to the leader's epoch start offset {floor} "
                    "(Kafka 2.1's rule)",
                    led is not None and fetched >= floor,
                )
            )
        out.append(Guard(Action(EXPAND_ISR, r), tuple(expand)))
    # 10. AlterPartition
    if cfg.alter_partition:
        for r in range(n):
            about = q.alter is not None and q.alter[2] == r
            out.append(
                Guard(
                    Action(ALTER_PARTITION, r),
                    ((f"a request to change {name(r)}'s ISR membership waits for the controller", about),),
                )
            )
    return out
