"""What several subcommands share: loading a spec, choosing properties and engines."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from kmc.checker.base import memory
from kmc.checker.base.errors import UsageError
from kmc.checker.core.options import Options
from kmc.checker.engines import ENGINES
from kmc.checker.stores.registry import STORES

if TYPE_CHECKING:  # for the annotations only: the commands import these on first use
    from collections.abc import Iterable, Sequence
    from pathlib import Path

    from kmc.checker.contract.protocol import Model, Property
    from kmc.checker.core.driver import Engine, Progress
    from kmc.model.spec import Spec
    from kmc.model.spec_model import KafkaArg

    from ..user_model import ModelSpec


def positive_int(text: str) -> int:
    """An argparse type: a whole number >= 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def partitions(text: str) -> int:
    """An argparse type: a number of Spark partitions, 1 to ``MAX_PARTITIONS``."""
    from kmc.checker.spark.master import MAX_PARTITIONS

    value = positive_int(text)
    if value > MAX_PARTITIONS:
        raise argparse.ArgumentTypeError(
            f"must be at most {MAX_PARTITIONS} (the limit of kmc's Spark engine), got {value}"
        )
    return value


def master_url(text: str) -> str:
    """An argparse type: a Spark master URL (its syntax; reachability is checked at start)."""
    from kmc.checker.base.errors import EngineError
    from kmc.checker.spark.master import validate_master

    try:
        return validate_master(text)
    except EngineError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def add_spec_argument(parser: argparse.ArgumentParser, optional: bool = False) -> None:
    parser.add_argument(
        "spec",
        metavar="SPEC",
        nargs="?" if optional else None,
        help="the spec file (TOML), e.g. specs/hw-data-loss.toml" + (" (or --model)" if optional else ""),
    )


def add_model_arguments(parser: argparse.ArgumentParser) -> None:
    """``--model REF`` and ``--param NAME=VALUE``: a user's own model instead of a spec."""
    g = parser.add_argument_group("a model of your own (docs/writing-a-model.md)")
    g.add_argument(
        "--model",
        metavar="MODULE:FACTORY",
        help="check the model FACTORY(**params) returns, FACTORY in an importable module "
        "(pkg.mod:factory) or a Python file (path/to/file.py:factory), instead of a spec",
    )
    g.add_argument(
        "--param",
        action="append",
        metavar="NAME=VALUE",
        default=[],
        help="a keyword argument of the model's factory (repeatable; an int, a float, true/false or a string)",
    )


def add_kafka_arguments(parser: argparse.ArgumentParser) -> None:
    """``--kafka VERSION`` and ``--metadata MODE``: the spec's model as that Kafka release runs it."""
    g = parser.add_argument_group("Kafka by its version number (docs/model.md)")
    g.add_argument(
        "--kafka",
        metavar="VERSION",
        help="read the spec's model as Kafka VERSION ships (e.g. 3.6.1): its truncation rule, options and "
        "known bugs, as the spec's model.kafka would (in place of it); the keys the spec writes still win",
    )
    g.add_argument(
        "--metadata",
        choices=("kraft", "zookeeper"),
        help="with --kafka: KRaft or ZooKeeper, for a release that had both (default: the release's, "
        "ZooKeeper before 3.3, KRaft from 3.3)",
    )


def kafka_override(args: argparse.Namespace) -> KafkaArg | None:
    """``(release, metadata or None)`` from ``--kafka`` and ``--metadata``, checked; ``None``
    without ``--kafka``."""
    kafka, metadata = args.kafka, args.metadata
    if kafka is None:
        if metadata is not None:
            raise UsageError("--metadata: only with --kafka")
        return None
    if args.model is not None:
        raise UsageError("--kafka: only with a SPEC file (a model of your own has no Kafka release)")
    from kmc.model.releases import ReleaseError, resolve

    try:
        resolve(kafka, metadata)
    except ReleaseError as e:
        raise UsageError(f"--{e.key}: {e}") from None
    return (kafka, metadata)


def load_target(args: argparse.Namespace) -> Spec | ModelSpec:
    """What a command checks: the spec file (read as ``--kafka`` says, when given), or the
    model ``--model`` names (``app.user_model.ModelSpec``)."""
    model = args.model
    kafka = kafka_override(args)
    if model is None:
        if args.param:
            raise UsageError("--param: only with --model")
        if args.spec is None:
            raise UsageError("a SPEC file (or --model MODULE:FACTORY) is required")
        return load(args.spec, kafka)
    if args.spec is not None:
        raise UsageError(f"--model: give a SPEC file or --model, not both (got {args.spec})")
    from ..user_model import load_model_spec, parse_params

    return load_model_spec(model, parse_params(args.param))


def add_engine_arguments(parser: argparse.ArgumentParser) -> None:
    g = parser.add_argument_group("engine")
    g.add_argument(
        "--engine", choices=ENGINES, help="where to explore (default: the spec's [check] engine, else local)"
    )
    g.add_argument(
        "--master",
        metavar="URL",
        type=master_url,
        help="Spark master URL, e.g. local[4] or spark://host:7077 (default: the spec's [spark] master, "
        "else local[*,4]: all cores, four attempts per task)",
    )
    g.add_argument(
        "--partitions",
        type=partitions,
        metavar="N",
        help="Spark partitions of the frontier, 1 to 4096 (default: the spec's [spark] partitions, else one "
        "per executor core: Spark's default parallelism, e.g. 2 for local[2])",
    )
    g.add_argument("--verbose", action="store_true", help="show Spark's and the JVM's own log output")
    g.add_argument(
        "--driver-level-limit",
        type=int,
        metavar="N",
        help="spark engine: expand the leading levels of at most N states on the driver (default 50000; "
        "with N of 10000 or more, larger levels too while the Spark session is still starting, up to 40 "
        "times N; 0: hand every level after the initial states to Spark)",
    )
    g.add_argument(
        "--spark-store",
        metavar="DIR|URL",
        help="spark engine: where a run keeps its seen-set and frontier (default: the system's "
        "temporary directory); on a cluster of several machines, an object store (s3://bucket/prefix, "
        "gs://, hdfs://, abfs://) or a directory every executor sees at the same path",
    )
    g.add_argument(
        "--store",
        choices=STORES,
        help="local engine: keep the seen states in memory (13 bytes a state) or on disk (sorted "
        "fingerprint files, a few bytes of memory a state: a run larger than the memory; the frontier's "
        "rows then go on disk too, a file a level); default: the spec's [check] store, else memory",
    )
    g.add_argument(
        "--store-dir",
        metavar="DIR",
        help="--store disk: the directory the store's and the frontier's files go in (default: the checkpoint "
        "directory, else the system's temporary directory); removed at the end of the run",
    )
    g.add_argument(
        "--workers",
        type=_workers,
        metavar="N",
        help="local engine: processes that expand the frontier on the batch path, beside the one that stores "
        "the states (same states, same numbers, same counterexamples for every N; used on levels of about a "
        "hundred thousand states or more); default: the "
        "spec's [check] workers, else the CPUs this process may use",
    )
    g.add_argument(
        "--symmetry",
        action="store_true",
        help="symmetry reduction: count one state per orbit of replica permutations (docs/model.md)",
    )
    g.add_argument(
        "--per-state",
        action="store_true",
        help="local engine: expand one attrs state at a time (the reference path) instead of the batch kernel",
    )
    g.add_argument(
        "--verify-kernel",
        action="store_true",
        help="compare the batch kernel with the model on every state expanded (default: on a sample of the "
        "first levels and where a byte of a row wraps); a disagreement stops the run with exit code 2",
    )


def load(path: str | Path, kafka: KafkaArg | None = None) -> Spec:
    """A spec file (``kafka``: ``kafka_override``'s release in place of its ``model.kafka``)."""
    from ..specs import load_spec

    return load_spec(path, kafka)


def select_properties(spec: Spec | ModelSpec, names: Sequence[str] | None) -> list[Property]:
    """The properties to check: ``--invariant`` names if given, else the spec's."""
    if not names:
        return spec.properties()
    from ..user_model import ModelSpec

    if isinstance(spec, ModelSpec):
        return spec.properties(names)
    from kmc.invariants.covers import COVERS_BY_NAME
    from kmc.model.spec import property_names

    covers = [COVERS_BY_NAME[n] for n in names if n in COVERS_BY_NAME]  # a resumed run's covers
    names = [n for n in names if n not in COVERS_BY_NAME]
    if not names:
        return list(spec.properties()) + covers
    known = property_names()
    for n in names:
        if n not in known:
            raise UsageError(f"--invariant: unknown invariant {n!r} (known: {', '.join(known)})")
    from kmc.model.spec import ACKED_PROPERTY

    if ACKED_PROPERTY in names and spec.config.acks is None:
        raise UsageError(
            f"--invariant {ACKED_PROPERTY}: {spec.path} has no model.acks "
            '("all" or "1"), so no acknowledgement is tracked'
        )
    return spec.properties([n for n in known if n in names]) + covers


def with_covers(properties: Iterable[Property], spec: Spec | ModelSpec) -> list[Property]:
    """``properties``, followed by the covers a spec names (``[check] covers``) that are
    not among them already (a model of one's own declares its covers among its properties)."""
    from ..user_model import ModelSpec

    properties = list(properties)
    names = {p.name for p in properties}
    covers = () if isinstance(spec, ModelSpec) else spec.covers
    if not covers:
        return properties
    from kmc.invariants.covers import COVERS_BY_NAME

    return properties + [COVERS_BY_NAME[n] for n in covers if n not in names]


def with_deadlock(properties: Iterable[Property], spec: Spec | ModelSpec, args: argparse.Namespace) -> list[Property]:
    """``properties``, followed by ``Deadlock`` (``checker.core.deadlock``) when ``--deadlock`` or
    the spec's ``[check] deadlock`` asks for it.

    Raises:
        UsageError: the model has a property of that name already.
    """
    from ..user_model import ModelSpec

    properties = list(properties)
    # (a model of one's own has no [check] table: only --deadlock asks for it)
    if not (args.deadlock or (not isinstance(spec, ModelSpec) and spec.deadlock)):
        return properties
    from kmc.checker.core.deadlock import DEADLOCK, Deadlock

    if any(p.name == DEADLOCK for p in properties):
        raise UsageError(f"--deadlock: the model has a property named {DEADLOCK} already; rename it to check both")
    return [*properties, Deadlock]


def make_engine(
    spec: Spec | ModelSpec,
    model: Model,
    properties: Sequence[Property],
    options: Options,
    progress: Progress | None,
    args: argparse.Namespace,
    **hooks: Any,
) -> Engine:
    """The engine the command line (first) or the spec asks for (see
    ``checker.engines.make_engine``); ``hooks`` go to its constructor."""
    from kmc.checker.engines import make_engine as build

    from ..specs import spark_table

    engine = args.engine or spec.engine
    spark: dict[str, Any] = {}
    if engine == "spark":
        table = spark_table(spec)
        spark = dict(
            # Under spark-submit, the submit's master stands for the spec's (a --master
            # that contradicts it is refused: spark_submit_master).
            master=args.master or (None if spark_submitted() else table.master),
            partitions=args.partitions or table.partitions,
            verbose=args.verbose,
            driver_level_limit=args.driver_level_limit,
            store_dir=args.spark_store,
        )
    return build(
        model,
        properties,
        options,
        engine=engine,
        per_state=args.per_state,
        progress=progress,
        **hooks,
        **spark,
    )


def _workers(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        n = 0
    if not 1 <= n <= 256:
        raise argparse.ArgumentTypeError(f"must be a whole number from 1 to 256, got {text!r}")
    return n


def options_from(spec: Spec | ModelSpec, args: argparse.Namespace) -> Options:
    max_depth = args.max_depth if args.max_depth is not None else spec.max_depth
    max_states = args.max_states if args.max_states is not None else spec.max_states
    keep_going = args.keep_going or spec.keep_going
    max_memory = args.max_memory or spec.max_memory or memory.default_ceiling()
    symmetry = args.symmetry or spec.symmetry
    store: str = args.store or spec.store
    if store != "memory" and (args.engine or spec.engine) == "spark":
        where = "--store disk" if args.store else f'{spec.path}: check.store = "disk"'
        raise UsageError(
            f"{where}: the spark engine keeps its states in its own files (--spark-store DIR); "
            "the disk store is the local engine's"
        )
    store_dir = args.store_dir
    if store_dir is not None and not store_dir.strip():
        raise UsageError("--store-dir: the path is empty; name a directory")
    from kmc.checker.base.memory import default_workers

    workers = args.workers or spec.workers or default_workers()
    return Options(
        max_depth=max_depth,
        keep_going=keep_going,
        max_states=max_states,
        max_memory=max_memory,
        symmetry=symmetry,
        verify_kernel=args.verify_kernel,
        store=store,
        store_dir=store_dir,
        workers=workers,
    )


SPARK_EXTRA_HINT = "pip install '.[spark]' in kmc's folder, or pip install pyspark"


def require_spark(spec: Spec | ModelSpec, args: argparse.Namespace) -> None:
    """Refuse ``--engine spark`` (or a spec's ``[check] engine = "spark"``) in one line
    when pyspark is not installed: it is the ``spark`` extra, not a dependency.

    Raises:
        EngineError: naming the extra.
    """
    import importlib.util

    if (args.engine or spec.engine) != "spark":
        return
    try:
        found = importlib.util.find_spec("pyspark") is not None
    except (ImportError, ValueError):
        found = False
    if not found:
        from kmc.checker.base.errors import EngineError

        raise EngineError(
            f"the spark engine needs pyspark, which is not installed (the 'spark' extra: {SPARK_EXTRA_HINT})"
        )


def add_force_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--force", action="store_true", help="replace an existing output file even if kmc did not write it"
    )


def spark_submitted() -> bool:
    """Whether kmc runs under spark-submit (``checker.spark.session.submitted``)."""
    from kmc.checker.spark.session import submitted

    return submitted()


def spark_submit_master(spec: Spec | ModelSpec, args: argparse.Namespace) -> str | None:
    """With the spark engine under spark-submit: the master spark-submit gave, once a
    ``--master`` that contradicts it is refused; else None.

    Raises:
        EngineError: ``--master`` names another master (one line naming both).
    """
    if (args.engine or spec.engine) != "spark" or not spark_submitted():
        return None
    from kmc.checker.spark.session import check_submit_master

    return check_submit_master(args.master)
