"""The ground of the Kafka model's action effects (docs/model.md, "Actions"): direct
constructors of replicas and states, the leader's high-watermark step HW(l), and
``EffectsBase``, the configuration an effect reads (the HW gate, the two min ISRs, the
controller's acceptance of a leader).

Each action family adds its effects to ``EffectsBase`` in a module of its own
(``effects_data``, ``effects_leadership``, ``effects_isr``, ``effects_operators``);
``model.kafka_actions.KafkaEffects`` joins them.
"""

from __future__ import annotations

from typing import Any, Final, TypeVar

from .config import KAFKA_13141, KAFKA_13916, KAFKA_14704, KAFKA_15221, KAFKA_16234, KAFKA_16540, Config
from .state import EXPAND, Alter, Entries, Fetch, Ids, Log, Quorum, Replica, State, elr_after, leader_min_isr, min_isr

T = TypeVar("T")


def put_at(replicas: tuple[T, ...], i: int, rep: T) -> tuple[T, ...]:
    """``replicas`` with entry ``i`` replaced by ``rep``."""
    return replicas[:i] + (rep,) + replicas[i + 1 :]


# The search loop builds millions of states: these construct them directly, which is
# about three times faster than ``attrs.evolve`` (no field introspection per call).
KEEP: Final[Any] = object()


def new_replica(
    r: Replica,
    alive: bool = KEEP,
    log: Log = KEEP,
    hw: int = KEEP,
    epoch: int = KEEP,
    leader: int | None = KEEP,
    remote_leo: Ids = KEEP,
    inflight: Fetch | None = KEEP,
    lossy: bool = KEEP,
    shutting: bool = KEEP,
) -> Replica:
    """``r`` with the fields given changed."""
    return Replica(
        r.alive if alive is KEEP else alive,
        r.log if log is KEEP else log,
        r.hw if hw is KEEP else hw,
        r.epoch if epoch is KEEP else epoch,
        r.leader if leader is KEEP else leader,
        r.remote_leo if remote_leo is KEEP else remote_leo,
        r.inflight if inflight is KEEP else inflight,
        r.lossy if lossy is KEEP else lossy,
        r.shutting if shutting is KEEP else shutting,
    )


def new_state(
    s: State,
    replicas: tuple[Replica, ...] = KEEP,
    quorum: Quorum = KEEP,
    produced: int = KEEP,
    crashes: int = KEEP,
    committed: Entries = KEEP,
    acked: Entries = KEEP,
    controlled_shutdowns: int = KEEP,
) -> State:
    """``s`` with the fields given changed."""
    return State(
        s.replicas if replicas is KEEP else replicas,
        s.quorum if quorum is KEEP else quorum,
        s.produced if produced is KEEP else produced,
        s.crashes if crashes is KEEP else crashes,
        s.committed if committed is KEEP else committed,
        s.acked if acked is KEEP else acked,
        s.controlled_shutdowns if controlled_shutdowns is KEEP else controlled_shutdowns,
        s.leader_min_isr_step,
        s.disk_failures,
    )


def advance_hw(
    rep: Replica, l: int, isr: Ids, committed: Entries, gate: int = 0, alter: Alter | None = None
) -> tuple[Replica, Entries]:
    """HW(l) of docs/model.md: the leader's HW rises to the smallest log end in the ISR.

    ``isr`` is the ISR in force after the step. With ``hw_requires_min_isr`` the caller
    passes ``gate = min_insync_replicas``: the HW then does not move while the ISR is
    smaller (otherwise ``gate`` is 0 and never stops it). ``alter`` is the AlterPartition
    request in flight after the step: while it is ``l``'s own request to add a replica,
    that replica counts too (the maximal ISR); the gate still reads ``isr``.

    Returns the leader's replica and the new ``committed`` set.
    """
    if len(isr) < gate:
        return rep, committed
    m = len(rep.log)
    remote = rep.remote_leo
    for f in isr:
        if f != l and remote[f] < m:
            m = remote[f]
    if alter is not None and alter[0] == l and alter[1] == EXPAND and remote[alter[2]] < m:
        m = remote[alter[2]]
    if m <= rep.hw:
        return rep, committed
    log = rep.log
    added = {(o,) + log[o] for o in range(rep.hw, m)}
    return new_replica(rep, hw=m), tuple(sorted(added.union(committed)))


class EffectsBase:
    """The configuration an effect of ``KafkaModel`` reads, for one configuration.

    Args:
        config: the model's ``Config``.
    """

    __slots__ = (
        "config",
        "_gate",
        "_on_fetch",
        "_bug_13141",
        "_bug_14704",
        "_bug_13916",
        "_bug_15221",
        "_moves",
        "_bug_16540",
        "_bug_16234",
    )

    def __init__(self, config: Config) -> None:
        self.config = config
        # min_insync_replicas under hw_requires_min_isr, else 0: see advance_hw.
        self._gate = config.min_insync_replicas if config.hw_requires_min_isr else 0
        self._on_fetch = config.truncate_on_fetch
        self._bug_13141 = config.has_bug(KAFKA_13141)
        self._bug_14704 = config.has_bug(KAFKA_14704)
        self._bug_13916 = config.has_bug(KAFKA_13916)
        self._bug_15221 = config.has_bug(KAFKA_15221)
        # Can min ISR change (min_isr_changes)? If not, every min ISR is min_insync_replicas.
        self._moves = bool(config.min_isr_changes)
        self._bug_16540 = config.has_bug(KAFKA_16540)
        self._bug_16234 = config.has_bug(KAFKA_16234)

    # -- the two min ISRs (docs/model.md, "Operator actions") --------------------------

    def gate(self, s: State) -> int:
        """The HW gate of ``advance_hw`` in ``s``: the leader's min ISR under
        ``hw_requires_min_isr``, else 0. No step that moves an HW changes a min ISR, so
        the state before a step gives the gate after it."""
        if not self._moves or not self._gate:
            return self._gate
        return leader_min_isr(self.config, s)

    def leader_min_isr(self, s: State) -> int:
        """The min ISR the leader's broker uses in ``s`` (Produce's guard, the ``acks =
        "all"`` rule)."""
        return leader_min_isr(self.config, s) if self._moves else self.config.min_insync_replicas

    def elr_after(self, s: State, elr: Ids, old_isr: Ids, new_isr: Ids) -> Ids:
        """``elr_after`` with the controller's min ISR in ``s``."""
        return elr_after(self.config, elr, old_isr, new_isr, min_isr(self.config, s) if self._moves else None)

    def acceptable(self, rep: Replica) -> bool:
        """May the controller make this replica leader: alive, and not in controlled
        shutdown unless KAFKA-13916 (Kafka's "not fenced nor in controlled shutdown")."""
        return rep.alive and (not rep.shutting or self._bug_13916)
