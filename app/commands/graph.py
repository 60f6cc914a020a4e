"""``kmc graph SPEC --out FILE``: export the whole reachable state graph of a spec.

The graph is built by ``checker.graph.export`` (generic); this command supplies the Kafka
model's texts: a one-line summary of every state as the node label, and the action's
text (``Crash(B, keeps 1)``) as the edge label.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterable
from typing import TYPE_CHECKING

from kmc.checker.base.errors import UsageError
from kmc.checker.base.text import safe_text

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
    from kmc.model.kafka import KafkaModel
    from kmc.model.state import Record, State
    from rich.console import Console


def register(p: argparse.ArgumentParser) -> None:
    from kmc.checker.graph.export import DEFAULT_MAX_STATES

    p.description = (
        "Explore every reachable state of a spec and write the state graph: one node "
        "per distinct state (key: its fingerprint; label: a one-line summary, records written "
        "as in traces, 0:e0·r0; attributes initial, depth, terminal (no action is enabled in "
        "it), violates) and one edge per transition (label: the action). "
        "The format follows FILE's suffix: .dot (Graphviz), .graphml, .gexf (Gephi)."
    )
    p.epilog = (
        "Exit codes: 0 the graph was written (states that violate an invariant are "
        "marked in it, not an error), 2 bad input: a spec, an option, an unwritable FILE, or "
        "more than --max-states states."
    )
    add_spec_argument(p)
    add_kafka_arguments(p)
    p.add_argument("--out", metavar="FILE", required=True, help="the file to write: .dot, .graphml or .gexf")
    add_force_argument(p)
    p.add_argument(
        "--max-states",
        type=positive_int,
        default=DEFAULT_MAX_STATES,
        metavar="N",
        help=f"refuse specs with more than N reachable states (default {DEFAULT_MAX_STATES:,})",
    )
    p.add_argument(
        "--invariant",
        action="append",
        metavar="NAME",
        dest="invariants",
        help="mark violations of this invariant only (repeatable; default: the spec's list)",
    )
    p.set_defaults(run=run)


def _records(log: Iterable[Record]) -> str:
    """``0:e0·r0,1:e0·r1``: offset, epoch and record number, as traces write a record."""
    return ",".join(f"{offset}:e{epoch}·r{rid}" for offset, (epoch, rid) in enumerate(log)) or "-"


def state_label(model: KafkaModel, state: State) -> str:
    """A one-line summary of a Kafka model state, e.g.
    ``A* 0:e0·r0,1:e0·r1 hw2 e1 | B! 0:e0·r0 hw1 e0 | ctl A e1 isr A,B | c1``.

    Per replica: its name, ``*`` if it leads, ``!`` if it is down, ``?`` if it restarted
    and has not yet learnt the epoch; its log (``offset:e<epoch>·r<record>`` per record, as
    traces write it); ``hw``; ``e`` its
    epoch; ``>o:n`` a fetch response in flight (start offset, record count), or ``>div eE@O``
    a diverging answer of the fetch path (``!`` once KAFKA-14704's follower took its HW). Then the
    controller's leader, epoch and ISR, and the ghost counters: ``p`` records produced,
    ``c`` crashes, ``k`` records committed (only those that are not 0).
    """
    from kmc.model.state import leads

    parts = []
    for r, rep in enumerate(state.replicas):
        mark = "*" if leads(state, r) else "!" if not rep.alive else "?" if rep.epoch < 0 else ""
        text = f"{model.name(r)}{mark} {_records(rep.log)} hw{rep.hw} e{rep.epoch}"
        f = rep.inflight
        if f is not None and f.diverging is not None:  # the fetch path's answer: epoch and end offset
            text += f" >div e{f.diverging}@{f.start}{'!' if f.applied else ''}"
        elif f is not None:
            text += f" >{f.start}:{len(f.records)}"
        parts.append(text)
    q = state.quorum
    parts.append(f"ctl {model.name(q.leader)} e{q.epoch} isr {','.join(model.name(r) for r in q.isr) or '-'}")
    ghosts = [f"{k}{v}" for k, v in (("p", state.produced), ("c", state.crashes), ("k", len(state.committed))) if v]
    if ghosts:
        parts.append(" ".join(ghosts))
    return " | ".join(parts)


def run(args: argparse.Namespace, out: Console, err: Console) -> int:
    from pathlib import Path

    from kmc.checker.graph.export import FORMATS, GraphTooLarge, write_graph
    from kmc.checker.local.state_graph import state_graph

    from ..outputs import check_output_path, exclusive

    suffix = Path(args.out).suffix.lower()
    if suffix not in FORMATS:
        raise UsageError(
            f"--out: {args.out}: unknown graph format {suffix or '(no suffix)'!r} (use one of {', '.join(FORMATS)})"
        )
    spec = load(args.spec, kafka_override(args))
    check_output_path("--out", args.out, protected=[spec.path], force=args.force, kind="graph")
    model = spec.model()
    properties = select_properties(spec, args.invariants)
    try:
        g = state_graph(
            model,
            properties,
            max_states=args.max_states,
            label=lambda s: state_label(model, s),
            action_text=model.format_action,
        )
    except GraphTooLarge as e:
        raise GraphTooLarge(f"{args.spec}: {e}") from None
    try:
        write_graph(g, args.out, exclusive=exclusive(args.out))
    except OSError as e:
        raise UsageError(f"--out: cannot write the graph to {args.out} ({e.strerror or e})") from None
    bad = sum(1 for _, d in g.nodes(data=True) if d["violates"])
    out.print(
        f"wrote {safe_text(args.out)}: {g.number_of_nodes():,} states, {g.number_of_edges():,} "
        f"transitions, {bad:,} states violating an invariant",
        markup=False,
        highlight=False,
        soft_wrap=True,
    )
    return 0
