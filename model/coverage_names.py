"""What coverage names in the Kafka model: the kinds of its actions and its variables.

Kinds (docs/model.md, "ElectLeader" and "Crash"):

- ElectLeader: ``clean`` (the candidate is in the ISR), ``ELR`` (in the eligible leader
  replicas, KIP-966), ``last-known-leader`` (the quorum's leader re-elected with the ISR
  and the ELR empty, KIP-966), ``unclean`` (anyone else);
- Crash: ``keeps its log`` (nothing lost) or ``lossy cut`` (an unflushed suffix lost);
- with ``truncate_on_fetch`` only: FetchRequest ``records`` (answered with records) or
  ``diverging`` (answered with a diverging epoch); FetchResponse ``append`` (records
  taken), ``truncate`` (the truncation on a diverging answer) or ``hw-first`` (KAFKA-14704's
  first half: the answer's high watermark taken before truncating).
- with ``max_controlled_shutdowns``: ControlledShutdown as ``SHUTDOWN_KINDS`` say;
- with ``max_disk_failures``: DiskFailure ``not in the ISR``, ``leaves the ISR``, ``enters the ELR``
  (the controller moves the failed replica into the ELR: KAFKA-16234's trigger) or ``ISR kept``
  (the ISR's last member without eligible leader replicas);
- with ``min_isr_changes``: ChangeMinIsr ``ELR empty``, ``clears the ELR`` (the fix of KAFKA-16540)
  or ``keeps the ELR`` (the bug).

Variables, each as the values a report lists (one set over every replica for a
replica's field): a replica's ``alive``, ``log end``, ``hw``, ``epoch``, ``leader``,
``lossy``, ``remote_leo`` (the leader's view of every log end), ``inflight`` (the records
of the fetch response in flight, "none" when there is none); the controller's
``quorum.leader``, ``quorum.epoch``, ``quorum.isr``, ``quorum.elr``; the history counters
``produced``, ``crashes``, ``committed`` and (with ``acks``) ``acked`` (how many records).

Both forms give the same integers: ``values_of`` from a ``State`` (or its parts), ``row_columns`` and
``row_derived`` from the
batch kernel's rows (``model.rows``): the engines' counts agree on every path.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
from kmc.checker.contract.protocol import CoverageNames

from .actions import (
    ALTER_PARTITION,
    CHANGE_MIN_ISR,
    CONTROLLED_SHUTDOWN,
    CRASH,
    DISK_FAILURE,
    ELECT_LEADER,
    FETCH_REQUEST,
    FETCH_RESPONSE,
    action_names,
)
from .rows import NONE
from .state import Quorum, Replica

ELECT_KINDS = ("clean", "ELR", "unclean", "last-known-leader")
CRASH_KINDS = ("keeps its log", "lossy cut")
ALTER_KINDS = ("removes", "adds", "refused")  # the controller's answer (alter_partition)
FETCH_REQUEST_KINDS = ("records", "diverging")  # truncate_on_fetch only
FETCH_RESPONSE_KINDS = ("append", "truncate", "hw-first")  # truncate_on_fetch only
# How the controller answers a ControlledShutdown (max_controlled_shutdowns only): a follower
# outside the ISR (only the mark), a follower in the ISR (removed), the quorum's leader replaced
# by an election of one of ElectLeader's kinds, or by nobody.
SHUTDOWN_KINDS = ("not in the ISR", "leaves the ISR", "clean", "ELR", "unclean", "leaderless")
# What the controller does with a replica whose log directory failed (max_disk_failures only).
DISK_KINDS = ("not in the ISR", "leaves the ISR", "enters the ELR", "ISR kept")
# What a min ISR change does to a non-empty ELR (min_isr_changes only).
MIN_ISR_KINDS = ("ELR empty", "clears the ELR", "keeps the ELR")
# each action's kinds, by its name (what ``row_kinds`` numbers)
KINDS_OF = {
    ELECT_LEADER: ELECT_KINDS,
    CRASH: CRASH_KINDS,
    ALTER_PARTITION: ALTER_KINDS,
    FETCH_REQUEST: FETCH_REQUEST_KINDS,
    FETCH_RESPONSE: FETCH_RESPONSE_KINDS,
    CONTROLLED_SHUTDOWN: SHUTDOWN_KINDS,
    DISK_FAILURE: DISK_KINDS,
    CHANGE_MIN_ISR: MIN_ISR_KINDS,
}
REPLICA_VARS = ("alive", "log end", "hw", "epoch", "leader", "lossy", "remote_leo", "inflight")
GLOBAL_VARS = ("quorum.leader", "quorum.epoch", "quorum.isr", "quorum.elr", "produced", "crashes", "committed")
# The operator's counters, each only with its option (min_isr_changes, min_isr_lag, max_disk_failures).
OPERATOR_VARS = ("quorum.min_isr_step", "leader_min_isr_step", "disk_failures")


def kafka_coverage(model) -> CoverageNames:
    """The ``CoverageNames`` of a ``KafkaModel`` (what ``KafkaModel.coverage_names``
    returns)."""
    cfg = model.config
    operators = (bool(cfg.min_isr_changes), cfg.min_isr_lag, cfg.max_disk_failures > 0)
    values = _Values(cfg.acks is not None, cfg.n if cfg.alter_partition else 0, operators)
    variables = tuple(f"replica.{v}" for v in REPLICA_VARS) + GLOBAL_VARS
    if cfg.acks is not None:
        variables += ("acked",)
    variables += tuple(v for v, on in zip(OPERATOR_VARS, operators) if on)
    kinds = {ELECT_LEADER: ELECT_KINDS, CRASH: CRASH_KINDS}
    if cfg.alter_partition:
        variables += ("quorum.alter",)
        kinds[ALTER_PARTITION] = ALTER_KINDS
    if cfg.truncate_on_fetch:
        kinds[FETCH_REQUEST] = FETCH_REQUEST_KINDS
        kinds[FETCH_RESPONSE] = FETCH_RESPONSE_KINDS
    if cfg.max_controlled_shutdowns:
        variables += ("replica.shutting", "controlled_shutdowns")
        kinds[CONTROLLED_SHUTDOWN] = SHUTDOWN_KINDS
        values.shutdowns = True
    if cfg.min_isr_changes:
        kinds[CHANGE_MIN_ISR] = MIN_ISR_KINDS
    if cfg.max_disk_failures:
        kinds[DISK_FAILURE] = DISK_KINDS
    return CoverageNames(
        actions=action_names(cfg),
        kinds=kinds,
        kind_of=kind_of,
        row_kinds=row_kinds,
        variables=variables,
        values_of=values,
        parts_of=values.parts,
        row_columns=row_columns,
        row_derived=row_derived,
        row_domains=row_domains,
        text=_Text(tuple(cfg.replicas)),
        hint=_Hint(cfg),
    )


# -- kinds ------------------------------------------------------------------------------


def kind_of(model, before, action, after) -> str | None:
    if action.name == ELECT_LEADER:
        q, c = before.quorum, action.replica
        if c in q.isr:
            return "clean"
        if c in q.elr:
            return "ELR"
        if model.config.last_known_leader and not q.isr and not q.elr and q.leader == c:
            return "last-known-leader"
        return "unclean"
    if action.name == CRASH:
        r = action.replica
        return "lossy cut" if len(after.replicas[r].log) < len(before.replicas[r].log) else "keeps its log"
    if action.name == ALTER_PARTITION:
        if after.quorum.isr == before.quorum.isr:
            return "refused"
        return "adds" if len(after.quorum.isr) > len(before.quorum.isr) else "removes"
    if action.name == CONTROLLED_SHUTDOWN:
        q, r = before.quorum, action.replica
        if q.leader != r:
            return "leaves the ISR" if r in q.isr else "not in the ISR"
        n = action.to
        if n is None:
            return "leaderless"
        if n in q.isr:
            return "clean"
        return "ELR" if n in q.elr else "unclean"
    if action.name == DISK_FAILURE:
        q, r = before.quorum, action.replica
        if r not in q.isr:
            return "not in the ISR"
        if r in after.quorum.isr:
            return "ISR kept"
        return "enters the ELR" if r in after.quorum.elr else "leaves the ISR"
    if action.name == CHANGE_MIN_ISR:
        if not before.quorum.elr:
            return "ELR empty"
        return "keeps the ELR" if after.quorum.elr else "clears the ELR"
    if action.name in (FETCH_REQUEST, FETCH_RESPONSE) and model.config.truncate_on_fetch:
        r = action.replica
        if action.name == FETCH_REQUEST:
            return "diverging" if after.replicas[r].inflight.diverging is not None else "records"
        if before.replicas[r].inflight.diverging is None:
            return "append"
        return "truncate" if after.replicas[r].inflight is None else "hw-first"
    return None


def row_kinds(kernel, chunk, parents, codes, succ) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    from .actions import ALTER_PARTITION_CODE, CRASH_CODE, ELECT_LEADER_CODE

    c = kernel.codec
    out = {}
    codes = codes.astype(np.int8, copy=False)
    where = np.flatnonzero(codes == ELECT_LEADER_CODE)
    if len(where):
        p = parents[where]
        cand = succ[where, c.Q_LEADER].astype(np.int64)
        bit = np.left_shift(1, cand)
        isr, elr = chunk[p, c.Q_ISR].astype(np.int64), chunk[p, c.Q_ELR].astype(np.int64)
        kind = np.full(len(where), 2, dtype=np.int64)  # unclean
        if kernel.config.last_known_leader:
            kind[(isr == 0) & (elr == 0) & (chunk[p, c.Q_LEADER] == cand)] = 3
        kind[(elr & bit) != 0] = 1
        kind[(isr & bit) != 0] = 0
        out[ELECT_LEADER] = (where, kind)
    where = np.flatnonzero(codes == CRASH_CODE)
    if len(where):
        leo = [c.block(r) + c.LEO for r in range(c.n)]
        lost = (succ[np.ix_(where, leo)] < chunk[np.ix_(parents[where], leo)]).any(axis=1)
        out[CRASH] = (where, lost.astype(np.int64))
    if c.fetch:
        out.update(_fetch_row_kinds(c, chunk, parents, codes, succ))
    if c.alter:
        where = np.flatnonzero(codes == ALTER_PARTITION_CODE)
        if len(where):
            same = succ[where, c.Q_ISR] == chunk[parents[where], c.Q_ISR]
            kind = chunk[parents[where], c.ALTER_CHANGE].astype(np.int64)  # 0 removes, 1 adds
            kind[same] = 2
            out[ALTER_PARTITION] = (where, kind)
    if c.SHUTTING is not None:
        where = np.flatnonzero(codes == kernel.action_names.index(CONTROLLED_SHUTDOWN))
        if len(where):
            out[CONTROLLED_SHUTDOWN] = (where, _shutdown_kinds(c, chunk, parents[where], succ[where]))
    if c.DISK_FAILURES is not None:
        where = np.flatnonzero(codes == kernel.action_names.index(DISK_FAILURE))
        if len(where):
            out[DISK_FAILURE] = (where, _disk_kinds(c, kernel.config, chunk[parents[where]], succ[where]))
    if c.MIN_ISR_STEP is not None:
        where = np.flatnonzero(codes == kernel.action_names.index(CHANGE_MIN_ISR))
        if len(where):
            elr_before = chunk[parents[where], c.Q_ELR] != 0
            kind = np.where(succ[where, c.Q_ELR] != 0, 2, 1)  # keeps the ELR, clears it
            kind[~elr_before] = 0  # ELR empty
            out[CHANGE_MIN_ISR] = (where, kind.astype(np.int64))
    return out


def _disk_kinds(c, cfg, before, after) -> np.ndarray:
    """The kinds of DiskFailure steps (``DISK_KINDS``, as ``kind_of`` reads them) from the
    ISR and the ELR alone: a step that changed the ISR removed the failed replica (into the
    ELR or not); one that did not found it outside the ISR, except where the ISR was one
    replica and, without the ELR, is kept whole: there the row does not say whether that
    replica failed ("ISR kept") or another, and the kind is -1 (``row_counts`` asks the
    model)."""
    isr = before[:, c.Q_ISR].astype(np.int64)
    isr_after = after[:, c.Q_ISR].astype(np.int64)
    removed = isr & ~isr_after
    kind = np.zeros(len(before), dtype=np.int64)  # not in the ISR
    changed = removed != 0
    kind[changed] = np.where((after[changed, c.Q_ELR].astype(np.int64) & removed[changed]) != 0, 2, 1)
    if not cfg.eligible_leader_replicas:
        kind[~changed & (isr != 0) & ((isr & (isr - 1)) == 0)] = -1
    return kind


def _shutdown_kinds(c, before, parents, after) -> np.ndarray:
    """The kinds of ControlledShutdown steps (``SHUTDOWN_KINDS``, as ``kind_of`` reads
    them): the replica ``r`` is the one the step marked; a follower's step is "not in the
    ISR" or "leaves the ISR" by ``r``'s membership before; the quorum leader's by whom it
    elected (none: "leaderless"), by that replica's membership of the ISR or the ELR before."""
    marked = after[:, c.SHUTTING].astype(np.int64) & ~before[parents, c.SHUTTING].astype(np.int64)
    r = np.zeros(len(parents), dtype=np.int64)
    for k in range(c.n):
        r[marked == 1 << k] = k
    isr = before[parents, c.Q_ISR].astype(np.int64)
    elr = before[parents, c.Q_ELR].astype(np.int64)
    ql = before[parents, c.Q_LEADER].astype(np.int64)
    elected = after[:, c.Q_LEADER].astype(np.int64)
    bit = np.left_shift(1, np.maximum(elected, 0))
    kind = np.full(len(parents), 4, dtype=np.int64)  # unclean
    kind[(elr & bit) != 0] = 3  # ELR
    kind[(isr & bit) != 0] = 2  # clean
    kind[elected == NONE] = 5  # leaderless
    follower = ql != r
    kind[follower] = np.where((isr[follower] >> r[follower] & 1) == 1, 1, 0)  # leaves the ISR, not in it
    return kind


def _fetch_row_kinds(c, chunk, parents, codes, succ) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """The kinds of FetchRequest and FetchResponse with truncation in the fetch path, read
    from the in-flight columns (one column at a time: a gather of one byte a successor):
    the follower is the replica whose response the step sends (FetchRequest: none was in
    flight, one is) or takes (FetchResponse: its response is gone, or, KAFKA-14704's first
    half, now marked applied)."""
    from .actions import FETCH_REQUEST_CODE, FETCH_RESPONSE_CODE

    out = {}
    where = np.flatnonzero(codes == FETCH_REQUEST_CODE)
    if len(where):
        p = parents[where]
        sent = np.zeros(len(where), dtype=bool)
        for r in range(c.n):
            b = c.block(r)
            sent |= (chunk[p, b + c.INFLIGHT_LEADER] == NONE) & (succ[where, b + c.INFLIGHT_DIVERGING] != NONE)
        out[FETCH_REQUEST] = (where, sent.astype(np.int64))  # records 0, diverging 1
    where = np.flatnonzero(codes == FETCH_RESPONSE_CODE)
    if len(where):
        p = parents[where]
        kind = np.zeros(len(where), dtype=np.int64)  # append 0
        applied = c.INFLIGHT_APPLIED
        for r in range(c.n):
            b = c.block(r)
            diverging = chunk[p, b + c.INFLIGHT_DIVERGING] != NONE
            if not diverging.any():
                continue
            gone = succ[where, b + c.INFLIGHT_LEADER] == NONE
            kind[diverging & gone] = 1  # truncate
            if applied is not None:  # marked applied at this step: the HW first
                first = (chunk[p, b + applied] != 1) & (succ[where, b + applied] == 1)
                kind[diverging & first] = 2
        out[FETCH_RESPONSE] = (where, kind)
    return out


# -- variables --------------------------------------------------------------------------


def _mask(ids) -> int:
    m = 0
    for r in ids:
        m |= 1 << r
    return m


def _replica_values(rep) -> Iterator[tuple[str, int]]:
    yield "replica.alive", int(rep.alive)
    yield "replica.log end", len(rep.log)
    yield "replica.hw", rep.hw
    yield "replica.epoch", rep.epoch
    yield "replica.leader", -1 if rep.leader is None else rep.leader
    yield "replica.lossy", int(rep.lossy)
    for leo in rep.remote_leo:
        yield "replica.remote_leo", leo
    yield "replica.inflight", -1 if rep.inflight is None else len(rep.inflight.records)


def _quorum_values(q, n) -> Iterator[tuple[str, int]]:
    yield "quorum.leader", -1 if q.leader is None else q.leader
    yield "quorum.epoch", q.epoch
    yield "quorum.isr", _mask(q.isr)
    yield "quorum.elr", _mask(q.elr)
    if n:  # with alter_partition: the request in flight as one number (-1: none)
        yield "quorum.alter", _alter_value(q.alter, n)


def _alter_value(alter, n) -> int:
    """The request ``(leader, change, replica)`` as one number: -1 for none, else
    ``(leader * 2 + change) * n + replica`` (change 0 removes, 1 adds)."""
    if alter is None:
        return -1
    return (alter[0] * 2 + (1 if alter[1] == "expand" else 0)) * n + alter[2]


class _Values:
    """A state's values (``values_of``), or a part's (``parts_of``: a replica, the quorum,
    the history counters); the acknowledged count when ``acks`` is set."""

    def __init__(self, acks, alter_replicas=0, operators=(False, False, False)) -> None:
        self.acks = acks
        self.alter_replicas = alter_replicas  # the replica count with alter_partition, else 0
        self.shutdowns = False  # with max_controlled_shutdowns: the mark and the count
        self.operators = operators  # which of OPERATOR_VARS the configuration can change

    def parts(self, state) -> Iterator[Replica | Quorum | tuple]:
        yield from state.replicas
        yield state.quorum
        yield ("history", state.produced, state.crashes, len(state.committed), len(state.acked))
        if self.shutdowns:
            yield ("shutdowns", state.controlled_shutdowns)
        if any(self.operators):
            yield ("operators", state.quorum.min_isr_step, state.leader_min_isr_step, state.disk_failures)

    def __call__(self, part) -> Iterator[tuple[str, int]]:
        if isinstance(part, Replica):
            yield from _replica_values(part)
            if self.shutdowns:
                yield "replica.shutting", int(part.shutting)
        elif isinstance(part, Quorum):
            yield from _quorum_values(part, self.alter_replicas)
        elif isinstance(part, tuple) and part[0] == "shutdowns":
            yield "controlled_shutdowns", part[1]
        elif isinstance(part, tuple) and part[0] == "operators":
            for var, on, value in zip(OPERATOR_VARS, self.operators, part[1:]):
                if on:
                    yield var, value
        elif isinstance(part, tuple):
            _, produced, crashes, committed, acked = part
            yield "produced", produced
            yield "crashes", crashes
            yield "committed", committed
            if self.acks:
                yield "acked", acked
        else:  # a whole state
            for p in self.parts(part):
                yield from self(p)


def row_columns(kernel) -> dict[str, list[int]]:
    """The row columns (``model.rows``) that hold each variable's values as they are."""
    c = kernel.codec
    blocks = [c.block(r) for r in range(c.n)]

    def per_replica(offset) -> list[int]:
        return [b + offset for b in blocks]

    out = {
        "replica.alive": per_replica(c.ALIVE),
        "replica.log end": per_replica(c.LEO),
        "replica.hw": per_replica(c.HW),
        "replica.epoch": per_replica(c.EPOCH),
        "replica.leader": per_replica(c.LEADER),
        "replica.lossy": per_replica(c.LOSSY),
        "replica.remote_leo": [b + c.REMOTE_LEO + f for b in blocks for f in range(c.n)],
        "replica.inflight": per_replica(c.INFLIGHT_COUNT),  # -1 (none) with no response in flight
        "quorum.leader": [c.Q_LEADER],
        "quorum.epoch": [c.Q_EPOCH],
        "quorum.isr": [c.Q_ISR],
        "quorum.elr": [c.Q_ELR],
        "produced": [c.PRODUCED],
        "crashes": [c.CRASHES],
    }
    for var, column in (
        ("controlled_shutdowns", c.CONTROLLED_SHUTDOWNS),
        ("quorum.min_isr_step", c.MIN_ISR_STEP),
        ("leader_min_isr_step", c.LEADER_MIN_ISR_STEP),
        ("disk_failures", c.DISK_FAILURES),
    ):
        if column is not None:
            out[var] = [column]
    return out


def row_derived(kernel, rows, wanted) -> Iterator[tuple[str, np.ndarray]]:
    """The variables no column holds: how many records are committed (and acknowledged)."""
    c = kernel.codec
    if "committed" in wanted:
        yield "committed", np.count_nonzero(rows[:, c.COMMITTED_OFFSET : c.COMMITTED_OFFSET + c.m] >= 0, axis=1)
    if c.acks is not None and "acked" in wanted:
        yield "acked", np.count_nonzero(rows[:, c.ACKED_OFFSET : c.ACKED_OFFSET + c.m] >= 0, axis=1)
    if c.alter and "quorum.alter" in wanted:
        leader = rows[:, c.ALTER_LEADER].astype(np.int64)
        value = (leader * 2 + rows[:, c.ALTER_CHANGE]) * c.n + rows[:, c.ALTER_REPLICA]
        yield "quorum.alter", np.where(leader < 0, -1, value)
    if c.SHUTTING is not None and "replica.shutting" in wanted:  # a bit mask: each replica's bit
        mask = rows[:, c.SHUTTING].astype(np.int64)
        yield "replica.shutting", np.concatenate([mask >> r & 1 for r in range(c.n)])


def row_domains(kernel) -> dict[str, tuple[int, int]]:
    """Every variable's least and greatest value (model invariants: a log holds at most
    ``max_messages`` records, epochs stay within ``max_leader_epoch``, ...)."""
    cfg = kernel.config
    n, m, e = cfg.n, cfg.max_messages, cfg.max_leader_epoch
    out = {
        "replica.alive": (0, 1),
        "replica.log end": (0, m),
        "replica.hw": (0, m),
        "replica.epoch": (-1, e),
        "replica.leader": (-1, n - 1),
        "replica.lossy": (0, 1),
        "replica.remote_leo": (0, m),
        "replica.inflight": (-1, m),
        "quorum.leader": (-1, n - 1),
        "quorum.epoch": (0, e),
        "quorum.isr": (0, (1 << n) - 1),
        "quorum.elr": (0, (1 << n) - 1),
        "produced": (0, m),
        "crashes": (0, cfg.max_crashes),
        "committed": (0, m),
    }
    if kernel.codec.acks is not None:
        out["acked"] = (0, m)
    if kernel.codec.alter:
        out["quorum.alter"] = (-1, 2 * n * n - 1)
    c = kernel.codec
    if c.SHUTTING is not None:
        out["replica.shutting"] = (0, 1)
        out["controlled_shutdowns"] = (0, cfg.max_controlled_shutdowns)
    if c.MIN_ISR_STEP is not None:
        out["quorum.min_isr_step"] = (0, len(cfg.min_isr_changes))
    if c.LEADER_MIN_ISR_STEP is not None:
        out["leader_min_isr_step"] = (0, len(cfg.min_isr_changes))
    if c.DISK_FAILURES is not None:
        out["disk_failures"] = (0, cfg.max_disk_failures)
    return out


# -- words ------------------------------------------------------------------------------


class _Text:
    """A value as a report shows it: replica names, "none", sets of replicas."""

    def __init__(self, replicas) -> None:
        self.replicas = replicas

    def __call__(self, var, value) -> str:
        if var in ("replica.leader", "quorum.leader"):
            return "none" if value < 0 else self.replicas[value]
        if var in ("quorum.isr", "quorum.elr"):
            return "{" + ", ".join(n for r, n in enumerate(self.replicas) if value >> r & 1) + "}"
        if var in ("replica.alive", "replica.lossy", "replica.shutting"):
            return "true" if value else "false"
        if var == "quorum.alter":
            if value < 0:
                return "none"
            who, r = divmod(value, len(self.replicas))
            leader, change = divmod(who, 2)
            return f"{self.replicas[leader]} asks to {'add' if change else 'remove'} {self.replicas[r]}"
        if var == "replica.inflight":
            return "none" if value < 0 else f"{value} record" + ("" if value == 1 else "s")
        return str(value)


_OPERATOR_KINDS_OFF = {
    (DISK_FAILURE, "enters the ELR"): lambda cfg: not cfg.eligible_leader_replicas,
    (DISK_FAILURE, "ISR kept"): lambda cfg: cfg.eligible_leader_replicas,
    (CHANGE_MIN_ISR, "clears the ELR"): lambda cfg: not cfg.eligible_leader_replicas or cfg.has_bug("KAFKA-16540"),
    (CHANGE_MIN_ISR, "keeps the ELR"): lambda cfg: not cfg.has_bug("KAFKA-16540"),
}


class _Hint:
    """The warning for an action or a kind that never fired, as a question to the user;
    none (``""``) where the configuration turned it off (a bound of 0, an option off)."""

    def __init__(self, cfg) -> None:
        self.cfg = cfg

    def __call__(self, action, kind) -> str | None:
        cfg = self.cfg
        if kind is None:
            off = (
                (action in ("Crash", "Restart") and cfg.max_crashes == 0)
                or (action == "Produce" and cfg.max_messages == 0)
                or (action == ELECT_LEADER and cfg.max_leader_epoch == 0)
            )
            return "" if off else None
        operator = _OPERATOR_KINDS_OFF.get((action, kind))
        if operator is not None:  # a kind of the operator's actions that the configuration rules out
            return "" if operator(cfg) else None
        option = {
            "ELR": "eligible_leader_replicas",
            "unclean": "unclean_leader_election",
            "last-known-leader": "last_known_leader",
            "lossy cut": "unflushed_loss",
            "refused": "broker_epochs",
        }.get(kind)
        if option is None:
            return None
        taken = {"lossy cut": "took a lossy cut", "refused": "refused a request"}.get(kind, f"took the {kind} kind")
        head = f"{action} never {taken}"
        if not getattr(cfg, option):
            return ""  # the spec turned it off: nothing to ask
        return f"{head} although `{option}` is on: raise max_crashes or max_leader_epoch?"
