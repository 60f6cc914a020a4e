"""The truncation rules a replica applies when it becomes a follower (docs/model.md), and
their registry: the one place a rule's names are written.

Each rule is one ``TruncationRule``: its name (the spec's ``model.truncation``), its short
name (the matrix's row ids and version columns), the other names ``kmc matrix --rules``
takes, whether BecomeFollower asks the leader (OffsetsForLeaderEpoch), and its two forms:
the per-state form, a plain function of the follower's log and high watermark and the
leader's log returning the offset the follower truncates its log to, and the batch form
(``model.batch_truncation``), the same over rows. A rule without a batch form runs on the
per-state path only: the batch path refuses it (``batch_form``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Final

import attrs
from kmc.checker.base.errors import UsageError

from .batch_truncation import batch_common_prefix, batch_high_watermark, batch_leader_epoch
from .config import HIGH_WATERMARK, LEADER_EPOCH, LEADER_EPOCH_21, LEADER_EPOCH_KIP279

if TYPE_CHECKING:  # for the annotations only
    import numpy as np

    from .rows import RowCodec

UNDEFINED: Final = None  # OffsetsForLeaderEpoch had no answer

Log = Sequence[tuple[int, int]]  # (epoch, record id) per offset
PerStateForm = Callable[[Log, int, Log], int]
BatchForm = Callable[["RowCodec", int, "np.ndarray", int, int, "np.ndarray"], "np.ndarray"]


def end_offset(log: Log, epoch: int) -> int:
    """The first offset whose record has an epoch above ``epoch``, or the log end."""
    for offset, (e, _) in enumerate(log):
        if e > epoch:
            return offset
    return len(log)


def offsets_for_leader_epoch(leader_log: Log, epoch: int) -> int | None:
    """The 0.11 leader's answer to OffsetsForLeaderEpoch(epoch): an offset, or UNDEFINED.

    The leader's epoch cache holds only epochs it has records of, so it cannot answer
    for an epoch below its first one, nor (in 0.11–1.1) for one it has no later epoch
    after.
    """
    if not leader_log:
        return UNDEFINED
    if leader_log[-1][0] == epoch:
        return len(leader_log)
    if epoch < leader_log[0][0] or all(e <= epoch for e, _ in leader_log):
        return UNDEFINED
    return end_offset(leader_log, epoch)


def truncate_high_watermark(log: Log, hw: int, leader_log: Log) -> int:
    """Pre-0.11: truncate to the high watermark."""
    return hw


def truncate_leader_epoch(log: Log, hw: int, leader_log: Log) -> int:
    """KIP-101 (0.11): ask the leader for the end of the follower's latest epoch.

    The answer is an offset without an epoch; on no answer, fall back to the HW.
    """
    if not log:
        return 0
    answer = offsets_for_leader_epoch(leader_log, log[-1][0])
    if answer is UNDEFINED:
        return hw
    return min(answer, len(log))


def truncate_kip279(log: Log, hw: int, leader_log: Log) -> int:
    """KIP-279 (2.0): truncate to the longest prefix on which offsets and epochs agree."""
    n = min(len(log), len(leader_log))
    for offset in range(n):
        if log[offset] != leader_log[offset]:
            return offset
    return n


@attrs.frozen
class TruncationRule:
    """One truncation rule: its names, whether it asks the leader, and its two forms.

    Attributes:
        name: the spec's ``model.truncation`` value.
        short: the short name of the matrix's row ids and version columns.
        aliases: more names ``kmc matrix --rules`` takes for it (beside ``name`` and ``short``).
        asks_leader: BecomeFollower asks the leader (OffsetsForLeaderEpoch) under this rule.
        per_state: the offset a follower truncates to, from its log, its HW and the leader's log.
        batch: the same over rows (``model.batch_truncation``), or ``None``: the rule runs on
            the per-state path only.
    """

    name: str
    short: str
    per_state: PerStateForm
    batch: BatchForm | None = None
    asks_leader: bool = True
    aliases: tuple[str, ...] = ()

    @property
    def names(self) -> tuple[str, ...]:
        """Every name the rule is known by, short ones first, its own name last."""
        return (self.short, *self.aliases, self.name)


class RuleRegistry(Mapping[str, TruncationRule]):
    """The truncation rules by name, in the order they were registered."""

    def __init__(self) -> None:
        self._rules: dict[str, TruncationRule] = {}
        # name -> the rule's per-state form: what a successor step calls (one dict lookup)
        self.per_state: dict[str, PerStateForm] = {}

    def __getitem__(self, name: str) -> TruncationRule:
        return self._rules[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._rules)

    def __len__(self) -> int:
        return len(self._rules)

    def register(self, rule: TruncationRule) -> TruncationRule:
        """Add ``rule``; its names must be new (a rule is never replaced silently)."""
        taken = set(self.aliases())
        clash = [n for n in rule.names if n in taken]
        if clash:
            raise UsageError(f"truncation rule {rule.name!r}: the name {clash[0]!r} is taken")
        self._rules[rule.name] = rule
        self.per_state[rule.name] = rule.per_state
        return rule

    def unregister(self, name: str) -> None:
        """Remove the rule ``name`` (a test's own rule, when the test ends)."""
        del self._rules[name]
        del self.per_state[name]

    def aliases(self) -> dict[str, str]:
        """Every name of every rule -> the rule's name (``kmc matrix --rules``)."""
        return {alias: rule.name for rule in self._rules.values() for alias in rule.names}

    def named(self, name: str) -> TruncationRule:
        """The rule ``name``; a ``UsageError`` naming the known ones when there is none."""
        rule = self._rules.get(name)
        if rule is None:
            raise UsageError(f"unknown truncation rule {name!r} (known: {', '.join(self._rules)})")
        return rule


RULES: Final = RuleRegistry()
RULES.register(TruncationRule(HIGH_WATERMARK, "hw", truncate_high_watermark, batch_high_watermark, False))
RULES.register(TruncationRule(LEADER_EPOCH, "le", truncate_leader_epoch, batch_leader_epoch, aliases=("kip101",)))
RULES.register(TruncationRule(LEADER_EPOCH_KIP279, "kip279", truncate_kip279, batch_common_prefix))
# 2.1 truncates as KIP-279; it differs only in ExpandIsr's guard (model/kafka.py).
RULES.register(TruncationRule(LEADER_EPOCH_21, "v21", truncate_kip279, batch_common_prefix, aliases=("2.1",)))


def batch_form(name: str) -> BatchForm:
    """The batch form of the rule ``name``; a rule without one is refused, in one line."""
    form = RULES.named(name).batch
    if form is None:
        raise UsageError(f"truncation rule {name!r} has no batch form: check it with --per-state")
    return form


def batch_unsupported(name: str) -> str | None:
    """Why the batch kernel cannot run the rule ``name`` (it has no batch form), or ``None``."""
    if RULES.named(name).batch is None:
        return f"the truncation rule {name!r} has no batch form"
    return None


def truncation_offset(rule: str, log: Log, hw: int, leader_log: Log) -> int:
    """The offset a follower with ``log`` and ``hw`` truncates to under ``rule``."""
    return RULES.per_state[rule](log, hw, leader_log)


# The built-in rules' names, in the registry's order, and those that ask the leader.
TRUNCATION_RULES: Final = tuple(RULES)
LEADER_EPOCH_RULES: Final = tuple(name for name in TRUNCATION_RULES if RULES.named(name).asks_leader)
