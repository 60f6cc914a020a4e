"""``kmc bench SPEC``: measure exploration speed and memory per stored state."""

from __future__ import annotations

import argparse
import json
import platform
import resource
import sys
import time
from typing import TYPE_CHECKING, Any, cast

import attrs
from kmc.checker.base.errors import KmcError
from kmc.checker.base.text import safe_text
from kmc.checker.core.parts import FrontierQueue, Store

from ..outputs import check_output_path
from .bench_measures import edge_log_measures, liveness_log_measures, seen_set_bytes, spark_measures
from .common import (
    add_engine_arguments,
    add_force_argument,
    add_kafka_arguments,
    add_model_arguments,
    add_spec_argument,
    load_target,
    make_engine,
    options_from,
    positive_int,
    require_spark,
    spark_submit_master,
)

if TYPE_CHECKING:  # for the annotations only
    from collections.abc import Sequence

    from kmc.checker.core.driver import Engine
    from kmc.checker.core.result import CheckResult
    from kmc.model.spec import Spec
    from rich.console import Console

    from ..user_model import ModelSpec


def register(p: argparse.ArgumentParser) -> None:
    p.description = (
        "Run a spec's check without progress display and report distinct states, "
        "wall time, states/second, and (local engine) the bytes each stored state costs in the "
        "seen-set, plus the process's peak resident memory, and the CPU seconds and peak resident "
        "memory of the whole process tree (kmc, and for the Spark engine its JVM and Python workers; "
        "sampled from /proc every 0.2 s). With --repeat, the fastest run counts. "
        "Sizes are shown in binary units (KiB, MiB, GiB); --json keeps them in bytes."
    )
    p.epilog = (
        "Exit codes: 0 measured (a violation in the spec is not an error here), 1 with "
        "--compare, --compare-engines or --compare-stores: the two runs disagree on the counts or verdicts (a bug), "
        "2 bad input (a spec, an option, "
        "an unwritable --json), 130 interrupted (SIGINT), 143 stopped (SIGTERM)."
    )
    add_spec_argument(p, optional=True)
    add_model_arguments(p)
    add_kafka_arguments(p)
    p.add_argument("--repeat", type=positive_int, default=1, metavar="N", help="runs to make (default 1)")
    p.add_argument("--max-depth", type=positive_int, metavar="N", help="do not explore past depth N")
    p.add_argument("--max-states", type=positive_int, metavar="N", help="stop once N distinct states are stored")
    p.add_argument("--json", metavar="PATH", help="also write the measurements as JSON")
    p.add_argument(
        "--compare",
        action="store_true",
        help="run the per-state path and the batch path on the spec, each in a process of its "
        "own, one after the other, and print both and their ratio",
    )
    p.add_argument(
        "--compare-engines",
        action="store_true",
        help="run the local engine and the Spark engine (with --master, --partitions, ...) on "
        "the spec, each in a process of its own, one after the other, and print both, their "
        "ratios, and whether they explored the same state space",
    )
    p.add_argument(
        "--compare-stores",
        action="store_true",
        help="run the local engine with --store memory and with --store disk on the spec, each in a "
        "process of its own, one after the other, and print both, their ratios, and whether they "
        "explored the same state space",
    )
    p.add_argument(
        "--no-coverage", action="store_true", help="do not count the coverage (to measure what counting it costs)"
    )
    add_force_argument(p)
    add_engine_arguments(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace, out: Console, err: Console) -> int:
    try:
        return _run(args, out, err)
    except (KmcError, MemoryError):
        raise
    except Exception as e:
        if args.model is None:
            raise
        from ..user_model import failure  # a model of the user's own raised: one line, exit 2

        raise failure(args.model, e) from None


def _run(args: argparse.Namespace, out: Console, err: Console) -> int:
    spec = load_target(args)
    check_output_path("--json", args.json, protected=[spec.path], force=args.force)
    require_spark(spec, args)
    spark_submit_master(spec, args)  # a --master that contradicts spark-submit's: refused first
    if sum(map(bool, (args.compare, args.compare_engines, args.compare_stores))) > 1:
        from kmc.checker.base.errors import UsageError

        raise UsageError("--compare, --compare-engines and --compare-stores: choose one")
    if args.compare_stores:
        return _compare_stores(args, spec, out)
    if args.compare:
        return _compare(args, spec, out)
    if args.compare_engines:
        return _compare_engines(args, spec, out)
    from kmc.checker.base.tree_usage import TreeUsage

    model = spec.model()
    props = spec.properties()
    runs: list[tuple[float, CheckResult, dict[str, Any]]] = []
    engine = None
    for _ in range(args.repeat):
        options = attrs.evolve(options_from(spec, args), coverage=not args.no_coverage)
        engine = make_engine(spec, model, props, options, None, args)
        tree = TreeUsage().start()
        t0 = time.perf_counter()
        try:
            result = engine.run()
        finally:
            wall = time.perf_counter() - t0
            usage = tree.stop()
        runs.append((wall, result, usage))
    assert engine is not None  # --repeat is a positive integer: the loop ran
    wall, result, usage = min(runs, key=lambda r: r[0])
    st = result.stats
    doc: dict[str, Any] = {
        "schema_version": 1,
        "kind": "kmc-bench",
        "spec": spec.path,
        "engine": result.engine,
        "python": platform.python_version(),
        "runs": args.repeat,
        "coverage": not args.no_coverage,
        "distinct_states": st.distinct,
        "states_generated": st.generated,
        "depth": st.depth,
        "wall_seconds": round(wall, 3),
        "states_per_second": round(st.distinct / wall, 1) if wall else None,
        "generated_per_second": round(st.generated / wall, 1) if wall else None,
        "peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
    }
    seen = engine.seen if result.engine == "local" else None  # Spark's seen-set is in its store
    if seen is not None and len(seen):
        doc["seen_set_bytes"] = seen_set_bytes(seen)
        doc["bytes_per_stored_state"] = round(doc["seen_set_bytes"] / len(seen), 1)
    doc["peak_rss_bytes_per_state"] = round(doc["peak_rss_bytes"] / max(st.distinct, 1), 1)
    doc["store"] = options.store if result.engine == "local" else "spark"
    if result.engine == "local":  # processes expanding the frontier beside the search's (checker.local.workers)
        doc["workers"] = options.workers
    if result.engine == "local" and options.store == "disk":  # the disk store's files (checker.stores.disk)
        doc.update(_disk_measures(engine, st.distinct))
    doc.update(edge_log_measures(engine.possibly))
    doc.update(liveness_log_measures(engine.liveness))
    doc.update(_tree_measures(usage, result.engine, st.distinct))
    doc["verdicts"] = {name: result.verdict(name) for name in result.checked}
    doc.update(spark_measures(cast(Any, engine).metrics if result.engine == "spark" else None))
    doc["path"] = engine.path if result.engine == "local" else result.engine
    doc["symmetry"] = bool(args.symmetry or spec.symmetry)
    _print(out, f"kmc bench {safe_text(spec.path)} ({result.engine}, {doc['path']}, best of {args.repeat})", [doc])
    if engine.not_started:
        out.print(engine.not_started, markup=False, soft_wrap=True)
    out.print(f"tree: the kmc process and all its descendants ({usage['method']}).", markup=False, soft_wrap=True)
    if args.json:
        _write_json(args.json, doc)
    return 0


def _disk_measures(engine: Engine, distinct: int) -> dict[str, Any]:
    """The disk store's files (``checker.stores.disk``) and its frontier's
    (``checker.stores.frontier``): peak, final and written bytes, also per state."""
    store = cast(Store, engine.search.seen)
    queue = cast(FrontierQueue, cast(Any, engine.search).queue)
    per = max(distinct, 1)
    return {
        "disk_peak_bytes": store.peak_disk_bytes(),
        "disk_peak_bytes_per_state": round(store.peak_disk_bytes() / per, 1),
        "disk_final_bytes": store.disk_bytes(),
        "disk_written_bytes": store.written_bytes(),
        "disk_written_bytes_per_state": round(store.written_bytes() / per, 1),
        "queue_disk_peak_bytes": queue.peak_disk_bytes(),
        "queue_disk_peak_bytes_per_state": round(queue.peak_disk_bytes() / per, 1),
        "queue_written_bytes": queue.written_bytes(),
        "queue_written_bytes_per_state": round(queue.written_bytes() / per, 1),
    }


def _tree_measures(usage: dict[str, Any], engine: str, distinct: int) -> dict[str, Any]:
    """The CPU and memory of the whole process tree (``checker.base.tree_usage``); for a
    Spark run, where its CPU went: the kmc process, the JVM, the Python workers."""
    doc: dict[str, Any] = {"tree_cpu_seconds": usage["cpu_seconds"]}
    if engine == "spark":
        for kind in ("kmc", "jvm", "python"):
            doc[f"tree_cpu_seconds_{kind}"] = usage["cpu_seconds_by_kind"][kind]
    doc["tree_peak_rss_bytes"] = usage["peak_rss_bytes"]
    doc["tree_processes"] = usage["processes"]
    doc["states_per_cpu_second"] = round(distinct / usage["cpu_seconds"], 1) if usage["cpu_seconds"] else None
    doc["tree_method"] = usage["method"]
    return doc


def _write_json(path: str, doc: dict[str, Any]) -> None:
    from kmc.app.render import write_json
    from kmc.checker.base.errors import UsageError

    from ..outputs import exclusive

    try:
        write_json(path, doc, exclusive=exclusive(path))
    except OSError as e:
        raise UsageError(f"--json: cannot write {path} ({e.strerror or e})") from None
    import sys

    print(f"kmc: wrote results to {safe_text(str(path))}", file=sys.stderr)


_SIZES = (
    "peak_rss_bytes",
    "liveness_memory_bytes",
    "seen_set_bytes",
    "shuffle_bytes",
    "tree_peak_rss_bytes",
    "edge_log_bytes",
    "store_peak_bytes",
    "disk_peak_bytes",
    "disk_final_bytes",
    "disk_written_bytes",
    "queue_disk_peak_bytes",
    "queue_written_bytes",
)
_SHOWN = (
    "distinct_states",
    "states_generated",
    "depth",
    "wall_seconds",
    "states_per_second",
    "generated_per_second",
    "bytes_per_stored_state",
    "peak_rss_bytes",
    "peak_rss_bytes_per_state",
)


def _print(
    out: Console,
    title: str,
    docs: Sequence[dict[str, Any]],
    ratio: dict[str, float] | None = None,
    ratio_title: str = "batch / per-state",
) -> None:
    from rich.table import Table
    from rich.text import Text

    out.print(Text(title), soft_wrap=True)  # a line of its own: a table's title wraps at its width
    table = Table(box=None)
    table.add_column("measure")
    for d in docs:
        table.add_column(d.get("path", ""), justify="right")
    if ratio is not None:
        table.add_column(ratio_title, justify="right")
    hidden = ("schema_version", "kind", "spec", "engine", "path", "verdicts", "tree_method")
    keys = [k for k in docs[0] if k not in hidden]
    keys += [k for d in docs[1:] for k in d if k not in keys and k not in hidden]
    for key in keys:
        cells = [_cell(key, d.get(key)) for d in docs]
        if ratio is not None:
            cells.append(f"{ratio[key]:.2f}x" if key in ratio else "")
        label = key.replace("_", " ")
        if key in _SIZES:
            label = label[: -len(" bytes")]  # "peak rss 56.1 MiB"
        table.add_row(label, *cells)
    out.print(table)


def human_bytes(n: float) -> str:
    """``58,814,464`` bytes as ``56.1 MiB`` (binary units, three significant digits)."""
    value, unit = float(n), "bytes"
    for next_unit in ("KiB", "MiB", "GiB", "TiB"):
        if value < 1024:
            break
        value, unit = value / 1024, next_unit
    return (
        f"{int(value)} bytes" if unit == "bytes" else f"{value:.3g} {unit}" if value < 1000 else f"{value:.0f} {unit}"
    )


def _cell(key: str, value: object) -> str:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return "" if value is None else str(value)
    if key in _SIZES:  # sizes: human units
        return human_bytes(value)
    if key.startswith("tree_cpu_seconds"):
        return f"{value:,.1f} s"
    return f"{value:,}"


def _child_bench(args: argparse.Namespace, label: str, extra: list[str]) -> dict[str, Any]:
    """``kmc bench SPEC --json`` in a process of its own (so that its peak memory and its
    process tree are its own), with this run's limits and ``extra`` options."""
    import os
    import subprocess
    import tempfile

    cli = __package__.rpartition(".")[0] + ".cli"  # kmc.app.cli, run as a module in each child

    with tempfile.TemporaryDirectory() as tmp:
        target = os.path.join(tmp, "bench.json")
        what = [args.spec] if args.model is None else ["--model", args.model, *(f"--param={p}" for p in args.param)]
        cmd = [sys.executable, "-m", cli, "bench", *what, "--json", target, "--repeat", str(args.repeat)]
        cmd += ["--symmetry"] if args.symmetry else []
        given = vars(args)
        for opt in ("kafka", "metadata"):  # the spec read as a Kafka release, in every child alike
            if given[opt] is not None:
                cmd += [f"--{opt}", given[opt]]
        local = ("store", "store_dir") if "spark" not in extra else ()
        for opt in ("max_depth", "max_states", *local):
            if given[opt] is not None and not (opt == "store" and "--store" in extra):
                cmd += [f"--{opt.replace('_', '-')}", str(given[opt])]
        done = subprocess.run(cmd + extra, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        if done.returncode != 0:
            from kmc.checker.base.errors import EngineError

            raise EngineError(f"bench: the {label} run failed: {done.stderr.strip()[-300:]}")
        with open(target, encoding="utf-8") as f:
            doc: dict[str, Any] = json.load(f)
        return doc


def _compare(args: argparse.Namespace, spec: Spec | ModelSpec, out: Console) -> int:
    """Both local paths on one spec, each in a fresh process so that each has its own
    peak resident memory, and the ratio of their figures."""
    docs = [_child_bench(args, path, ["--per-state"] if path == "per-state" else []) for path in ("per-state", "batch")]
    ratio: dict[str, float] = {}
    for key in ("states_per_second", "generated_per_second"):
        if docs[0].get(key) and docs[1].get(key):
            ratio[key] = docs[1][key] / docs[0][key]
    for key in ("wall_seconds", "bytes_per_stored_state", "peak_rss_bytes", "peak_rss_bytes_per_state"):
        if docs[0].get(key) and docs[1].get(key):
            ratio[key] = docs[1][key] / docs[0][key]
    same = all(docs[0][k] == docs[1][k] for k in ("distinct_states", "states_generated", "depth"))
    _print(out, f"kmc bench --compare {safe_text(spec.path)}", docs, ratio)
    out.print(
        "Both paths explored the same state space."
        if same
        else "[bold red]The two paths disagree on the counts: this is a bug.[/]"
    )
    if args.json:
        _write_json(
            args.json, {"schema_version": 1, "kind": "kmc-bench", "spec": spec.path, "runs": docs, "ratio": ratio}
        )
    return 0 if same else 1


def _compare_stores(args: argparse.Namespace, spec: Spec | ModelSpec, out: Console) -> int:
    """The local engine with each store on one spec, one after the other, each in a process
    of its own; their figures, the ratios disk / memory, and whether they explored the same
    state space (counts, depth, verdicts)."""
    docs = [_child_bench(args, store, ["--engine", "local", "--store", store]) for store in ("memory", "disk")]
    ratio = {k: docs[1][k] / docs[0][k] for k in _ENGINE_RATIOS if docs[0].get(k) and docs[1].get(k)}
    keys = ("distinct_states", "states_generated", "depth", "verdicts")
    same = all(docs[0].get(k) == docs[1].get(k) for k in keys)
    for doc in docs:
        doc["path"] = doc["store"]  # the table's column
    _print(out, f"kmc bench --compare-stores {safe_text(spec.path)}", docs, ratio, "disk / memory")
    out.print(
        "Both stores explored the same state space (counts, depth, verdicts)."
        if same
        else "[bold red]The two stores disagree on the counts or verdicts: this is a bug.[/]"
    )
    if args.json:
        _write_json(
            args.json,
            {"schema_version": 1, "kind": "kmc-bench", "spec": spec.path, "runs": docs, "ratio": ratio, "same": same},
        )
    return 0 if same else 1


_ENGINE_RATIOS = (
    "wall_seconds",
    "tree_cpu_seconds",
    "tree_peak_rss_bytes",
    "states_per_cpu_second",
    "states_per_second",
    "peak_rss_bytes",
)


def _compare_engines(args: argparse.Namespace, spec: Spec | ModelSpec, out: Console) -> int:
    """The local engine (batch path) and the Spark engine on one spec, one after the other,
    each in a process of its own; their figures, the ratios Spark / local, and whether
    they explored the same state space (counts, depth, verdicts)."""
    spark = ["--engine", "spark"]
    given = vars(args)
    for opt in ("master", "partitions", "driver_level_limit", "spark_store"):
        if given[opt] is not None:
            spark += [f"--{opt.replace('_', '-')}", str(given[opt])]
    spark += ["--per-state"] if args.per_state else []
    docs = [_child_bench(args, "local", ["--engine", "local"]), _child_bench(args, "spark", spark)]
    ratio = {k: docs[1][k] / docs[0][k] for k in _ENGINE_RATIOS if docs[0].get(k) and docs[1].get(k)}
    keys = ("distinct_states", "states_generated", "depth", "verdicts")
    same = all(docs[0].get(k) == docs[1].get(k) for k in keys)
    _print(out, f"kmc bench --compare-engines {safe_text(spec.path)}", docs, ratio, "spark / local")
    out.print(
        f"CPU and peak RSS of each run's whole process tree ({docs[1].get('tree_method', '')}).",
        markup=False,
        soft_wrap=True,
    )
    out.print(
        "Both engines explored the same state space (counts, depth, verdicts)."
        if same
        else "[bold red]The two engines disagree on the counts or verdicts: this is a bug.[/]"
    )
    if args.json:
        _write_json(
            args.json,
            {"schema_version": 1, "kind": "kmc-bench", "spec": spec.path, "runs": docs, "ratio": ratio, "same": same},
        )
    return 0 if same else 1
