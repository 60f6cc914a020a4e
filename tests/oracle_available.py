"""The independent oracle's availability half: the model after KIP-279 (the 2.1 rule, the HW
gate, eligible leader replicas, the last-known-leader election) and a naive AG EF.

Like ``oracle.py`` it is written from the model's description alone and shares nothing with
the engines or ``model/kafka.py`` except the attrs state classes (plain data) and ``Config``:
whole states go into a Python dict, the search is a plain breadth-first search, and every
action is written the obvious way, in the documented order (actions 1–9, then replica order,
then cut point). ``PartitionRecoverable`` is decided the naive way: the whole graph is kept
as Python sets of predecessors, and a plain BFS over the reversed graph from the ``Available``
states finds every state that can still reach one; the others are the traps.
"""

from __future__ import annotations

from collections import deque

import attrs

from kmc.model.state import Fetch, Quorum, Replica, State
from oracle import evolve, leads, set_replica, truncation_point

V21 = "leader-epoch-2.1"


def initial_states(cfg) -> list:
    n = len(cfg.replicas)
    leaders = range(n) if cfg.initial_leader == "any" else [0]
    out = []
    for l in leaders:
        rep = Replica(alive=True, log=(), hw=0, epoch=0, leader=l, remote_leo=(0,) * n, inflight=None)
        out.append(State(replicas=(rep,) * n, quorum=Quorum(l, 0, tuple(range(n)), ()), produced=0,
                         crashes=0, committed=()))
    return out


def advance_hw(cfg, s: State, l: int) -> State:
    """HW(l), which with the HW gate does nothing while the ISR is below min ISR."""
    if cfg.hw_requires_min_isr and len(s.quorum.isr) < cfg.min_insync_replicas:
        return s
    rep = s.replicas[l]
    new_hw = max(rep.hw, min([len(rep.log)] + [rep.remote_leo[f] for f in s.quorum.isr if f != l]))
    added = {(o, rep.log[o][0], rep.log[o][1]) for o in range(rep.hw, new_hw)}
    s = set_replica(s, l, evolve(rep, hw=new_hw))
    return evolve(s, committed=tuple(sorted(set(s.committed) | added)))


def elr_after(cfg, elr, old_isr, new_isr) -> tuple:
    if not cfg.eligible_leader_replicas or len(new_isr) >= cfg.min_insync_replicas:
        return ()
    return tuple(sorted((set(elr) | set(old_isr)) - set(new_isr)))


def with_quorum(s, leader, epoch, isr, elr) -> State:
    return evolve(s, quorum=Quorum(leader, epoch, tuple(isr), tuple(elr)))


def election(cfg, s: State, c: int, bounded=True):
    """The kind of ElectLeader(c) enabled in ``s`` ("clean", "elr", "last known leader",
    "unclean") or None; ``bounded=False`` drops the epoch bound (``Available``)."""
    q = s.quorum
    reps = s.replicas
    if bounded and q.epoch >= cfg.max_leader_epoch:
        return None
    if not reps[c].alive:
        return None
    ql = q.leader
    replaceable = ql is None or not reps[ql].alive or reps[ql].epoch != q.epoch
    preferred = cfg.preferred_election and ql is not None and leads(s, ql) and c != ql
    if not (replaceable or preferred):
        return None
    no_live_isr = not any(reps[r].alive for r in q.isr)
    lk = (cfg.last_known_leader and not q.isr and not q.elr and ql is not None and reps[ql].alive)
    if c in q.isr:
        return "clean"
    if cfg.eligible_leader_replicas and no_live_isr and c in q.elr:
        return "elr"
    if lk and c == ql:
        return "last known leader"
    if (cfg.unclean_leader_election and no_live_isr and not any(reps[r].alive for r in q.elr)
            and not lk):
        return "unclean"
    return None


def successors(cfg, s: State) -> list:
    """``[(label, next state)]`` in the documented order."""
    n = len(s.replicas)
    q = s.quorum
    out = []
    # 1. Produce(l)
    for l in range(n):
        if leads(s, l) and s.produced < cfg.max_messages and len(q.isr) >= cfg.min_insync_replicas:
            rep = s.replicas[l]
            t = set_replica(s, l, evolve(rep, log=rep.log + ((rep.epoch, s.produced),)))
            out.append((("Produce", l, None), advance_hw(cfg, evolve(t, produced=s.produced + 1), l)))
    # 2. FetchRequest(f)
    for f in range(n):
        fol = s.replicas[f]
        l = fol.leader
        if (fol.alive and l is not None and l != f and leads(s, l) and fol.epoch == s.replicas[l].epoch
                and fol.inflight is None):
            led = s.replicas[l]
            o = min(len(fol.log), len(led.log))
            remote = list(led.remote_leo)
            remote[f] = o
            t = advance_hw(cfg, set_replica(s, l, evolve(led, remote_leo=tuple(remote))), l)
            led = t.replicas[l]
            t = set_replica(t, f, evolve(fol, inflight=Fetch(l, led.epoch, o, led.log[o:], led.hw)))
            out.append((("FetchRequest", f, None), t))
    # 3. FetchResponse(f)
    for f in range(n):
        fol = s.replicas[f]
        if fol.inflight is not None:
            resp = fol.inflight
            if fol.alive and fol.leader == resp.leader and fol.epoch == resp.epoch:
                log = fol.log[:resp.start] + resp.records
                fol = evolve(fol, log=log, hw=min(resp.leader_hw, len(log)), inflight=None)
            else:
                fol = evolve(fol, inflight=None)
            out.append((("FetchResponse", f, None), set_replica(s, f, fol)))
    # 4. Crash(r): with unflushed loss one successor per cut point; lossy if it lost records
    for r in range(n):
        rep = s.replicas[r]
        if rep.alive and s.crashes < cfg.max_crashes:
            cuts = range(len(rep.log) + 1) if cfg.unflushed_loss else [None]
            for cut in cuts:
                dead = evolve(rep, alive=False, inflight=None)
                if cut is not None:
                    dead = evolve(dead, log=rep.log[:cut], hw=min(rep.hw, cut),
                                  lossy=cfg.eligible_leader_replicas and cut < len(rep.log))
                out.append((("Crash", r, cut), evolve(set_replica(s, r, dead), crashes=s.crashes + 1)))
    # 5. Restart(r): after a lossy crash the controller drops r from the ISR and the ELR
    for r in range(n):
        rep = s.replicas[r]
        if rep.alive:
            continue
        back = evolve(rep, alive=True, epoch=-1, leader=None, remote_leo=(0,) * n)
        t = set_replica(s, r, back)
        if rep.lossy:
            isr = tuple(x for x in q.isr if x != r)
            elr = tuple(x for x in elr_after(cfg, q.elr, q.isr, isr) if x != r)
            t = with_quorum(t, q.leader, q.epoch, isr, elr)
            for other in range(n):
                o = t.replicas[other]
                remote = list(o.remote_leo)
                remote[r] = 0
                t = set_replica(t, other, evolve(o, remote_leo=tuple(remote)))
            if q.leader is not None and leads(t, q.leader):
                t = advance_hw(cfg, t, q.leader)
            t = set_replica(t, r, evolve(t.replicas[r], lossy=False))
        out.append((("Restart", r, None), t))
    # 6. ElectLeader(c)
    for c in range(n):
        kind = election(cfg, s, c)
        if kind is None:
            continue
        live = tuple(r for r in q.isr if s.replicas[r].alive)
        if kind == "clean":
            isr, elr = live, elr_after(cfg, q.elr, q.isr, live)
        elif kind == "elr":
            isr, elr = (c,), tuple(sorted((set(q.elr) | set(q.isr)) - {c}))
        else:
            isr, elr = (c,), ()
        t = with_quorum(s, c, q.epoch + 1, isr, elr)
        rep = evolve(s.replicas[c], leader=c, epoch=q.epoch + 1, remote_leo=(0,) * n, inflight=None)
        out.append((("ElectLeader", c, None), advance_hw(cfg, set_replica(t, c, rep), c)))
    # 7. BecomeFollower(r)
    for r in range(n):
        rep = s.replicas[r]
        l = q.leader
        if not rep.alive or l is None or l == r or rep.epoch >= q.epoch:
            continue
        if cfg.truncation != "high-watermark" and not leads(s, l):
            continue
        rule = "leader-epoch-kip279" if cfg.truncation == V21 else cfg.truncation
        t = truncation_point(rule, rep, s.replicas[l].log)
        rep = evolve(rep, log=rep.log[:t], hw=min(rep.hw, t), leader=l, epoch=q.epoch, inflight=None)
        out.append((("BecomeFollower", r, None), set_replica(s, r, rep)))
    # 8. ShrinkIsr(r)
    for r in range(n):
        l = q.leader
        if l is None or not leads(s, l) or r == l or r not in q.isr:
            continue
        led = s.replicas[l]
        if not s.replicas[r].alive or led.remote_leo[r] < len(led.log):
            isr = tuple(x for x in q.isr if x != r)
            t = with_quorum(s, l, q.epoch, isr, elr_after(cfg, q.elr, q.isr, isr))
            out.append((("ShrinkIsr", r, None), advance_hw(cfg, t, l)))
    # 9. ExpandIsr(r); under the 2.1 rule also up to the leader's epoch start offset
    for r in range(n):
        l = q.leader
        if l is None or not leads(s, l) or r in q.isr:
            continue
        fol, led = s.replicas[r], s.replicas[l]
        start = next((o for o, (e, _) in enumerate(led.log) if e == led.epoch), len(led.log))
        if (fol.alive and fol.leader == l and fol.epoch == q.epoch and led.remote_leo[r] >= led.hw
                and (cfg.truncation != V21 or led.remote_leo[r] >= start)):
            isr = tuple(sorted(q.isr + (r,)))
            t = with_quorum(s, l, q.epoch, isr, elr_after(cfg, q.elr, q.isr, isr))
            out.append((("ExpandIsr", r, None), advance_hw(cfg, t, l)))
    return out


# -- properties ---------------------------------------------------------------------------------

def holds_committed(s, r) -> bool:
    log = s.replicas[r].log
    return all(o < len(log) and log[o] == (e, i) for o, e, i in s.committed)


def committed_never_lost(s) -> bool:
    return all(holds_committed(s, l) for l in range(len(s.replicas)) if leads(s, l))


def leader_candidate_completeness(s) -> bool:
    q = s.quorum
    return all(holds_committed(s, r) for r in set(q.isr) | set(q.elr) if s.replicas[r].alive)


def available(cfg, s) -> bool:
    """Some replica leads, or some ElectLeader is enabled without the epoch bound."""
    n = len(s.replicas)
    return (any(leads(s, r) for r in range(n))
            or any(election(cfg, s, c, bounded=False) for c in range(n)))


STATE_PROPERTIES = {"CommittedNeverLost": committed_never_lost,
                    "LeaderCandidateCompleteness": leader_candidate_completeness}


@attrs.define
class Verdicts:
    distinct: int
    generated: int
    depth: int
    traces: dict  # state property -> shortest counterexample length (states)
    traps: int  # states from which no Available state can be reached
    trap_trace: int | None  # states on a shortest path into a trap (None: no trap)


def check(cfg) -> Verdicts:
    """Explore everything; return the counts, the shortest counterexample of each state
    property, and PartitionRecoverable's trap count and shortest trace."""
    depth_of = {}
    frontier = []
    traces = {}
    for s in initial_states(cfg):
        if s not in depth_of:
            depth_of[s] = 1
            frontier.append(s)
    preds = {s: set() for s in depth_of}
    generated = len(depth_of)
    depth = 1
    while frontier:
        nxt = []
        for s in frontier:
            for _, t in successors(cfg, s):
                generated += 1
                if t not in depth_of:
                    depth_of[t] = depth + 1
                    preds[t] = set()
                    nxt.append(t)
                preds[t].add(s)
        if nxt:
            depth += 1
        frontier = nxt
    for s, d in depth_of.items():
        for name, holds in STATE_PROPERTIES.items():
            if not holds(s) and d < traces.get(name, 10**9):
                traces[name] = d
    # Backward BFS from the goal states over the reversed graph.
    can_reach = {s for s in depth_of if available(cfg, s)}
    queue = deque(can_reach)
    while queue:
        t = queue.popleft()
        for s in preds[t]:
            if s not in can_reach:
                can_reach.add(s)
                queue.append(s)
    traps = [d for s, d in depth_of.items() if s not in can_reach]
    return Verdicts(distinct=len(depth_of), generated=generated, depth=depth, traces=traces,
                    traps=len(traps), trap_trace=min(traps) if traps else None)
