"""An independent oracle: a deliberately naive checker written from docs/model.md alone.

It shares nothing with the engines or with ``model/kafka.py`` except the attrs state
classes of ``model/state.py`` (plain data) and ``model.Config`` (the constants): no
kernel, no fingerprints, no engine code, no successor function of the reference model.
Whole states go into a Python dict, the search is a plain breadth-first search, and
every action is written the obvious way with ``evolve``, in the order docs/model.md
enumerates them (actions 1–9, then AlterPartition, ControlledShutdown, ShutdownComplete;
then replica order, then cut point or candidate). It covers the whole
model: the four truncation rules (with the 2.1 rule's ISR guard), min ISR, unclean
election, unflushed loss, preferred election, ``initial_leader = any``, the HW gate,
eligible leader replicas (the lossy crash and the unclean-shutdown restart with its
fence), the last-known-leader election, producer acknowledgements (``acks``), ISR
changes through the controller (``alter_partition``, ``broker_epochs``: the request in
flight, the maximal ISR, AlterPartition's answer and the drops), and truncation in the fetch
path (``truncate_on_fetch``: the epoch caches as dicts, the diverging answer, KAFKA-13141's
false log end and KAFKA-14704's two-step response), the operator's controlled
shutdown (``max_controlled_shutdowns``: ControlledShutdown and ShutdownComplete, acceptable
leaders, KAFKA-13916) and KAFKA-15221's broker-epoch race, and the operator's min ISR changes
and failed log directories (ChangeMinIsr, DiskFailure, ApplyMinIsr: the controller's and the
leader's min ISR, KAFKA-16540 and KAFKA-16234); every
invariant and the step property; and ``PartitionRecoverable`` (AG EF), decided the naive
way: the predecessors of every state are kept as Python sets, and a plain BFS over the
reversed graph from the ``Available`` states finds every state that can still reach one;
the others are the traps.

It is slow (a few thousand states a second) and meant for specs of at most tens of
thousands of states. The tests compare its distinct/generated counts, depth, levels,
shortest trace lengths and trap counts with the engines'.
"""

from __future__ import annotations

from collections import deque

import attrs

from kmc.model.state import Fetch, Quorum, Replica, State

HW_RULE, LE_RULE, KIP279_RULE = "high-watermark", "leader-epoch", "leader-epoch-kip279"
V21_RULE = "leader-epoch-2.1"
PR = "PartitionRecoverable"


# -- helpers ---------------------------------------------------------------------------

_FIELDS = {cls: tuple(a.name for a in attrs.fields(cls)) for cls in (Replica, State)}


def evolve(obj, **changes):
    """``attrs.evolve`` for the state classes, without its per-call introspection."""
    return type(obj)(*[changes[n] if n in changes else getattr(obj, n) for n in _FIELDS[type(obj)]])


def leads(s: State, r: int) -> bool:
    rep = s.replicas[r]
    return rep.alive and s.quorum.leader == r and rep.leader == r and rep.epoch == s.quorum.epoch


def set_replica(s: State, r: int, rep: Replica) -> State:
    reps = list(s.replicas)
    reps[r] = rep
    return evolve(s, replicas=tuple(reps))


def with_quorum(s: State, leader, epoch, isr, elr, alter=None) -> State:
    return evolve(s, quorum=Quorum(leader, epoch, tuple(isr), tuple(elr), alter, s.quorum.min_isr_step))


def min_isr_at(cfg, k: int) -> int:
    """The min ISR after k changes: min_insync_replicas, then the k-th of min_isr_changes."""
    return cfg.min_insync_replicas if k == 0 else cfg.min_isr_changes[k - 1]


def controller_min_isr(cfg, s: State) -> int:
    return min_isr_at(cfg, s.quorum.min_isr_step)


def leader_min_isr(cfg, s: State) -> int:
    """The leader's broker's: one change behind at most with min_isr_lag, else the controller's."""
    return min_isr_at(cfg, s.leader_min_isr_step if cfg.min_isr_lag else s.quorum.min_isr_step)


def maximal_isr(s: State, l: int) -> set:
    """The ISR HW(l) counts: the quorum's, plus the replica of l's own pending expansion."""
    out = set(s.quorum.isr)
    if s.quorum.alter is not None and s.quorum.alter[0] == l and s.quorum.alter[1] == "expand":
        out.add(s.quorum.alter[2])
    return out


def elr_after(cfg, s, elr, old_isr, new_isr) -> tuple:
    """The ELR after the ISR changes from ``old_isr`` to ``new_isr`` in state ``s`` (whose
    controller's min ISR decides)."""
    if not cfg.eligible_leader_replicas or len(new_isr) >= controller_min_isr(cfg, s):
        return ()
    return tuple(sorted((set(elr) | set(old_isr)) - set(new_isr)))


def advance_hw(s: State, l: int, cfg) -> State:
    """HW(l): l.hw := max(l.hw, min({LEO(l)} ∪ {l.remote_leo[f] : f ∈ isr \\ {l}})); every
    record newly below it joins ``committed``. With the HW gate nothing moves while the ISR
    is below min ISR; with ``acks = "all"`` the new records of l's own epoch also join
    ``acked`` if the ISR (after the step: the caller has already changed it) is at least
    min ISR."""
    rep = s.replicas[l]
    big_enough = len(s.quorum.isr) >= leader_min_isr(cfg, s)
    if cfg.hw_requires_min_isr and not big_enough:
        return s
    candidates = [len(rep.log)] + [rep.remote_leo[f] for f in maximal_isr(s, l) if f != l]
    new_hw = max(rep.hw, min(candidates))
    added = {(o, rep.log[o][0], rep.log[o][1]) for o in range(rep.hw, new_hw)}
    s = set_replica(s, l, evolve(rep, hw=new_hw))
    s = evolve(s, committed=tuple(sorted(set(s.committed) | added)))
    if cfg.acks == "all" and big_enough:
        mine = {c for c in added if c[1] == rep.epoch}
        if mine:
            s = evolve(s, acked=tuple(sorted(set(s.acked) | mine)))
    return s


def truncation_point(rule: str, follower: Replica, leader_log: tuple) -> int:
    log = follower.log
    if rule == HW_RULE:
        return follower.hw
    if rule in (KIP279_RULE, V21_RULE):
        t = 0
        while t < len(log) and t < len(leader_log) and log[t] == leader_log[t]:
            t += 1
        return t
    assert rule == LE_RULE, rule
    if not log:
        return 0
    e = log[-1][0]
    if not leader_log:
        answer = None
    elif leader_log[-1][0] == e:
        answer = len(leader_log)
    elif e < leader_log[0][0] or not any(le > e for le, _ in leader_log):
        answer = None
    else:
        answer = next(o for o, (le, _) in enumerate(leader_log) if le > e)
    return follower.hw if answer is None else min(answer, len(log))


def epoch_cache(s: State, r: int) -> dict:
    """cache(r) as a dict epoch -> the offset of its first record; a leading replica also
    has its own epoch, at its epoch start offset (its log end when it wrote nothing in it)."""
    rep = s.replicas[r]
    out = {}
    for o, (e, _) in enumerate(rep.log):
        if e not in out:
            out[e] = o
    if leads(s, r) and rep.epoch not in out:
        out[rep.epoch] = len(rep.log)
    return out


def eo(cache: dict, e: int, leo: int):
    """EO(r, E): ``(epoch, offset)`` or None (undefined)."""
    if cache and e == max(cache):
        return (e, leo)
    above = [x for x in cache if x > e]
    if not above:
        return None
    h = cache[min(above)]
    below = [x for x in cache if x <= e]
    return (max(below), h) if below else (e, h)


def election(cfg, s: State, c: int, bounded=True):
    """The kind of ElectLeader(c) enabled in ``s`` ("clean", "elr", "last known leader",
    "unclean") or None; ``bounded=False`` drops the epoch bound (``Available``)."""
    q = s.quorum
    reps = s.replicas
    if (bounded and q.epoch >= cfg.max_leader_epoch) or not acceptable(cfg, reps[c]):
        return None
    ql = q.leader
    replaceable = ql is None or not reps[ql].alive or reps[ql].epoch != q.epoch
    preferred = cfg.preferred_election and ql is not None and leads(s, ql) and c != ql
    if not (replaceable or preferred):
        return None
    no_live_isr = not any(reps[r].alive for r in q.isr)
    lk = cfg.last_known_leader and not q.isr and not q.elr and ql is not None and reps[ql].alive
    if c in q.isr:
        return "clean"
    if cfg.eligible_leader_replicas and no_live_isr and c in q.elr:
        return "elr"
    if lk and c == ql:
        return "last known leader"
    if cfg.unclean_leader_election and no_live_isr and not any(reps[r].alive for r in q.elr) and not lk:
        return "unclean"
    return None


def acceptable(cfg, rep) -> bool:
    """The controller may make this replica leader: alive and, unless KAFKA-13916, not in
    controlled shutdown."""
    return rep.alive and (not rep.shutting or "KAFKA-13916" in cfg.bugs)


def controlled_shutdown(cfg, s: State, r: int) -> list:
    """ControlledShutdown(r)'s successors, in candidate order: ``[(label, next state)]``."""
    n = len(s.replicas)
    q = s.quorum
    reps = s.replicas
    isr1 = tuple(x for x in q.isr if x != r)
    elr1 = elr_after(cfg, s, q.elr, q.isr, isr1) if r in q.isr else q.elr
    t = set_replica(s, r, evolve(reps[r], shutting=True))
    t = evolve(t, controlled_shutdowns=s.controlled_shutdowns + 1)
    if q.leader != r:
        if r not in q.isr:
            return [(("ControlledShutdown", r, None), t)]
        t = with_quorum(t, q.leader, q.epoch, isr1, elr1, None if cfg.alter_partition else q.alter)
        if q.leader is not None and leads(t, q.leader):
            t = advance_hw(t, q.leader, cfg)
        return [(("ControlledShutdown", r, None), t)]
    if q.epoch >= cfg.max_leader_epoch:
        return []
    live1 = tuple(x for x in isr1 if reps[x].alive)
    out = []
    for c in range(n):
        if c == r or not acceptable(cfg, reps[c]):
            continue
        if c in isr1:
            isr, elr = live1, elr_after(cfg, s, elr1, isr1, live1)
        elif cfg.eligible_leader_replicas and not live1 and c in elr1:
            isr, elr = (c,), tuple(sorted((set(elr1) | set(isr1)) - {c}))
        elif cfg.unclean_leader_election and not live1 and not any(reps[x].alive for x in elr1):
            isr, elr = (c,), ()
        else:
            continue
        u = with_quorum(t, c, q.epoch + 1, isr, elr)
        new = evolve(u.replicas[c], leader=c, epoch=q.epoch + 1, remote_leo=(0,) * n, inflight=None)
        out.append((("ControlledShutdown", r, c), advance_hw(set_replica(u, c, new), c, cfg)))
    if out:
        return out
    isr = isr1 if isr1 or cfg.eligible_leader_replicas else q.isr
    return [(("ControlledShutdown", r, None), with_quorum(t, None, q.epoch + 1, isr, elr1))]


# -- the transition relation -------------------------------------------------------------

def initial_states(cfg) -> list:
    """One initial state, led by the first replica, or with ``initial_leader = any`` one per
    replica, in replica order."""
    n = len(cfg.replicas)
    out = []
    for l in (range(n) if cfg.initial_leader == "any" else [0]):
        rep = Replica(alive=True, log=(), hw=0, epoch=0, leader=l, remote_leo=(0,) * n, inflight=None)
        out.append(State(replicas=(rep,) * n, quorum=Quorum(l, 0, tuple(range(n)), ()), produced=0,
                         crashes=0, committed=()))
    return out


def successors(cfg, s: State) -> list:
    """``[(label, next state)]`` in docs/model.md's order; a label is ``(action, replica, cut)``."""
    n = len(s.replicas)
    q = s.quorum
    out = []
    # 1. Produce(l); with acks = "1" by every replica that believes it leads, min ISR or
    # not, acknowledged on append, and HW(l) only if l really leads
    acks_one = cfg.acks == "1"
    for l in range(n):
        rep = s.replicas[l]
        if acks_one:
            if not (rep.alive and rep.leader == l and s.produced < cfg.max_messages):
                continue
        elif not (leads(s, l) and s.produced < cfg.max_messages and len(q.isr) >= leader_min_isr(cfg, s)):
            continue
        record = (rep.epoch, s.produced)
        t = set_replica(s, l, evolve(rep, log=rep.log + (record,)))
        t = evolve(t, produced=s.produced + 1)
        if acks_one:
            t = evolve(t, acked=tuple(sorted(s.acked + ((len(rep.log),) + record,))))
        out.append((("Produce", l, None), advance_hw(t, l, cfg) if leads(s, l) else t))
    # 2. FetchRequest(f)
    for f in range(n):
        fol = s.replicas[f]
        l = fol.leader
        if (fol.alive and l is not None and l != f and leads(s, l) and fol.epoch == s.replicas[l].epoch
                and fol.inflight is None):
            led = s.replicas[l]
            if cfg.truncate_on_fetch and fol.log:
                e = fol.log[-1][0]
                e2, o2 = eo(epoch_cache(s, l), e, len(led.log))
                if e2 < e or o2 < len(fol.log):  # diverging: no records, nothing recorded
                    t = s
                    if "KAFKA-13141" in cfg.fetch_bugs:  # the fetch offset taken as f's log end
                        remote = list(led.remote_leo)
                        remote[f] = len(fol.log)
                        t = advance_hw(set_replica(t, l, evolve(led, remote_leo=tuple(remote))), l, cfg)
                    led = t.replicas[l]
                    answer = Fetch(l, led.epoch, o2, (), led.hw, e2, False)
                    out.append((("FetchRequest", f, None), set_replica(t, f, evolve(fol, inflight=answer))))
                    continue
            o = min(len(fol.log), len(led.log))
            remote = list(led.remote_leo)
            remote[f] = o
            t = advance_hw(set_replica(s, l, evolve(led, remote_leo=tuple(remote))), l, cfg)
            led = t.replicas[l]
            t = set_replica(t, f, evolve(fol, inflight=Fetch(l, led.epoch, o, led.log[o:], led.hw)))
            out.append((("FetchRequest", f, None), t))
    # 3. FetchResponse(f)
    for f in range(n):
        fol = s.replicas[f]
        if fol.inflight is not None:
            resp = fol.inflight
            fresh = fol.alive and fol.leader == resp.leader and fol.epoch == resp.epoch
            if fresh and resp.diverging is not None and "KAFKA-14704" in cfg.fetch_bugs and not resp.applied:
                marked = Fetch(resp.leader, resp.epoch, resp.start, (), resp.leader_hw, resp.diverging, True)
                fol = evolve(fol, hw=min(resp.leader_hw, len(fol.log)), inflight=marked)
            elif fresh and resp.diverging is not None:
                mine = eo(epoch_cache(s, f), resp.diverging, len(fol.log))
                if mine is None:
                    t = min(resp.start, len(fol.log))
                elif mine[0] == resp.diverging:
                    t = min(mine[1], resp.start, len(fol.log))
                else:
                    t = min(mine[1], len(fol.log))
                fol = evolve(fol, log=fol.log[:t], hw=min(fol.hw, t), inflight=None)
            elif fresh:
                log = fol.log[:resp.start] + resp.records
                fol = evolve(fol, log=log, hw=min(resp.leader_hw, len(log)), inflight=None)
            else:
                fol = evolve(fol, inflight=None)
            out.append((("FetchResponse", f, None), set_replica(s, f, fol)))
    # 4. Crash(r): with unflushed loss one successor per cut point; with eligible leader
    # replicas it is lossy if it lost records
    for r in range(n):
        rep = s.replicas[r]
        if rep.alive and s.crashes < cfg.max_crashes:
            cuts = range(len(rep.log) + 1) if cfg.unflushed_loss else [None]
            for cut in cuts:
                dead = evolve(rep, alive=False, inflight=None, shutting=False)
                if cut is not None:
                    dead = evolve(dead, log=rep.log[:cut], hw=min(rep.hw, cut),
                                  lossy=cfg.eligible_leader_replicas and cut < len(rep.log))
                out.append((("Crash", r, cut), evolve(set_replica(s, r, dead), crashes=s.crashes + 1)))
    # 5. Restart(r): after a lossy crash the controller drops r from the ISR and the ELR,
    # every remote_leo[r] is reset, the leader runs HW if it leads, and lossy is cleared
    for r in range(n):
        rep = s.replicas[r]
        if rep.alive:
            continue
        t = set_replica(s, r, evolve(rep, alive=True, epoch=-1, leader=None, remote_leo=(0,) * n))
        alter = q.alter
        if (cfg.broker_epochs and "KAFKA-15221" not in cfg.bugs and alter is not None
                and alter[1] == "expand" and alter[2] == r):
            alter = None  # a stale broker epoch
        t = with_quorum(t, q.leader, q.epoch, q.isr, q.elr, alter)
        if rep.lossy:
            isr = tuple(x for x in q.isr if x != r)
            elr = tuple(x for x in elr_after(cfg, s, q.elr, q.isr, isr) if x != r)
            if set(isr) != set(q.isr) or set(elr) != set(q.elr):
                alter = None  # a stale partition epoch
            t = with_quorum(t, q.leader, q.epoch, isr, elr, alter)
            for other in range(n):
                o = t.replicas[other]
                remote = list(o.remote_leo)
                remote[r] = 0
                t = set_replica(t, other, evolve(o, remote_leo=tuple(remote)))
            if q.leader is not None and leads(t, q.leader):
                t = advance_hw(t, q.leader, cfg)
            t = set_replica(t, r, evolve(t.replicas[r], lossy=False))
        out.append((("Restart", r, None), t))
    # 6. ElectLeader(c)
    for c in range(n):
        kind = election(cfg, s, c)
        if kind is None:
            continue
        live = tuple(r for r in q.isr if s.replicas[r].alive)
        if kind == "clean":
            isr, elr = live, elr_after(cfg, s, q.elr, q.isr, live)
        elif kind == "elr":
            isr, elr = (c,), tuple(sorted((set(q.elr) | set(q.isr)) - {c}))
        else:
            isr, elr = (c,), ()
        t = with_quorum(s, c, q.epoch + 1, isr, elr)
        rep = evolve(s.replicas[c], leader=c, epoch=q.epoch + 1, remote_leo=(0,) * n, inflight=None)
        out.append((("ElectLeader", c, None), advance_hw(set_replica(t, c, rep), c, cfg)))
    # 7. BecomeFollower(r)
    for r in range(n):
        rep = s.replicas[r]
        l = q.leader
        if not rep.alive or l is None or l == r or rep.epoch >= q.epoch:
            continue
        if cfg.truncate_on_fetch:  # nothing truncated, no leader asked
            rep = evolve(rep, leader=l, epoch=q.epoch, inflight=None)
            out.append((("BecomeFollower", r, None), set_replica(s, r, rep)))
            continue
        if cfg.truncation != HW_RULE and not leads(s, l):
            continue
        t = truncation_point(cfg.truncation, rep, s.replicas[l].log)
        rep = evolve(rep, log=rep.log[:t], hw=min(rep.hw, t), leader=l, epoch=q.epoch, inflight=None)
        out.append((("BecomeFollower", r, None), set_replica(s, r, rep)))
    # 8. ShrinkIsr(r); with alter_partition only a request, and only with none in flight
    for r in range(n):
        l = q.leader
        if l is None or not leads(s, l) or r == l or r not in q.isr:
            continue
        if cfg.alter_partition and q.alter is not None:
            continue
        led = s.replicas[l]
        if cfg.alter_partition and (not s.replicas[r].alive or led.remote_leo[r] < len(led.log)):
            out.append((("ShrinkIsr", r, None), with_quorum(s, l, q.epoch, q.isr, q.elr, (l, "shrink", r))))
        elif not s.replicas[r].alive or led.remote_leo[r] < len(led.log):
            isr = tuple(x for x in q.isr if x != r)
            t = with_quorum(s, l, q.epoch, isr, elr_after(cfg, s, q.elr, q.isr, isr))
            out.append((("ShrinkIsr", r, None), advance_hw(t, l, cfg)))
    # 9. ExpandIsr(r); under the 2.1 rule also up to the leader's epoch start offset (KAFKA-7128)
    for r in range(n):
        l = q.leader
        if l is None or not leads(s, l) or r in q.isr:
            continue
        if cfg.alter_partition and q.alter is not None:
            continue
        fol, led = s.replicas[r], s.replicas[l]
        start = next((o for o, (e, _) in enumerate(led.log) if e == led.epoch), len(led.log))
        if (fol.alive and fol.leader == l and fol.epoch == q.epoch and led.remote_leo[r] >= led.hw
                and (cfg.truncation != V21_RULE or led.remote_leo[r] >= start)
                and (not fol.shutting or "KAFKA-13916" in cfg.bugs)):
            if cfg.alter_partition:
                out.append((("ExpandIsr", r, None), with_quorum(s, l, q.epoch, q.isr, q.elr, (l, "expand", r))))
                continue
            isr = tuple(sorted(q.isr + (r,)))
            t = with_quorum(s, l, q.epoch, isr, elr_after(cfg, s, q.elr, q.isr, isr))
            out.append((("ExpandIsr", r, None), advance_hw(t, l, cfg)))
    # 10. AlterPartition: the controller answers; refused only with broker epochs, for an
    # expansion of a replica that is down
    if q.alter is not None:
        p, change, r = q.alter
        x = s.replicas[r]
        refused = not x.alive or (x.shutting and "KAFKA-13916" not in cfg.bugs) or (
            "KAFKA-15221" in cfg.bugs and not (x.leader == p and x.epoch == q.epoch))
        if cfg.broker_epochs and change == "expand" and refused:
            t = with_quorum(s, q.leader, q.epoch, q.isr, q.elr)
        else:
            isr = tuple(sorted(set(q.isr) - {r})) if change == "shrink" else tuple(sorted(set(q.isr) | {r}))
            t = with_quorum(s, q.leader, q.epoch, isr, elr_after(cfg, s, q.elr, q.isr, isr))
            if leads(t, p):
                t = advance_hw(t, p, cfg)
        out.append((("AlterPartition", r, None), t))
    # 11. ControlledShutdown(r), 12. ShutdownComplete(r)
    if s.controlled_shutdowns < cfg.max_controlled_shutdowns:
        for r in range(n):
            if s.replicas[r].alive and not s.replicas[r].shutting:
                out.extend(controlled_shutdown(cfg, s, r))
    for r in range(n):
        rep = s.replicas[r]
        if rep.alive and rep.shutting:
            out.append((("ShutdownComplete", r, None), set_replica(s, r, evolve(rep, alive=False, inflight=None,
                                                                                   shutting=False))))
    # 13. ChangeMinIsr: the controller takes the next value; since the fix of KAFKA-16540 it
    # empties the ELR (and a request in flight is stale if that changed it); no HW step
    if q.min_isr_step < len(cfg.min_isr_changes):
        elr, alter = q.elr, q.alter
        if cfg.eligible_leader_replicas and "KAFKA-16540" not in cfg.bugs:
            if elr:
                alter = None
            elr = ()
        t = evolve(s, quorum=Quorum(q.leader, q.epoch, q.isr, elr, alter, q.min_isr_step + 1))
        out.append((("ChangeMinIsr", 0, None), t))
    # 14. DiskFailure(r): the log is gone; the controller takes r out of the ISR (never emptying
    # it without the ELR), the ELR follows, everyone forgets r's log end; fixed, r is offline
    # (down, lossy with the ELR); KAFKA-16234, r stays up with an empty log, forgetting a
    # leadership it believed it had; then HW of the quorum leader if it leads
    for r in range(n):
        rep = s.replicas[r]
        if not (rep.alive and s.disk_failures < cfg.max_disk_failures):
            continue
        isr = tuple(x for x in q.isr if x != r)
        if not isr and not cfg.eligible_leader_replicas:
            isr = q.isr
        elr = elr_after(cfg, s, q.elr, q.isr, isr)
        alter = q.alter if (set(isr) == set(q.isr) and set(elr) == set(q.elr)) else None
        t = with_quorum(s, q.leader, q.epoch, isr, elr, alter)
        for other in range(n):
            o = t.replicas[other]
            remote = list(o.remote_leo)
            remote[r] = 0
            t = set_replica(t, other, evolve(o, remote_leo=tuple(remote)))
        gone = evolve(t.replicas[r], log=(), hw=0, inflight=None, remote_leo=(0,) * n)
        if "KAFKA-16234" in cfg.bugs:
            if rep.leader == r:
                gone = evolve(gone, leader=None, epoch=-1)
        else:
            gone = evolve(gone, alive=False, lossy=cfg.eligible_leader_replicas, shutting=False)
        t = evolve(set_replica(t, r, gone), disk_failures=s.disk_failures + 1)
        if q.leader is not None and leads(t, q.leader):
            t = advance_hw(t, q.leader, cfg)
        out.append((("DiskFailure", r, None), t))
    # 15. ApplyMinIsr: the leader's broker catches up one change
    if cfg.min_isr_lag and s.leader_min_isr_step < q.min_isr_step:
        out.append((("ApplyMinIsr", 0, None), evolve(s, leader_min_isr_step=s.leader_min_isr_step + 1)))
    return out


# -- the properties ------------------------------------------------------------------------

def holds_all(s, r, records) -> bool:
    log = s.replicas[r].log
    return all(o < len(log) and log[o] == (e, i) for o, e, i in records)


def hw_below_log_end(s):
    return all(rep.hw <= len(rep.log) for rep in s.replicas)


def committed_never_lost(s):
    return all(holds_all(s, l, s.committed) for l in range(len(s.replicas)) if leads(s, l))


def acknowledged_never_lost(s):
    return all(holds_all(s, l, s.acked) for l in range(len(s.replicas)) if leads(s, l))


def leader_candidate_completeness(s):
    q = s.quorum
    return all(holds_all(s, r, s.committed) for r in set(q.isr) | set(q.elr) if s.replicas[r].alive)


def logs_never_diverge(s):
    current = [rep for rep in s.replicas if rep.alive and rep.epoch == s.quorum.epoch]
    for i, a in enumerate(current):
        for b in current[i + 1:]:
            below = min(a.hw, b.hw, len(a.log), len(b.log))
            if a.log[:below] != b.log[:below]:
                return False
    return True


def uncommitted_never_exposed(s):
    committed = set(s.committed)
    return all((o,) + rep.log[o] in committed
               for rep in s.replicas if rep.alive for o in range(min(rep.hw, len(rep.log))))


def epoch_monotonic(before, after, label=None, cfg=None):
    """Epochs never go down, except a replica's to -1 at its restart, or at its DiskFailure
    under KAFKA-16234 (``label`` and ``cfg`` tell that step)."""
    if after.quorum.epoch < before.quorum.epoch:
        return False
    for r, (b, a) in enumerate(zip(before.replicas, after.replicas)):
        recreated = (label is not None and label[:2] == ("DiskFailure", r) and cfg is not None
                     and "KAFKA-16234" in cfg.bugs)
        if a.alive and a.epoch < b.epoch and not (a.epoch == -1 and (not b.alive or recreated)):
            return False
    return True


def available(cfg, s) -> bool:
    """Some replica leads, or some ElectLeader is enabled without the epoch bound."""
    n = len(s.replicas)
    return any(leads(s, r) for r in range(n)) or any(election(cfg, s, c, bounded=False) for c in range(n))


STATE_PROPERTIES = {
    "HighWatermarkBelowLogEnd": hw_below_log_end,
    "CommittedNeverLost": committed_never_lost,
    "LogsNeverDiverge": logs_never_diverge,
    "LeaderCandidateCompleteness": leader_candidate_completeness,
    "AcknowledgedNeverLost": acknowledged_never_lost,
    "UncommittedNeverExposed": uncommitted_never_exposed,
}
STEP_PROPERTIES = {"LeaderEpochMonotonic": epoch_monotonic}


# -- the search ------------------------------------------------------------------------------

@attrs.define
class OracleResult:
    distinct: int  # states stored (up to the level the run stops at)
    generated: int  # the initial states + every successor computed (TLC's count)
    depth: int  # states on the longest shortest path
    traces: dict  # property -> length (in states) of its shortest counterexample
    levels: list  # new states per level
    traps: int = 0  # with PartitionRecoverable: states that cannot reach an Available one
    trap_trace: int | None = None  # states on a shortest path into a trap (None: no trap)


def explore(cfg, checked, keep_going=True) -> OracleResult:
    """Breadth-first search from the initial states; with ``keep_going`` False the run
    stops after the first level in which a checked property fails (as docs/model.md's
    engines do), else it explores everything. With ``PartitionRecoverable`` checked (and
    every state explored) it keeps every state's predecessors and finds the traps; its
    trace is a shortest path into one."""
    recoverable = PR in checked
    depth_of = {}
    traces = {}
    frontier = []
    for s in initial_states(cfg):
        if s in depth_of:
            continue
        depth_of[s] = 1
        frontier.append(s)
        for name in checked:
            if name in STATE_PROPERTIES and name not in traces and not STATE_PROPERTIES[name](s):
                traces[name] = 1
    preds = {s: set() for s in depth_of} if recoverable else None
    levels = [len(frontier)]
    generated = len(frontier)
    depth = 1
    while frontier and (keep_going or not traces):
        nxt = []
        for s in frontier:
            for label, t in successors(cfg, s):
                generated += 1
                for name in checked:
                    if name in STEP_PROPERTIES and name not in traces and not STEP_PROPERTIES[name](s, t, label, cfg):
                        traces[name] = depth + 1
                if recoverable:
                    preds.setdefault(t, set()).add(s)
                if t in depth_of:
                    continue
                depth_of[t] = depth + 1
                nxt.append(t)
                for name in checked:
                    if name in STATE_PROPERTIES and name not in traces and not STATE_PROPERTIES[name](t):
                        traces[name] = depth + 1
        frontier = nxt
        if nxt:
            depth += 1
            levels.append(len(nxt))
    traps, trap_trace = 0, None
    if recoverable:
        assert not frontier, "PartitionRecoverable needs every reachable state"
        reach = can_reach_available(cfg, depth_of, preds)
        trapped = [d for s, d in depth_of.items() if s not in reach]
        traps = len(trapped)
        if trapped:
            traces[PR] = trap_trace = min(trapped)
    return OracleResult(distinct=len(depth_of), generated=generated, depth=depth, traces=traces,
                        levels=levels, traps=traps, trap_trace=trap_trace)


def can_reach_available(cfg, states, preds) -> set:
    """Every state of ``states`` from which an ``Available`` state can be reached: a plain
    BFS over the reversed graph from the ``Available`` states."""
    reach = {s for s in states if available(cfg, s)}
    queue = deque(reach)
    while queue:
        t = queue.popleft()
        for s in preds.get(t, ()):
            if s not in reach:
                reach.add(s)
                queue.append(s)
    return reach


def check(cfg) -> OracleResult:
    """Explore everything; return the counts, the shortest counterexample of
    CommittedNeverLost and LeaderCandidateCompleteness (``traces``, without
    PartitionRecoverable's), and PartitionRecoverable's trap count and shortest trace."""
    got = explore(cfg, ["CommittedNeverLost", "LeaderCandidateCompleteness", PR], keep_going=True)
    got.traces = {p: n for p, n in got.traces.items() if p != PR}
    return got


def shortest_path_length(cfg, goal) -> int | None:
    """The number of states on a shortest path to a state satisfying ``goal`` (a plain
    BFS with a deque, for hand-checked scenarios), or None."""
    seen = {}
    queue = deque()
    for s in initial_states(cfg):
        if s not in seen:
            seen[s] = 1
            queue.append(s)
    while queue:
        s = queue.popleft()
        if goal(s):
            return seen[s]
        for _, t in successors(cfg, s):
            if t not in seen:
                seen[t] = seen[s] + 1
                queue.append(t)
    return None
