"""The guards of the data path: Produce, FetchRequest and FetchResponse."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kmc.checker.contract.protocol import Guard

from .actions import FETCH_REQUEST, FETCH_RESPONSE, PRODUCE, Action
from .config import ACKS_ONE
from .guard_conditions import Condition, has_leader_condition, set_words
from .state import State, leader_min_isr, leader_of

if TYPE_CHECKING:
    from .views import ModelView


def data_guards(model: ModelView, state: State) -> list[Guard]:
    """Produce of each replica, then FetchRequest and FetchResponse of each."""
    cfg = model.config
    reps = state.replicas
    q = state.quorum
    n = len(reps)
    name = model.name
    lead = leader_of(state)
    out: list[Guard] = []
    records = (
        f"fewer than max_messages = {cfg.max_messages} records produced so far ({state.produced})",
        state.produced < cfg.max_messages,
    )
    # 1. Produce
    for l in range(n):
        rep = reps[l]
        conds: tuple[Condition, ...]
        if cfg.acks == ACKS_ONE:  # any replica that believes it leads appends
            conds = (
                records,
                (f"{name(l)} is up", rep.alive),
                (f"{name(l)} believes it leads (it is its own leader)", rep.leader == l),
            )
        else:
            conds = (
                (f"{name(l)} is the controller's leader (it is {name(q.leader)})", q.leader == l),
                (f"{name(l)} is up", rep.alive),
                (
                    f"{name(l)} knows it leads in the controller's epoch {q.epoch} "
                    f"(it follows {name(rep.leader)} in epoch {rep.epoch})",
                    rep.leader == l and rep.epoch == q.epoch,
                ),
                records,
                (
                    f"the ISR {set_words(model, q.isr)} has at least min_insync_replicas = "
                    f"{leader_min_isr(cfg, state)} members"
                    + (" (the leader's broker's value)" if cfg.min_isr_changes else ""),
                    len(q.isr) >= leader_min_isr(cfg, state),
                ),
            )
        out.append(Guard(Action(PRODUCE, l), conds))
    has_leader = has_leader_condition(lead)
    # 2. FetchRequest
    for f in range(n):
        r = reps[f]
        out.append(
            Guard(
                Action(FETCH_REQUEST, f),
                (
                    has_leader,
                    (f"{name(f)} is not the leader", f != lead),
                    (f"{name(f)} is up", r.alive),
                    (
                        f"{name(f)} follows the leader (it follows {name(r.leader)})",
                        lead is not None and r.leader == lead,
                    ),
                    (
                        f"{name(f)} is in the leader's epoch (it is in epoch {r.epoch})",
                        lead is not None and r.epoch == reps[lead].epoch,
                    ),
                    (f"{name(f)} has no fetch in flight", r.inflight is None),
                ),
            )
        )
    # 3. FetchResponse
    for f in range(n):
        out.append(
            Guard(
                Action(FETCH_RESPONSE, f),
                ((f"a fetch response to {name(f)} is in flight", reps[f].inflight is not None),),
            )
        )
    return out
