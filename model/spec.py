"""Spec files: TOML documents that name a configuration, what to check, and the verdict
expected of it.

    title = "..."                 # optional, one line
    description = "..."           # optional
    [model]                       # the constants of docs/model.md
    replicas = 2                  # a count (A, B, ...) or a list of names
    max_messages = 2
    ...
    acks = "all"                  # optional: "all" or "1" (track acknowledgements)
    truncate_on_fetch = true      # optional: truncation in the fetch path (Kafka 2.8+)
    fetch_bugs = ["KAFKA-14704"]  # optional, with truncate_on_fetch: the bugs of that path
    max_controlled_shutdowns = 1  # optional: an operator's controlled shutdowns (rolling restarts)
    min_isr_changes = [2, 1]      # optional: the operator's changes of min.insync.replicas, in order
    max_disk_failures = 1         # optional: failed log directories
    bugs = ["KAFKA-15221"]        # optional: every known bug, each with its option (fetch_bugs joins it)
    kafka = "3.6.1"               # optional: a Kafka release sets truncation, the options and bugs
    metadata = "kraft"            # optional, with kafka: "kraft" or "zookeeper" where it had both
    [check]                       # optional
    invariants = ["CommittedNeverLost"]   # default: see invariants.default_properties
    keep_going = false            # after a failure, keep exploring to decide the others
    symmetry = false              # one state per orbit of replica permutations
    deadlock = false              # a state with no enabled action is an error (TLC's check)
    covers = ["RecordCommitted"]  # scenarios that must be reached (invariants.covers)
    max_depth = 30
    max_states = 1000000
    max_memory = "8G"             # stop cleanly past this resident memory (or bytes)
    engine = "local"              # or "spark"
    store = "memory"              # or "disk": the seen states in files (a local engine)
    workers = 2                   # processes expanding the frontier (a local engine's batch path)
    [expect]                      # optional: invariant = "holds" | "violated"
    CommittedNeverLost = "violated"

The application may add tables of its own between ``[check]`` and ``[expect]`` (``tables``:
a table's name and the function that reads it, e.g. the engine's settings); each is read
where it stands, and kept in ``Spec.tables``.

A spec is untrusted input: every key is checked, every number is bounded, and every
error is a one-line ``SpecError`` naming the file and the key.
"""

from __future__ import annotations

import difflib
import hashlib
import re
import tomllib
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs
from kmc.checker.base.errors import SpecError
from kmc.checker.core.result import HOLDS, VIOLATED
from kmc.checker.engines import ENGINES
from kmc.checker.stores.registry import STORES
from kmc.invariants import BY_NAME, EVERY, default_properties
from kmc.invariants.covers import COVERS_BY_NAME, missing_option

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

if TYPE_CHECKING:  # for the annotations only: imported on first use
    from kmc.checker.contract.protocol import Property

    from .kafka import KafkaModel

MAX_REPLICAS = 7
MAX_SPEC_BYTES = 1 << 20
_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_-]{0,15}$")

# key -> (default, low, high) for the integer constants of [model]
_MODEL_INTS = {
    "max_messages": (2, 0, 16),
    "max_crashes": (1, 0, 16),
    "max_leader_epoch": (2, 0, 16),
    "max_controlled_shutdowns": (0, 0, 16),
    "max_disk_failures": (0, 0, 16),
}
_MODEL_BOOLS = (
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
_MODEL_KEYS = (
    "replicas",
    "truncation",
    "min_insync_replicas",
    *_MODEL_INTS,
    *_MODEL_BOOLS,
    "initial_leader",
    "acks",
    "fetch_bugs",
    "min_isr_changes",
    "bugs",
    "kafka",
    "metadata",
)
# The property that reads the acknowledgements: meaningful only with model.acks.
ACKED_PROPERTY = "AcknowledgedNeverLost"
# The property of the fetch path: checked by default only with model.truncate_on_fetch.
EXPOSED_PROPERTY = "UncommittedNeverExposed"
_CHECK_KEYS = (
    "invariants",
    "keep_going",
    "max_depth",
    "max_states",
    "max_memory",
    "engine",
    "symmetry",
    "store",
    "workers",
    "deadlock",
    "covers",
)
_HEAD_KEYS = ("title", "description", "model", "check")  # then the application's tables
_TAIL_KEYS = ("expect",)
LIMITS = {
    "check.max_depth": (1, 100_000),
    "check.max_states": (1, 10**12),
    "check.max_memory": (128 << 20, 1 << 50),
    "check.workers": (1, 256),  # 128M .. 1P bytes (kmc.checker.base.memory.MIN_CEILING, MAX_CEILING)
}
# An application's table: read(path, table) -> what Spec.tables keeps of it (SpecError when bad).
TableReader = Callable[[str, dict], Any]


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
    overrides: tuple = ()
    given: str = "spec"

    def text(self) -> str:
        """``3.6.1 (KRaft); the spec overrides eligible_leader_replicas = true (3.6.1: false)``."""
        out = self.release.label + (", from --kafka" if self.given != "spec" else "")
        if self.overrides:
            parts = [f"{k} = {_value(v)} ({self.release.version}: {_value(r)})" for k, v, r in self.overrides]
            out += "; the spec overrides " + ", ".join(parts)
        return out


def _value(v) -> str:
    """A ``[model]`` value as the spec writes it."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(map(str, v)) + "]"
    return str(v)


@attrs.frozen
class Spec:
    """A loaded spec file.

    Attributes:
        path: where it was read from.
        sha256: the hex digest of its bytes (checkpoints and results name it).
        config: the model constants.
        invariants: the names of the properties to check, in the model's order.
        expect: invariant name -> ``"holds"`` or ``"violated"``.
    """

    path: str
    sha256: str
    config: Config
    title: str = ""
    description: str = ""
    invariants: tuple = ()
    keep_going: bool = False
    symmetry: bool = False
    max_depth: int | None = None
    max_states: int | None = None
    max_memory: int | None = None
    engine: str = "local"
    store: str = "memory"
    workers: int | None = None  # None: as many as the machine gives the process
    deadlock: bool = False  # a state with no enabled action is an error (checker.core.deadlock)
    covers: tuple = ()  # the names of the covers to reach (invariants.covers), in the spec's order
    expect: dict = attrs.field(factory=dict)
    tables: dict = attrs.field(factory=dict)  # the application's tables, as their readers give them
    kafka: KafkaSetting | None = None  # the Kafka release the model was read from (model.kafka, --kafka)

    @property
    def name(self) -> str:
        return Path(self.path).stem

    def model(self) -> KafkaModel:
        """The ``KafkaModel`` of this spec."""
        from .kafka import KafkaModel

        return KafkaModel(self.config)

    def properties(self, names=None) -> list[Property]:
        """The ``Property`` values to check (``names`` overrides the spec's list)."""
        return [BY_NAME[n] for n in (names or self.invariants)]


def _covers(path: str, value: Any, config: Config) -> tuple:
    """``[check] covers``: a list of distinct cover names (``invariants.covers``), each
    one whose scenario the configuration can run."""
    if not isinstance(value, list) or not all(isinstance(x, str) for x in value):
        raise SpecError(path, "check.covers", "must be a list of cover names (kmc invariants lists them)")
    for x in value:
        if x not in COVERS_BY_NAME:
            raise SpecError(path, "check.covers", f"unknown cover {_show(x)} (known: {', '.join(COVERS_BY_NAME)})")
        need = missing_option(x, config)
        if need is not None:
            raise SpecError(path, "check.covers", f"{x} needs {need}: without it the scenario cannot happen")
    if len(set(value)) != len(value):
        raise SpecError(path, "check.covers", "names a cover twice")
    return tuple(value)


def is_replica_name(x) -> bool:
    """A letter, then up to 15 letters, digits, '_' or '-' (the whole string: no newline)."""
    return isinstance(x, str) and _NAME.fullmatch(x) is not None


def property_names() -> list[str]:
    return [p.name for p in EVERY]


def load_spec(path, tables: Mapping[str, TableReader] | None = None, kafka: tuple | None = None) -> Spec:
    """Read and validate a spec file (``tables``: the application's tables and their
    readers, see the module; ``kafka``: ``(release, metadata or None)`` from the command
    line, read as the spec's ``model.kafka`` and ``model.metadata``).

    Raises:
        SpecError: the file is missing or unreadable, is not TOML, or has an unknown key,
            a value of the wrong type, or a value out of range.
    """
    path = str(path)
    p = Path(path)
    try:
        if not p.is_file():
            raise SpecError(path, None, "no such spec file" if not p.exists() else "not a file")
        if p.stat().st_size > MAX_SPEC_BYTES:
            raise SpecError(path, None, f"the file is larger than {MAX_SPEC_BYTES} bytes")
        data = p.read_bytes()
    except OSError as e:
        raise SpecError(path, None, f"cannot read the file ({e.strerror or e})") from None
    return parse_spec(data, path, tables, kafka)


def parse_spec(
    data: bytes, path: str = "<spec>", tables: Mapping[str, TableReader] | None = None, kafka: tuple | None = None
) -> Spec:
    """Validate the bytes of a spec file; see ``load_spec``."""
    tables = tables or {}
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise SpecError(path, None, f"not UTF-8 text (byte {e.start})") from None
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise SpecError(path, None, f"not valid TOML: {_clip(str(e), 200)}") from None
    except ValueError:  # tomllib's only other error: an integer past int()'s digit limit
        raise SpecError(path, None, "not valid TOML: an integer has too many digits") from None
    except RecursionError:
        raise SpecError(path, None, "not valid TOML: nested too deeply") from None
    _only(path, "", doc, (*_HEAD_KEYS, *tables, *_TAIL_KEYS))
    title = _str(path, "title", doc.get("title", ""))
    description = _str(path, "description", doc.get("description", ""))
    model = _table(path, "model", doc.get("model"), required=True)
    check = _table(path, "check", doc.get("check", {}))
    extra = {name: _table(path, name, doc.get(name, {})) for name in tables}
    expect = _table(path, "expect", doc.get("expect", {}))
    config, setting = _read_model(path, model, kafka)

    _only(path, "check.", check, _CHECK_KEYS)
    names = property_names()
    if "invariants" in check:
        inv = check["invariants"]
        if not isinstance(inv, list) or not inv or not all(isinstance(x, str) for x in inv):
            raise SpecError(path, "check.invariants", "must be a non-empty list of invariant names")
        for x in inv:
            if x not in names:
                raise SpecError(path, "check.invariants", f"unknown invariant {_show(x)} (known: {', '.join(names)})")
        invariants = tuple(n for n in names if n in inv)
        if ACKED_PROPERTY in invariants and config.acks is None:
            raise SpecError(
                path,
                "check.invariants",
                f'{ACKED_PROPERTY} needs model.acks ("all" or "1"): without it no acknowledgement is tracked',
            )
    else:
        invariants = tuple(p.name for p in default_properties(config))
    keep_going = _bool(path, "check.keep_going", check.get("keep_going", False))
    symmetry = _bool(path, "check.symmetry", check.get("symmetry", False))
    deadlock = _bool(path, "check.deadlock", check.get("deadlock", False))
    covers = _covers(path, check.get("covers", []), config)
    max_depth = _opt_int(path, "check.max_depth", check.get("max_depth"))
    max_states = _opt_int(path, "check.max_states", check.get("max_states"))
    max_memory = _size(path, "check.max_memory", check.get("max_memory"))
    workers = _opt_int(path, "check.workers", check.get("workers"))
    engine = check.get("engine", "local")
    if not isinstance(engine, str) or engine not in ENGINES:
        raise SpecError(path, "check.engine", f"must be one of {', '.join(map(repr, ENGINES))}, got {_show(engine)}")
    store = check.get("store", "memory")
    if not isinstance(store, str) or store not in STORES:
        raise SpecError(path, "check.store", f"must be one of {', '.join(map(repr, STORES))}, got {_show(store)}")

    kept = {name: read(path, extra[name]) for name, read in tables.items()}

    verdicts = {}
    for key, value in expect.items():
        if key not in names:
            raise SpecError(path, _key("expect.", key), f"unknown invariant (known: {', '.join(names)})")
        if key == ACKED_PROPERTY and config.acks is None:
            raise SpecError(
                path, f"expect.{key}", 'needs model.acks ("all" or "1"): without it no acknowledgement is tracked'
            )
        if key not in invariants:
            raise SpecError(path, f"expect.{key}", "this invariant is not checked (see check.invariants)")
        if value not in (HOLDS, VIOLATED):
            raise SpecError(path, f"expect.{key}", f'must be "holds" or "violated", got {_show(value)}')
        verdicts[key] = value
    return Spec(
        path=path,
        sha256=hashlib.sha256(data).hexdigest(),
        config=config,
        title=title,
        description=description,
        invariants=invariants,
        keep_going=keep_going,
        symmetry=symmetry,
        max_depth=max_depth,
        max_states=max_states,
        max_memory=max_memory,
        engine=engine,
        store=store,
        workers=workers,
        deadlock=deadlock,
        covers=covers,
        expect=verdicts,
        tables=kept,
        kafka=setting,
    )


# The bounds of the model's constants, for commands that build configurations themselves
# (kmc matrix); config_from_table is the one validator every way in goes through.
MODEL_BOUNDS = {
    "replicas": (1, MAX_REPLICAS),
    "min_insync_replicas": (1, MAX_REPLICAS),
    **{key: (lo, hi) for key, (_, lo, hi) in _MODEL_INTS.items()},
}


def config_from_table(table, path="<config>") -> Config:
    """The ``Config`` of a ``[model]`` table, validated as a spec file's is: the one
    validator of model constants (the spec loader, ``kmc replay`` for a saved result's
    ``spec.model``, and ``kmc matrix`` for every row of its grid use it).

    Raises:
        SpecError: naming ``path`` and the key (``model.max_crashes``) at fault.
    """
    return _config(path, _table(path, "model", table, required=True))


def _config(path, model) -> Config:
    return _read_model(path, model)[0]


def _read_model(path, model, cli: tuple | None = None) -> tuple[Config, KafkaSetting | None]:
    """The ``Config`` of a ``[model]`` table and, when it names a Kafka release
    (``model.kafka``, or ``cli``: ``(release, metadata or None)`` from the command line, which
    replaces the spec's), that release with the spec's overrides. The release's settings go
    under the spec's own keys, and the whole goes through the one validator (``_plain_config``)."""
    _only(path, "model.", model, _MODEL_KEYS)
    if cli is not None:
        model = {**model, "kafka": cli[0], **({"metadata": cli[1]} if cli[1] is not None else {})}
    if "kafka" not in model:
        if "metadata" in model:
            raise SpecError(path, "model.metadata", "only with model.kafka (the release whose metadata mode it names)")
        return _plain_config(path, model), None
    try:
        release = releases.resolve(model["kafka"], model.get("metadata"))
        table = release.table(model)
        release.refuse(model, table)
    except releases.ReleaseError as e:
        raise SpecError(path, f"model.{e.key}", str(e)) from None
    written = [k for k in releases.RELEASE_KEYS if k in model or (k == "bugs" and "fetch_bugs" in model)]
    try:
        config = _plain_config(path, table, release.bugs)
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


def release_bugs(bugs, values: Mapping) -> tuple:
    """The ids of ``bugs`` whose option is on in ``values`` (the options read, by name): a
    release sets a bug only then (a spec's ``model.kafka``, a column of ``kmc matrix --versions``)."""
    return tuple(b for b in bugs if _BUG_NEEDS[b][1](values))


def _plain_config(path, model, known_bugs: tuple | None = None) -> Config:
    """The one validator of a ``[model]`` table (``known_bugs``: a release's known bugs,
    each listed when its option is on, unless the table writes ``bugs`` or ``fetch_bugs``)."""
    if "replicas" not in model:
        raise SpecError(path, "model.replicas", "missing (a count, or a list of names)")
    reps = model["replicas"]
    if isinstance(reps, bool) or not isinstance(reps, (int, list)):
        raise SpecError(path, "model.replicas", f"must be a count or a list of names, got {_show(reps)}")
    if isinstance(reps, int):
        if not 1 <= reps <= MAX_REPLICAS:
            raise SpecError(path, "model.replicas", f"must be between 1 and {MAX_REPLICAS}, got {_show(reps)}")
        names = tuple(chr(ord("A") + i) for i in range(reps))
    else:
        if not 1 <= len(reps) <= MAX_REPLICAS:
            raise SpecError(path, "model.replicas", f"must name between 1 and {MAX_REPLICAS} replicas, got {len(reps)}")
        for x in reps:
            if not is_replica_name(x):
                raise SpecError(
                    path,
                    "model.replicas",
                    f"{_show(x)} is not a replica name (a letter, then up to 15 letters, digits, '_' or '-')",
                )
        if len(set(reps)) != len(reps):
            raise SpecError(path, "model.replicas", "replica names must be unique")
        names = tuple(reps)
    values: dict[str, Any] = {}  # ints and bools, the Config fields of those names
    for key, (default, lo, hi) in _MODEL_INTS.items():
        values[key] = _int(path, f"model.{key}", model.get(key, default), lo, hi)
    for key in _MODEL_BOOLS:
        values[key] = _bool(path, f"model.{key}", model.get(key, False))
    if "truncation" not in model:
        raise SpecError(path, "model.truncation", f"missing (one of {', '.join(RULES)})")
    rule = model["truncation"]
    if not isinstance(rule, str) or rule not in RULES:
        raise SpecError(path, "model.truncation", f"must be one of {', '.join(RULES)}, got {_show(rule)}")
    min_isr = _int(path, "model.min_insync_replicas", model.get("min_insync_replicas", 1), 1, len(names))
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
            f'needs model.truncation = "{LEADER_EPOCH_21}" (the fetch path of Kafka 2.8+), got {_show(rule)}',
        )
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
            path, "model.initial_leader", f"must be one of {', '.join(INITIAL_LEADERS)}, got {_show(initial)}"
        )
    acks = model.get("acks")
    if acks is not None and acks not in ACKS:
        raise SpecError(
            path,
            "model.acks",
            f'must be "all" or "1" (a string; leave it out not to track acknowledgements), got {_show(acks)}',
        )
    return Config(
        replicas=names, truncation=rule, min_insync_replicas=min_isr, initial_leader=initial, acks=acks, **values
    )


def _min_isr_changes(path, model, n) -> tuple:
    """``model.min_isr_changes``: a list of min ISR values, each in ``1..n``."""
    changes = model.get("min_isr_changes", [])
    if not isinstance(changes, list):
        raise SpecError(path, "model.min_isr_changes", f"must be a list of min ISR values, got {_show(changes)}")
    if len(changes) > 16:
        raise SpecError(path, "model.min_isr_changes", f"must list at most 16 changes, got {len(changes)}")
    for v in changes:
        if isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= n:
            raise SpecError(
                path, "model.min_isr_changes", f"each value must be a min ISR between 1 and {n}, got {_show(v)}"
            )
    return tuple(changes)


# Each known bug's option: (the key that must be set, the test on the values read so far, why).
_BUG_NEEDS = {
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


def _bugs(path, model, values) -> tuple[tuple, tuple]:
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
            raise SpecError(path, f"model.{key}", f"must be a list of bug ids (allowed: {allowed}), got {_show(ids)}")
        for b in ids:
            if b not in allowed_ids:
                raise SpecError(path, f"model.{key}", f"unknown bug {_show(b)} (allowed: {allowed})")
            needs, ok, what = _BUG_NEEDS[b]
            if not ok(values):
                raise SpecError(path, f"model.{key}", f"{b} needs {needs} ({what})")
        chosen.update(ids)
    return tuple(b for b in FETCH_BUGS if b in chosen), tuple(b for b in OTHER_BUGS if b in chosen)


def _show(value) -> str:
    return _clip(repr(value), 40)


def _clip(text, width) -> str:
    return text if len(text) <= width else text[: width - 3] + "..."


_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]{1,40}$")


def _key(prefix, key) -> str:
    """A key from the file, for a message: as written when short and bare, else quoted
    (keys may hold newlines, and a message is one line)."""
    return prefix + (key if _BARE_KEY.match(key) else _show(key))


def _only(path, prefix, table, allowed) -> None:
    for key in table:
        if key not in allowed:
            names = ", ".join(allowed)
            if len(names) > 200:  # a long table: the keys nearest to the typo, else the table's in the README
                near = difflib.get_close_matches(str(key), allowed, n=3)
                hint = f"did you mean {' or '.join(near)}?" if near else "the README's table lists the keys"
                raise SpecError(path, _key(prefix, key), f"unknown key ({hint})")
            raise SpecError(path, _key(prefix, key), f"unknown key (allowed: {names})")


def _table(path, key, value, required=False) -> dict:
    if value is None and required:
        raise SpecError(path, f"[{key}]", "missing table")
    if not isinstance(value, dict):
        raise SpecError(path, key, f"must be a table, got {_show(value)}")
    return value


def check_keys(path, prefix: str, table: dict, allowed) -> None:
    """Refuse a key of ``table`` (``prefix``: its name and a dot) not in ``allowed``."""
    _only(path, prefix, table, allowed)


def check_text(path, key: str, value) -> str:
    """``value``, refused unless it is a string."""
    return _str(path, key, value)


def check_int(path, key: str, value, lo: int, hi: int) -> int | None:
    """``value`` (``None`` when absent), refused unless an integer in ``[lo, hi]``."""
    return None if value is None else _int(path, key, value, lo, hi)


def _str(path, key, value) -> str:
    if not isinstance(value, str):
        raise SpecError(path, key, f"must be a string, got {_show(value)}")
    return value


def _bool(path, key, value) -> bool:
    if not isinstance(value, bool):
        raise SpecError(path, key, f"must be true or false, got {_show(value)}")
    return value


def _int(path, key, value, lo, hi) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise SpecError(path, key, f"must be an integer, got {_show(value)}")
    if not lo <= value <= hi:
        raise SpecError(path, key, f"must be between {lo} and {hi}, got {_show(value)}")
    return value


def _size(path, key, value) -> int | None:
    """A size in bytes: an integer, or a string such as "8G" or "512M"."""
    raw = value
    if isinstance(value, str):
        from kmc.checker.base.units import parse_size

        try:
            value = parse_size(value)
        except ValueError:
            raise SpecError(path, key, f'must be a size such as "8G" or "512M", got {_show(value)}') from None
    if isinstance(value, int) and not isinstance(value, bool):
        from kmc.checker.base.units import check_ceiling

        why = check_ceiling(value)
        if why:
            raise SpecError(path, key, f"{why}, got {_show(raw)}")
    return _opt_int(path, key, value)


def _opt_int(path, key, value) -> int | None:
    if value is None:
        return None
    lo, hi = LIMITS[key]
    return _int(path, key, value, lo, hi)
