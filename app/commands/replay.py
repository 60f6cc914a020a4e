"""``kmc replay RESULT.json``: re-execute a saved counterexample and show it.

Reads a JSON document that holds a trace in the format of ``render.json_result``:
the result of ``kmc check --json`` (or a matrix trace file, which has the same format),
the result of ``kmc simulate --json``, or the output of ``kmc replay --format json``.
The model is rebuilt from the document's ``spec.model`` constants (a model of the user's
own is the one ``--model`` names, checked against the factory, parameters and source digest
the document records: kmc never imports what a file names), the trace's
``init_index`` and ``choices`` are re-executed step by step, and every replayed state and
action must equal the saved one as it is replayed: a trace that no longer
replays (the model's rules changed since it was saved, or the file was edited) is
refused, never shown as if it still held.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from kmc.checker.base.errors import KmcError, UsageError
from kmc.checker.base.text import safe_text
from kmc.checker.contract.protocol import LIVENESS

from .replay_checks import check_still_violated, replay_lasso
from .replay_files import ReplayError, load_document, select_entry, violations_of
from .replay_model import run_model

if TYPE_CHECKING:  # for the annotations only: imported on first use
    from kmc.checker.core.result import Step, Violation
    from kmc.model.config import Config
    from kmc.model.kafka import KafkaModel
    from kmc.model.state import State
    from rich.console import Console

FORMATS = ("rich", "tla", "json", "html", "mermaid", "svg")
DIAGRAMS = ("html", "mermaid", "svg")
# The longest trace replayed: the longest walk 'kmc simulate --depth' takes, plus its
# initial state (a check's shortest counterexample is bounded by [check] max_depth, whose
# limit is the same).
MAX_TRACE_STATES = 100_001


def register(p: argparse.ArgumentParser) -> None:
    p.description = (
        "Load a saved result (kmc check --json, a kmc matrix trace file, kmc "
        "simulate --json), rebuild the model from its constants (a model of your own: the one --model "
        "names, checked against the result's record of it), re-execute the "
        "counterexample's choices, verify that every state equals the saved one and that the "
        "last state (or step) still violates the property, and show it."
    )
    p.epilog = (
        "Exit codes: 0 the trace replayed and was shown, 2 bad input: a missing or "
        "unreadable file, not a kmc result, a trace that no longer replays, or a --model that is "
        "not the one the result was found on."
    )
    p.add_argument("file", metavar="RESULT.json", help="a saved result or trace file")
    p.add_argument(
        "--format",
        choices=FORMATS,
        default="rich",
        help="rich: tables (default); tla: the way TLC prints an error trace; "
        "json: the trace as a versioned JSON document (docs/results.md); html: one "
        "self-contained page with the swimlane diagram; svg: the diagram alone; mermaid: "
        "a Mermaid sequenceDiagram for Markdown",
    )
    p.add_argument(
        "--out",
        metavar="FILE",
        help="(html, mermaid, svg) write to FILE instead of standard output; an existing "
        "file is replaced only if kmc wrote it, or with --force",
    )
    p.add_argument("--force", action="store_true", help="replace an existing --out file even if kmc did not write it")
    p.add_argument("--diff", action="store_true", help="(rich) show only what changes at each step")
    p.add_argument(
        "--invariant",
        metavar="NAME",
        help="which violation to replay when the file holds several (default: the shortest, the one 'kmc check' "
        "names first)",
    )
    g = p.add_argument_group("the result of a model of your own (kmc check --model)")
    g.add_argument(
        "--model",
        metavar="MODULE:FACTORY",
        help="the model the result was found on (pkg.mod:factory or path/to/file.py:factory), as kmc check "
        "--model took it: kmc never imports what a result file names; it checks this model against the "
        "file's recorded factory, parameters and source digest",
    )
    g.add_argument(
        "--param",
        action="append",
        metavar="NAME=VALUE",
        default=[],
        help="a keyword argument of the factory (repeatable; default: the parameters the file records)",
    )
    p.set_defaults(run=run)


def config_from_dict(path: str, d: object) -> Config:
    """A ``model.config.Config`` from the ``spec.model`` dict of a result document,
    validated by the spec loader's validator (``model.spec.config_from_table``)."""
    from kmc.checker.base.errors import SpecError
    from kmc.model.spec import config_from_table

    if not isinstance(d, dict):
        raise ReplayError(f"{path}: spec.model: missing (the model's constants are needed to replay)")
    try:
        return config_from_table(d, path)
    except SpecError as e:
        key = (e.key or "model").replace("model.", "spec.model.", 1)
        raise ReplayError(f"{path}: {key}: {e.detail}") from None


def replay(path: str, doc: dict[str, Any], invariant: str | None = None) -> tuple[KafkaModel, Violation]:
    """Rebuild the model of a result document and re-execute one of its violations.

    Args:
        path: the file's name, for messages.
        doc: the loaded document.
        invariant: the property whose violation to replay (default: ``headline``'s).

    Returns:
        ``(model, checker.core.result.Violation)``, its path rebuilt by the model.

    Raises:
        ReplayError: the document is not a kmc result, holds no such violation, or its
            trace does not replay to the saved states.
    """
    from kmc.checker.core.result import Path, Violation
    from kmc.model.kafka import KafkaModel

    entry = select_entry(path, doc, invariant)
    spec = doc.get("spec")
    model = KafkaModel(config_from_dict(path, spec.get("model") if isinstance(spec, dict) else None))
    trace = entry["trace"]
    prop = safe_text(entry["property"])
    init_index, choices, saved = trace.get("init_index"), trace.get("choices"), trace.get("steps")
    if (
        not isinstance(init_index, int)
        or not isinstance(choices, list)
        or not all(isinstance(c, int) and not isinstance(c, bool) for c in choices)
        or not isinstance(saved, list)
    ):
        raise ReplayError(f"{path}: the trace of {prop} needs 'init_index', 'choices' and 'steps'")
    # Bounded work before any: the length is checked first, and the trace is compared
    # step by step as it is replayed, so a hostile file costs at most its first bad step.
    if len(choices) + 1 > MAX_TRACE_STATES:
        raise ReplayError(
            f"{path}: the trace of {prop} has {len(choices) + 1:,} states; kmc replays at "
            f"most {MAX_TRACE_STATES:,} (the longest walk 'kmc simulate' takes)"
        )
    if len(saved) != len(choices) + 1:
        raise ReplayError(f"{path}: the trace of {prop} has {len(saved)} steps for {len(choices)} choices")
    inits = model.init_states()
    if not 0 <= init_index < len(inits):
        raise ReplayError(
            f"{path}: the trace of {prop} starts at initial state {init_index}, which the model does not have"
        )
    # A check's counterexample is a shortest path, which never visits a state twice;
    # a simulation's walk may, and so does a liveness counterexample's cycle (a lasso).
    shortest = doc.get("kind") != "kmc-simulation" and "lasso" not in entry
    steps = _replay_steps(path, model, prop, inits[init_index], choices, saved, shortest)
    path_ = Path(tuple(steps), init_index, tuple(choices))
    kind = entry.get("kind", "always")
    if kind not in ("always", "step", "possibly", *LIVENESS):
        raise ReplayError(f"{path}: the violation of {prop} has an unknown kind {safe_text(repr(kind))}")
    if kind in LIVENESS:
        from kmc.invariants import BY_NAME

        p = BY_NAME.get(entry["property"])
        if p is None or p.kind != kind:
            raise ReplayError(f"{path}: the violation names {prop}, which is no {kind} property of the Kafka model")
        return model, replay_lasso(path, model, p, entry, path_)
    why = check_still_violated(path, model, entry["property"], kind, path_)
    traps = entry.get("trap_states") if kind == "possibly" else None
    if traps is not None and (not isinstance(traps, int) or isinstance(traps, bool) or traps < 1):
        raise ReplayError(
            f"{path}: the violation of {prop} has trap_states {safe_text(repr(traps))[:40]}, not a positive integer"
        )
    # The explanation shown is the one recomputed now, never the file's text.
    return model, Violation(entry["property"], kind, why, path_, traps=traps)


def _replay_steps(
    path: str,
    model: KafkaModel,
    prop: str,
    state: State,
    choices: list[int],
    saved: list[Any],
    shortest: bool,
) -> list[Step]:
    """Re-execute ``choices`` from ``state``, each state and action compared with the saved
    one as it is replayed (a hostile file costs at most its first bad step); a shortest
    counterexample visits no state twice.

    Raises:
        ReplayError: a choice the model does not have, a state that differs, or a revisit.
    """
    from kmc.app.render.json_result import action_to_dict, state_to_dict
    from kmc.checker.core.result import Step

    changed = "the model changed since it was saved, or the file was edited"
    steps = [Step(None, state)]
    visited = {state: 1}
    for i in range(len(saved)):
        if i:
            succ = model.successors(state)
            choice = choices[i - 1]
            if not 0 <= choice < len(succ):
                raise ReplayError(
                    f"{path}: the trace of {prop} does not replay (at state {i + 1}: no action "
                    f"number {choice}): {changed}"
                )
            action, state = succ[choice]
            steps.append(Step(action, state))
        want = saved[i]
        same = (
            isinstance(want, dict)
            and want.get("state") == state_to_dict(model, state)
            and want.get("action") == action_to_dict(model, steps[-1].action)
        )
        if not same:
            raise ReplayError(
                f"{path}: the trace of {prop} does not replay: state {i + 1} differs from the saved one ({changed})"
            )
        if i and shortest:
            if state in visited:
                raise ReplayError(
                    f"{path}: the trace of {prop} visits state {visited[state]} again at "
                    f"state {i + 1}: a shortest counterexample never does (the file was edited)"
                )
            visited[state] = i + 1
    return steps


def replay_document(doc: dict[str, Any], model: KafkaModel, violation: Violation) -> dict[str, Any]:
    """``kmc replay --format json``: the replayed trace as a versioned document,
    readable by ``kmc replay`` again."""
    from kmc.app.render.counterexample import lasso_dict
    from kmc.app.render.json_result import trace_to_dict

    return {
        "schema_version": 1,
        "property": violation.property,
        "kind": violation.kind,
        "explanation": violation.explanation,
        **({"trap_states": violation.traps} if violation.traps is not None else {}),
        **({"lasso": lasso_dict(violation)} if violation.loop is not None else {}),
        "spec": doc.get("spec") if isinstance(doc.get("spec"), dict) else {"model": model.config.as_dict()},
        "trace": trace_to_dict(model, violation.path),
    }


def run(args: argparse.Namespace, out: Console, err: Console) -> int:
    if args.out is not None and args.format not in DIAGRAMS:
        raise UsageError("--out: only with --format html, mermaid or svg")
    if args.out is not None:  # an empty path is refused, as every output option refuses it
        from ..outputs import check_output_path

        check_output_path("--out", args.out, protected=[args.file], force=args.force, kind="diagram")
    doc = load_document(args.file)
    from kmc.app.render import generic

    if doc.get("schema") == generic.SCHEMA:  # a user's model (kmc check --model)
        try:
            return run_model(args, doc, out, err)
        except (KmcError, MemoryError):
            raise
        except Exception as e:  # the model's own code raised: one line, exit 2
            from ..user_model import failure

            raise failure(args.model, e) from None
    if args.model is not None or args.param:
        raise UsageError(f"--model: {args.file} is the result of a spec, not of a model of your own")
    model, violation = replay(args.file, doc, args.invariant)
    _say_which(args, err, doc, violation)
    if args.diff and args.format != "rich":
        raise UsageError("--diff: only with --format rich")
    _show(args, out, err, doc, model, violation)
    return 0


def _say_which(args: argparse.Namespace, err: Console, doc: dict[str, Any], violation: Violation) -> None:
    """Notes on standard error: which of several counterexamples is shown, and that the
    file's explanation differs from the recomputed one (which is shown)."""
    found = violations_of(args.file, doc)
    if len(found) > 1:  # say which one is shown, and how to choose another
        names = ", ".join(safe_text(v["property"]) for v in found)
        err.print(
            f"kmc: note: {safe_text(args.file)} holds {len(found)} counterexamples ({names}); this is the one of "
            f"{safe_text(violation.property)}; --invariant NAME shows another",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )
    saved = select_entry(args.file, doc, args.invariant).get("explanation")
    if saved != violation.explanation:
        err.print(
            f"kmc: note: {safe_text(args.file)}: the file's explanation of {violation.property} differs "
            f"from the recomputed one, which is shown: {safe_text(repr(saved))[:200]}",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )


def _show(
    args: argparse.Namespace, out: Console, err: Console, doc: dict[str, Any], model: KafkaModel, violation: Violation
) -> None:
    """The replayed counterexample in ``--format``: printed, or written to ``--out``."""
    if args.format in DIAGRAMS:
        from kmc.app.render.pictures import replay_output, write_text

        from ..outputs import command_line, exclusive

        text = replay_output(
            args.format,
            safe_text(args.file),
            doc,
            model,
            violation,
            safe_text(command_line(args, ["replay", args.file, "--format", args.format])),
        )
        if args.out is None:
            out.out(text, highlight=False, end="")
            return
        try:
            write_text(args.out, text, exclusive=exclusive(args.out))
        except OSError as e:
            raise UsageError(f"--out: cannot write {args.out} ({e.strerror or e})") from None
        err.print(f"kmc: wrote {safe_text(args.out)}", markup=False, highlight=False, soft_wrap=True)
    elif args.format == "json":
        from kmc.app.render.json_result import json_text

        out.out(json_text(replay_document(doc, model, violation)), highlight=False)
    elif args.format == "tla":
        from kmc.app.render.tla import violation_text

        stats = doc.get("stats") if isinstance(doc.get("stats"), dict) else None
        if stats is not None and not all(k in stats for k in ("states_generated", "distinct_states", "depth")):
            stats = None
        out.out(violation_text(model, violation, stats), highlight=False, end="")
    else:
        from kmc.app.render import TraceView

        out.print(
            f"{safe_text(args.file)}: {violation.property}, {len(violation.path)} states; "
            "the replay matches the saved trace.",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )
        out.print(TraceView(model, violation, diff=args.diff))
