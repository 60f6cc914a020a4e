"""Kafka through the versions: the configurations of docs/model.md (and the operators' actions)
and the columns of successive Kafka versions, each a release of the release table
(``model.releases``) with the keys the column sets over it, which ``kmc matrix --versions``
crosses (its grid, in the application) and whose labels the results' tables show
(``render.matrix``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .config import FETCH_BUGS, HIGH_WATERMARK, LEADER_EPOCH, LEADER_EPOCH_21, LEADER_EPOCH_KIP279, OTHER_BUGS
from .releases import Release, ReleaseError, resolve
from .truncation import RULES

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
# The operators' actions (docs/model.md), on two and three replicas: a rolling restart (one or
# two controlled shutdowns, with and without a crash that may lose the unflushed tail during it),
# a change of min.insync.replicas, a failed log directory (on three replicas, two controlled
# shutdowns with a crash are left out: over two million states a cell, to keep the run short). The
# three-replica rows track
# acks = "all" with min ISR 2 (an operator's usual durable setting) and produce one record, as
# the three-replica traces of these bugs do, to keep the rows small.
_R2 = dict(_C1, max_crashes=0)
_R3 = dict(_C1, replicas=("A", "B", "C"), max_messages=1, max_crashes=0, min_insync_replicas=2, acks="all")
OPERATOR_CONFIGS = {
    "rr2": ("2 replicas, rolling restart: 1 controlled shutdown", dict(_R2, max_controlled_shutdowns=1)),
    "rr2x2": ("2 replicas, rolling restart: 2 controlled shutdowns", dict(_R2, max_controlled_shutdowns=2)),
    "rr2crash": (
        "2 replicas, 1 controlled shutdown + 1 lossy crash",
        dict(_R2, max_controlled_shutdowns=1, max_crashes=1, unflushed_loss=True),
    ),
    "rr2x2crash": (
        "2 replicas, 2 controlled shutdowns + 1 lossy crash",
        dict(_R2, max_controlled_shutdowns=2, max_crashes=1, unflushed_loss=True),
    ),
    "minisr2": ("2 replicas, 1 crash, min ISR 1 → 2 → 1", dict(_R2, max_crashes=1, min_isr_changes=(2, 1))),
    "disk2": ("2 replicas, 1 failed log directory", dict(_R2, max_disk_failures=1)),
    "rr3": (
        "3 replicas, min ISR 2, acks=all, rolling restart: 1 controlled shutdown",
        dict(_R3, max_controlled_shutdowns=1),
    ),
    "rr3x2": (
        "3 replicas, min ISR 2, acks=all, rolling restart: 2 controlled shutdowns",
        dict(_R3, max_controlled_shutdowns=2),
    ),
    "rr3crash": (
        "3 replicas, min ISR 2, acks=all, 1 controlled shutdown + 1 lossy crash",
        dict(_R3, max_controlled_shutdowns=1, max_crashes=1, unflushed_loss=True),
    ),
    "minisr3": ("3 replicas, acks=all, 1 crash, min ISR 2 → 1", dict(_R3, max_crashes=1, min_isr_changes=(1,))),
    "disk3": (
        "3 replicas, min ISR 2, acks=all, 1 crash, 1 failed log directory",
        dict(_R3, max_crashes=1, max_disk_failures=1),
    ),
}
VERSION_CONFIGS.update(OPERATOR_CONFIGS)

# The columns: key -> (label, Kafka release, metadata or None for the release's default, the
# [model] keys set over the release's). Each reads model/releases.py, the table a spec's
# ``kafka = "X.Y.Z"`` reads. A column without AlterPartition has the leader write the ISR
# itself, atomically (ZooKeeper before 2.7): those columns keep the numbers they always had.
# Kafka sends ISR changes to the controller since 2.7 and fences them with broker epochs since
# 3.5 (KIP-903), so each later column also comes as it really runs, "+ AlterPartition + broker
# epochs", right after its atomic twin; since 2.8 followers also truncate in the fetch path,
# with the bugs each release shipped. The columns of the operators' bugs (3.3–3.4 to 3.7.1–3.8)
# run as each release ships, with the eligible leader replicas switched on from 3.7 (a preview
# there: off unless enabled); "KIP-966 (ELR) + ..." is 4.0 with them, every fix in.
_ATOMIC = {"alter_partition": False, "broker_epochs": False, "truncate_on_fetch": False}
_ELR = {"eligible_leader_replicas": True}
COLUMNS: dict[str, tuple[str, str, str | None, dict[str, Any]]] = {
    # the first releases of each truncation rule, keyed by the rule's short name
    RULES[HIGH_WATERMARK].short: ("pre-0.11: high watermark", "0.10.2", None, {}),
    RULES[LEADER_EPOCH].short: ("0.11: leader epoch (KIP-101)", "0.11.0", None, {}),
    RULES[LEADER_EPOCH_KIP279].short: ("2.0: KIP-279", "2.0.0", None, {}),
    RULES[LEADER_EPOCH_21].short: ("2.1: KAFKA-7128", "2.1.0", None, {}),
    "v27": ("2.7: AlterPartition (KIP-497), no broker epochs", "2.7.0", None, {}),
    "v28": (
        "2.8.0: AlterPartition + fetch path (KAFKA-10554) with KAFKA-13141 and KAFKA-14704",
        "2.8.0",
        None,
        {},
    ),
    "v281": ("2.8.1–3.4.0: AlterPartition + fetch path with KAFKA-14704", "2.8.1", None, {}),
    "v33": (
        "3.3–3.4 (KRaft, as 3.4.1): controlled shutdown (KIP-841), AlterPartition without broker epochs + fetch path",
        "3.4.1",
        None,
        {},
    ),
    "v35": ("3.5.0–3.6.x (KRaft): + broker epochs (KIP-903) with KAFKA-15221", "3.5.0", None, {}),
    "v21-gate": ("3.7: + HW gate (KAFKA-15583)", "3.7.1", None, _ATOMIC),
    "v21-gate-ap": (
        "3.7 as shipped: HW gate + AlterPartition + broker epochs + fetch path",
        "3.7.1",
        None,
        {},
    ),
    "v370": ("3.7.0 with ELR (KRaft): KAFKA-16540 and KAFKA-16234", "3.7.0", None, _ELR),
    "v371": ("3.7.1–3.8.x with ELR (KRaft): KAFKA-16540", "3.7.1", None, _ELR),
    "v21-elr": ("KIP-966 (ELR)", "4.0.0", None, {**_ATOMIC, **_ELR}),
    "v21-elr-ap": ("KIP-966 (ELR) + AlterPartition + broker epochs + fetch path", "4.0.0", None, _ELR),
    "v41": ("4.1 (ELR + last known leader)", "4.1.0", None, _ATOMIC),
    "v41-ap": (
        "4.1 as shipped: ELR + last known leader + AlterPartition + broker epochs + fetch path",
        "4.1.0",
        None,
        {},
    ),
}
# The columns the operators' rows run on: from 3.3 (KIP-841) to 4.1 as shipped.
OPERATOR_VERSIONS = ("v33", "v35", "v370", "v371", "v21-elr-ap", "v41-ap")


def _column(key: str) -> tuple[Release, dict[str, Any]]:
    """A column's release and the [model] values it sets (the release's, the column's over them)."""
    _, version, metadata, over = COLUMNS[key]
    release = resolve(version, metadata)
    return release, {**release.settings(over.get("eligible_leader_replicas")), **over}


# Read from COLUMNS (and so from the release table): key -> (label, rule, hw_requires_min_isr,
# eligible_leader_replicas), the versions that also elect the last known leader, those whose ISR
# changes go through the controller (-> whether broker epochs fence them), those whose followers
# truncate in the fetch path (-> the fetch path's bugs they shipped), and every other bug of a
# version, each set in a row only when its option is on (a controlled shutdown, a min ISR change,
# a failed directory, the eligible leader replicas).
VERSIONS: dict[str, tuple[str, str, bool, bool]] = {}
LAST_KNOWN_LEADER_VERSIONS: tuple[str, ...] = ()
ALTER_PARTITION_VERSIONS: dict[str, bool] = {}
FETCH_PATH_VERSIONS: dict[str, tuple[str, ...]] = {}
VERSION_BUGS: dict[str, tuple[str, ...]] = {}
for _key, (_label, *_) in COLUMNS.items():
    _release, _values = _column(_key)
    VERSIONS[_key] = (
        _label,
        _values["truncation"],
        _values["hw_requires_min_isr"],
        _values["eligible_leader_replicas"],
    )
    if _values["last_known_leader"]:
        LAST_KNOWN_LEADER_VERSIONS += (_key,)
    if _values["alter_partition"]:
        ALTER_PARTITION_VERSIONS[_key] = _values["broker_epochs"]
    if _values["truncate_on_fetch"]:
        FETCH_PATH_VERSIONS[_key] = tuple(b for b in _release.bugs if b in FETCH_BUGS)
    if any(b in OTHER_BUGS for b in _release.bugs):
        VERSION_BUGS[_key] = tuple(b for b in _release.bugs if b in OTHER_BUGS)


def applies(config_key: str, version: str) -> bool:
    """Is the cell of a configuration and a version in the grid? Every configuration of docs/model.md
    runs on every version; the operators' rows on ``OPERATOR_VERSIONS``, a failed directory only
    where the release has one (KRaft 3.7 and later)."""
    if config_key not in OPERATOR_CONFIGS:
        return True
    if version not in OPERATOR_VERSIONS:
        return False
    release, values = _column(version)
    try:
        release.refuse({}, {**values, **VERSION_CONFIGS[config_key][1]})
    except ReleaseError:
        return False
    return True


def version_config(version: str, constants: dict[str, Any]) -> Config:
    """The ``Config`` of ``constants`` (a ``VERSION_CONFIGS`` entry's) under the rule and
    options of Kafka version ``version`` (a key of ``VERSIONS``), with each of its bugs whose
    option is on (the spec reader's rule for a release: ``model.spec``)."""
    import attrs

    from .config import Config
    from .spec_model import release_bugs

    _, rule, gate, elr = VERSIONS[version]
    config = Config(
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
    bugs = release_bugs(VERSION_BUGS.get(version, ()), attrs.asdict(config))
    return attrs.evolve(config, bugs=bugs) if bugs else config
