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

import hashlib
import tomllib
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs
from kmc.checker.base.errors import SpecError
from kmc.checker.core.result import HOLDS, VIOLATED
from kmc.checker.engines import ENGINES
from kmc.checker.stores.registry import STORES
from kmc.invariants import BY_NAME, EVERY, default_properties
from kmc.invariants.covers import COVERS_BY_NAME, missing_option

from .config import Config
from .spec_model import (
    MAX_REPLICAS,
    MODEL_BOOLS,
    MODEL_BOUNDS,
    MODEL_INTS,
    KafkaArg,
    KafkaSetting,
    check_bool,
    check_int,
    check_keys,
    check_size,
    check_table,
    check_text,
    clip,
    config_from_table,
    is_replica_name,
    key_name,
    read_model,
    release_bugs,
    show,
)

if TYPE_CHECKING:  # for the annotations only: imported on first use
    from kmc.checker.contract.protocol import Property

    from .kafka import KafkaModel

# The names other modules read here; the model's table is read in ``model.spec_model``, each
# value checked by ``model.spec_model``.
__all__ = [
    "ACKED_PROPERTY",
    "ENGINES",
    "EXPOSED_PROPERTY",
    "LIMITS",
    "MAX_REPLICAS",
    "MODEL_BOOLS",
    "MODEL_BOUNDS",
    "MODEL_INTS",
    "STORES",
    "KafkaSetting",
    "Spec",
    "SpecError",
    "TableReader",
    "check_int",
    "check_keys",
    "check_text",
    "config_from_table",
    "is_replica_name",
    "load_spec",
    "parse_spec",
    "property_names",
    "release_bugs",
]

MAX_SPEC_BYTES = 1 << 20
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
TableReader = Callable[[str, dict[str, Any]], Any]


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
    invariants: tuple[str, ...] = ()
    keep_going: bool = False
    symmetry: bool = False
    max_depth: int | None = None
    max_states: int | None = None
    max_memory: int | None = None
    engine: str = "local"
    store: str = "memory"
    workers: int | None = None  # None: as many as the machine gives the process
    deadlock: bool = False  # a state with no enabled action is an error (checker.core.deadlock)
    covers: tuple[str, ...] = ()  # the names of the covers to reach (invariants.covers), in the spec's order
    expect: dict[str, str] = attrs.field(factory=dict)
    tables: dict[str, Any] = attrs.field(factory=dict)  # the application's tables, as their readers give them
    kafka: KafkaSetting | None = None  # the Kafka release the model was read from (model.kafka, --kafka)

    @property
    def name(self) -> str:
        return Path(self.path).stem

    def model(self) -> KafkaModel:
        """The ``KafkaModel`` of this spec."""
        from .kafka import KafkaModel

        return KafkaModel(self.config)

    def properties(self, names: Sequence[str] | None = None) -> list[Property]:
        """The ``Property`` values to check (``names`` overrides the spec's list)."""
        return [BY_NAME[n] for n in (names or self.invariants)]


def _covers(path: str, value: Any, config: Config) -> tuple[str, ...]:
    """``[check] covers``: a list of distinct cover names (``invariants.covers``), each
    one whose scenario the configuration can run."""
    if not isinstance(value, list) or not all(isinstance(x, str) for x in value):
        raise SpecError(path, "check.covers", "must be a list of cover names (kmc invariants lists them)")
    for x in value:
        if x not in COVERS_BY_NAME:
            raise SpecError(path, "check.covers", f"unknown cover {show(x)} (known: {', '.join(COVERS_BY_NAME)})")
        need = missing_option(x, config)
        if need is not None:
            raise SpecError(path, "check.covers", f"{x} needs {need}: without it the scenario cannot happen")
    if len(set(value)) != len(value):
        raise SpecError(path, "check.covers", "names a cover twice")
    return tuple(value)


def load_spec(path: str | Path, tables: Mapping[str, TableReader] | None = None, kafka: KafkaArg | None = None) -> Spec:
    """Read and validate a spec file (``tables``: the application's tables and their
    readers, see the module; ``kafka``: ``(release, metadata or None)`` from the command
    line, read as the spec's ``model.kafka`` and ``model.metadata``).

    Raises:
        SpecError: the file is missing or unreadable, is not TOML, or has an unknown key,
            a value of the wrong type, or a value out of range.
    """
    where = str(path)
    p = Path(where)
    try:
        if not p.is_file():
            raise SpecError(where, None, "no such spec file" if not p.exists() else "not a file")
        if p.stat().st_size > MAX_SPEC_BYTES:
            raise SpecError(where, None, f"the file is larger than {MAX_SPEC_BYTES} bytes")
        data = p.read_bytes()
    except OSError as e:
        raise SpecError(where, None, f"cannot read the file ({e.strerror or e})") from None
    return parse_spec(data, where, tables, kafka)


def property_names() -> list[str]:
    """The names of every property a spec may check, in the model's order."""
    return [p.name for p in EVERY]


def parse_spec(
    data: bytes, path: str = "<spec>", tables: Mapping[str, TableReader] | None = None, kafka: KafkaArg | None = None
) -> Spec:
    """Validate the bytes of a spec file; see ``load_spec``."""
    tables = tables or {}
    doc = _document(data, path)
    check_keys(path, "", doc, (*_HEAD_KEYS, *tables, *_TAIL_KEYS))
    title = check_text(path, "title", doc.get("title", ""))
    description = check_text(path, "description", doc.get("description", ""))
    model = check_table(path, "model", doc.get("model"), required=True)
    check = check_table(path, "check", doc.get("check", {}))
    extra = {name: check_table(path, name, doc.get(name, {})) for name in tables}
    expect = check_table(path, "expect", doc.get("expect", {}))
    config, setting = read_model(path, model, kafka)
    check_keys(path, "check.", check, _CHECK_KEYS)
    invariants = _invariants(path, check, config)
    settings = _settings(path, check, config)
    kept = {name: read(path, extra[name]) for name, read in tables.items()}
    verdicts = _verdicts(path, expect, invariants, config)
    return Spec(
        path=path,
        sha256=hashlib.sha256(data).hexdigest(),
        config=config,
        title=title,
        description=description,
        invariants=invariants,
        expect=verdicts,
        tables=kept,
        kafka=setting,
        **settings,
    )


def _document(data: bytes, path: str) -> dict[str, Any]:
    """The TOML document of a spec file's bytes."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise SpecError(path, None, f"not UTF-8 text (byte {e.start})") from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise SpecError(path, None, f"not valid TOML: {clip(str(e), 200)}") from None
    except ValueError:  # tomllib's only other error: an integer past int()'s digit limit
        raise SpecError(path, None, "not valid TOML: an integer has too many digits") from None
    except RecursionError:
        raise SpecError(path, None, "not valid TOML: nested too deeply") from None


def _invariants(path: str, check: dict[str, Any], config: Config) -> tuple[str, ...]:
    """``[check] invariants``: the names of the properties to check, in the model's order
    (default: ``invariants.default_properties`` of the configuration)."""
    if "invariants" not in check:
        return tuple(p.name for p in default_properties(config))
    names = property_names()
    inv = check["invariants"]
    if not isinstance(inv, list) or not inv or not all(isinstance(x, str) for x in inv):
        raise SpecError(path, "check.invariants", "must be a non-empty list of invariant names")
    for x in inv:
        if x not in names:
            raise SpecError(path, "check.invariants", f"unknown invariant {show(x)} (known: {', '.join(names)})")
    invariants = tuple(n for n in names if n in inv)
    if ACKED_PROPERTY in invariants and config.acks is None:
        raise SpecError(
            path,
            "check.invariants",
            f'{ACKED_PROPERTY} needs model.acks ("all" or "1"): without it no acknowledgement is tracked',
        )
    return invariants


def _settings(path: str, check: dict[str, Any], config: Config) -> dict[str, Any]:
    """The ``[check]`` settings but the invariants, as ``Spec`` fields; the engine and the
    store are names of their registries (``checker.engines``, ``checker.stores.registry``)."""
    settings: dict[str, Any] = dict(
        keep_going=check_bool(path, "check.keep_going", check.get("keep_going", False)),
        symmetry=check_bool(path, "check.symmetry", check.get("symmetry", False)),
        deadlock=check_bool(path, "check.deadlock", check.get("deadlock", False)),
        covers=_covers(path, check.get("covers", []), config),
        max_depth=check_int(path, "check.max_depth", check.get("max_depth"), *LIMITS["check.max_depth"]),
        max_states=check_int(path, "check.max_states", check.get("max_states"), *LIMITS["check.max_states"]),
        max_memory=check_size(path, "check.max_memory", check.get("max_memory"), *LIMITS["check.max_memory"]),
        workers=check_int(path, "check.workers", check.get("workers"), *LIMITS["check.workers"]),
    )
    engine = check.get("engine", "local")
    if not isinstance(engine, str) or engine not in ENGINES:
        raise SpecError(path, "check.engine", f"must be one of {', '.join(map(repr, ENGINES))}, got {show(engine)}")
    store = check.get("store", "memory")
    if not isinstance(store, str) or store not in STORES:
        raise SpecError(path, "check.store", f"must be one of {', '.join(map(repr, STORES))}, got {show(store)}")
    return {**settings, "engine": engine, "store": store}


def _verdicts(path: str, expect: dict[str, Any], invariants: tuple[str, ...], config: Config) -> dict[str, str]:
    """``[expect]``: invariant name -> ``"holds"`` or ``"violated"``, each of a checked invariant."""
    names = property_names()
    verdicts = {}
    for key, value in expect.items():
        if key not in names:
            raise SpecError(path, key_name("expect.", key), f"unknown invariant (known: {', '.join(names)})")
        if key == ACKED_PROPERTY and config.acks is None:
            raise SpecError(
                path, f"expect.{key}", 'needs model.acks ("all" or "1"): without it no acknowledgement is tracked'
            )
        if key not in invariants:
            raise SpecError(path, f"expect.{key}", "this invariant is not checked (see check.invariants)")
        if value not in (HOLDS, VIOLATED):
            raise SpecError(path, f"expect.{key}", f'must be "holds" or "violated", got {show(value)}')
        verdicts[key] = value
    return verdicts
