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

import json
from typing import TYPE_CHECKING, Any

from kmc.checker.base.errors import KmcError, UsageError
from kmc.checker.base.text import safe_text
from kmc.checker.contract.protocol import LIVENESS

if TYPE_CHECKING:  # for the annotations only: imported on first use
    from kmc.checker.core.result import Violation
    from kmc.model.config import Config
    from kmc.model.kafka import KafkaModel

    from ..user_model import ModelSpec

FORMATS = ("rich", "tla", "json", "html", "mermaid", "svg")
DIAGRAMS = ("html", "mermaid", "svg")
MAX_BYTES = 256 << 20
# The longest trace replayed: the longest walk 'kmc simulate --depth' takes, plus its
# initial state (a check's shortest counterexample is bounded by [check] max_depth, whose
# limit is the same).
MAX_TRACE_STATES = 100_001


def register(sub) -> None:
    p = sub.add_parser(
        "replay",
        help="re-execute a saved counterexample and show it (rich, TLC-style text, or JSON)",
        description="Load a saved result (kmc check --json, a kmc matrix trace file, kmc "
        "simulate --json), rebuild the model from its constants (a model of your own: the one --model "
        "names, checked against the result's record of it), re-execute the "
        "counterexample's choices, verify that every state equals the saved one and that the "
        "last state (or step) still violates the property, and show it.",
        epilog="Exit codes: 0 the trace replayed and was shown, 2 bad input: a missing or "
        "unreadable file, not a kmc result, a trace that no longer replays, or a --model that is "
        "not the one the result was found on.",
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


class ReplayError(KmcError):
    """A saved trace cannot be read or does not replay."""


def load_document(path) -> dict:
    """The JSON object in ``path``.

    Raises:
        ReplayError: the file is missing, unreadable, too large, not JSON, or not an object.
    """
    from ..outputs import check_regular_input

    try:
        check_regular_input(path, path)  # a named pipe would block the read
    except UsageError as e:
        raise ReplayError(str(e)) from None
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_BYTES + 1)
    except FileNotFoundError:
        raise ReplayError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise ReplayError(f"{path}: is a directory, not a result file") from None
    except OSError as e:
        raise ReplayError(f"{path}: cannot read the file ({e.strerror or e})") from None
    if len(data) > MAX_BYTES:
        raise ReplayError(f"{path}: larger than {MAX_BYTES >> 20} MiB")
    try:
        doc = json.loads(data.decode("utf-8"))
    except UnicodeDecodeError:
        raise ReplayError(f"{path}: not UTF-8 text") from None
    except json.JSONDecodeError as e:
        raise ReplayError(f"{path}: not JSON ({e.msg} at line {e.lineno}, column {e.colno})") from None
    except RecursionError:
        raise ReplayError(f"{path}: not JSON (nested too deeply)") from None
    if not isinstance(doc, dict):
        raise ReplayError(f"{path}: not a kmc result (a JSON object was expected)")
    return doc


def violations_of(path, doc) -> list[dict]:
    """The ``{"property", "kind", "explanation", "trace"}`` entries a document holds."""
    version = doc.get("schema_version")
    if type(version) is not int or version != 1:  # (True == 1 in Python)
        raise ReplayError(f"{path}: schema_version is {version!r}; this kmc reads version 1")
    if doc.get("kind") == "kmc-matrix":
        raise ReplayError(f"{path}: a matrix summary; replay one of the files in its traces/ directory")
    if isinstance(doc.get("violations"), list):  # kmc check --json, matrix traces
        found = doc["violations"]
    elif "violation" in doc:  # kmc simulate --json
        found = [] if doc["violation"] is None else [doc["violation"]]
    elif "trace" in doc:  # kmc replay --format json
        found = [doc]
    else:
        raise ReplayError(f"{path}: holds no 'violations', 'violation' or 'trace': not a kmc result")
    for v in found:
        if not isinstance(v, dict) or not isinstance(v.get("trace"), dict) or not isinstance(v.get("property"), str):
            raise ReplayError(f"{path}: a violation entry has no 'property' or 'trace'")
    return found


def config_from_dict(path, d) -> Config:
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


def replay(path, doc, invariant=None) -> tuple[KafkaModel, Violation]:
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
    from kmc.app.render.json_result import action_to_dict, state_to_dict
    from kmc.checker.core.result import Path, Step, Violation
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
    changed = "the model changed since it was saved, or the file was edited"
    state = inits[init_index]
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
    why = _check_still_violated(path, model, entry["property"], kind, path_)
    traps = entry.get("trap_states") if kind == "possibly" else None
    if traps is not None and (not isinstance(traps, int) or isinstance(traps, bool) or traps < 1):
        raise ReplayError(
            f"{path}: the violation of {prop} has trap_states {safe_text(repr(traps))[:40]}, not a positive integer"
        )
    # The explanation shown is the one recomputed now, never the file's text.
    return model, Violation(entry["property"], kind, why, path_, traps=traps)


def headline(found) -> dict:
    """Of the violation entries ``found``, the one ``kmc check`` heads its summary with:
    the shortest counterexample, the first in the order of its choices among equals."""

    def key(entry) -> tuple:
        choices = entry.get("trace", {}).get("choices") if isinstance(entry.get("trace"), dict) else None
        if isinstance(choices, list) and all(type(c) is int for c in choices):
            return (0, len(choices), choices)
        return (1, 0, [])  # a malformed trace: after every other (its replay will say why)

    return min(found, key=key)


def replay_lasso(path, model, prop, entry, path_):
    """The liveness counterexample ``entry`` (its trace replayed as ``path_``), checked
    real, fair and violating by re-executing it (``checker.graph.lasso``); its explanation
    recomputed.

    Raises:
        ReplayError: the entry's lasso is malformed, or the check fails.
    """
    from kmc.app.render.counterexample import json_value
    from kmc.checker.core.result import Violation
    from kmc.checker.graph.explain import liveness_explanation
    from kmc.checker.graph.lasso import check_lasso

    name = safe_text(prop.name)
    lasso = entry.get("lasso")
    start = lasso.get("cycle_start") if isinstance(lasso, dict) else None
    if not isinstance(start, int) or isinstance(start, bool) or not 1 <= start <= len(path_):
        raise ReplayError(
            f"{path}: the violation of {name} needs a lasso with a cycle_start between 1 and {len(path_)}"
        )
    loop = start - 1
    if bool(lasso.get("stutters")) != (loop == len(path_) - 1):
        raise ReplayError(f"{path}: the lasso of {name}: 'stutters' disagrees with its cycle_start")
    obligation = None
    if prop.obligations is not None:
        saved = lasso.get("obligation")
        matches = [o for o in prop.obligations(model) if json_value(o) == saved]
        if not matches:
            raise ReplayError(f"{path}: the lasso of {name} names an obligation the model does not have")
        obligation = matches[0]
    wrong = check_lasso(model, prop, path_, loop, obligation)
    if wrong is not None:
        raise ReplayError(f"{path}: the lasso of {name} replays, but {wrong}")
    instances = len(tuple(model.fair_instances()))
    why = liveness_explanation(model, prop, path_, loop, obligation, instances)
    return Violation(prop.name, prop.kind, why, path_, loop=loop, obligation=obligation, fair_instances=instances)


def select_entry(path, doc, invariant=None) -> dict:
    """The violation entry of ``doc`` to replay: the one ``kmc check``'s summary names
    first (``headline``), or the one of ``invariant``."""
    found = violations_of(path, doc)
    if not found:
        raise ReplayError(f"{path}: holds no counterexample (every checked invariant held)")
    if invariant is None:
        return headline(found)
    matches = [v for v in found if v["property"] == invariant]
    if not matches:
        names = ", ".join(safe_text(v["property"]) for v in found)
        raise ReplayError(
            f"{path}: --invariant: no counterexample of {invariant!r} (it has counterexamples of: {names})"
        )
    return matches[0]


def _check_still_violated(path, model, prop, kind, path_) -> str:
    """Refuse a trace whose last state (or step) does not violate the property it is
    saved for: the states replay, but showing it as a counterexample would be a lie."""
    from kmc.invariants import BY_NAME

    p = BY_NAME.get(prop)
    if p is None:
        raise ReplayError(
            f"{path}: the violation names an unknown property {safe_text(repr(prop))} (known: {', '.join(BY_NAME)})"
        )
    if p.kind != kind:
        raise ReplayError(
            f"{path}: the violation of {prop} is saved as kind {kind!r}, but {prop} is a property of kind {p.kind!r}"
        )
    last = path_.steps[-1]
    if kind == "possibly":
        # Whether the last state is a trap needs the whole graph; what replays here is that
        # it is not a goal state (for PartitionRecoverable: no replica leads or can be elected).
        if p.check(model, last.state):
            raise ReplayError(
                f"{path}: the trace of {prop} replays, but its last state is a goal "
                f"state of {prop}, not a trap (the property changed since it was "
                "saved, or the file was edited)"
            )
        explained = p.explain(model, last.state) if p.explain is not None else f"{prop}: a trap"
        # an explain that does not answer: the engine's own sentence (checker.core.driver)
        return explained or f"no state where {prop} holds can be reached from this state"
    if kind == "always":
        why = p.check(model, last.state)
    elif len(path_.steps) < 2:
        why = None
    else:
        why = p.check(model, path_.steps[-2].state, last.action, last.state)
    if why is None:
        raise ReplayError(
            f"{path}: the trace of {prop} replays, but its last "
            f"{'state' if kind == 'always' else 'step'} does not violate {prop} "
            "(the property changed since it was saved, or the file was edited)"
        )
    return why


def replay_document(doc, model, violation) -> dict:
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


def _replay_model(args, doc, out, err) -> int:
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


def replay_model(path, doc, invariant, ref, params) -> tuple[dict, Any, Violation]:
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


def model_for_result(path, ident, ref, params) -> ModelSpec:
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


def _params(params) -> str:
    return safe_text(", ".join(f"{k}={v!r}" for k, v in sorted(params.items())) or "none")


def run(args, out, err) -> int:
    if args.out is not None and args.format not in DIAGRAMS:
        raise UsageError("--out: only with --format html, mermaid or svg")
    if args.out is not None:  # an empty path is refused, as every output option refuses it
        from ..outputs import check_output_path

        check_output_path("--out", args.out, protected=[args.file], force=args.force, kind="diagram")
    doc = load_document(args.file)
    from kmc.app.render import generic

    if doc.get("schema") == generic.SCHEMA:  # a user's model (kmc check --model)
        try:
            return _replay_model(args, doc, out, err)
        except (KmcError, MemoryError):
            raise
        except Exception as e:  # the model's own code raised: one line, exit 2
            from ..user_model import failure

            raise failure(args.model, e) from None
    if args.model is not None or args.param:
        raise UsageError(f"--model: {args.file} is the result of a spec, not of a model of your own")
    model, violation = replay(args.file, doc, args.invariant)
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
    if args.diff and args.format != "rich":
        raise UsageError("--diff: only with --format rich")
    if args.format in DIAGRAMS:
        from kmc.app.render.pictures import replay_output, write_text

        from ..diagram_files import command_line
        from ..outputs import exclusive

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
            return 0
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
    return 0
