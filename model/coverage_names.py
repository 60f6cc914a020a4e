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

The kinds live in ``model.coverage_kinds``, the variables' values below (``StateValues``,
the model's ``values_of``; ``row_columns``, ``row_derived``, ``row_domains``; as a report
shows them, ``ValueText``). Both forms give the same integers: ``values_of`` from a
``State`` (or its parts), ``row_columns`` and ``row_derived`` from the batch kernel's rows
(``model.rows``): the engines' counts agree on every path.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Iterator
from typing import TYPE_CHECKING, Any

import numpy as np

from .config import Config
from .state import Alter, Quorum, Replica, State

if TYPE_CHECKING:
    from .views import KernelView, ModelView

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
from .coverage_kinds import (
    ALTER_KINDS,
    CRASH_KINDS,
    DISK_KINDS,
    ELECT_KINDS,
    FETCH_REQUEST_KINDS,
    FETCH_RESPONSE_KINDS,
    MIN_ISR_KINDS,
    SHUTDOWN_KINDS,
    kind_of,
    row_kinds,
)

# -- the variables' values

REPLICA_VARS = ("alive", "log end", "hw", "epoch", "leader", "lossy", "remote_leo", "inflight")
GLOBAL_VARS = ("quorum.leader", "quorum.epoch", "quorum.isr", "quorum.elr", "produced", "crashes", "committed")
# The operator's counters, each only with its option (min_isr_changes, min_isr_lag, max_disk_failures).
OPERATOR_VARS = ("quorum.min_isr_step", "leader_min_isr_step", "disk_failures")


def _mask(ids: Iterable[int]) -> int:
    m = 0
    for r in ids:
        m |= 1 << r
    return m


def _replica_values(rep: Replica) -> Iterator[tuple[str, int]]:
    yield "replica.alive", int(rep.alive)
    yield "replica.log end", len(rep.log)
    yield "replica.hw", rep.hw
    yield "replica.epoch", rep.epoch
    yield "replica.leader", -1 if rep.leader is None else rep.leader
    yield "replica.lossy", int(rep.lossy)
    for leo in rep.remote_leo:
        yield "replica.remote_leo", leo
    yield "replica.inflight", -1 if rep.inflight is None else len(rep.inflight.records)


def _quorum_values(q: Quorum, n: int) -> Iterator[tuple[str, int]]:
    yield "quorum.leader", -1 if q.leader is None else q.leader
    yield "quorum.epoch", q.epoch
    yield "quorum.isr", _mask(q.isr)
    yield "quorum.elr", _mask(q.elr)
    if n:  # with alter_partition: the request in flight as one number (-1: none)
        yield "quorum.alter", _alter_value(q.alter, n)


def _alter_value(alter: Alter | None, n: int) -> int:
    """The request ``(leader, change, replica)`` as one number: -1 for none, else
    ``(leader * 2 + change) * n + replica`` (change 0 removes, 1 adds)."""
    if alter is None:
        return -1
    return (alter[0] * 2 + (1 if alter[1] == "expand" else 0)) * n + alter[2]


Part = Replica | Quorum | tuple[Any, ...]
"""A part of a state whose values coverage counts: a replica, the quorum, or a tagged tuple
of counters (``("history", ...)``, ``("shutdowns", ...)``, ``("operators", ...)``)."""


class StateValues:
    """A state's values (``values_of``), or a part's (``parts_of``: a replica, the quorum,
    the history counters); the acknowledged count when ``acks`` is set."""

    def __init__(
        self, acks: bool, alter_replicas: int = 0, operators: tuple[bool, bool, bool] = (False, False, False)
    ) -> None:
        self.acks = acks
        self.alter_replicas = alter_replicas  # the replica count with alter_partition, else 0
        self.shutdowns = False  # with max_controlled_shutdowns: the mark and the count
        self.operators = operators  # which of OPERATOR_VARS the configuration can change

    def parts(self, state: State) -> Iterator[Part]:
        yield from state.replicas
        yield state.quorum
        yield ("history", state.produced, state.crashes, len(state.committed), len(state.acked))
        if self.shutdowns:
            yield ("shutdowns", state.controlled_shutdowns)
        if any(self.operators):
            yield ("operators", state.quorum.min_isr_step, state.leader_min_isr_step, state.disk_failures)

    def __call__(self, part: Part | State) -> Iterator[tuple[str, int]]:
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


def row_columns(kernel: KernelView) -> dict[str, list[int]]:
    """The row columns (``model.rows``) that hold each variable's values as they are."""
    c = kernel.codec
    blocks = [c.block(r) for r in range(c.n)]

    def per_replica(offset: int) -> list[int]:
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


def row_derived(kernel: KernelView, rows: np.ndarray, wanted: Collection[str]) -> Iterator[tuple[str, np.ndarray]]:
    """The variables no column holds: how many records are committed (and acknowledged)."""
    c = kernel.codec
    if "committed" in wanted:
        yield "committed", np.count_nonzero(rows[:, c.COMMITTED_OFFSET : c.COMMITTED_OFFSET + c.m] >= 0, axis=1)
    acked = c.ACKED_OFFSET  # a column only when acknowledgements are tracked
    if acked is not None and "acked" in wanted:
        yield "acked", np.count_nonzero(rows[:, acked : acked + c.m] >= 0, axis=1)
    if c.alter and "quorum.alter" in wanted:
        leader = rows[:, c.ALTER_LEADER].astype(np.int64)
        value = (leader * 2 + rows[:, c.ALTER_CHANGE]) * c.n + rows[:, c.ALTER_REPLICA]
        yield "quorum.alter", np.where(leader < 0, -1, value)
    if c.SHUTTING is not None and "replica.shutting" in wanted:  # a bit mask: each replica's bit
        mask = rows[:, c.SHUTTING].astype(np.int64)
        yield "replica.shutting", np.concatenate([mask >> r & 1 for r in range(c.n)])


def row_domains(kernel: KernelView) -> dict[str, tuple[int, int]]:
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


class ValueText:
    """A value as a report shows it: replica names, "none", sets of replicas."""

    def __init__(self, replicas: tuple[str, ...]) -> None:
        self.replicas = replicas

    def __call__(self, var: str, value: int) -> str:
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


# -- the model's coverage names


def kafka_coverage(model: ModelView) -> CoverageNames:
    """The ``CoverageNames`` of a ``KafkaModel`` (what ``KafkaModel.coverage_names``
    returns)."""
    cfg = model.config
    operators = (bool(cfg.min_isr_changes), cfg.min_isr_lag, cfg.max_disk_failures > 0)
    values = StateValues(cfg.acks is not None, cfg.n if cfg.alter_partition else 0, operators)
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
        text=ValueText(tuple(cfg.replicas)),
        hint=_Hint(cfg),
    )


# -- kinds ------------------------------------------------------------------------------


_OPERATOR_KINDS_OFF: dict[tuple[str, str], Callable[[Config], bool]] = {
    (DISK_FAILURE, "enters the ELR"): lambda cfg: not cfg.eligible_leader_replicas,
    (DISK_FAILURE, "ISR kept"): lambda cfg: cfg.eligible_leader_replicas,
    (CHANGE_MIN_ISR, "clears the ELR"): lambda cfg: not cfg.eligible_leader_replicas or cfg.has_bug("KAFKA-16540"),
    (CHANGE_MIN_ISR, "keeps the ELR"): lambda cfg: not cfg.has_bug("KAFKA-16540"),
}


class _Hint:
    """The warning for an action or a kind that never fired, as a question to the user;
    none (``""``) where the configuration turned it off (a bound of 0, an option off)."""

    def __init__(self, cfg: Config) -> None:
        self.cfg = cfg

    def __call__(self, action: str, kind: str | None) -> str | None:
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
