"""``kmc invariants``: list the properties kmc can check."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # for the annotations only
    from rich.console import Console


def register(p: argparse.ArgumentParser) -> None:
    p.description = (
        "List the properties kmc can check, with what each says, then the Kafka model's covers "
        "(the scenarios a spec's [check] covers may require to be reached)."
    )
    p.set_defaults(run=run)


def run(args: argparse.Namespace, out: Console, err: Console) -> int:
    from kmc.invariants import EVERY
    from kmc.invariants.covers import COVERS, STEP_COVERS
    from rich.table import Table
    from rich.text import Text

    table = Table("name", "kind", "what it says", box=None)
    for p in EVERY:
        table.add_row(p.name, p.kind, p.description)
    out.print(table)
    out.print(
        Text(
            "\nCovers: scenarios a spec may require to be reached ([check] covers = [...]); each is "
            'answered with a shortest witness, or "never reached" (exit 1). A "cover" is a state the '
            'witness ends in, a "step-cover" a step it ends with.\n'
        )
    )
    covers = Table("name", "kind", "the scenario", box=None)
    for p in COVERS + STEP_COVERS:
        covers.add_row(p.name, p.kind, p.description)
    out.print(covers)
    return 0
