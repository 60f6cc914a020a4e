"""The guards of the operator's actions (docs/model.md's "Operator actions" sections):
ControlledShutdown, ShutdownComplete, ChangeMinIsr, DiskFailure and ApplyMinIsr."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kmc.checker.contract.protocol import Guard

from .actions import APPLY_MIN_ISR, CHANGE_MIN_ISR, CONTROLLED_SHUTDOWN, DISK_FAILURE, SHUTDOWN_COMPLETE, Action
from .config import KAFKA_13916, Config
from .guard_conditions import Condition
from .state import State, elr_after, min_isr

if TYPE_CHECKING:
    from .views import ModelView


def _shutdown_candidates(cfg: Config, state: State, r: int) -> set[int]:
    """Whom the controller may elect in place of the quorum's leader ``r`` that asks to shut
    down: ElectLeader's kinds over the ISR without ``r`` and the ELR after that change."""
    reps = state.replicas
    q = state.quorum
    isr1 = tuple(x for x in q.isr if x != r)
    elr1 = elr_after(cfg, q.elr, q.isr, isr1, min_isr(cfg, state)) if r in q.isr else q.elr
    live1 = [x for x in isr1 if reps[x].alive]
    out: set[int] = set()
    for c in range(len(reps)):
        if c == r or not reps[c].alive or (reps[c].shutting and not cfg.has_bug(KAFKA_13916)):
            continue
        if c in isr1:
            out.add(c)
        elif cfg.eligible_leader_replicas and not live1 and c in elr1:
            out.add(c)
        elif cfg.unclean_leader_election and not live1 and not any(reps[x].alive for x in elr1):
            out.add(c)
    return out


def _shutdown_guards(model: ModelView, state: State) -> list[Guard]:
    """ControlledShutdown of each replica (for the quorum's leader, one guard per replica the
    controller may elect in its place, and one for the step that elects nobody), then
    ShutdownComplete of each."""
    cfg = model.config
    reps = state.replicas
    q = state.quorum
    name = model.name
    n = len(reps)
    out: list[Guard] = []
    budget = (
        f"fewer than max_controlled_shutdowns = {cfg.max_controlled_shutdowns} controlled shutdowns so far "
        f"({state.controlled_shutdowns})",
        state.controlled_shutdowns < cfg.max_controlled_shutdowns,
    )
    for r in range(n):
        rep = reps[r]
        common: list[Condition] = [
            budget,
            (f"{name(r)} is up", rep.alive),
            (f"{name(r)} is not already in controlled shutdown", not rep.shutting),
        ]
        if q.leader != r:
            out.append(Guard(Action(CONTROLLED_SHUTDOWN, r), tuple(common)))
            continue
        # The quorum's leader: the controller moves the leadership, in a new leader epoch.
        common.append(
            (
                f"the controller's epoch {q.epoch} is below max_leader_epoch = {cfg.max_leader_epoch} "
                f"(moving {name(r)}'s leadership takes a new epoch)",
                q.epoch < cfg.max_leader_epoch,
            )
        )
        candidates = _shutdown_candidates(cfg, state, r)
        for c in range(n):
            if c == r:
                continue
            out.append(
                Guard(
                    Action(CONTROLLED_SHUTDOWN, r, to=c),
                    (
                        *common,
                        (
                            f"the controller may elect {name(c)} in {name(r)}'s place (up, not in controlled "
                            f"shutdown, and in the ISR without {name(r)}, or in its ELR or uncleanly when no "
                            "member of that ISR is up)",
                            c in candidates,
                        ),
                    ),
                )
            )
        out.append(
            Guard(
                Action(CONTROLLED_SHUTDOWN, r),
                (*common, (f"the controller may elect nobody in {name(r)}'s place", not candidates)),
            )
        )
    for r in range(n):
        out.append(
            Guard(
                Action(SHUTDOWN_COMPLETE, r),
                ((f"{name(r)} is up", reps[r].alive), (f"{name(r)} is in controlled shutdown", reps[r].shutting)),
            )
        )
    return out


def operator_guards(model: ModelView, state: State) -> list[Guard]:
    """The operator's actions of docs/model.md's "Operator actions" sections: ControlledShutdown
    and ShutdownComplete (with ``max_controlled_shutdowns``), ChangeMinIsr, DiskFailure,
    ApplyMinIsr."""
    cfg = model.config
    reps = state.replicas
    q = state.quorum
    name = model.name
    n = len(reps)
    out: list[Guard] = _shutdown_guards(model, state) if cfg.max_controlled_shutdowns else []
    if cfg.min_isr_changes:
        left = len(cfg.min_isr_changes) - q.min_isr_step
        out.append(
            Guard(
                Action(CHANGE_MIN_ISR, 0),
                ((f"the operator has a min ISR change left ({left} of {len(cfg.min_isr_changes)})", left > 0),),
            )
        )
    if cfg.max_disk_failures:
        for r in range(n):
            out.append(
                Guard(
                    Action(DISK_FAILURE, r),
                    (
                        (
                            f"fewer than max_disk_failures = {cfg.max_disk_failures} failed log directories so far "
                            f"({state.disk_failures})",
                            state.disk_failures < cfg.max_disk_failures,
                        ),
                        (f"{name(r)} is up", reps[r].alive),
                    ),
                )
            )
    if cfg.min_isr_lag:
        out.append(
            Guard(
                Action(APPLY_MIN_ISR, 0),
                (
                    (
                        f"the leader's broker has applied fewer min ISR changes ({state.leader_min_isr_step}) "
                        f"than the controller made ({q.min_isr_step})",
                        state.leader_min_isr_step < q.min_isr_step,
                    ),
                ),
            )
        )
    return out
