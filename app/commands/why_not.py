"""``kmc why-not RESULT.json``: why an action is not enabled in a state of a saved trace,
condition by condition of its guard (``render.why_not``).

The trace is replayed as ``kmc replay`` replays it (the model rebuilt from the result's
constants, or the one ``--model`` names for a model of one's own; every state checked
against the saved one), then the model's guards are asked in state ``--step``.
"""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING

from kmc.checker.base.errors import KmcError, UsageError
from kmc.checker.base.text import safe_text

if TYPE_CHECKING:  # for the annotations only
    from rich.console import Console


def register(p: argparse.ArgumentParser) -> None:
    p.description = (
        "Replay a saved trace (kmc check --json, a matrix trace file, kmc simulate --json, kmc "
        "replay --format json) as kmc replay does, and show, in its state --step, the conditions of the "
        "guard of --action (every action without --action), each marked ✓ (holds) or ✗ (fails): an action is "
        "enabled exactly when every condition holds. A model of your own declares its guards with guards(state) "
        "(docs/writing-a-model.md); one that does not is answered 'no guard conditions declared'."
    )
    p.epilog = (
        "Exit codes: 0 answered, 2 bad input: a file that is no kmc result or no longer replays, a step "
        "the trace does not have, an action the model does not have."
    )
    p.add_argument("file", metavar="RESULT.json", help="a saved result or trace file")
    p.add_argument(
        "--step",
        type=int,
        metavar="N",
        help="the state of the trace, numbered from 1 as traces number them (default: its last state)",
    )
    p.add_argument(
        "--action",
        metavar="ACTION",
        help="the action as traces write it, e.g. 'ElectLeader(B)', or a name, 'ElectLeader' (every action of "
        "that name); default: every action of the state",
    )
    p.add_argument(
        "--invariant",
        metavar="NAME",
        help="whose counterexample, when the file holds several (default: the one kmc check names first)",
    )
    p.add_argument("--json", action="store_true", help="the answer as JSON on standard output")
    g = p.add_argument_group("the result of a model of your own (kmc check --model)")
    g.add_argument("--model", metavar="MODULE:FACTORY", help="the model the result was found on (as kmc replay)")
    g.add_argument(
        "--param", action="append", metavar="NAME=VALUE", default=[], help="a keyword argument of the factory"
    )
    p.set_defaults(run=run)


def run(args: argparse.Namespace, out: Console, err: Console) -> int:
    from kmc.app.render import generic
    from kmc.app.render.why_not import UnknownAction, answers, lines

    from .replay import replay
    from .replay_files import load_document
    from .replay_model import replay_model

    doc = load_document(args.file)
    if doc.get("schema") == generic.SCHEMA:  # a user's model (kmc check --model)
        try:
            _, model, violation = replay_model(args.file, doc, args.invariant, args.model, args.param)
        except KmcError:
            raise
        except Exception as e:  # the model's own code raised: one line, exit 2
            from ..user_model import failure

            raise failure(args.model, e) from None
    else:
        if args.model is not None or args.param:
            raise UsageError(f"--model: {args.file} is the result of a spec, not of a model of your own")
        model, violation = replay(args.file, doc, args.invariant)
    from kmc.checker.contract.protocol import with_defaults

    model = with_defaults(model)
    steps = violation.path.steps
    step = len(steps) if args.step is None else args.step
    if not 1 <= step <= len(steps):
        raise UsageError(f"--step {args.step}: the trace of {violation.property} has states 1 to {len(steps)}")
    state = steps[step - 1].state
    try:
        answer = answers(model, state, args.action)
    except UnknownAction as e:
        raise UsageError(f"--action: {e}") from None
    except KmcError:
        raise
    except Exception as e:  # a model's guards raised: one line, exit 2
        from ..user_model import failure

        raise failure(args.model or "the model", e) from None
    if args.json:
        doc_out = {"schema_version": 1, "file": args.file, "property": violation.property, "step": step, **answer}
        out.out(json.dumps(doc_out, ensure_ascii=False, indent=2), highlight=False)
        return 0
    where = f"state {step}"
    out.print(
        safe_text(f"{args.file}: the counterexample of {violation.property}, state {step} of {len(steps)}"),
        markup=False,
        highlight=False,
        soft_wrap=True,
    )
    for line in lines(answer, where):
        out.print(safe_text(line), markup=False, highlight=False, soft_wrap=True)
    return 0
