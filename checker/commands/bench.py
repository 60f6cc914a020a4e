"""``kmc bench SPEC``: measure exploration speed and memory per stored state."""

from __future__ import annotations

import json
import platform
import resource
import sys
import time

from .common import add_engine_arguments, add_force_argument, add_spec_argument, check_output_path, load, make_engine, options_from, positive_int


def register(sub):
    p = sub.add_parser(
        "bench",
        help="measure states/second and bytes per stored state on a spec",
        description="Run a spec's check without progress display and report distinct states, "
        "wall time, states/second, and (local engine) the bytes each stored state costs in the "
        "seen-set, plus the process's peak resident memory. With --repeat, the fastest run counts.",
    )
    add_spec_argument(p)
    p.add_argument("--repeat", type=positive_int, default=1, metavar="N", help="runs to make (default 1)")
    p.add_argument("--max-depth", type=positive_int, metavar="N", help="do not explore past depth N")
    p.add_argument("--max-states", type=positive_int, metavar="N", help="stop once N distinct states are stored")
    p.add_argument("--json", metavar="PATH", help="also write the measurements as JSON")
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


def run(args, out, err) -> int:
    from rich.table import Table

    spec = load(args.spec)
    check_output_path("--json", args.json, protected=[spec.path], force=args.force)
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
    seen = getattr(engine, "seen", None)
    if seen is not None and len(seen):
        doc["seen_set_bytes"] = seen_set_bytes(seen)
        doc["bytes_per_stored_state"] = round(doc["seen_set_bytes"] / len(seen), 1)
    doc["peak_rss_bytes_per_state"] = round(doc["peak_rss_bytes"] / max(st.distinct, 1), 1)
    from rich.text import Text

    from ..text import safe_text

    table = Table(title=Text(f"kmc bench {safe_text(spec.path)} ({result.engine}, best of {args.repeat})"), box=None)
    table.add_column("measure")
    table.add_column("value", justify="right")
    for key, value in doc.items():
        if key not in ("schema_version", "spec", "engine"):
            table.add_row(key.replace("_", " "), f"{value:,}" if isinstance(value, (int, float)) else str(value))
    out.print(table)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(doc, f, indent=2)
    return 0
