"""The Kafka model's actions: their names, their order and their codes.

A leaf module (it imports nothing else from ``model``): the attrs model
(``model.kafka``), its batch kernel (``model.batch``) and the step sentences
(``model.describe``) all read the actions from here.

The names come in the order docs/model.md enumerates the actions (1–9, then
AlterPartition, then the operator's ControlledShutdown and ShutdownComplete); an action's
*code*, what the batch kernel stores for a successor, is its position in
``ACTION_NAMES``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import attrs


class ActionOptions(Protocol):
    """The options of a configuration (``model.config.Config``) that decide which actions
    it can take: this module reads nothing else of it, and imports no other module."""

    @property
    def alter_partition(self) -> bool: ...
    @property
    def max_controlled_shutdowns(self) -> int: ...
    @property
    def min_isr_changes(self) -> Sequence[int]: ...
    @property
    def max_disk_failures(self) -> int: ...
    @property
    def min_isr_lag(self) -> bool: ...


PRODUCE = "Produce"
FETCH_REQUEST = "FetchRequest"
FETCH_RESPONSE = "FetchResponse"
CRASH = "Crash"
RESTART = "Restart"
ELECT_LEADER = "ElectLeader"
BECOME_FOLLOWER = "BecomeFollower"
SHRINK_ISR = "ShrinkIsr"
EXPAND_ISR = "ExpandIsr"
ALTER_PARTITION = "AlterPartition"  # the controller's answer to an ISR change (alter_partition only)
CONTROLLED_SHUTDOWN = "ControlledShutdown"  # the operator's stop request and the controller's answer
SHUTDOWN_COMPLETE = "ShutdownComplete"  # the clean stop that ends a controlled shutdown
ACTION_NAMES = (
    PRODUCE,
    FETCH_REQUEST,
    FETCH_RESPONSE,
    CRASH,
    RESTART,
    ELECT_LEADER,
    BECOME_FOLLOWER,
    SHRINK_ISR,
    EXPAND_ISR,
    ALTER_PARTITION,
)
# The operator's actions (docs/model.md, "Operator actions"), after the protocol's in the
# enumeration: a configuration's names end with those it can fire; the batch kernel's code for
# each is its position in the configuration's ``action_names``.
OPERATOR_ACTIONS = (CONTROLLED_SHUTDOWN, SHUTDOWN_COMPLETE)

# The operator's actions of docs/model.md's "Operator actions: changing min.insync.replicas at
# run time and a failed log directory", enumerated after the ones above, in this order; only a
# configuration that can take one lists it (``action_names``), which gives the batch kernel's codes.
CHANGE_MIN_ISR = "ChangeMinIsr"  # min_isr_changes
DISK_FAILURE = "DiskFailure"  # max_disk_failures
APPLY_MIN_ISR = "ApplyMinIsr"  # min_isr_lag

# The codes of the batch kernel: an action's position in ACTION_NAMES.
CODE = {name: code for code, name in enumerate(ACTION_NAMES)}
(
    PRODUCE_CODE,
    FETCH_REQUEST_CODE,
    FETCH_RESPONSE_CODE,
    CRASH_CODE,
    RESTART_CODE,
    ELECT_LEADER_CODE,
    BECOME_FOLLOWER_CODE,
    SHRINK_ISR_CODE,
    EXPAND_ISR_CODE,
    ALTER_PARTITION_CODE,
) = range(len(ACTION_NAMES))


def action_names(config: ActionOptions) -> tuple[str, ...]:
    """The names of the actions a configuration can take, in order: AlterPartition only
    with ``alter_partition``, ControlledShutdown and ShutdownComplete only with
    ``max_controlled_shutdowns > 0``, ChangeMinIsr only with ``min_isr_changes``, DiskFailure
    only with ``max_disk_failures``, ApplyMinIsr only with ``min_isr_lag`` (so that every table
    of actions of another configuration is as it always was)."""
    names: tuple[str, ...] = ACTION_NAMES if config.alter_partition else ACTION_NAMES[:-1]
    if config.max_controlled_shutdowns:
        names += (CONTROLLED_SHUTDOWN, SHUTDOWN_COMPLETE)
    if config.min_isr_changes:
        names += (CHANGE_MIN_ISR,)
    if config.max_disk_failures:
        names += (DISK_FAILURE,)
    if config.min_isr_lag:
        names += (APPLY_MIN_ISR,)
    return names


@attrs.frozen
class Action:
    """One step: the action's name, the replica it acts on, and (for a lossy crash) how
    many records of the log survive. AlterPartition has no parameter: its ``replica`` is
    the one its request removes or adds (the state decides it; it is there for the text).
    A ControlledShutdown of the quorum's leader names the replica the controller elects in
    its place in ``to`` (``None`` when it elects nobody, and for any other replica's).
    ChangeMinIsr and ApplyMinIsr act on no replica: their ``replica`` is 0, unused."""

    name: str
    replica: int
    cut: int | None = None
    to: int | None = None  # ControlledShutdown of the quorum leader: the replica elected in its place
