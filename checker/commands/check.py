"""``kmc check SPEC``: explore every behaviour of a spec and check its invariants."""

from __future__ import annotations

from .. import cli
from .common import (
    add_engine_arguments,
    add_spec_argument,
    load,
    make_engine,
    options_from,
    positive_int,
    select_properties,
)


def register(sub):
    p = sub.add_parser(
        "check",
        help="explore every behaviour of a spec and check its invariants",
        description="Explore every reachable state of the spec's configuration breadth-first and "
        "check its invariants. Prints either 'all invariants hold over N distinct states' or a "
        "shortest counterexample, step by step, and says whether the result matches the spec's "
        "[expect] table.",
    )
    add_spec_argument(p)
    p.add_argument("--invariant", action="append", metavar="NAME", dest="invariants",
                   help="check only this invariant (repeatable; default: the spec's list, else all; see 'kmc invariants')")
    p.add_argument("--max-depth", type=positive_int, metavar="N", help="do not explore past depth N (the initial state has depth 1)")
    p.add_argument("--max-states", type=positive_int, metavar="N", help="stop cleanly once N distinct states are stored")
    p.add_argument("--keep-going", action="store_true",
                   help="after a violation, keep exploring to decide every other invariant")
    p.add_argument("--json", metavar="PATH", help="also write the result as JSON (schema in docs/json-schema.md)")
    p.add_argument("--diff", action="store_true", help="show only what changes at each step of a counterexample")
    p.add_argument("--no-trace", action="store_true", help="do not print counterexample traces")
    p.add_argument("--no-progress", action="store_true", help="no live progress display")
    p.add_argument("--check-expect", action="store_true",
                   help="exit 0 when the result matches the spec's [expect] table and 3 when it does not")
    add_engine_arguments(p)
    p.set_defaults(run=run)


def run(args, out, err) -> int:
    from reports import ProgressDisplay, ResultView, expectation, result_to_dict, write_json

    spec = load(args.spec)
    model = spec.model()
    properties = select_properties(spec, args.invariants)
    options = options_from(spec, args)
    show_progress = not args.no_progress and err.is_terminal
    with ProgressDisplay(err, enabled=show_progress, title=spec.name) as progress:
        engine = make_engine(spec, model, properties, options, progress.update, args)
        result = engine.run()
    out.print(ResultView(spec, model, result, diff=args.diff, show_traces=not args.no_trace))
    if args.json:
        write_json(args.json, result_to_dict(spec, model, result))
    if args.check_expect:
        return cli.EXIT_OK if expectation(spec, result)["matched"] else cli.EXIT_UNEXPECTED
    if result.stopped == "interrupted":
        return cli.EXIT_INTERRUPTED
    return cli.EXIT_VIOLATION if result.violations else cli.EXIT_OK
