"""The ``[model]`` table of a spec: the one validator of the model's constants (a spec file's,
a saved result's, every row of ``kmc matrix``), and the Kafka release a table may name
(``model.kafka``), whose settings go under the table's own keys."""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any

import attrs
from kmc.checker.base.errors import SpecError

from . import releases
from .config import (
    ACKS,
    FETCH_BUGS,
    INITIAL_LEADERS,
    KAFKA_13916,
    KAFKA_15221,
    KAFKA_16234,
    KAFKA_16540,
    KNOWN_BUGS,
    LEADER_EPOCH_21,
    OTHER_BUGS,
    Config,
)
from .truncation import RULES

# -- the checks of a spec's values: each takes the file's path, the key (as a message names it)
# and the value, and returns the value or raises a one-line ``SpecError`` naming the file and
# the key. The spec reader (``model.spec``), this table's reader and the application's own
# tables (``app.specs``) use them.

BARE_KEY = re.compile(r"^[A-Za-z0-9_-]{1,40}$")


def clip(text: str, width: int) -> str:
    """``text``, cut to ``width`` characters with an ellipsis when longer."""
    return text if len(text) <= width else text[: width - 3] + "..."


def show(value: object) -> str:
    """A value from the file, for a message: its ``repr``, clipped."""
    return clip(repr(value), 40)


def key_name(prefix: str, key: str) -> str:
    """A key from the file, for a message: as written when short and bare, else quoted
    (keys may hold newlines, and a message is one line)."""
    return prefix + (key if BARE_KEY.match(key) else show(key))


def check_keys(path: str, prefix: str, table: Mapping[str, Any], allowed: Collection[str]) -> None:
    """Refuse a key of ``table`` (``prefix``: its name and a dot) not in ``allowed``."""
    for key in table:
        if key not in allowed:
            names = ", ".join(allowed)
            if len(names) > 200:  # a long table: the keys nearest to the typo, else the table's in the README
                near = difflib.get_close_matches(str(key), list(allowed), n=3)
                hint = f"did you mean {' or '.join(near)}?" if near else "the README's table lists the keys"
                raise SpecError(path, key_name(prefix, key), f"unknown key ({hint})")
            raise SpecError(path, key_name(prefix, key), f"unknown key (allowed: {names})")


def check_table(path: str, key: str, value: object, required: bool = False) -> dict[str, Any]:
    """``value``, refused unless it is a table (or, when ``required``, missing)."""
    if value is None and required:
        raise SpecError(path, f"[{key}]", "missing table")
    if not isinstance(value, dict):
        raise SpecError(path, key, f"must be a table, got {show(value)}")
    return value


def check_text(path: str, key: str, value: object) -> str:
    """``value``, refused unless it is a string."""
    if not isinstance(value, str):
        raise SpecError(path, key, f"must be a string, got {show(value)}")
    return value


def check_bool(path: str, key: str, value: object) -> bool:
    """``value``, refused unless it is true or false."""
    if not isinstance(value, bool):
        raise SpecError(path, key, f"must be true or false, got {show(value)}")
    return value


def check_range(path: str, key: str, value: object, lo: int, hi: int) -> int:
    """``value``, refused unless an integer in ``[lo, hi]``."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise SpecError(path, key, f"must be an integer, got {show(value)}")
    if not lo <= value <= hi:
        raise SpecError(path, key, f"must be between {lo} and {hi}, got {show(value)}")
    return value


def check_int(path: str, key: str, value: object, lo: int, hi: int) -> int | None:
    """``value`` (``None`` when absent), refused unless an integer in ``[lo, hi]``."""
    return None if value is None else check_range(path, key, value, lo, hi)


def check_size(path: str, key: str, value: object, lo: int, hi: int) -> int | None:
    """A size in bytes (``None`` when absent): an integer, or a string such as "8G" or
    "512M", in ``[lo, hi]``."""
    raw = value
    if isinstance(value, str):
        from kmc.checker.base.units import parse_size

        try:
            value = parse_size(value)
        except ValueError:
            raise SpecError(path, key, f'must be a size such as "8G" or "512M", got {show(value)}') from None
    if isinstance(value, int) and not isinstance(value, bool):
        from kmc.checker.base.units import check_ceiling

        why = check_ceiling(value)
        if why:
            raise SpecError(path, key, f"{why}, got {show(raw)}")
    return check_int(path, key, value, lo, hi)


MAX_REPLICAS = 7
Table = Mapping[str, Any]  # a TOML table, or the values read of one
KafkaArg = tuple[str, str | None]  # (release, metadata or None) from the command line

_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_-]{0,15}$")

# key -> (default, low, high) for the integer constants of [model]
MODEL_INTS = {
    "max_messages": (2, 0, 16),
    "max_crashes": (1, 0, 16),
    "max_leader_epoch": (2, 0, 16),
    "max_controlled_shutdowns": (0, 0, 16),
    "max_disk_failures": (0, 0, 16),
}
MODEL_BOOLS = (
    "unclean_leader_election",
    "unflushed_loss",
    "preferred_election",
    "hw_requires_min_isr",
    "eligible_leader_replicas",
    "last_known_leader",
    "alter_partition",
    "broker_epochs",
    "truncate_on_fetch",
    "min_isr_lag",
)
MODEL_KEYS = (
    "replicas",
    "truncation",
    "min_insync_replicas",
    *MODEL_INTS,
    *MODEL_BOOLS,
    "initial_leader",
    "acks",
    "fetch_bugs",
    "min_isr_changes",
    "bugs",
    "kafka",
    "metadata",
)


@attrs.frozen
class KafkaSetting:
    """The Kafka release a spec's model was read from, and what the spec changed of it.

    Attributes:
        release: the ``model.releases.Release``.
        overrides: ``(key, the spec's value, the release's value)`` for every key the spec
            writes that the release also sets, with another value, in ``RELEASE_KEYS`` order.
        given: ``"spec"`` (``model.kafka``) or ``"--kafka"`` (the command line).
    """

    release: releases.Release
    overrides: tuple[tuple[str, Any, Any], ...] = ()
    given: str = "spec"

    def text(self) -> str:
        """``3.6.1 (KRaft); the spec overrides eligible_leader_replicas = true (3.6.1: false)``."""
        out = self.release.label + (", from --kafka" if self.given != "spec" else "")
        if self.overrides:
            parts = [f"{k} = {_value(v)} ({self.release.version}: {_value(r)})" for k, v, r in self.overrides]
            out += "; the spec overrides " + ", ".join(parts)
        return out


def _value(v: object) -> str:
    """A ``[model]`` value as the spec writes it."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(map(str, v)) + "]"
    return str(v)


def is_replica_name(x: object) -> bool:
    """A letter, then up to 15 letters, digits, '_' or '-' (the whole string: no newline)."""
    return isinstance(x, str) and _NAME.fullmatch(x) is not None


# The bounds of the model's constants, for commands that build configurations themselves
# (kmc matrix); config_from_table is the one validator every way in goes through.
MODEL_BOUNDS = {
    "replicas": (1, MAX_REPLICAS),
    "min_insync_replicas": (1, MAX_REPLICAS),
    **{key: (lo, hi) for key, (_, lo, hi) in MODEL_INTS.items()},
}


def config_from_table(table: object, path: str = "<config>") -> Config:
    """The ``Config`` of a ``[model]`` table, validated as a spec file's is: the one
    validator of model constants (the spec loader, ``kmc replay`` for a saved result's
    ``spec.model``, and ``kmc matrix`` for every row of its grid use it).

    Raises:
        SpecError: naming ``path`` and the key (``model.max_crashes``) at fault.
    """
    return read_model(path, check_table(path, "model", table, required=True))[0]


def read_model(path: str, model: Table, cli: KafkaArg | None = None) -> tuple[Config, KafkaSetting | None]:
    """The ``Config`` of a ``[model]`` table and, when it names a Kafka release
    (``model.kafka``, or ``cli``: ``(release, metadata or None)`` from the command line, which
    replaces the spec's), that release with the spec's overrides. The release's settings go
    under the spec's own keys, and the whole goes through the one validator (``plain_config``)."""
    check_keys(path, "model.", model, MODEL_KEYS)
    if cli is not None:
        model = {**model, "kafka": cli[0], **({"metadata": cli[1]} if cli[1] is not None else {})}
    if "kafka" not in model:
        if "metadata" in model:
            raise SpecError(path, "model.metadata", "only with model.kafka (the release whose metadata mode it names)")
        return plain_config(path, model), None
    try:
        release = releases.resolve(model["kafka"], model.get("metadata"))
        table = release.table(model)
        release.refuse(model, table)
    except releases.ReleaseError as e:
        raise SpecError(path, f"model.{e.key}", str(e)) from None
    written = [k for k in releases.RELEASE_KEYS if k in model or (k == "bugs" and "fetch_bugs" in model)]
    try:
        config = plain_config(path, table, release.bugs)
    except SpecError as e:  # a key of the release's at fault: say where the values came from
        if (e.key or "").removeprefix("model.") not in (*releases.RELEASE_KEYS, "fetch_bugs"):
            raise
        source = f'kafka = "{release.version}"' + ("" if cli is None else " from --kafka")
        where = f"the spec writes {', '.join(written)} and {source} sets the rest" if written else f"{source} sets it"
        raise SpecError(path, e.key, f"{e.detail} ({where})") from None
    own = release.settings(config.eligible_leader_replicas)
    own["bugs"] = release_bugs(release.bugs, attrs.asdict(config))
    mine = {k: getattr(config, k) for k in releases.RELEASE_KEYS if k != "bugs"}
    mine["bugs"] = config.all_bugs
    overrides = tuple((k, mine[k], own[k]) for k in written if mine[k] != own[k])
    return config, KafkaSetting(release, overrides, "spec" if cli is None else "--kafka")


def release_bugs(bugs: Sequence[str], values: Mapping[str, Any]) -> tuple[str, ...]:
    """The ids of ``bugs`` whose option is on in ``values`` (the options read, by name): a
    release sets a bug only then (a spec's ``model.kafka``, a column of ``kmc matrix --versions``)."""
    return tuple(b for b in bugs if _BUG_NEEDS[b][1](values))


def plain_config(path: str, model: Table, known_bugs: Sequence[str] | None = None) -> Config:
    """The one validator of a ``[model]`` table (``known_bugs``: a release's known bugs,
    each listed when its option is on, unless the table writes ``bugs`` or ``fetch_bugs``)."""
    names = _replicas(path, model)
    values: dict[str, Any] = {}  # ints and bools, the Config fields of those names
    for key, (default, lo, hi) in MODEL_INTS.items():
        values[key] = check_range(path, f"model.{key}", model.get(key, default), lo, hi)
    for key in MODEL_BOOLS:
        values[key] = check_bool(path, f"model.{key}", model.get(key, False))
    if "truncation" not in model:
        raise SpecError(path, "model.truncation", f"missing (one of {', '.join(RULES)})")
    rule = model["truncation"]
    if not isinstance(rule, str) or rule not in RULES:
        raise SpecError(path, "model.truncation", f"must be one of {', '.join(RULES)}, got {show(rule)}")
    min_isr = check_range(path, "model.min_insync_replicas", model.get("min_insync_replicas", 1), 1, len(names))
    _refuse_lone_options(path, values, rule)
    values["min_isr_changes"] = _min_isr_changes(path, model, len(names))
    if values["min_isr_lag"] and not values["min_isr_changes"]:
        raise SpecError(
            path,
            "model.min_isr_lag",
            "needs a non-empty model.min_isr_changes (the leader's broker lags behind the operator's changes)",
        )
    if known_bugs is not None and "bugs" not in model and "fetch_bugs" not in model:
        model = {**model, "bugs": list(release_bugs(known_bugs, values))}
    values["fetch_bugs"], values["bugs"] = _bugs(path, model, values)
    initial = model.get("initial_leader", "first")
    if initial not in INITIAL_LEADERS:
        raise SpecError(
            path, "model.initial_leader", f"must be one of {', '.join(INITIAL_LEADERS)}, got {show(initial)}"
        )
    acks = model.get("acks")
    if acks is not None and acks not in ACKS:
        raise SpecError(
            path,
            "model.acks",
            f'must be "all" or "1" (a string; leave it out not to track acknowledgements), got {show(acks)}',
        )
    return Config(
        replicas=names, truncation=rule, min_insync_replicas=min_isr, initial_leader=initial, acks=acks, **values
    )


def _replicas(path: str, model: Table) -> tuple[str, ...]:
    """``model.replicas``: a count (A, B, ...) or a list of distinct replica names."""
    if "replicas" not in model:
        raise SpecError(path, "model.replicas", "missing (a count, or a list of names)")
    reps = model["replicas"]
    if isinstance(reps, bool) or not isinstance(reps, (int, list)):
        raise SpecError(path, "model.replicas", f"must be a count or a list of names, got {show(reps)}")
    if isinstance(reps, int):
        if not 1 <= reps <= MAX_REPLICAS:
            raise SpecError(path, "model.replicas", f"must be between 1 and {MAX_REPLICAS}, got {show(reps)}")
        return tuple(chr(ord("A") + i) for i in range(reps))
    if not 1 <= len(reps) <= MAX_REPLICAS:
        raise SpecError(path, "model.replicas", f"must name between 1 and {MAX_REPLICAS} replicas, got {len(reps)}")
    for x in reps:
        if not is_replica_name(x):
            raise SpecError(
                path,
                "model.replicas",
                f"{show(x)} is not a replica name (a letter, then up to 15 letters, digits, '_' or '-')",
            )
    if len(set(reps)) != len(reps):
        raise SpecError(path, "model.replicas", "replica names must be unique")
    return tuple(reps)


def _refuse_lone_options(path: str, values: Table, rule: str) -> None:
    """Refuse an option that is meaningful only with another one that is off."""
    if values["eligible_leader_replicas"] and not values["hw_requires_min_isr"]:
        raise SpecError(
            path,
            "model.eligible_leader_replicas",
            "needs model.hw_requires_min_isr = true (KIP-966 relies on the HW gate)",
        )
    if values["last_known_leader"] and not values["eligible_leader_replicas"]:
        raise SpecError(
            path,
            "model.last_known_leader",
            "needs model.eligible_leader_replicas = true (the last known leader is "
            "elected only when the ISR and the ELR are empty)",
        )
    if values["broker_epochs"] and not values["alter_partition"]:
        raise SpecError(
            path,
            "model.broker_epochs",
            "needs model.alter_partition = true (broker epochs act on the AlterPartition "
            "requests that model.alter_partition adds)",
        )
    if values["truncate_on_fetch"] and rule != LEADER_EPOCH_21:
        raise SpecError(
            path,
            "model.truncate_on_fetch",
            f'needs model.truncation = "{LEADER_EPOCH_21}" (the fetch path of Kafka 2.8+), got {show(rule)}',
        )


def _min_isr_changes(path: str, model: Table, n: int) -> tuple[int, ...]:
    """``model.min_isr_changes``: a list of min ISR values, each in ``1..n``."""
    changes = model.get("min_isr_changes", [])
    if not isinstance(changes, list):
        raise SpecError(path, "model.min_isr_changes", f"must be a list of min ISR values, got {show(changes)}")
    if len(changes) > 16:
        raise SpecError(path, "model.min_isr_changes", f"must list at most 16 changes, got {len(changes)}")
    for v in changes:
        if isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= n:
            raise SpecError(
                path, "model.min_isr_changes", f"each value must be a min ISR between 1 and {n}, got {show(v)}"
            )
    return tuple(changes)


# Each known bug's option: (the key that must be set, the test on the values read so far, why).
_BUG_NEEDS: dict[str, tuple[str, Callable[[Table], bool], str]] = {
    "KAFKA-13141": ("model.truncate_on_fetch = true", lambda v: v["truncate_on_fetch"], "a bug of the fetch path"),
    "KAFKA-14704": ("model.truncate_on_fetch = true", lambda v: v["truncate_on_fetch"], "a bug of the fetch path"),
    KAFKA_13916: (
        "model.max_controlled_shutdowns > 0",
        lambda v: v["max_controlled_shutdowns"] > 0,
        "a bug of controlled shutdown",
    ),
    KAFKA_15221: ("model.broker_epochs = true", lambda v: v["broker_epochs"], "a bug of broker epochs"),
    KAFKA_16540: (
        "model.eligible_leader_replicas = true",
        lambda v: v["eligible_leader_replicas"],
        "a bug of the eligible leader replicas",
    ),
    KAFKA_16234: (
        "model.max_disk_failures > 0",
        lambda v: v["max_disk_failures"] > 0,
        "a bug of a failed log directory",
    ),
}


def _bugs(path: str, model: Table, values: Table) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """``model.bugs`` and its synonym ``model.fetch_bugs`` (the fetch path's ids): every id known,
    each with its option; ``(fetch_bugs, bugs)`` as ``Config`` keeps them, each a tuple in
    ``KNOWN_BUGS`` order with each id once. An empty list is the default, whatever the options."""
    chosen: set[str] = set()
    for key, allowed_ids in (("fetch_bugs", FETCH_BUGS), ("bugs", KNOWN_BUGS)):
        if key not in model:
            continue
        allowed = ", ".join(f'"{b}"' for b in allowed_ids)
        ids = model[key]
        if not isinstance(ids, list):
            raise SpecError(path, f"model.{key}", f"must be a list of bug ids (allowed: {allowed}), got {show(ids)}")
        for b in ids:
            if b not in allowed_ids:
                raise SpecError(path, f"model.{key}", f"unknown bug {show(b)} (allowed: {allowed})")
            needs, ok, what = _BUG_NEEDS[b]
            if not ok(values):
                raise SpecError(path, f"model.{key}", f"{b} needs {needs} ({what})")
        chosen.update(ids)
    return tuple(b for b in FETCH_BUGS if b in chosen), tuple(b for b in OTHER_BUGS if b in chosen)
