"""The guards of failure and leadership: Crash, Restart, ElectLeader and BecomeFollower."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kmc.checker.contract.protocol import Guard

from .actions import BECOME_FOLLOWER, CRASH, ELECT_LEADER, RESTART, Action
from .config import HIGH_WATERMARK
from .guard_conditions import Condition, not_shutting, set_words
from .state import State, leader_of, leads

if TYPE_CHECKING:
    from .views import ModelView


def failure_guards(model: ModelView, state: State) -> list[Guard]:
    """Crash of each replica (one per cut with ``unflushed_loss``), then Restart of each."""
    cfg = model.config
    reps = state.replicas
    n = len(reps)
    name = model.name
    out: list[Guard] = []
    # 4. Crash
    crashes = (
        f"fewer than max_crashes = {cfg.max_crashes} crashes so far ({state.crashes})",
        state.crashes < cfg.max_crashes,
    )
    for r in range(n):
        up = (f"{name(r)} is up", reps[r].alive)
        cuts = range(len(reps[r].log) + 1) if cfg.unflushed_loss else (None,)
        for cut in cuts:
            out.append(Guard(Action(CRASH, r, cut), (crashes, up)))
    # 5. Restart
    for r in range(n):
        out.append(Guard(Action(RESTART, r), ((f"{name(r)} is down", not reps[r].alive),)))
    return out


def follower_guards(model: ModelView, state: State) -> list[Guard]:
    """BecomeFollower of each replica."""
    cfg = model.config
    reps = state.replicas
    q = state.quorum
    n = len(reps)
    name = model.name
    lead = leader_of(state)
    out: list[Guard] = []
    # 7. BecomeFollower
    ql = q.leader
    asks_leader = not (cfg.truncation == HIGH_WATERMARK or cfg.truncate_on_fetch)
    for r in range(n):
        rep = reps[r]
        follow: list[Condition] = [("the controller has elected a leader", ql is not None)]
        if asks_leader:  # the follower asks the leader where its epoch ends: the leader must lead
            follow.append(
                (
                    f"the controller's leader {name(ql)} leads (up, in the controller's epoch): "
                    f"{name(r)} asks it where to truncate",
                    ql is not None and lead == ql,
                )
            )
        follow += [
            (f"{name(r)} is not the controller's leader", r != ql),
            (f"{name(r)} is up", rep.alive),
            (f"{name(r)}'s epoch {rep.epoch} is below the controller's epoch {q.epoch}", rep.epoch < q.epoch),
        ]
        out.append(Guard(Action(BECOME_FOLLOWER, r), tuple(follow)))
    return out


def election_guards(model: ModelView, state: State) -> list[Guard]:
    """ElectLeader of each replica (``KafkaEffects.electable`` and the epoch bound), a
    condition for each reason an election can be refused."""
    cfg = model.config
    reps = state.replicas
    q = state.quorum
    name = model.name
    ql = q.leader
    replaceable = ql is None or not reps[ql].alive or reps[ql].epoch != q.epoch
    preferred = cfg.preferred_election and ql is not None and leads(state, ql)
    live_isr = [r for r in q.isr if reps[r].alive]
    live_elr = [r for r in q.elr if reps[r].alive] if not live_isr else []
    last_known = cfg.last_known_leader and not q.isr and not q.elr and ql is not None and reps[ql].alive
    unclean = cfg.unclean_leader_election and not live_isr and not live_elr and not last_known
    bound = (
        f"the controller's epoch {q.epoch} is below max_leader_epoch = {cfg.max_leader_epoch}",
        q.epoch < cfg.max_leader_epoch,
    )
    gone = f"the controller's leader {name(ql)} is gone (none, down, or no longer in the controller's epoch)"
    if cfg.preferred_election:
        gone += ", or a preferred election may move leadership from it"
    may_replace = (gone, replaceable or preferred)
    out: list[Guard] = []
    for c in range(len(reps)):
        eligible = [f"{name(c)} is in the ISR {set_words(model, q.isr)}"]
        if cfg.eligible_leader_replicas:
            eligible.append(f"in the ELR {set_words(model, q.elr)} while no ISR member is up")
        if cfg.last_known_leader:
            eligible.append("the last known leader, up again, while the ISR and the ELR are empty")
        if cfg.unclean_leader_election:
            eligible.append(
                "any replica (unclean election) while no ISR"
                + (" or ELR" if cfg.eligible_leader_replicas else "")
                + " member is up"
                + (" and no last-known-leader election applies" if cfg.last_known_leader else "")
            )
        elect: list[Condition] = [bound, may_replace, (f"{name(c)} is up", reps[c].alive)]
        elect += not_shutting(model, state, c, "be elected")
        if cfg.preferred_election:
            elect.append(
                (f"{name(c)} is not the leader a preferred election moves leadership from", replaceable or c != ql)
            )
        elect.append((", or ".join(eligible), c in q.isr or unclean or c in live_elr or bool(last_known and c == ql)))
        out.append(Guard(Action(ELECT_LEADER, c), tuple(elect)))
    return out
