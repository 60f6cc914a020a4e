"""``kmc replay`` of a counterexample of a user's own model: the model the user names, checked
against what the result records of its model, the trace re-executed and compared with the
saved one, and shown with the generic views."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from kmc.checker.base.errors import UsageError
from kmc.checker.base.text import safe_text
from kmc.checker.contract.protocol import LIVENESS

from .replay_checks import replay_lasso
from .replay_files import ReplayError, headline

if TYPE_CHECKING:  # for the annotations only: imported on first use
    from kmc.checker.core.result import Violation
    from rich.console import Console

    from ..user_model import ModelSpec


def run_model(args: argparse.Namespace, doc: dict[str, Any], out: Console, err: Console) -> int:
    """Replay a counterexample of a user's model: rebuild the model from the document's
    reference and parameters, re-execute the choices, check every state against the saved
    one and the property on the last step, and show it with the generic views."""
    from kmc.app.render import generic

    ident, model, violation = replay_model(args.file, doc, args.invariant, args.model, args.param)
    if args.diff and args.format != "rich":
        raise UsageError("--diff: only with --format rich")
    if args.format == "json":
        from kmc.app.render.json_result import json_text

        out.out(json_text(generic.violation_dict(model, violation)), highlight=False)
    elif args.format in ("html", "mermaid"):
        make = generic.violation_page if args.format == "html" else generic.violation_mermaid
        text = make(ident["ref"], model, violation)
        if not args.out:
            out.out(text, highlight=False, end="")
            return 0
        from kmc.app.render.pictures import write_text

        from ..outputs import exclusive

        try:
            write_text(args.out, text, exclusive=exclusive(args.out))
        except OSError as e:
            raise UsageError(f"--out: cannot write {args.out} ({e.strerror or e})") from None
        err.print(f"kmc: wrote {safe_text(args.out)}", markup=False, highlight=False, soft_wrap=True)
    elif args.format == "rich":
        out.print(generic.trace_view(model, violation, diff=args.diff))
    else:  # svg: the swimlane of Kafka's replicas; tla: TLC's text of Kafka's variables
        raise UsageError(
            f"--format {args.format}: drawn for Kafka's specs only; a model of your own replays as rich, json, "
            "html or mermaid"
        )
    return 0


def replay_model(
    path: str, doc: dict[str, Any], invariant: str | None, ref: str | None, params: list[str] | None
) -> tuple[dict[str, Any], Any, Violation]:
    """The counterexample of a user's model that a result document holds (``invariant``'s,
    or the headline's), replayed on the model ``ref`` (with ``params``) names, checked
    against the document's record of its model: every state against the saved one, the
    property on the last step (a lasso: ``replay_lasso``). Returns ``(the document's record
    of its model, the model, the Violation)``.

    Raises:
        ReplayError: no such counterexample, another model, or a trace that no longer replays.
    """
    from kmc.app.render import generic
    from kmc.checker.base.errors import EngineError
    from kmc.checker.contract.protocol import STEP
    from kmc.checker.core.result import Violation
    from kmc.checker.core.trace import replay_choices

    ident = doc.get("model")
    if (
        not isinstance(ident, dict)
        or not isinstance(ident.get("ref"), str)
        or not isinstance(ident.get("params"), dict)
    ):
        raise ReplayError(f"{path}: model: no 'ref' and 'params' to check the model against")
    found = [v for v in doc.get("violations") or [] if isinstance(v, dict)]
    if invariant is not None:
        found = [v for v in found if v.get("property") == invariant]
    if not found:
        raise ReplayError(f"{path}: violations: no counterexample" + (f" of {invariant}" if invariant else ""))
    entry = headline(found)
    spec = model_for_result(path, ident, ref, params)
    model = spec.model()
    props = {p.name: p for p in model.properties()}
    prop = props.get(str(entry.get("property")))
    trace = entry.get("trace")
    if prop is None or not isinstance(trace, dict):
        raise ReplayError(f"{path}: violations: {entry.get('property')!r} is not a property of {ident['ref']}")
    try:
        steps = replay_choices(model, int(trace["init_index"]), [int(c) for c in trace["choices"]]).steps
    except (EngineError, KeyError, TypeError, ValueError, IndexError) as e:
        raise ReplayError(f"{path}: the trace no longer replays ({e})") from None
    from kmc.checker.core.result import Path

    replayed = Path(tuple(steps), int(trace["init_index"]), tuple(int(c) for c in trace["choices"]))
    saved = trace.get("steps") or []
    for mine, theirs in zip(generic.trace_steps(model, replayed), saved):
        if not isinstance(theirs, dict) or mine["state"] != theirs.get("state"):
            raise ReplayError(f"{path}: step {mine['index']}: the replayed state differs from the saved one")
    last = replayed.steps[-1]
    if prop.kind in LIVENESS:
        violation = replay_lasso(path, model, prop, entry, replayed)
    else:
        if prop.kind == STEP and len(replayed.steps) > 1:
            why = prop.check(model, replayed.steps[-2].state, last.action, last.state)
        else:
            why = prop.check(model, last.state)
        if why is None:
            raise ReplayError(f"{path}: the replayed trace no longer violates {prop.name}")
        violation = Violation(prop.name, prop.kind, why, replayed)
    return ident, model, violation


def model_for_result(path: str, ident: dict[str, Any], ref: str | None, params: list[str] | None) -> ModelSpec:
    """The model the user names (``--model REF``, ``--param``) for the result of a model in
    ``path``, checked against what the result records of its model (``ident``: the
    reference, the parameters, the source's SHA-256), as a checkpoint's header is on
    resume. kmc never imports the reference a file names: a result file is data.

    Raises:
        ReplayError: no ``--model`` was given, or the model differs from the recorded one.
    """
    from ..user_model import load_model_spec, parse_params

    if ref is None:  # (the reference the file records is not offered: a file is data, not a command)
        raise ReplayError(
            f"{path}: the result of a model of your own, not of a spec: replay it with --model naming that model "
            "(and its --param values); kmc never imports what a result file names"
        )
    spec = load_model_spec(ref, parse_params(params) if params else dict(ident["params"]))
    mine = spec.identity()
    factory = ref.rpartition(":")[2]
    if factory != ident["ref"].rpartition(":")[2]:
        raise ReplayError(f"{path}: --model {safe_text(ref)}: the result belongs to another model")
    if mine["params"] != ident["params"]:
        raise ReplayError(
            f"{path}: --param: the result was found with the parameters {_params(ident['params'])}, "
            f"this run gives {_params(mine['params'])}"
        )
    digest = ident.get("sha256")
    if mine["sha256"] and not digest:
        raise ReplayError(
            f"{path}: model: records no SHA-256 of the model's source, so --model {safe_text(ref)} cannot be "
            "checked against it"
        )
    if digest and mine["sha256"] != digest:
        raise ReplayError(
            f"{path}: --model {safe_text(ref)}: its source differs from the one the result was found on "
            f"(SHA-256 {mine['sha256'][:12]}..., recorded {safe_text(str(digest))[:12]}...)"
        )
    if not digest and mine["ref"] != ident["ref"]:  # nothing to compare the source with
        raise ReplayError(f"{path}: --model {safe_text(ref)}: the result belongs to another model")
    return spec


def _params(params: dict[str, Any]) -> str:
    """Parameters as a message names them: ``a=1, b='x'``, or ``none``."""
    return safe_text(", ".join(f"{k}={v!r}" for k, v in sorted(params.items())) or "none")
