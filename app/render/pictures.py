"""The counterexample pictures of a run, ready to write: the HTML page, the Mermaid text
and the SVG of a check's result, a simulation's walk or a replayed trace (what
``kmc check --html/--mermaid``, ``kmc simulate --html/--mermaid`` and
``kmc replay --format html|mermaid|svg`` write).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kmc.checker.base.text import safe_text

from . import html, mermaid, svg
from .coverage import coverage_to_dict
from .diagram import build
from .headers import config_lines, counts_from_document, counts_from_stats

if TYPE_CHECKING:  # for the annotations only: imported on first use
    from kmc.checker.core.result import CheckResult, Violation
    from kmc.checker.local.simulate import SimulationResult
    from kmc.model.kafka import KafkaModel
    from kmc.model.spec import Spec

FORMATS = ("html", "mermaid", "svg")


def _ordered(result: CheckResult) -> list[Violation]:
    """A check's violations, shortest counterexample first (as the terminal lists them)."""
    return sorted(result.violations.values(), key=lambda v: (len(v.path), v.path.choices))


def _shown(path: str) -> str:
    """A path as a shared page shows it (``checker.base.text.display_path``)."""
    from kmc.checker.base.text import display_path

    return display_path(path)


def _lanes(model: KafkaModel) -> tuple[str, ...]:
    return ("controller",) + tuple(model.config.replicas)


def _config(spec: Spec | None, model: KafkaModel) -> list[tuple[str, str]]:
    """The configuration's lines of a page's header, opened by the Kafka release the spec's model
    was read from and the spec's overrides of it (``model.spec.KafkaSetting``), when it names one."""
    kafka = spec.kafka if spec is not None else None
    return ([("kafka", kafka.text())] if kafka is not None else []) + config_lines(model.config)


def result_page(spec: Spec | None, model: KafkaModel, result: CheckResult, command: str = "") -> str:
    """The HTML page of ``kmc check``: every violation's diagram, shortest first."""
    diagrams = [build(model, v) for v in _ordered(result)]
    verdicts = [(n, result.verdict(n)) for n in result.checked]
    counts = counts_from_stats(result.stats)
    distinct = f"{result.stats.distinct:,}"
    empty = f"No counterexample: no checked property failed in {distinct} distinct states" + (
        "." if result.complete else " (the search did not finish)."
    )
    return html.page(
        diagrams,
        title=spec.title if spec is not None else "",
        path=_shown(spec.path) if spec else None,
        description=spec.description if spec is not None else "",
        config=_config(spec, model),
        counts=counts,
        verdicts=verdicts,
        command=command,
        empty=empty,
        coverage=coverage_to_dict(result.stats),
    )


def result_mermaid(spec: Spec | None, model: KafkaModel, result: CheckResult) -> str:
    """The Mermaid text of ``kmc check``'s shortest counterexample (one diagram: Mermaid
    draws one per block; ``kmc replay --invariant NAME --format mermaid`` gives the others)."""
    ordered = _ordered(result)
    title = spec.title if spec is not None else ""
    if not ordered:
        return mermaid.no_counterexample(
            _lanes(model), f"no counterexample in {result.stats.distinct:,} distinct states"
        )
    text = mermaid.render(build(model, ordered[0]), title=title, config=model.config)
    if len(ordered) > 1:  # Mermaid draws one diagram per block: say where the others are
        others = ", ".join(v.property for v in ordered[1:])
        first, rest = text.split("\n", 1)
        text = (
            f"{first}\n%% also violated: {others} (kmc check --json, then kmc replay --invariant NAME "
            f"--format mermaid)\n{rest}"
        )
    return text


def simulation_outputs(spec: Spec, model: KafkaModel, sim: SimulationResult, command: str = "") -> tuple[str, str]:
    """``(html, mermaid)`` of a simulation's outcome (the walk that violated a property,
    if any)."""
    v = sim.violation
    st = sim.stats
    counts = [
        ("walks", f"{st.runs:,} (seed {sim.seed})"),
        ("steps", f"{st.steps:,}"),
        ("distinct states visited", f"{st.distinct:,}"),
    ]
    if v is None:
        text = f"No violation in {st.runs:,} walks (seed {sim.seed})."
        return (
            html.page(
                [],
                title=spec.title,
                path=_shown(spec.path),
                description=spec.description,
                config=_config(spec, model),
                counts=counts,
                command=command,
                empty=text,
            ),
            mermaid.no_counterexample(_lanes(model), text),
        )
    d = build(model, v)
    counts.append(
        (
            "violating walk",
            f"{sim.violation_run:,}, {len(v.path) - 1} steps (not necessarily a shortest counterexample)",
        )
    )
    return (
        html.page(
            [d],
            title=spec.title,
            path=_shown(spec.path),
            description=spec.description,
            config=_config(spec, model),
            counts=counts,
            command=command,
        ),
        mermaid.render(d, title=spec.title, config=model.config),
    )


def replay_output(
    fmt: str, path: str, doc: dict[str, Any], model: KafkaModel, violation: Violation, command: str | None = None
) -> str:
    """``kmc replay --format html|mermaid|svg`` of a replayed violation."""
    d = build(model, violation)
    spec: dict[str, Any] = doc["spec"] if isinstance(doc.get("spec"), dict) else {}
    title = safe_text(spec["title"]) if isinstance(spec.get("title"), str) else ""
    if fmt == "mermaid":
        return mermaid.render(d, title=title, config=model.config)
    if fmt == "svg":
        return svg.render(d, title=title)
    return html.page(
        [d],
        title=title,
        path=_shown(path),
        config=config_lines(model.config),
        counts=counts_from_document(doc),
        command=command or f"kmc replay {_shown(path)} --format html",
    )


def trace_page(doc: dict[str, Any], name: str, title: str = "") -> str:
    """The HTML page of a trace file ``kmc matrix`` writes (``doc``: its JSON document, in
    the format of ``kmc check --json`` with one violation; ``name``: the trace file's name;
    ``title``: for a row without a spec title). The path is re-executed from its choices."""
    from kmc.checker.core.result import Violation
    from kmc.checker.core.trace import replay_choices
    from kmc.model.kafka import KafkaModel
    from kmc.model.spec import config_from_table

    spec = doc["spec"]
    model = KafkaModel(config_from_table(spec["model"], name))
    v = doc["violations"][0]
    path = replay_choices(model, v["trace"]["init_index"], v["trace"]["choices"])
    d = build(model, Violation(v["property"], v["kind"], v["explanation"], path, v.get("trap_states")))
    return html.page(
        [d],
        title=spec.get("title") or title,
        path=name,
        config=config_lines(model.config),
        counts=counts_from_document(doc),
        command=f"kmc replay {name} --format html",
    )


write_text = html.write_text

__all__ = [
    "FORMATS",
    "replay_output",
    "result_mermaid",
    "result_page",
    "simulation_outputs",
    "trace_page",
    "write_text",
]
