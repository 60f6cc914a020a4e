"""``kmc simulate SPEC``: seeded random walks that check the spec's invariants at every step.

The defaults (20,000 walks of at most 30 steps, seed 0) are chosen to find the
high-watermark data loss of specs/hw-data-loss.toml: its shortest counterexample has 9
steps, but uniform walks spend most of their steps in fetch request/response cycles, and
1,000 walks of 50 steps find it for only about a third of the seeds; 20,000 walks of 30
steps found it for every one of 40 seeds tried, in about 2 s each.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from kmc.checker.base.exitcodes import EXIT_BAD_INPUT, EXIT_OK, EXIT_VIOLATION
from kmc.checker.base.text import safe_text

from ..outputs import add_diagram_arguments, check_diagram_paths, check_output_path, command_line, write_diagrams
from .common import (
    add_force_argument,
    add_kafka_arguments,
    add_spec_argument,
    kafka_override,
    load,
    positive_int,
    select_properties,
)

if TYPE_CHECKING:  # for the annotations only
    from kmc.checker.contract.protocol import Model, Property
    from kmc.checker.local.simulate import SimulationResult as Simulation
    from kmc.checker.local.simulate import SimulationStats
    from kmc.model.kafka import KafkaModel
    from kmc.model.spec import Spec
    from rich.console import Console

DEFAULT_RUNS = 20_000
DEFAULT_DEPTH = 30
DEFAULT_SEED = 0
MAX_DEPTH = 100_000  # a walk is kept whole in memory; the spec's check.max_depth has the same bound


def _depth(text: str) -> int:
    value = positive_int(text)
    if value > MAX_DEPTH:
        raise argparse.ArgumentTypeError(f"must be at most {MAX_DEPTH:,}, got {value}")
    return value


def _seed(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None


def register(p: argparse.ArgumentParser) -> None:
    p.description = (
        "Walk from the initial state choosing uniformly among the enabled actions, "
        "up to --depth steps or a state with no enabled action, --runs times, checking the "
        "spec's invariants at every state and step. Stops at the first violation and prints it "
        "(it is not necessarily a shortest one). Reproducible: the same seed gives the same walks. "
        "A walk proves nothing; 'kmc check' does."
    )
    p.epilog = (
        "Exit codes: 0 no walk violated a property, 1 a violation (printed), 2 bad input "
        "(or --json could not be written), 130 interrupted (SIGINT), 143 stopped (SIGTERM)."
    )
    add_spec_argument(p)
    add_kafka_arguments(p)
    p.add_argument(
        "--runs",
        type=positive_int,
        default=DEFAULT_RUNS,
        metavar="N",
        help=f"walks to make at most (default {DEFAULT_RUNS:,})",
    )
    p.add_argument(
        "--depth",
        type=_depth,
        default=DEFAULT_DEPTH,
        metavar="D",
        help=f"steps (actions) a walk takes at most, 1 to {MAX_DEPTH:,} (default {DEFAULT_DEPTH})",
    )
    p.add_argument(
        "--seed", type=_seed, default=DEFAULT_SEED, metavar="S", help=f"the random seed (default {DEFAULT_SEED})"
    )
    p.add_argument(
        "--invariant",
        action="append",
        metavar="NAME",
        dest="invariants",
        help="check only this invariant (repeatable; default: the spec's list)",
    )
    p.add_argument("--diff", action="store_true", help="show only what changes at each step of the walk")
    p.add_argument("--no-trace", action="store_true", help="do not print the violating walk (its summary line only)")
    p.add_argument(
        "--no-progress",
        action="store_true",
        help="no progress line (shown on standard error only when it is a terminal)",
    )
    p.add_argument("--json", metavar="PATH", help="also write the outcome as JSON (kmc replay reads it)")
    add_diagram_arguments(p)
    add_force_argument(p)
    p.set_defaults(run=run)


def result_to_dict(spec: Spec, model: KafkaModel, sim: Simulation) -> dict[str, Any]:
    """The outcome of a simulation as a JSON-ready dict (schema version 1)::

    {"schema_version": 1, "kind": "kmc-simulation", "spec": {...},
     "seed", "runs", "depth", "checked": [...],
     "stats": {"runs", "steps", "distinct_states", "terminal_runs", "longest_walk",
               "seconds", "actions": {name: fired}},
     "violation": null | {"property", "kind", "explanation", "run", "trace"}}
    """
    from kmc.app.render.json_result import spec_to_dict, trace_to_dict

    st = sim.stats
    v = sim.violation
    return {
        "schema_version": 1,
        "kind": "kmc-simulation",
        "spec": spec_to_dict(spec, model),
        "seed": sim.seed,
        "runs": sim.max_runs,
        "depth": sim.max_steps,
        "checked": list(sim.checked),
        "stats": {
            "runs": st.runs,
            "steps": st.steps,
            "distinct_states": st.distinct,
            "terminal_runs": st.terminal,
            "longest_walk": st.longest,
            "seconds": round(st.seconds, 6),
            "actions": dict(st.fired),
        },
        "violation": None
        if v is None
        else {
            "property": v.property,
            "kind": v.kind,
            "explanation": v.explanation,
            "run": sim.violation_run,
            "trace": trace_to_dict(model, v.path),
        },
    }


def _walk(args: argparse.Namespace, err: Console, model: Model, properties: list[Property]) -> Simulation:
    """The random walks, with a status line on a terminal."""
    from kmc.checker.local.simulate import simulate

    if args.no_progress or not err.is_terminal:
        return simulate(model, properties, runs=args.runs, depth=args.depth, seed=args.seed)
    else:
        with err.status(f"walk 0 of {args.runs:,}") as status:

            def progress(st: SimulationStats) -> None:
                status.update(
                    f"walk {st.runs:,} of {args.runs:,}  ·  {st.steps:,} steps  ·  {st.distinct:,} distinct states"
                )

            return simulate(
                model,
                properties,
                runs=args.runs,
                depth=args.depth,
                seed=args.seed,
                progress=progress,
                progress_every=500,
            )


def _say_outcome(args: argparse.Namespace, out: Console, spec: Spec, model: KafkaModel, sim: Simulation) -> None:
    """The violation found (its walk, unless ``--no-trace``), or that none was: a simulation
    proves nothing."""
    from kmc.app.render import TraceView

    st = sim.stats
    if sim.violation is not None:
        if not args.no_trace:
            out.print(TraceView(model, sim.violation, diff=args.diff))
        out.print(
            f"{sim.violation.property} violated in walk {sim.violation_run:,} of at most "
            f"{sim.max_runs:,} (seed {sim.seed}), after {len(sim.violation.path) - 1} steps; "
            f"{st.steps:,} steps in all, {st.distinct:,} distinct states visited, "
            f"{st.seconds:.2f} s. The walk is not necessarily a shortest counterexample: "
            f"'kmc check {safe_text(spec.path)}' finds one.",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )
    else:
        out.print(
            f"No violation of {', '.join(sim.checked)} in {st.runs:,} walks of at most "
            f"{sim.max_steps:,} steps (seed {sim.seed}): {st.steps:,} steps, "
            f"{st.distinct:,} distinct states visited, {st.terminal:,} walks reached a "
            f"state with no enabled action, {st.seconds:.2f} s. A simulation proves "
            "nothing: 'kmc check' explores every state.",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )


def run(args: argparse.Namespace, out: Console, err: Console) -> int:
    from kmc.app.render import write_json

    spec = load(args.spec, kafka_override(args))
    check_output_path("--json", args.json, protected=[spec.path], force=args.force)
    check_diagram_paths(args, [spec.path])
    model = spec.model()
    properties = select_properties(spec, args.invariants)
    from kmc.app.render.result_view import spec_header
    from rich.console import Group

    out.print(Group(*spec_header(spec, model.config, "simulate")))
    out.print()
    graph_only = [p.name for p in properties if p.kind == "possibly"]
    if graph_only:
        err.print(
            f"kmc: note: {', '.join(graph_only)} {'is' if len(graph_only) == 1 else 'are'} not checked: an "
            "always-possibly property is about the whole state graph, which a random walk does not build "
            "('kmc check' checks it)",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )
    sim = _walk(args, err, model, properties)
    _say_outcome(args, out, spec, model, sim)
    code = EXIT_VIOLATION if sim.violation is not None else EXIT_OK
    if args.html or args.mermaid:
        from kmc.app.render.pictures import simulation_outputs

        command = command_line(
            args,
            ["simulate", spec.path, "--runs", str(args.runs), "--depth", str(args.depth), "--seed", str(args.seed)],
        )
        page, text = simulation_outputs(spec, model, sim, command)
        if not write_diagrams(args, err, lambda: page, lambda: text):
            code = code or EXIT_BAD_INPUT
    if args.json:
        try:
            from ..outputs import exclusive

            write_json(args.json, result_to_dict(spec, model, sim), exclusive=exclusive(args.json))
            err.print(f"kmc: wrote results to {safe_text(args.json)}", markup=False, highlight=False, soft_wrap=True)
        except OSError as e:  # the outcome stands; the lost file is one more line
            err.print(
                f"kmc: error: --json: cannot write {args.json} ({e.strerror or e})",
                markup=False,
                highlight=False,
                soft_wrap=True,
            )
            return EXIT_BAD_INPUT
    return code
