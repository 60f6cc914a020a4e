"""Kafka through the versions: the configurations of docs/model.md and the rules and options
of successive Kafka versions, which ``kmc matrix --versions`` crosses (its grid, in the
application) and whose labels the results' tables show (``reports.matrix``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # for the annotation only: imported on first use
    from .config import Config

_C1 = dict(replicas=("A", "B"), max_messages=2, max_crashes=2, max_leader_epoch=2, min_insync_replicas=1)
_LRS = dict(
    replicas=("A", "B", "C"),
    max_messages=2,
    max_crashes=1,
    max_leader_epoch=2,
    min_insync_replicas=2,
    unflushed_loss=True,
)
# key -> (label, constants)
VERSION_CONFIGS = {
    "c1": ("2 replicas, 2 msgs, 2 crashes (C1)", _C1),
    "c2": ("C1 + unflushed loss (C2)", dict(_C1, unflushed_loss=True)),
    "c3": ("C1 + unclean election (C3)", dict(_C1, unclean_leader_election=True)),
    "c4": (
        "2 replicas, 4 msgs, 1 crash, preferred election (C4)",
        dict(_C1, max_messages=4, max_crashes=1, preferred_election=True),
    ),
    "isr": (
        "3 replicas, min ISR 1, 1 msg, 2 crashes (ISR re-join)",
        dict(_C1, replicas=("A", "B", "C"), max_messages=1),
    ),
    "lrs": ("3 replicas, min ISR 2, 2 msgs, 1 crash, unflushed loss (last replica standing)", _LRS),
    # With acks = "all" tracked, a row also checks AcknowledgedNeverLost (ANL): "the producer
    # was told it is written and it was lost", next to CNL's "consumers may have read it".
    "c3m2_acks": (
        "C3 + min ISR 2, acks=all",
        dict(_C1, unclean_leader_election=True, min_insync_replicas=2, acks="all"),
    ),
    "lrs_acks": ("last replica standing, acks=all", dict(_LRS, acks="all")),
}
# key -> (label, rule, hw_requires_min_isr, eligible_leader_replicas). A column without
# AlterPartition has the leader write the ISR itself, atomically (ZooKeeper before 2.7): those
# columns keep the numbers they always had. Kafka sends ISR changes to the controller since
# 2.7 and fences them with broker epochs since 3.5 (KIP-903), so each later column also comes
# as it really runs, "+ AlterPartition + broker epochs", right after its atomic twin; since
# 2.8 followers also truncate in the fetch path (FETCH_PATH_VERSIONS), which the 2.8.0 and
# 2.8.1–3.4.0 columns run with the bugs they shipped and the columns as shipped without.
VERSIONS = {
    "hw": ("pre-0.11: high watermark", "high-watermark", False, False),
    "le": ("0.11: leader epoch (KIP-101)", "leader-epoch", False, False),
    "kip279": ("2.0: KIP-279", "leader-epoch-kip279", False, False),
    "v21": ("2.1: KAFKA-7128", "leader-epoch-2.1", False, False),
    "v27": ("2.7: AlterPartition (KIP-497), no broker epochs", "leader-epoch-2.1", False, False),
    "v28": (
        "2.8.0: AlterPartition + fetch path (KAFKA-10554) with KAFKA-13141 and KAFKA-14704",
        "leader-epoch-2.1",
        False,
        False,
    ),
    "v281": ("2.8.1–3.4.0: AlterPartition + fetch path with KAFKA-14704", "leader-epoch-2.1", False, False),
    "v21-gate": ("3.7: + HW gate (KAFKA-15583)", "leader-epoch-2.1", True, False),
    "v21-gate-ap": (
        "3.7 as shipped: HW gate + AlterPartition + broker epochs + fetch path",
        "leader-epoch-2.1",
        True,
        False,
    ),
    "v21-elr": ("KIP-966 (ELR)", "leader-epoch-2.1", True, True),
    "v21-elr-ap": ("KIP-966 (ELR) + AlterPartition + broker epochs + fetch path", "leader-epoch-2.1", True, True),
    "v41": ("4.1 (ELR + last known leader)", "leader-epoch-2.1", True, True),
    "v41-ap": (
        "4.1 as shipped: ELR + last known leader + AlterPartition + broker epochs + fetch path",
        "leader-epoch-2.1",
        True,
        True,
    ),
}
# The versions that also elect the last known leader when the ISR and the ELR are empty.
LAST_KNOWN_LEADER_VERSIONS = ("v41", "v41-ap")
# The versions whose ISR changes go through the controller (alter_partition) -> whether the
# controller also fences them with broker epochs (broker_epochs: KIP-903, Kafka 3.5).
ALTER_PARTITION_VERSIONS = {
    "v27": False,
    "v28": False,
    "v281": False,
    "v21-gate-ap": True,
    "v21-elr-ap": True,
    "v41-ap": True,
}
# The versions whose followers truncate in the fetch path (truncate_on_fetch: Kafka 2.8+ with
# inter-broker protocol 2.7+, every KRaft cluster) -> the bugs of that path they shipped
# (fetch_bugs): 2.8.0 both, 2.8.1–3.4.0 KAFKA-14704, 3.4.1 / 3.5 and later none. The columns
# that run as Kafka ships (AlterPartition with broker epochs, 3.5+) take it; their atomic twins
# and every column before 2.8 keep the truncation at BecomeFollower, and their numbers.
FETCH_PATH_VERSIONS = {
    "v28": ("KAFKA-13141", "KAFKA-14704"),
    "v281": ("KAFKA-14704",),
    "v21-gate-ap": (),
    "v21-elr-ap": (),
    "v41-ap": (),
}


def version_config(version: str, constants: dict) -> Config:
    """The ``Config`` of ``constants`` (a ``VERSION_CONFIGS`` entry's) under the rule and
    options of Kafka version ``version`` (a key of ``VERSIONS``)."""
    from .config import Config

    _, rule, gate, elr = VERSIONS[version]
    return Config(
        truncation=rule,
        hw_requires_min_isr=gate,
        eligible_leader_replicas=elr,
        last_known_leader=version in LAST_KNOWN_LEADER_VERSIONS,
        alter_partition=version in ALTER_PARTITION_VERSIONS,
        broker_epochs=ALTER_PARTITION_VERSIONS.get(version, False),
        truncate_on_fetch=version in FETCH_PATH_VERSIONS,
        fetch_bugs=FETCH_PATH_VERSIONS.get(version, ()),
        **constants,
    )
