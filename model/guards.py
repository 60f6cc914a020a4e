"""The Kafka model's guards as named conditions (``checker.contract.protocol.Guard``): for every
action the model may take in a state, enabled or not, each condition of its guard in the
user's words and whether it holds. ``KafkaModel.guards`` answers with them; ``kmc why-not``
and the explorer show the ones that fail.

The conditions are docs/model.md's guards, written a second time, condition by condition,
beside ``KafkaModel.successors`` (which computes the same guards as one expression each):
``tests/test_why_not.py`` checks on every reachable state of small specs of every
truncation rule and option that an action is enabled exactly when each of its conditions
holds. An action added to the model needs its guard here too.
"""

from __future__ import annotations

from kmc.checker.contract.protocol import Guard

from .actions import (
    ALTER_PARTITION,
    APPLY_MIN_ISR,
    BECOME_FOLLOWER,
    CHANGE_MIN_ISR,
    CONTROLLED_SHUTDOWN,
    CRASH,
    DISK_FAILURE,
    ELECT_LEADER,
    EXPAND_ISR,
    FETCH_REQUEST,
    FETCH_RESPONSE,
    PRODUCE,
    RESTART,
    SHRINK_ISR,
    SHUTDOWN_COMPLETE,
    Action,
)
from .config import ACKS_ONE, HIGH_WATERMARK, KAFKA_13916, LEADER_EPOCH_21
from .state import elr_after, leader_min_isr, leader_of, leads, leso, min_isr

Condition = tuple[str, bool]


def _set(model, ids) -> str:
    return "{" + ",".join(model.name(r) for r in ids) + "}"


def kafka_guards(model, state) -> list[Guard]:
    """Every action of ``model`` (a ``KafkaModel``) in ``state``, in docs/model.md's order,
    with its guard's conditions."""
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
                    f"the ISR {_set(model, q.isr)} has at least min_insync_replicas = "
                    f"{leader_min_isr(cfg, state)} members"
                    + (" (the leader's broker's value)" if cfg.min_isr_changes else ""),
                    len(q.isr) >= leader_min_isr(cfg, state),
                ),
            )
        out.append(Guard(Action(PRODUCE, l), conds))
    has_leader = ("the partition has a leader (a live replica the controller elected, in its epoch)", lead is not None)
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
    # 6. ElectLeader
    out += _election_guards(model, state)
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
    # 8. ShrinkIsr, 9. ExpandIsr
    no_request: list[Condition] = (
        [("no AlterPartition request is in flight", q.alter is None)] if cfg.alter_partition else []
    )
    led = reps[lead] if lead is not None else None
    for r in range(n):
        shrink: list[Condition] = [has_leader, *no_request]
        behind = led is not None and (not reps[r].alive or led.remote_leo[r] < len(led.log))
        shrink += [
            (f"{name(r)} is in the ISR {_set(model, q.isr)}", r in q.isr),
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
            (f"{name(r)} is not in the ISR {_set(model, q.isr)}", r not in q.isr),
            (f"{name(r)} is up", f_rep.alive),
            (
                f"{name(r)} follows the leader (it follows {name(f_rep.leader)})",
                lead is not None and f_rep.leader == lead,
            ),
            (f"{name(r)} is in the controller's epoch {q.epoch} (it is in {f_rep.epoch})", f_rep.epoch == q.epoch),
            *_not_shutting(model, state, r, "join the ISR"),
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
    out += _operator_guards(model, state)
    return out


def _not_shutting(model, state, r, what) -> list[Condition]:
    """KIP-841's condition on ``r`` (with controlled shutdowns, unless KAFKA-13916)."""
    if not model.config.max_controlled_shutdowns or model.config.has_bug(KAFKA_13916):
        return []
    text = f"{model.name(r)} is not in controlled shutdown (a replica in controlled shutdown may not {what})"
    return [(text, not state.replicas[r].shutting)]


def _shutdown_candidates(cfg, state, r) -> set[int]:
    """Whom the controller may elect in place of the quorum's leader ``r`` that asks to shut
    down: ElectLeader's kinds over the ISR without ``r`` and the ELR after that change."""
    reps = state.replicas
    q = state.quorum
    isr1 = tuple(x for x in q.isr if x != r)
    elr1 = elr_after(cfg, q.elr, q.isr, isr1, min_isr(cfg, state)) if r in q.isr else q.elr
    live1 = [x for x in isr1 if reps[x].alive]
    out = set()
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


def _operator_guards(model, state) -> list[Guard]:
    """The operator's actions of docs/model.md's "Operator actions" sections: ControlledShutdown
    (one guard per replica the controller may elect in place of the quorum's leader, and one for
    the step that elects nobody), ShutdownComplete, ChangeMinIsr, DiskFailure, ApplyMinIsr."""
    cfg = model.config
    reps = state.replicas
    q = state.quorum
    name = model.name
    n = len(reps)
    out: list[Guard] = []
    if cfg.max_controlled_shutdowns:
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


def _election_guards(model, state) -> list[Guard]:
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
    out = []
    for c in range(len(reps)):
        eligible = [f"{name(c)} is in the ISR {_set(model, q.isr)}"]
        if cfg.eligible_leader_replicas:
            eligible.append(f"in the ELR {_set(model, q.elr)} while no ISR member is up")
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
        elect += _not_shutting(model, state, c, "be elected")
        if cfg.preferred_election:
            elect.append(
                (f"{name(c)} is not the leader a preferred election moves leadership from", replaceable or c != ql)
            )
        elect.append((", or ".join(eligible), c in q.isr or unclean or c in live_elr or bool(last_known and c == ql)))
        out.append(Guard(Action(ELECT_LEADER, c), tuple(elect)))
    return out
