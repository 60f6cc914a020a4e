"""A Markdown summary of a run (for a CI job summary or a pull-request comment).

Plain text only: the verdicts, the statistics, and each counterexample as a table with
one row per state. For a machine interface use the JSON document instead.
"""

from __future__ import annotations

from model.state import leads

from .json_result import expectation
from .terminal import describe_step


def _log(log) -> str:
    return " ".join(f"{o}:e{e}·r{i}" for o, (e, i) in enumerate(log)) or "∅"


def _replica(model, state, r) -> str:
    rep = state.replicas[r]
    role = "**leader**" if leads(state, r) else ("down" if not rep.alive else "")
    parts = (role, f"e{rep.epoch}", f"hw {rep.hw}", f"`{_log(rep.log)}`")
    return " ".join(p for p in parts if p)


def trace_to_markdown(model, violation) -> str:
    """One counterexample as a Markdown table, then the violated property."""
    names = [model.name(r) for r in range(model.config.n)]
    head = ["#", "action", *names, "controller"]
    rows = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    steps = violation.path.steps
    for i, step in enumerate(steps, 1):
        if step.action is None:
            action = "initial"
        else:
            gloss = describe_step(model, steps[i - 2].state, step.action, step.state)
            action = f"`{model.format_action(step.action)}` {gloss}".strip()
        q = step.state.quorum
        isr = ",".join(model.name(r) for r in q.isr)
        ctl = f"{model.name(q.leader)} e{q.epoch} ISR {{{isr}}}"
        cells = [str(i), action, *(_replica(model, step.state, r) for r in range(len(names))), ctl]
        rows.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    where = ("the last transition" if violation.kind == "step" else f"state {len(steps)}")
    rows.append("")
    rows.append(f"**{violation.property}** is violated by {where}: {violation.explanation}")
    return "\n".join(rows)


def result_to_markdown(spec, model, result, *, traces=True) -> str:
    """The outcome of a run as Markdown (``spec`` may be ``None``)."""
    out = []
    if spec is not None:
        out.append(f"## kmc check `{spec.path}`")
        if spec.title:
            out.extend(("", f"*{spec.title}*"))
    else:
        out.append("## kmc check")
    out.append("")
    cfg = model.config
    out.append(f"replicas {', '.join(cfg.replicas)} · truncation `{cfg.truncation}` · "
               f"≤ {cfg.max_messages} messages · ≤ {cfg.max_crashes} crashes · "
               f"leader epochs ≤ {cfg.max_leader_epoch} · engine {result.engine}")
    exp = expectation(spec, result)
    out.append("")
    out.append("| property | verdict | expected |")
    out.append("|---|---|---|")
    for name in result.checked:
        verdict = result.verdict(name)
        want = exp["expected"].get(name, "")
        mark = "" if not want else (" ✓" if want == verdict else " ✗")
        out.append(f"| {name} | {verdict} | {want}{mark} |")
    s = result.stats
    out.append("")
    out.append(f"{s.distinct:,} distinct states · {s.generated:,} generated · depth {s.depth} · "
               f"{s.seconds:.2f} s" + ("" if result.complete else f" · incomplete ({result.stopped})"))
    if exp["expected"]:
        out.append("")
        out.append("Matches the spec's expectation." if exp["matched"] else
                   "**Does not match the spec's expectation:** " + "; ".join(exp["mismatches"]))
    if traces:
        for v in sorted(result.violations.values(), key=lambda v: (len(v.path), v.path.choices)):
            out.append("")
            out.append(f"### Counterexample: {v.property} ({len(v.path)} states)")
            out.append("")
            out.append(trace_to_markdown(model, v))
    return "\n".join(out) + "\n"
