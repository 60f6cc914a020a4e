"""Kafka as it ships, by its version number: the one table of which truncation rule, which
options and which known bugs each Kafka release runs with (docs/model.md, "Kafka by its
version number"). A spec's ``kafka = "3.6.1"`` (and ``--kafka``) reads it through
``model.spec``, and ``kmc matrix --versions`` builds its columns from it (``model.versions``).

A release sets the ``[model]`` keys of ``RELEASE_KEYS``; every other key (replicas, bounds,
crashes, the operator's actions, acks, ...) is the scenario, the spec's own. A key the spec
writes itself wins over the release's value (an override). Two of the release's settings
need an option to mean anything, and are set only when that option is on in the resulting
configuration: each known bug (``KAFKA-13916`` needs controlled shutdowns, ``KAFKA-16540``
the eligible leader replicas, ...: the spec loader's own rule), and the last-known-leader
election of 4.1 (it needs the eligible leader replicas). So a release never makes a spec
invalid by a bug whose option the spec leaves off.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import attrs

from .config import (
    HIGH_WATERMARK,
    KAFKA_13141,
    KAFKA_13916,
    KAFKA_14704,
    KAFKA_15221,
    KAFKA_16234,
    KAFKA_16540,
    KNOWN_BUGS,
    LEADER_EPOCH,
    LEADER_EPOCH_21,
    LEADER_EPOCH_KIP279,
)

KRAFT, ZOOKEEPER = "kraft", "zookeeper"
METADATA = (KRAFT, ZOOKEEPER)
METADATA_NAMES = {KRAFT: "KRaft", ZOOKEEPER: "ZooKeeper"}
# The [model] keys a release sets (the rest of the table is the spec's scenario). "bugs" stands
# for the one list of known bugs (its synonym "fetch_bugs" included).
RELEASE_KEYS = (
    "truncation",
    "hw_requires_min_isr",
    "eligible_leader_replicas",
    "last_known_leader",
    "alter_partition",
    "broker_epochs",
    "truncate_on_fetch",
    "bugs",
)
_OPTIONS = RELEASE_KEYS[1:-1]  # the boolean ones
Version = tuple[int, ...]  # a release number, as its integers
_TOP = 10**6  # "every patch release of the line" in a range's last version


@attrs.frozen
class Era:
    """Releases that run alike: ``first`` to ``last`` (normalized versions, both included).

    Attributes:
        name: the releases as people say them ("2.8.1–3.2").
        truncation, on: the truncation rule and the boolean options that are on
            (``last_known_leader`` here means: on whenever the eligible leader replicas are).
        bugs: the known bugs of these releases whatever their metadata mode; ``kraft_bugs``
            those of KRaft only.
        metadata: the modes these releases ran in, the default first.
        jbod: KRaft keeps a partition of a failed log directory (KIP-858): the failed-directory
            action (``max_disk_failures``) is modelled only there.
        unclean_restarts: every restart is an unclean shutdown to the controller (KAFKA-16952):
            the eligible leader replicas of these releases are not modelled (the model's follow the
            clean-shutdown detection of 3.7–3.8 and 4.x).
    """

    name: str
    first: Version
    last: Version
    truncation: str
    on: frozenset[str] = frozenset()
    bugs: tuple[str, ...] = ()
    kraft_bugs: tuple[str, ...] = ()
    metadata: tuple[str, ...] = (ZOOKEEPER,)
    jbod: bool = False
    unclean_restarts: bool = False


def _v(text: str, top: bool = False) -> Version:
    """A range bound: ``"2.8"`` is the line's first release, or its last with ``top``."""
    parts = [int(x) for x in text.split(".")]
    return tuple(parts + [_TOP if top else 0] * (4 - len(parts)))


_AP = frozenset({"alter_partition"})
_FETCH = _AP | {"truncate_on_fetch"}
_EPOCHS = _FETCH | {"broker_epochs"}
_GATE = _EPOCHS | {"hw_requires_min_isr"}
_BOTH_ZK_FIRST = (ZOOKEEPER, KRAFT)  # 2.8–3.2: KRaft in early access, ZooKeeper the default
_BOTH = (KRAFT, ZOOKEEPER)  # 3.3–3.9: KRaft ready for production (KIP-833), the default
# The table, oldest first. Where a fix came in a patch release, the line is split there.
ERAS = (
    Era("0.10.x", _v("0.10"), _v("0.10", True), HIGH_WATERMARK),
    Era("0.11.0–1.1.x", _v("0.11"), _v("1.1", True), LEADER_EPOCH),
    Era("2.0.x", _v("2.0"), _v("2.0", True), LEADER_EPOCH_KIP279),
    Era("2.1.0–2.6.x", _v("2.1"), _v("2.6", True), LEADER_EPOCH_21),
    Era("2.7.x", _v("2.7"), _v("2.7", True), LEADER_EPOCH_21, _AP),
    Era(
        "2.8.0",
        _v("2.8.0"),
        _v("2.8.0"),
        LEADER_EPOCH_21,
        _FETCH,
        (KAFKA_13141, KAFKA_14704),
        (KAFKA_13916,),
        _BOTH_ZK_FIRST,
    ),
    Era(
        "2.8.1–3.2.x",
        _v("2.8.1"),
        _v("3.2", True),
        LEADER_EPOCH_21,
        _FETCH,
        (KAFKA_14704,),
        (KAFKA_13916,),
        _BOTH_ZK_FIRST,
    ),
    Era("3.3.0–3.4.0", _v("3.3"), _v("3.4.0"), LEADER_EPOCH_21, _FETCH, (KAFKA_14704,), (), _BOTH),
    Era("3.4.1–3.4.x", _v("3.4.1"), _v("3.4", True), LEADER_EPOCH_21, _FETCH, (), (), _BOTH),
    Era("3.5.0–3.6.x", _v("3.5"), _v("3.6", True), LEADER_EPOCH_21, _EPOCHS, (KAFKA_15221,), (), _BOTH),
    Era("3.7.0", _v("3.7.0"), _v("3.7.0"), LEADER_EPOCH_21, _GATE, (KAFKA_16540, KAFKA_16234), (), _BOTH, True),
    Era("3.7.1–3.8.x", _v("3.7.1"), _v("3.8", True), LEADER_EPOCH_21, _GATE, (KAFKA_16540,), (), _BOTH, True),
    Era("3.9.x", _v("3.9"), _v("3.9", True), LEADER_EPOCH_21, _GATE, (KAFKA_16540,), (), _BOTH, True, True),
    Era("4.0.x", _v("4.0"), _v("4.0", True), LEADER_EPOCH_21, _GATE, (), (), (KRAFT,), True),
    Era(
        "4.1.x",
        _v("4.1"),
        _v("4.1", True),
        LEADER_EPOCH_21,
        _GATE | {"eligible_leader_replicas", "last_known_leader"},
        (),
        (),
        (KRAFT,),
        True,
    ),
)
# Every line kmc knows (a line: 0.10.2 before 1.0, 3.6 after), oldest first.
LINES = (
    "0.10.0",
    "0.10.1",
    "0.10.2",
    "0.11.0",
    "1.0",
    "1.1",
    "2.0",
    *(f"2.{k}" for k in range(1, 9)),
    *(f"3.{k}" for k in range(10)),
    "4.0",
    "4.1",
)
_RELEASE = re.compile(r"^(0|[1-9][0-9]{0,3})(\.(0|[1-9][0-9]{0,3})){1,3}$")


class ReleaseError(ValueError):
    """A release or metadata mode kmc does not model: ``key`` is the ``[model]`` key at
    fault (``kafka``, ``metadata``, or an option the release cannot have), the message one
    line."""

    def __init__(self, key: str, message: str) -> None:
        super().__init__(message)
        self.key = key


@attrs.frozen
class Release:
    """One Kafka release as kmc models it.

    Attributes:
        version: as written (``"3.6.1"``, or a line such as ``"3.6"``).
        metadata: ``"kraft"`` or ``"zookeeper"``.
        era: the ``Era`` it belongs to.
    """

    version: str
    metadata: str
    era: Era

    @property
    def label(self) -> str:
        """``3.6.1 (KRaft)``."""
        return f"{self.version} ({METADATA_NAMES[self.metadata]})"

    @property
    def bugs(self) -> tuple[str, ...]:
        """Every known bug of the release, in ``KNOWN_BUGS`` order (each is set only when its
        option is on: see the module)."""
        mine = set(self.era.bugs) | (set(self.era.kraft_bugs) if self.metadata == KRAFT else set())
        return tuple(b for b in KNOWN_BUGS if b in mine)

    def settings(self, eligible_leader_replicas: bool | None = None) -> dict[str, Any]:
        """The ``[model]`` keys the release sets, but ``bugs``: the truncation rule and every
        boolean option. ``last_known_leader`` follows ``eligible_leader_replicas`` (the value in
        the resulting configuration, default the release's own)."""
        out: dict[str, Any] = {"truncation": self.era.truncation}
        for key in _OPTIONS:
            out[key] = key in self.era.on
        elr = out["eligible_leader_replicas"] if eligible_leader_replicas is None else eligible_leader_replicas
        out["last_known_leader"] = out["last_known_leader"] and elr is True
        return out

    def table(self, spec_model: Mapping[str, Any]) -> dict[str, Any]:
        """A ``[model]`` table: the release's settings with the spec's own keys over them
        (``kafka`` and ``metadata`` left out). The bugs are not in it: the spec reader adds
        ``bugs`` once it knows which options are on (``model.spec``)."""
        mine = {k: v for k, v in spec_model.items() if k not in ("kafka", "metadata")}
        return {**self.settings(mine.get("eligible_leader_replicas")), **mine}

    def refuse(self, spec_model: Mapping[str, Any], values: Mapping[str, Any]) -> None:
        """Refuse what this release cannot run, whatever the overrides: the eligible leader
        replicas under ZooKeeper (KIP-966 is KRaft's) and in 3.9 (KAFKA-16952), a failed log
        directory where kmc does not model it (ZooKeeper mode, and KRaft before 3.7, one
        directory a broker).

        Raises:
            ReleaseError: naming the key.
        """
        if values.get("eligible_leader_replicas") is True and self.metadata == ZOOKEEPER:
            raise ReleaseError(
                "eligible_leader_replicas",
                f"{self.label} has no eligible leader replicas (KIP-966 is KRaft's: "
                'use model.metadata = "kraft", Kafka 3.7 or later)',
            )
        if values.get("eligible_leader_replicas") is True and self.era.unclean_restarts:
            raise ReleaseError(
                "eligible_leader_replicas",
                f"{self.label} treats every restart as an unclean shutdown (KAFKA-16952), which kmc does not "
                "model: its eligible leader replicas follow the clean-shutdown detection of 3.7–3.8 and 4.x "
                "(the nearest: 3.8.x, 4.0.x)",
            )
        disks = values.get("max_disk_failures", 0)
        if isinstance(disks, int) and not isinstance(disks, bool) and disks > 0 and not self._jbod():
            why = (
                "ZooKeeper mode's handling of a failed log directory is not modelled"
                if self.metadata == ZOOKEEPER
                else "KRaft before 3.7 keeps one log directory a broker, whose failure stops it: a crash"
            )
            raise ReleaseError(
                "max_disk_failures", f"{self.label}: {why} (a failed directory is modelled for KRaft 3.7 and later)"
            )

    def _jbod(self) -> bool:
        return self.era.jbod and self.metadata == KRAFT


def _parse(text: str) -> tuple[Version, int | None]:
    """``(line, patch)``: ``"3.6.1"`` -> ``((3, 6), 1)``, ``"0.10.2.1"`` -> ``((0, 10, 2), 1)``,
    a line alone -> ``(line, None)``; ``ValueError`` when it is not a release number."""
    if not _RELEASE.match(text):
        raise ValueError(text)
    parts = tuple(int(x) for x in text.split("."))
    width = 3 if parts[0] == 0 else 2
    if len(parts) not in (width, width + 1):
        raise ValueError(text)
    return parts[:width], (parts[width] if len(parts) > width else None)


def _line_name(line: Version) -> str:
    return ".".join(map(str, line)) + ".x"


def _key(line: Version, patch: int) -> Version:
    """A normalized version, comparable with the eras' bounds."""
    return (*line, patch) + ((0,) if line[0] != 0 else ())  # four numbers, as the bounds


def _nearest(line: Version) -> str:
    known = [_parse(x)[0] for x in LINES]
    if line < known[0]:
        return f"the oldest release kmc models is {_line_name(known[0])}"
    if line > known[-1]:
        return f"the newest release kmc models is {_line_name(known[-1])}"
    below = max(k for k in known if k < line)
    above = min(k for k in known if k > line)
    return f"the nearest kmc models are {_line_name(below)} and {_line_name(above)}"


def resolve(kafka: object, metadata: object = None) -> Release:
    """The ``Release`` of a spec's ``kafka`` value and ``metadata`` (``None``: the release's
    default mode).

    Raises:
        ReleaseError: an unknown or unmodelled release (naming the nearest ones), a line that
            a fix splits (naming its patch releases), a metadata mode the release did not have.
    """
    if not isinstance(kafka, str):
        raise ReleaseError("kafka", f'must be a Kafka release as a string, such as "3.6.1", got {_show(kafka)}')
    try:
        line, patch = _parse(kafka)
    except ValueError:
        raise ReleaseError("kafka", f'{_show(kafka)} is not a Kafka release number such as "3.6.1"') from None
    if ".".join(map(str, line)) not in LINES:
        raise ReleaseError("kafka", f"unknown Kafka release {_show(kafka)}: {_nearest(line)}")
    if patch is None:
        eras = [e for e in ERAS if e.first <= _key(line, _TOP) and e.last >= _key(line, 0)]
        if len(eras) > 1:
            low = _key(line, 0)
            first = [f"{'.'.join(map(str, line))}.{max(e.first, low)[len(line)]}" for e in eras]
            raise ReleaseError(
                "kafka",
                f"{_show(kafka)} names a line that kmc models as {len(eras)} releases "
                f"({', '.join(e.name for e in eras)}): name the patch release, such as {' or '.join(first)}",
            )
        era = eras[0]
    else:
        era = next(e for e in ERAS if e.first <= _key(line, patch) <= e.last)
    if metadata is None:
        mode = era.metadata[0]
    elif metadata not in METADATA:
        raise ReleaseError("metadata", f'must be "kraft" or "zookeeper", got {_show(metadata)}')
    elif metadata not in era.metadata:
        only = METADATA_NAMES[era.metadata[0]]
        why = "KRaft came in 2.8" if era.metadata == (ZOOKEEPER,) else "ZooKeeper mode was removed in 4.0"
        raise ReleaseError("metadata", f"Kafka {kafka} runs on {only} only ({why})")
    else:
        mode = metadata
    return Release(kafka, mode, era)


def _show(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


__all__ = [
    "ERAS",
    "KRAFT",
    "LINES",
    "METADATA",
    "RELEASE_KEYS",
    "ZOOKEEPER",
    "Era",
    "Release",
    "ReleaseError",
    "resolve",
]
