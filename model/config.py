"""The model's constants (MODEL.md, "Constants")."""

from __future__ import annotations

import attrs

HIGH_WATERMARK = "high-watermark"
LEADER_EPOCH = "leader-epoch"
LEADER_EPOCH_KIP279 = "leader-epoch-kip279"
TRUNCATION_RULES = (HIGH_WATERMARK, LEADER_EPOCH, LEADER_EPOCH_KIP279)


@attrs.frozen
class Config:
    """The constants of one configuration of the model.

    Attributes:
        replicas: replica names, in order; the first leads at epoch 0.
        max_messages: the producer writes at most this many records.
        max_crashes: at most this many Crash steps in a behaviour.
        max_leader_epoch: the controller elects while its epoch is below this.
        truncation: one of ``TRUNCATION_RULES``.
        min_insync_replicas: Produce is refused while the ISR is smaller.
        unclean_leader_election: may a replica outside the ISR be elected.
        unflushed_loss: may a crash drop the not-yet-fsynced tail of a log.
        preferred_election: may the controller move leadership while the leader is alive.
    """

    replicas: tuple = ("A", "B")
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

    @property
    def n(self) -> int:
        return len(self.replicas)

    def as_dict(self) -> dict:
        d = attrs.asdict(self)
        d["replicas"] = list(self.replicas)
        return d
