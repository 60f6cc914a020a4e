"""An independent oracle: a deliberately naive checker written from docs/model.md alone.

It shares nothing with the engines or with ``model/kafka.py`` except the attrs state
classes of ``model/state.py`` (plain data) and ``model.Config`` (the constants): no
kernel, no fingerprints, no engine code, no successor function of the reference model.
Whole states go into a Python dict, the search is a plain breadth-first search, and
every action is written the obvious way with ``evolve`` (``attrs.evolve``), in the order docs/model.md
enumerates them (actions 1–9, then replica order, then cut point). It covers the three
truncation rules and the options the code has today (unclean election, unflushed loss,
preferred election, min ISR), plus, from the later sections, the 2.1 rule's ISR
guard, the HW gate and producer acknowledgements (``acks``); not eligible leader replicas.

It is slow (a few thousand states a second) and meant for specs of at most tens of
thousands of states. The tests compare its distinct/generated counts, depth and shortest
trace lengths with the local engine's.
"""

from __future__ import annotations

from collections import deque

import attrs

from kmc.model.state import Fetch, Quorum, Replica, State

HW_RULE, LE_RULE, KIP279_RULE = "high-watermark", "leader-epoch", "leader-epoch-kip279"
V21_RULE = "leader-epoch-2.1"


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


def advance_hw(s: State, l: int, cfg=None) -> State:
    """HW(l): l.hw := max(l.hw, min({LEO(l)} ∪ {l.remote_leo[f] : f ∈ isr \\ {l}})); every
    record newly below it joins ``committed``. With the HW gate nothing moves while the ISR
    is below min ISR; with ``acks = "all"`` the new records of l's own epoch also join
    ``acked`` if the ISR (after the step: the caller has already changed it) is at least
    min ISR."""
    rep = s.replicas[l]
    big_enough = cfg is None or len(s.quorum.isr) >= cfg.min_insync_replicas
    if cfg is not None and cfg.hw_requires_min_isr and not big_enough:
        return s
    candidates = [len(rep.log)] + [rep.remote_leo[f] for f in s.quorum.isr if f != l]
    new_hw = max(rep.hw, min(candidates))
    added = {(o, rep.log[o][0], rep.log[o][1]) for o in range(rep.hw, new_hw)}
    s = set_replica(s, l, evolve(rep, hw=new_hw))
    s = evolve(s, committed=tuple(sorted(set(s.committed) | added)))
    if cfg is not None and cfg.acks == "all" and big_enough:
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


# -- the transition relation -------------------------------------------------------------

def initial(cfg) -> State:
    n = len(cfg.replicas)
    rep = Replica(alive=True, log=(), hw=0, epoch=0, leader=0, remote_leo=(0,) * n, inflight=None)
    return State(replicas=(rep,) * n, quorum=Quorum(0, 0, tuple(range(n))), produced=0, crashes=0,
                 committed=())


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
        elif not (leads(s, l) and s.produced < cfg.max_messages and len(q.isr) >= cfg.min_insync_replicas):
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
            o = min(len(fol.log), len(s.replicas[l].log))
            led = s.replicas[l]
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
            if fol.alive and fol.leader == resp.leader and fol.epoch == resp.epoch:
                log = fol.log[:resp.start] + resp.records
                fol = evolve(fol, log=log, hw=min(resp.leader_hw, len(log)), inflight=None)
            else:
                fol = evolve(fol, inflight=None)
            out.append((("FetchResponse", f, None), set_replica(s, f, fol)))
    # 4. Crash(r)
    for r in range(n):
        rep = s.replicas[r]
        if rep.alive and s.crashes < cfg.max_crashes:
            cuts = range(len(rep.log) + 1) if cfg.unflushed_loss else [None]
            for cut in cuts:
                dead = evolve(rep, alive=False, inflight=None)
                if cut is not None:
                    dead = evolve(dead, log=rep.log[:cut], hw=min(rep.hw, cut))
                t = evolve(set_replica(s, r, dead), crashes=s.crashes + 1)
                out.append((("Crash", r, cut), t))
    # 5. Restart(r)
    for r in range(n):
        rep = s.replicas[r]
        if not rep.alive:
            rep = evolve(rep, alive=True, epoch=-1, leader=None, remote_leo=(0,) * n)
            out.append((("Restart", r, None), set_replica(s, r, rep)))
    # 6. ElectLeader(c)
    for c in range(n):
        if q.epoch >= cfg.max_leader_epoch or not s.replicas[c].alive:
            continue
        ql = q.leader
        replaceable = ql is None or not s.replicas[ql].alive or s.replicas[ql].epoch != q.epoch
        preferred = cfg.preferred_election and ql is not None and leads(s, ql) and c != ql
        if not (replaceable or preferred):
            continue
        live_isr = [r for r in q.isr if s.replicas[r].alive]
        if c in q.isr:
            isr = tuple(live_isr)
        elif cfg.unclean_leader_election and not live_isr:
            isr = (c,)
        else:
            continue
        t = evolve(s, quorum=Quorum(c, q.epoch + 1, isr))
        rep = evolve(s.replicas[c], leader=c, epoch=q.epoch + 1, remote_leo=(0,) * n, inflight=None)
        out.append((("ElectLeader", c, None), advance_hw(set_replica(t, c, rep), c, cfg)))
    # 7. BecomeFollower(r)
    for r in range(n):
        rep = s.replicas[r]
        l = q.leader
        if not rep.alive or l is None or l == r or rep.epoch >= q.epoch:
            continue
        if cfg.truncation != HW_RULE and not leads(s, l):
            continue
        t = truncation_point(cfg.truncation, rep, s.replicas[l].log)
        rep = evolve(rep, log=rep.log[:t], hw=min(rep.hw, t), leader=l, epoch=q.epoch, inflight=None)
        out.append((("BecomeFollower", r, None), set_replica(s, r, rep)))
    # 8. ShrinkIsr(r)
    for r in range(n):
        l = q.leader
        if l is None or not leads(s, l) or r == l or r not in q.isr:
            continue
        led = s.replicas[l]
        if not s.replicas[r].alive or led.remote_leo[r] < len(led.log):
            t = evolve(s, quorum=Quorum(l, q.epoch, tuple(x for x in q.isr if x != r)))
            out.append((("ShrinkIsr", r, None), advance_hw(t, l, cfg)))
    # 9. ExpandIsr(r)
    for r in range(n):
        l = q.leader
        if l is None or not leads(s, l) or r in q.isr:
            continue
        fol, led = s.replicas[r], s.replicas[l]
        if cfg.truncation == V21_RULE:  # KAFKA-7128: up to the leader's epoch start offset
            start = next((o for o, (e, _) in enumerate(led.log) if e == led.epoch), len(led.log))
            if led.remote_leo[r] < start:
                continue
        if fol.alive and fol.leader == l and fol.epoch == q.epoch and led.remote_leo[r] >= led.hw:
            t = evolve(s, quorum=Quorum(l, q.epoch, tuple(sorted(q.isr + (r,)))))
            out.append((("ExpandIsr", r, None), advance_hw(t, l, cfg)))
    return out


# -- the properties ------------------------------------------------------------------------

def hw_below_log_end(s):
    return all(rep.hw <= len(rep.log) for rep in s.replicas)


def committed_never_lost(s):
    for l in range(len(s.replicas)):
        if leads(s, l):
            log = s.replicas[l].log
            return all(o < len(log) and log[o] == (e, i) for o, e, i in s.committed)
    return True


def acknowledged_never_lost(s):
    for l in range(len(s.replicas)):
        if leads(s, l):
            log = s.replicas[l].log
            return all(o < len(log) and log[o] == (e, i) for o, e, i in s.acked)
    return True


def leader_candidate_completeness(s):
    # without eligible leader replicas (not in this oracle) the candidates are the ISR's
    for r in s.quorum.isr:
        rep = s.replicas[r]
        if rep.alive and not all(o < len(rep.log) and rep.log[o] == (e, i) for o, e, i in s.committed):
            return False
    return True


def logs_never_diverge(s):
    current = [rep for rep in s.replicas if rep.alive and rep.epoch == s.quorum.epoch]
    for i, a in enumerate(current):
        for b in current[i + 1:]:
            below = min(a.hw, b.hw, len(a.log), len(b.log))
            if a.log[:below] != b.log[:below]:
                return False
    return True


def epoch_monotonic(before, after):
    if after.quorum.epoch < before.quorum.epoch:
        return False
    for b, a in zip(before.replicas, after.replicas):
        if a.alive and a.epoch < b.epoch and not (a.epoch == -1 and not b.alive):
            return False
    return True


STATE_PROPERTIES = {
    "HighWatermarkBelowLogEnd": hw_below_log_end,
    "CommittedNeverLost": committed_never_lost,
    "LogsNeverDiverge": logs_never_diverge,
    "LeaderCandidateCompleteness": leader_candidate_completeness,
    "AcknowledgedNeverLost": acknowledged_never_lost,
}
STEP_PROPERTIES = {"LeaderEpochMonotonic": epoch_monotonic}


# -- the search ------------------------------------------------------------------------------

@attrs.define
class OracleResult:
    distinct: int  # states stored (up to the level the run stops at)
    generated: int  # 1 + every successor computed (TLC's count)
    depth: int  # states on the longest shortest path
    traces: dict  # property -> length (in states) of its shortest counterexample
    levels: list  # new states per level


def explore(cfg, checked, keep_going=True) -> OracleResult:
    """Breadth-first search from the initial state; with ``keep_going`` False the run
    stops after the first level in which a checked property fails (as docs/model.md's
    engines do), else it explores everything."""
    if cfg.eligible_leader_replicas or cfg.initial_leader != "first":
        raise ValueError("the oracle has no eligible leader replicas and one initial leader")
    init = initial(cfg)
    depth_of = {init: 1}
    traces = {}
    for name in checked:
        if name in STATE_PROPERTIES and not STATE_PROPERTIES[name](init):
            traces[name] = 1
    levels = [1]
    generated = 1
    frontier = [init]
    depth = 1
    while frontier and (keep_going or not traces):
        nxt = []
        for s in frontier:
            for _, t in successors(cfg, s):
                generated += 1
                for name in checked:
                    if name in STEP_PROPERTIES and name not in traces and not STEP_PROPERTIES[name](s, t):
                        traces[name] = depth + 1
                size = len(depth_of)
                depth_of.setdefault(t, depth + 1)
                if len(depth_of) == size:  # seen before
                    continue
                nxt.append(t)
                for name in checked:
                    if name in STATE_PROPERTIES and name not in traces and not STATE_PROPERTIES[name](t):
                        traces[name] = depth + 1
        frontier = nxt
        if nxt:
            depth += 1
            levels.append(len(nxt))
    return OracleResult(distinct=len(depth_of), generated=generated, depth=depth, traces=traces,
                        levels=levels)


def shortest_path_length(cfg, goal) -> int | None:
    """The number of states on a shortest path to a state satisfying ``goal`` (a plain
    BFS with a deque, for hand-checked scenarios), or None."""
    init = initial(cfg)
    seen = {init: 1}
    queue = deque([init])
    while queue:
        s = queue.popleft()
        if goal(s):
            return seen[s]
        for _, t in successors(cfg, s):
            if t not in seen:
                seen[t] = seen[s] + 1
                queue.append(t)
    return None
