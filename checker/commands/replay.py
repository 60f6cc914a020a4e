"""``kmc replay RESULT.json``: re-execute a saved counterexample and show it.

Reads a JSON document that holds a trace in the format of ``reports.json_result``:
the result of ``kmc check --json`` (or a matrix trace file, which has the same format),
the result of ``kmc simulate --json``, or the output of ``kmc replay --format json``.
The model is rebuilt from the document's ``spec.model`` constants, the trace's
``init_index`` and ``choices`` are re-executed (``checker.trace.replay_choices``), and
every replayed state and action must equal the saved ones: a trace that no longer
replays (the model's rules changed since it was saved, or the file was edited) is
refused, never shown as if it still held.
"""

from __future__ import annotations

import json

from ..errors import KmcError, UsageError

FORMATS = ("rich", "tla", "json")
MAX_BYTES = 256 << 20


def register(sub):
    p = sub.add_parser(
        "replay",
        help="re-execute a saved counterexample and show it (rich, TLC-style text, or JSON)",
        description="Load a saved result (kmc check --json, a kmc matrix trace file, kmc "
        "simulate --json), rebuild the model from its constants, re-execute the "
        "counterexample's choices, verify that every state equals the saved one and that the "
        "last state (or step) still violates the property, and show it.",
        epilog="Exit codes: 0 the trace replayed and was shown, 2 bad input: a missing or "
        "unreadable file, not a kmc result, or a trace that no longer replays.",
    )
    p.add_argument("file", metavar="RESULT.json", help="a saved result or trace file")
    p.add_argument("--format", choices=FORMATS, default="rich",
                   help="rich: tables (default); tla: the way TLC prints an error trace; "
                   "json: the trace as a versioned JSON document (docs/results.md)")
    p.add_argument("--diff", action="store_true",
                   help="(rich) show only what changes at each step")
    p.add_argument("--invariant", metavar="NAME",
                   help="which violation to replay when the file holds several (default: the first)")
    p.set_defaults(run=run)


class ReplayError(KmcError):
    """A saved trace cannot be read or does not replay."""


def load_document(path) -> dict:
    """The JSON object in ``path``.

    Raises:
        ReplayError: the file is missing, unreadable, too large, not JSON, or not an object.
    """
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


def config_from_dict(path, d):
    """A ``model.config.Config`` from the ``spec.model`` dict of a result document."""
    import attrs

    from model.config import INITIAL_LEADERS, TRUNCATION_RULES, Config

    if not isinstance(d, dict):
        raise ReplayError(f"{path}: spec.model: missing (the model's constants are needed to replay)")
    fields = {f.name: f.type for f in attrs.fields(Config)}
    for key in d:
        if key not in fields:
            raise ReplayError(f"{path}: spec.model.{key}: unknown constant (saved by a newer kmc?)")
    values = dict(d)
    reps = values.get("replicas")
    if not isinstance(reps, list) or not reps or not all(isinstance(x, str) for x in reps) \
            or len(set(reps)) != len(reps) or len(reps) > 7:
        raise ReplayError(f"{path}: spec.model.replicas: must be a list of distinct replica names")
    values["replicas"] = tuple(reps)
    for key in ("max_messages", "max_crashes", "max_leader_epoch", "min_insync_replicas"):
        if key in values and (isinstance(values[key], bool) or not isinstance(values[key], int)
                              or not 0 <= values[key] <= 16):
            raise ReplayError(f"{path}: spec.model.{key}: must be an integer from 0 to 16")
    for key in ("unclean_leader_election", "unflushed_loss", "preferred_election",
                "hw_requires_min_isr", "eligible_leader_replicas"):
        if key in values and not isinstance(values[key], bool):
            raise ReplayError(f"{path}: spec.model.{key}: must be true or false")
    if values.get("initial_leader", INITIAL_LEADERS[0]) not in INITIAL_LEADERS:
        raise ReplayError(f"{path}: spec.model.initial_leader: must be one of {', '.join(INITIAL_LEADERS)}")
    if values.get("truncation", TRUNCATION_RULES[0]) not in TRUNCATION_RULES:
        raise ReplayError(f"{path}: spec.model.truncation: must be one of {', '.join(TRUNCATION_RULES)}")
    return Config(**values)


def replay(path, doc, invariant=None):
    """Rebuild the model of a result document and re-execute one of its violations.

    Args:
        path: the file's name, for messages.
        doc: the loaded document.
        invariant: the property whose violation to replay (default: the first listed).

    Returns:
        ``(model, checker.result.Violation)``, its path rebuilt by the model.

    Raises:
        ReplayError: the document is not a kmc result, holds no such violation, or its
            trace does not replay to the saved states.
    """
    from model.kafka import KafkaModel
    from reports.json_result import action_to_dict, state_to_dict

    from ..result import Violation
    from ..trace import replay_choices

    found = violations_of(path, doc)
    if not found:
        raise ReplayError(f"{path}: holds no counterexample (every checked invariant held)")
    if invariant is None:
        entry = found[0]
    else:
        matches = [v for v in found if v["property"] == invariant]
        if not matches:
            names = ", ".join(v["property"] for v in found)
            raise ReplayError(f"{path}: --invariant: no counterexample of {invariant!r} (it has counterexamples of: {names})")
        entry = matches[0]
    spec = doc.get("spec")
    model = KafkaModel(config_from_dict(path, spec.get("model") if isinstance(spec, dict) else None))
    trace = entry["trace"]
    prop = entry["property"]
    init_index, choices, saved = trace.get("init_index"), trace.get("choices"), trace.get("steps")
    if not isinstance(init_index, int) or not isinstance(choices, list) \
            or not all(isinstance(c, int) and not isinstance(c, bool) for c in choices) \
            or not isinstance(saved, list):
        raise ReplayError(f"{path}: the trace of {prop} needs 'init_index', 'choices' and 'steps'")
    if not 0 <= init_index < len(model.init_states()):
        raise ReplayError(f"{path}: the trace of {prop} starts at initial state {init_index}, "
                          "which the model does not have")
    if len(saved) != len(choices) + 1:
        raise ReplayError(f"{path}: the trace of {prop} has {len(saved)} steps for "
                          f"{len(choices)} choices")
    try:
        path_ = replay_choices(model, init_index, choices)
    except KmcError as e:
        raise ReplayError(f"{path}: the trace of {prop} does not replay ({e}): the model "
                          "changed since it was saved, or the file was edited") from None
    for i, (step, want) in enumerate(zip(path_.steps, saved), 1):
        same = isinstance(want, dict) and want.get("state") == state_to_dict(model, step.state) \
            and want.get("action") == action_to_dict(model, step.action)
        if not same:
            raise ReplayError(f"{path}: the trace of {prop} does not replay: state {i} differs "
                              "from the saved one (the model changed since it was saved, or "
                              "the file was edited)")
    kind = entry.get("kind", "always")
    if kind not in ("always", "step"):
        raise ReplayError(f"{path}: the violation of {prop} has an unknown kind {kind!r}")
    _check_still_violated(path, model, prop, kind, path_)
    return model, Violation(prop, kind, str(entry.get("explanation", "")), path_)


def _check_still_violated(path, model, prop, kind, path_):
    """Refuse a trace whose last state (or step) does not violate the property it is
    saved for: the states replay, but showing it as a counterexample would be a lie."""
    from invariants import BY_NAME

    p = BY_NAME.get(prop)
    if p is None:
        raise ReplayError(f"{path}: the violation names an unknown property {prop!r} "
                          f"(known: {', '.join(BY_NAME)})")
    if p.kind != kind:
        raise ReplayError(f"{path}: the violation of {prop} is saved as kind {kind!r}, "
                          f"but {prop} is a property of kind {p.kind!r}")
    last = path_.steps[-1]
    if kind == "always":
        why = p.check(model, last.state)
    elif len(path_.steps) < 2:
        why = None
    else:
        why = p.check(model, path_.steps[-2].state, last.action, last.state)
    if why is None:
        raise ReplayError(f"{path}: the trace of {prop} replays, but its last "
                          f"{'state' if kind == 'always' else 'step'} does not violate {prop} "
                          "(the property changed since it was saved, or the file was edited)")


def replay_document(doc, model, violation) -> dict:
    """``kmc replay --format json``: the replayed trace as a versioned document,
    readable by ``kmc replay`` again."""
    from reports.json_result import trace_to_dict

    return {
        "schema_version": 1,
        "property": violation.property,
        "kind": violation.kind,
        "explanation": violation.explanation,
        "spec": doc.get("spec") if isinstance(doc.get("spec"), dict) else {"model": model.config.as_dict()},
        "trace": trace_to_dict(model, violation.path),
    }


def run(args, out, err) -> int:
    doc = load_document(args.file)
    model, violation = replay(args.file, doc, args.invariant)
    if args.diff and args.format != "rich":
        raise UsageError("--diff: only with --format rich")
    if args.format == "json":
        out.out(json.dumps(replay_document(doc, model, violation), indent=2, ensure_ascii=False),
                highlight=False)
    elif args.format == "tla":
        from reports.tla import violation_text

        stats = doc.get("stats") if isinstance(doc.get("stats"), dict) else None
        if stats is not None and not all(k in stats for k in ("states_generated", "distinct_states", "depth")):
            stats = None
        out.out(violation_text(model, violation, stats), highlight=False, end="")
    else:
        from reports import TraceView

        out.print(f"{args.file}: {violation.property}, {len(violation.path)} states; "
                  "the replay matches the saved trace.", markup=False, highlight=False, soft_wrap=True)
        out.print(TraceView(model, violation, diff=args.diff))
    return 0
