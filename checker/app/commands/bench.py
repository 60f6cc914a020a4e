"""``kmc bench SPEC``: measure exploration speed and memory per stored state."""

from __future__ import annotations

import json
import platform
import resource
import sys
import time

from kmc.checker.text import safe_text
from .common import add_engine_arguments, add_force_argument, add_spec_argument, check_output_path, load, make_engine, options_from, positive_int, require_spark


def register(sub):
    p = sub.add_parser(
        "bench",
        help="measure states/second and bytes per stored state on a spec",
        description="Run a spec's check without progress display and report distinct states, "
        "wall time, states/second, and (local engine) the bytes each stored state costs in the "
        "seen-set, plus the process's peak resident memory. With --repeat, the fastest run counts. "
        "Sizes are shown in binary units (KiB, MiB, GiB); --json keeps them in bytes.",
        epilog="Exit codes: 0 measured (a violation in the spec is not an error here), 1 with "
        "--compare: the two paths disagree on the counts (a bug), 2 bad input (a spec, an option, "
        "an unwritable --json), 130 interrupted (SIGINT), 143 stopped (SIGTERM).",
    )
    add_spec_argument(p)
    p.add_argument("--repeat", type=positive_int, default=1, metavar="N", help="runs to make (default 1)")
    p.add_argument("--max-depth", type=positive_int, metavar="N", help="do not explore past depth N")
    p.add_argument("--max-states", type=positive_int, metavar="N", help="stop once N distinct states are stored")
    p.add_argument("--json", metavar="PATH", help="also write the measurements as JSON")
    p.add_argument("--compare", action="store_true",
                   help="run the per-state path and the batch path on the spec, each in a process of its "
                   "own, one after the other, and print both and their ratio")
    add_force_argument(p)
    add_engine_arguments(p)
    p.set_defaults(run=run)


def seen_set_bytes(seen) -> int:
    """Bytes held by a local engine's seen-set: a ``SeenSet`` counts its own arrays; for a
    dict, the dict and its fingerprint ints (a parent pointer is the same int object as
    another entry's key, so it is not counted twice)."""
    nbytes = getattr(seen, "nbytes", None)
    if nbytes is not None:
        return nbytes()
    return sys.getsizeof(seen) + sum(sys.getsizeof(k) for k in seen)


def edge_log_measures(possibly) -> dict:
    """What the edge logs of the always-possibly properties hold (``checker.possibly``):
    the edges kept (those leaving non-goal states), their bytes, and the bytes per edge;
    ``{}`` when no such property was checked."""
    logs = [log for _, log in possibly or ()]
    if not logs:
        return {}
    edges = sum(log.edges for log in logs)
    nbytes = sum(log.nbytes() for log in logs)
    return {"edges_stored": edges, "edge_log_bytes": nbytes,
            "bytes_per_stored_edge": round(nbytes / edges, 1) if edges else None}


def spark_measures(metrics) -> dict:
    """What the Spark rows engine measured (``SparkRowsEngine.metrics``): the session's
    start time, the levels run on the driver and on Spark, the per-level overhead (the
    least wall time of a Spark level, which is at least its fixed cost), Spark's own
    states per second, and the bytes its two shuffles shipped per new state."""
    if not metrics:
        return {}
    levels = metrics["spark_levels"]
    doc = {"spark_session_start_seconds": metrics["session_start_seconds"],
           "driver_levels": metrics["driver_levels"], "spark_levels": len(levels)}
    if levels:
        states = sum(lv[0] for lv in levels)
        seconds = sum(lv[1] for lv in levels)
        doc["spark_level_overhead_seconds"] = min(lv[1] for lv in levels)
        doc["spark_level_seconds_median"] = sorted(lv[1] for lv in levels)[len(levels) // 2]
        doc["spark_states_per_second"] = round(states / seconds, 1) if seconds else None
        # The time the tasks spent in kmc's own code (expanding, merging, checking),
        # summed over tasks: the rest of a level's wall time is Spark's.
        doc["spark_task_seconds"] = round(sum(lv[3] for lv in levels), 3)
        doc["spark_level_seconds"] = round(seconds, 3)
        doc["shuffle_bytes"] = metrics["shuffle_bytes"]
        doc["shuffle_bytes_per_state"] = round(metrics["shuffle_bytes"] / max(states, 1), 1)
    return doc


def run(args, out, err) -> int:
    spec = load(args.spec)
    check_output_path("--json", args.json, protected=[spec.path], force=args.force)
    require_spark(spec, args)
    if args.compare:
        return _compare(args, spec, out)
    model = spec.model()
    props = spec.properties()
    runs = []
    engine = None
    for _ in range(args.repeat):
        engine = make_engine(spec, model, props, options_from(spec, args), None, args)
        t0 = time.perf_counter()
        result = engine.run()
        wall = time.perf_counter() - t0
        runs.append((wall, result))
    wall, result = min(runs, key=lambda r: r[0])
    st = result.stats
    doc = {
        "schema_version": 1,
        "spec": spec.path,
        "engine": result.engine,
        "python": platform.python_version(),
        "runs": args.repeat,
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
    doc.update(edge_log_measures(getattr(engine, "possibly", None)))
    doc.update(spark_measures(engine.metrics if result.engine == "spark" else None))
    doc["path"] = engine.path if result.engine == "local" else result.engine
    doc["symmetry"] = bool(getattr(args, "symmetry", False) or spec.symmetry)
    _print(out, f"kmc bench {safe_text(spec.path)} ({result.engine}, {doc['path']}, best of {args.repeat})", [doc])
    if args.json:
        _write_json(args.json, doc)
    return 0


def _write_json(path, doc):
    from kmc.checker.errors import UsageError
    from kmc.reports import write_json

    try:
        write_json(path, doc)
    except OSError as e:
        raise UsageError(f"--json: cannot write {path} ({e.strerror or e})") from None


_SHOWN = ("distinct_states", "states_generated", "depth", "wall_seconds", "states_per_second",
          "generated_per_second", "bytes_per_stored_state", "peak_rss_bytes", "peak_rss_bytes_per_state")


def _print(out, title, docs, ratio=None):
    from rich.table import Table
    from rich.text import Text

    out.print(Text(title), soft_wrap=True)  # a line of its own: a table's title wraps at its width
    table = Table(box=None)
    table.add_column("measure")
    for d in docs:
        table.add_column(d.get("path", ""), justify="right")
    if ratio is not None:
        table.add_column("batch / per-state", justify="right")
    keys = [k for k in docs[0] if k not in ("schema_version", "spec", "engine", "path")]
    for key in keys:
        cells = [_cell(key, d.get(key)) for d in docs]
        if ratio is not None:
            cells.append(f"{ratio[key]:.2f}x" if key in ratio else "")
        label = key.replace("_", " ")
        if key in ("peak_rss_bytes", "seen_set_bytes", "shuffle_bytes", "edge_log_bytes"):
            label = label[:-len(" bytes")]  # "peak rss 56.1 MiB"
        table.add_row(label, *cells)
    out.print(table)


def human_bytes(n) -> str:
    """``58,814,464`` bytes as ``56.1 MiB`` (binary units, three significant digits)."""
    value, unit = float(n), "bytes"
    for next_unit in ("KiB", "MiB", "GiB", "TiB"):
        if value < 1024:
            break
        value, unit = value / 1024, next_unit
    return f"{int(value)} bytes" if unit == "bytes" else f"{value:.3g} {unit}" if value < 1000 else f"{value:.0f} {unit}"


def _cell(key, value) -> str:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return "" if value is None else str(value)
    if key in ("peak_rss_bytes", "seen_set_bytes", "shuffle_bytes", "edge_log_bytes"):  # sizes: human units
        return human_bytes(value)
    return f"{value:,}"


def _compare(args, spec, out) -> int:
    """Both local paths on one spec, each in a fresh process so that each has its own
    peak resident memory, and the ratio of their figures."""
    import os
    import subprocess
    import tempfile

    from .. import cli

    docs = []
    with tempfile.TemporaryDirectory() as tmp:
        for path in ("per-state", "batch"):
            target = os.path.join(tmp, f"{path}.json")
            cmd = [sys.executable, "-m", cli.__name__, "bench", args.spec, "--json", target,
                   "--repeat", str(args.repeat)]
            cmd += ["--per-state"] if path == "per-state" else []
            cmd += ["--symmetry"] if getattr(args, "symmetry", False) else []
            for opt in ("max_depth", "max_states"):
                if getattr(args, opt, None) is not None:
                    cmd += [f"--{opt.replace('_', '-')}", str(getattr(args, opt))]
            done = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            if done.returncode != 0:
                from kmc.checker.errors import EngineError

                raise EngineError(f"bench --compare: the {path} run failed: {done.stderr.strip()[-300:]}")
            with open(target, encoding="utf-8") as f:
                docs.append(json.load(f))
    ratio = {}
    for key in ("states_per_second", "generated_per_second"):
        if docs[0].get(key) and docs[1].get(key):
            ratio[key] = docs[1][key] / docs[0][key]
    for key in ("wall_seconds", "bytes_per_stored_state", "peak_rss_bytes", "peak_rss_bytes_per_state"):
        if docs[0].get(key) and docs[1].get(key):
            ratio[key] = docs[1][key] / docs[0][key]
    same = all(docs[0][k] == docs[1][k] for k in ("distinct_states", "states_generated", "depth"))
    _print(out, f"kmc bench --compare {safe_text(spec.path)}", docs, ratio)
    out.print("Both paths explored the same state space." if same else
              "[bold red]The two paths disagree on the counts: this is a bug.[/]")
    if args.json:
        _write_json(args.json, {"schema_version": 1, "spec": spec.path, "runs": docs, "ratio": ratio})
    return 0 if same else 1
