"""The Kafka model's weakly fair action instances (docs/model.md, "Liveness under fairness").

The healing actions are fair, one instance per replica: FetchRequest(f), FetchResponse(f),
Restart(r), BecomeFollower(r), ExpandIsr(r), and Failover(n) — an ElectLeader(n) step
taken while the quorum leader does not lead (a preferred election, taken while it
does, is not fair); with ``alter_partition`` also AlterPartition, one instance; with
``max_controlled_shutdowns`` also ShutdownComplete(r), one instance per replica (a
shutdown under way completes); with ``min_isr_lag`` also ApplyMinIsr, one instance (a broker
applies a config change). Produce, Crash, ShrinkIsr and ControlledShutdown are not fair: a
producer may stop writing, a replica may never crash again, a leader may never shrink its
ISR, an operator may never restart a broker; nor are the operator's ChangeMinIsr and
DiskFailure (perturbations).

An instance is its text (``"FetchRequest(A)"``, ``"Failover(B)"``, ``"AlterPartition"``);
its *code* is its position in ``fair_instances(config)``. ``fair_instance`` answers for a
step of the attrs model, ``fair_codes`` for the batch kernel's successors, reading which
replica a step acted on from what it changed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from .actions import (
    ALTER_PARTITION,
    ALTER_PARTITION_CODE,
    APPLY_MIN_ISR,
    BECOME_FOLLOWER,
    BECOME_FOLLOWER_CODE,
    ELECT_LEADER,
    ELECT_LEADER_CODE,
    EXPAND_ISR,
    EXPAND_ISR_CODE,
    FETCH_REQUEST,
    FETCH_REQUEST_CODE,
    FETCH_RESPONSE,
    FETCH_RESPONSE_CODE,
    RESTART,
    RESTART_CODE,
    SHUTDOWN_COMPLETE,
    Action,
)
from .config import Config
from .state import State, leader_of

if TYPE_CHECKING:
    from .views import KernelView

FAILOVER = "Failover"
# The fair actions with one instance per replica, in the order of their instances' codes
# (the actions' own order; ElectLeader's instances are named Failover).
PER_REPLICA = (FETCH_REQUEST, FETCH_RESPONSE, RESTART, ELECT_LEADER, BECOME_FOLLOWER, EXPAND_ISR)


def fair_instances(config: Config) -> tuple[str, ...]:
    """Every fair instance of ``config``, in code order: each per-replica action for every
    replica in the spec's order, then AlterPartition (only with ``alter_partition``), then
    ShutdownComplete of every replica (only with ``max_controlled_shutdowns``)."""
    out = [f"{FAILOVER if a == ELECT_LEADER else a}({r})" for a in PER_REPLICA for r in config.replicas]
    if config.alter_partition:
        out.append(ALTER_PARTITION)
    if config.max_controlled_shutdowns:
        out.extend(f"{SHUTDOWN_COMPLETE}({r})" for r in config.replicas)
    if config.min_isr_lag:  # the leader's broker eventually applies a change (one instance)
        out.append(APPLY_MIN_ISR)
    return tuple(out)


def instance_codes(config: Config) -> dict[str, int]:
    """Action name -> the code of its instance for the first replica (add the replica's
    number); AlterPartition -> its one code."""
    n = config.n
    out = {a: k * n for k, a in enumerate(PER_REPLICA)}
    if config.alter_partition:
        out[ALTER_PARTITION] = len(PER_REPLICA) * n
    if config.max_controlled_shutdowns:
        out[SHUTDOWN_COMPLETE] = len(PER_REPLICA) * n + (1 if config.alter_partition else 0)
    if config.min_isr_lag:
        out[APPLY_MIN_ISR] = (
            len(PER_REPLICA) * n + (1 if config.alter_partition else 0) + (n if config.max_controlled_shutdowns else 0)
        )
    return out


def fair_instance(names: tuple[str, ...], codes: dict[str, int], state: State, action: Action) -> str | None:
    """The instance of the step ``state --action-->`` (a member of ``names``, the model's
    ``fair_instances``), or None when the step is not fair. ``codes`` is
    ``instance_codes``: both are computed once per model."""
    base = codes.get(action.name)
    if base is None:
        return None
    if action.name in (ALTER_PARTITION, APPLY_MIN_ISR):  # one instance each
        return names[base]
    if action.name == ELECT_LEADER and leader_of(state) is not None:
        return None  # a preferred election: the quorum leader leads
    return names[base + action.replica]


class _FairCodes:
    """The fair codes of one ``expand`` call's successors, filled in action by action
    (``fair_codes``): ``out`` holds the code of each step's instance, -1 where none."""

    def __init__(
        self, kernel: KernelView, chunk: np.ndarray, parents: np.ndarray, codes: np.ndarray, succ: np.ndarray
    ) -> None:
        self.kernel = kernel
        self.codec = kernel.codec
        self.chunk, self.parents, self.succ = chunk, parents, succ
        self.codes = np.asarray(codes)
        self.base = instance_codes(kernel.config)
        self.out = np.full(len(codes), -1, dtype=np.int64)

    def put(self, code: int, replica_of: Callable[[np.ndarray], np.ndarray]) -> None:
        """The steps of action ``code`` take the instance of the replica ``replica_of``
        reads for them (none where it reads -1)."""
        where = np.flatnonzero(self.codes == code)
        if len(where):
            r = replica_of(where)
            name = self.kernel.action_names[code]
            self.out[where] = np.where(r >= 0, self.base[name] + r, -1)

    def changed(
        self, where: np.ndarray, column: int, test: Callable[[np.ndarray, np.ndarray], np.ndarray]
    ) -> np.ndarray:
        """The replica whose ``column`` changed as ``test(before, after)`` says, one a step of
        ``where`` (-1 if none did; the actions read this way change exactly one replica's)."""
        n = self.kernel.n
        out = np.full(len(where), -1, dtype=np.int64)
        cols = np.array([self.codec.block(r) + column for r in range(n)])
        # those columns only
        before, after = self.chunk[np.ix_(self.parents[where], cols)], self.succ[np.ix_(where, cols)]
        for r in range(n):
            out[test(before[:, r], after[:, r])] = r
        return out

    def responded(self, w: np.ndarray) -> np.ndarray:
        """FetchResponse(f) clears f's response, except the first half of a diverging answer
        under KAFKA-14704, which keeps it in flight and marks it applied."""
        c = self.codec
        r = self.changed(w, c.INFLIGHT_LEADER, lambda b, a: (b != c.NONE) & (a == c.NONE))
        if c.INFLIGHT_APPLIED is not None:
            half = self.changed(w, c.INFLIGHT_APPLIED, lambda b, a: (b != 1) & (a == 1))
            r = np.where(r >= 0, r, half)
        return r

    def added(self, w: np.ndarray) -> np.ndarray:
        """ExpandIsr(r) without ``alter_partition``: the replica the step added to the ISR."""
        c = self.codec
        new = self.succ[w, c.Q_ISR].astype(np.int64) & ~self.chunk[self.parents[w], c.Q_ISR].astype(np.int64)
        r = np.full(len(w), -1, dtype=np.int64)
        for k in range(self.kernel.n):
            r[new == 1 << k] = k
        return r

    def fill(self) -> np.ndarray:
        """Every action's codes, in turn; returns ``out``."""
        c = self.codec
        kernel, codes, out, base, succ = self.kernel, self.codes, self.out, self.base, self.succ
        self.put(
            FETCH_REQUEST_CODE, lambda w: self.changed(w, c.INFLIGHT_LEADER, lambda b, a: (b == c.NONE) & (a != c.NONE))
        )
        self.put(FETCH_RESPONSE_CODE, self.responded)
        self.put(RESTART_CODE, lambda w: self.changed(w, c.ALIVE, lambda b, a: (b == 0) & (a == 1)))
        self.put(BECOME_FOLLOWER_CODE, lambda w: self.changed(w, c.EPOCH, lambda b, a: b != a))
        if kernel.config.alter_partition:
            self.put(EXPAND_ISR_CODE, lambda w: succ[w, c.ALTER_REPLICA].astype(np.int64))
            out[np.flatnonzero(codes == ALTER_PARTITION_CODE)] = base[ALTER_PARTITION]
        else:
            self.put(EXPAND_ISR_CODE, self.added)
        where = np.flatnonzero(codes == ELECT_LEADER_CODE)
        if len(where):
            failover = kernel.leads(self.chunk[self.parents[where]]) < 0
            cand = succ[where, c.Q_LEADER].astype(np.int64)
            out[where] = np.where(failover, base[ELECT_LEADER] + cand, -1)
        names = list(kernel.action_names)
        if SHUTDOWN_COMPLETE in names:  # ShutdownComplete(r) stops r
            self.put(
                names.index(SHUTDOWN_COMPLETE), lambda w: self.changed(w, c.ALIVE, lambda b, a: (b == 1) & (a == 0))
            )
        if APPLY_MIN_ISR in names:  # one instance
            out[codes == names.index(APPLY_MIN_ISR)] = base[APPLY_MIN_ISR]
        return out


def fair_codes(
    kernel: KernelView,
    chunk: np.ndarray,
    parents: np.ndarray,
    choices: np.ndarray,
    codes: np.ndarray,
    succ: np.ndarray,
) -> np.ndarray:
    """``fair_instance`` over the batch kernel's successors (``expand(chunk)``'s four
    arrays): the code of each step's instance, or -1 when the step is not fair.

    Which replica a step acted on is read off what it changed: FetchRequest(f) puts a
    response in flight to ``f``, FetchResponse(f) clears ``f``'s (or, the first half of a
    diverging answer under KAFKA-14704, marks it applied), Restart(r) brings ``r``
    back, BecomeFollower(r) moves ``r``'s epoch, ExpandIsr(r) adds ``r`` to the ISR (with
    ``alter_partition``: asks for it), ElectLeader(n) makes ``n`` the quorum leader, and is
    a Failover only when nobody led before the step."""
    return _FairCodes(kernel, chunk, parents, codes, succ).fill()
