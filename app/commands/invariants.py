"""``kmc invariants``: list the properties kmc can check."""

from __future__ import annotations


def register(sub) -> None:
    p = sub.add_parser(
        "invariants",
        help="list the properties kmc can check",
        description="List the properties kmc can check, with what each says.",
    )
    p.set_defaults(run=run)


def run(args, out, err) -> int:
    from kmc.invariants import EVERY
    from rich.table import Table

    table = Table("name", "kind", "what it says", box=None)
    for p in EVERY:
        table.add_row(p.name, p.kind, p.description)
    out.print(table)
    return 0
