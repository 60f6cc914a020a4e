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

The kinds live in ``model.coverage_kinds``, the variables' values in
``model.coverage_values``. Both forms give the same integers: ``values_of`` from a
``State`` (or its parts), ``row_columns`` and ``row_derived`` from the batch kernel's rows
(``model.rows``): the engines' counts agree on every path.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from .config import Config

if TYPE_CHECKING:
    from .views import ModelView

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
from .coverage_values import (
    GLOBAL_VARS,
    OPERATOR_VARS,
    REPLICA_VARS,
    StateValues,
    ValueText,
    row_columns,
    row_derived,
    row_domains,
)


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
