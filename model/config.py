"""The model's constants (docs/model.md, "Constants")."""

from __future__ import annotations

from typing import Any

import attrs

HIGH_WATERMARK = "high-watermark"
LEADER_EPOCH = "leader-epoch"
LEADER_EPOCH_KIP279 = "leader-epoch-kip279"
LEADER_EPOCH_21 = "leader-epoch-2.1"
INITIAL_LEADERS = ("first", "any")
# The producer's acks setting, when acknowledgements are tracked (None: not tracked).
ACKS_ALL = "all"
ACKS_ONE = "1"
ACKS = (ACKS_ALL, ACKS_ONE)
# The bugs of the fetch path (truncate_on_fetch) a configuration may select: the path as it
# was before each fix (KAFKA-13141: fixed in 2.8.1; KAFKA-14704: fixed in 3.4.1 and 3.5).
KAFKA_13141 = "KAFKA-13141"
KAFKA_14704 = "KAFKA-14704"
FETCH_BUGS = (KAFKA_13141, KAFKA_14704)
# The bugs of the operators' actions and of broker epochs (docs/model.md, "Known bugs: one list"):
# KAFKA-13916 (a replica in controlled shutdown may lead or join the ISR: before Kafka 3.3),
# KAFKA-15221 (the broker-epoch race: 3.5.0-3.6.x), KAFKA-16540 (a min ISR change keeps the ELR:
# 3.7-3.9), KAFKA-16234 (a failed log directory's partition re-created empty and serving: 3.7.0).
KAFKA_13916 = "KAFKA-13916"
KAFKA_15221 = "KAFKA-15221"
KAFKA_16540 = "KAFKA-16540"
KAFKA_16234 = "KAFKA-16234"
OTHER_BUGS = (KAFKA_13916, KAFKA_15221, KAFKA_16540, KAFKA_16234)
# Every bug id the model knows, in the order a configuration lists them.
KNOWN_BUGS = FETCH_BUGS + OTHER_BUGS


@attrs.frozen
class Config:
    """The constants of one configuration of the model.

    Attributes:
        replicas: replica names, in order (the first leads at epoch 0, unless
            ``initial_leader`` is ``"any"``).
        max_messages: the producer writes at most this many records.
        max_crashes: at most this many Crash steps in a behaviour.
        max_leader_epoch: the controller elects while its epoch is below this.
        truncation: a rule's name (``model.truncation.RULES``).
        min_insync_replicas: Produce is refused while the ISR is smaller.
        unclean_leader_election: may a replica outside the ISR be elected.
        unflushed_loss: may a crash drop the not-yet-fsynced tail of a log.
        preferred_election: may the controller move leadership while the leader is alive.
        hw_requires_min_isr: the leader's HW does not move while the ISR is smaller than
            ``min_insync_replicas`` (KAFKA-15583, Kafka 3.7+).
        eligible_leader_replicas: the controller keeps eligible leader replicas and removes
            a replica that restarts after a lossy crash from the ISR and ELR (KIP-966).
            Meaningful only with ``hw_requires_min_isr`` (the spec loader insists).
        last_known_leader: when the ISR and the ELR are both empty, the controller may
            re-elect the quorum's last leader if it is alive (Kafka's last-known-leader
            election). Meaningful only with ``eligible_leader_replicas`` (the spec loader
            insists).
        initial_leader: ``"first"``: the first replica leads at epoch 0; ``"any"``: one
            initial state per replica, each leading at epoch 0.
        acks: ``None`` (acknowledgements are not tracked), ``"all"`` (a record is
            acknowledged when its leader's HW passes it with the ISR at least
            ``min_insync_replicas``) or ``"1"`` (acknowledged on append, by any replica
            that believes it leads).
        alter_partition: ISR changes go through the controller (Kafka 2.7+): ShrinkIsr and
            ExpandIsr only send a request, AlterPartition is the controller's answer, and
            until then the leader's HW counts the maximal ISR.
        broker_epochs: the controller refuses to add a replica that is down, and drops a
            pending expansion of a replica that restarts (KIP-841, KIP-903). Meaningful only
            with ``alter_partition`` (the spec loader insists).
        truncate_on_fetch: followers truncate in the fetch path (Kafka 2.8+, every KRaft
            cluster): BecomeFollower keeps the log, the leader answers a fetch whose last
            epoch diverges from its own epoch cache with a diverging epoch and no records,
            and the follower truncates on that answer. Meaningful only under
            ``leader-epoch-2.1`` (the spec loader insists).
        fetch_bugs: a sorted tuple of ``FETCH_BUGS`` ids: the fetch path as it was before
            each of those fixes. Meaningful only with ``truncate_on_fetch`` (the spec
            loader insists).
        max_controlled_shutdowns: at most this many ControlledShutdown steps in a behaviour
            (an operator's rolling restart; counted apart from ``max_crashes``).
        min_isr_changes: the operator's changes of ``min.insync.replicas``, in order: the
            k-th ChangeMinIsr step sets the k-th value.
        min_isr_lag: the leader's broker applies each min ISR change one step after the
            controller (ApplyMinIsr). Meaningful only with ``min_isr_changes`` (the spec
            loader insists).
        max_disk_failures: at most this many DiskFailure steps in a behaviour.
        bugs: a tuple of ``OTHER_BUGS`` ids in that order (the fetch path's are in
            ``fetch_bugs``): the model as it was before each of those fixes. Each needs its
            option (the spec loader insists).
    """

    replicas: tuple[str, ...] = ("A", "B")
    max_messages: int = 2
    max_crashes: int = 1
    max_leader_epoch: int = 2
    truncation: str = HIGH_WATERMARK
    min_insync_replicas: int = 1
    unclean_leader_election: bool = False
    unflushed_loss: bool = False
    preferred_election: bool = False
    hw_requires_min_isr: bool = False
    eligible_leader_replicas: bool = False
    initial_leader: str = "first"
    last_known_leader: bool = False
    acks: str | None = None
    alter_partition: bool = False
    broker_epochs: bool = False
    truncate_on_fetch: bool = False
    fetch_bugs: tuple[str, ...] = ()
    max_controlled_shutdowns: int = 0
    min_isr_changes: tuple[int, ...] = ()
    min_isr_lag: bool = False
    max_disk_failures: int = 0
    bugs: tuple[str, ...] = ()

    @property
    def n(self) -> int:
        return len(self.replicas)

    @property
    def modern(self) -> bool:
        """Does this configuration use anything of docs/model.md's "Kafka 2.1 and later" (the 2.1 rule,
        the HW gate or the ELR)? Without it the model is exactly the pre-2.1 one."""
        return (
            self.truncation == LEADER_EPOCH_21
            or self.hw_requires_min_isr
            or self.eligible_leader_replicas
            or self.alter_partition
        )

    def as_dict(self) -> dict[str, Any]:
        d = attrs.asdict(self)
        d["replicas"] = list(self.replicas)
        if not d["last_known_leader"]:  # off: the [model] table as it was before the key existed
            del d["last_known_leader"]
        if d["acks"] is None:  # not tracked: the [model] table as it was before the key existed
            del d["acks"]
        for key in ("alter_partition", "broker_epochs"):  # off: as before the keys existed
            if not d[key]:
                del d[key]
        if d["truncate_on_fetch"]:
            d["fetch_bugs"] = list(self.fetch_bugs)
        else:  # off: as before the keys existed (fetch_bugs needs it)
            del d["truncate_on_fetch"], d["fetch_bugs"]
        # The operators' options and their bugs: off, as before the keys existed.
        for key in ("max_controlled_shutdowns", "min_isr_changes", "min_isr_lag", "max_disk_failures", "bugs"):
            if not d[key]:
                del d[key]
        if "min_isr_changes" in d:
            d["min_isr_changes"] = list(self.min_isr_changes)
        if "bugs" in d:
            d["bugs"] = list(self.bugs)
        return d

    @property
    def all_bugs(self) -> tuple[str, ...]:
        """Every bug id selected (``fetch_bugs`` and ``bugs``), in ``KNOWN_BUGS`` order."""
        return tuple(b for b in KNOWN_BUGS if b in self.fetch_bugs or b in self.bugs)

    def has_bug(self, bug: str) -> bool:
        """Is the bug ``bug`` (one of ``KNOWN_BUGS``) selected?"""
        return bug in self.fetch_bugs or bug in self.bugs

    def min_isr_at(self, k: int) -> int:
        """The min ISR after ``k`` ChangeMinIsr steps (``min_insync_replicas`` at 0)."""
        return self.min_insync_replicas if k == 0 else self.min_isr_changes[k - 1]
