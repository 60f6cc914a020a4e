"""``kmc matrix --atlas --out DIR``: the durability × availability atlas.

Runs every cell of ``render.atlas`` (setting × Kafka version) with every safety property its
configuration checks by default (CommittedNeverLost, AcknowledgedNeverLost, and the others:
``render.atlas.properties_of``) and PartitionRecoverable, exploring every reachable state, and writes DIR/ATLAS.md and
DIR/atlas.json. Like every kmc output, an existing file is replaced only when kmc wrote it
(or with ``--force``), and that is checked before the first cell runs.
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kmc.checker.base.errors import UsageError

if TYPE_CHECKING:  # for the annotations only
    from rich.console import Console


def run_cell(item: tuple[str, str, int | None]) -> dict[str, Any]:
    """``(row, policy, max_states)`` -> a cell dict (a module-level function of plain values,
    so that ``--jobs`` can run it in another process)."""
    from kmc.app.render.atlas import cell_of, config_of, properties_of
    from kmc.app.render.json_result import result_to_dict
    from kmc.checker.engines import make_engine
    from kmc.checker.local.states import Options
    from kmc.model.kafka import KafkaModel

    row, policy, max_states = item
    model = KafkaModel(config_of(row, policy))
    props = list(properties_of(row, policy))
    options = Options(keep_going=True, max_states=max_states)
    engine = make_engine(model, props, options)  # the local engine's batch path
    result = engine.run()
    cell = cell_of(row, policy, result)
    # Each counterexample as the JSON trace `kmc check --json` writes (one violation a file):
    # run_atlas writes it, and its diagram, next to ATLAS.md; it is not part of atlas.json.
    full = result_to_dict(None, model, result)
    cell["trace_docs"] = {v["property"]: dict(full, violations=[v]) for v in full["violations"]}
    return cell


def cells(
    rows: Iterable[str] | None = None,
    policies: Iterable[str] | None = None,
    max_states: int | None = None,
    jobs: int = 1,
) -> Iterator[dict[str, Any]]:
    """Yield the cell dicts of ``rows`` × ``policies`` (default: all), row-major."""
    from kmc.app.render.atlas import POLICIES, ROWS

    items = [(r, p, max_states) for r in (rows or ROWS) for p in (policies or POLICIES)]
    if jobs <= 1 or len(items) <= 1:
        for item in items:
            yield run_cell(item)
        return
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(max_workers=jobs) as pool:
        yield from pool.map(run_cell, items)


def check_atlas_outputs(out_dir: str | os.PathLike[str], force: bool = False) -> None:
    """Refuse, before any cell runs, to write over an ATLAS.md or atlas.json kmc did not write.

    Raises:
        UsageError: naming ``--out`` and the file.
    """
    from kmc.app.render.atlas import is_atlas_markdown

    from ..outputs import check_output_path

    out_dir = Path(out_dir)
    if out_dir.exists() and not out_dir.is_dir():
        raise UsageError(f"--out: {out_dir} is not a directory")
    if not out_dir.is_dir():
        return  # created later; nothing in it to protect
    check_output_path("--out", str(out_dir / "atlas.json"), force=force, kind="json")
    traces = out_dir / "traces"
    if traces.exists() and not traces.is_dir():
        raise UsageError(f"--out: cannot create the directory {traces} (a file of that name exists)")
    if traces.is_dir():  # the cells' traces and diagrams from an earlier atlas
        for path in sorted([*traces.glob("atlas-*.json"), *traces.glob("atlas-*.html")]):
            check_output_path("--out", str(path), force=force, kind="json" if path.suffix == ".json" else "diagram")
    md = out_dir / "ATLAS.md"
    if md.exists():
        if not md.is_file():
            raise UsageError(f"--out: {md} is not a regular file; kmc writes its output to regular files only")
        if not force and not is_atlas_markdown(md):
            raise UsageError(
                f"--out: {md} exists and is not an atlas kmc wrote; "
                "choose another directory, or pass --force to replace it"
            )


def write_traces(out_dir: str | os.PathLike[str], cell_list: Iterable[dict[str, Any]]) -> None:
    """Write every cell's counterexamples (``trace_docs``, taken out of the cells) as JSON
    traces with their HTML diagrams under DIR/traces/, and remove the atlas traces an earlier
    run left that this one did not write (only files kmc wrote)."""
    from kmc.app.render.atlas import POLICIES, ROWS, trace_path
    from kmc.app.render.json_result import write_json
    from kmc.app.render.pictures import trace_page, write_text

    from ..outputs import is_kmc_output

    out_dir = Path(out_dir)
    written = set()
    try:
        for cell in cell_list:
            docs = cell.pop("trace_docs", {})
            title = f"{ROWS[cell['row']][0]}; {POLICIES[cell['policy']][0]}"
            for prop, doc in docs.items():
                rel = trace_path(cell["row"], cell["policy"], prop)
                path = out_dir / rel
                path.parent.mkdir(parents=True, exist_ok=True)
                write_json(path, doc)
                page = path.with_suffix(".html")
                write_text(page, trace_page(doc, rel, title))
                written |= {path.name, page.name}
        traces = out_dir / "traces"
        if traces.is_dir():
            for path in [*traces.glob("atlas-*.json"), *traces.glob("atlas-*.html")]:
                kind = "json" if path.suffix == ".json" else "diagram"
                if path.name not in written and is_kmc_output(path, kind):
                    path.unlink()
    except OSError as e:
        raise UsageError(f"--out: cannot write into {out_dir} ({e.strerror or e})") from None


def write_atlas(
    out_dir: str | os.PathLike[str], cell_list: list[dict[str, Any]], *, command: str, total_seconds: float
) -> dict[str, Any]:
    """Write DIR/atlas.json and DIR/ATLAS.md (and the cells' traces, when they carry them);
    return the document."""
    from kmc.app.render.atlas import atlas_document, to_markdown
    from kmc.app.render.json_result import write_json

    out_dir = Path(out_dir)
    write_traces(out_dir, cell_list)
    doc = atlas_document(cell_list, command=command, total_seconds=total_seconds)
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        write_json(out_dir / "atlas.json", doc)
        tmp = out_dir / ".ATLAS.md.tmp"
        tmp.write_text(to_markdown(doc), encoding="utf-8")
        os.replace(tmp, out_dir / "ATLAS.md")
    except OSError as e:
        raise UsageError(f"--out: cannot write into {out_dir} ({e.strerror or e})") from None
    return doc


def run_atlas(args: argparse.Namespace, out: Console, err: Console) -> int:
    """The ``--atlas`` branch of ``kmc matrix``."""
    from kmc.checker.base.exitcodes import EXIT_OK, EXIT_UNEXPECTED

    if args.versions or args.spec_dir is not None:
        raise UsageError("--atlas: cannot be combined with --versions or SPEC_DIR")
    check_atlas_outputs(args.out, force=args.force)
    started = time.perf_counter()
    done = []
    from kmc.app.render.atlas import POLICIES, ROWS, cell_text

    total = len(ROWS) * len(POLICIES)
    for i, cell in enumerate(cells(max_states=args.max_states, jobs=args.jobs), 1):
        done.append(cell)
        err.print(
            f"[{i:>2}/{total}] {cell['row']} {cell['policy']}: {cell_text(cell)} "
            f"({cell['distinct_states']:,} states, {cell['seconds']:.1f} s)",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )
    elapsed = time.perf_counter() - started
    write_atlas(args.out, done, command=f"kmc matrix --atlas --out {args.out}", total_seconds=elapsed)
    out.print(
        f"{len(done)} cells in {elapsed:.1f} s: wrote {Path(args.out) / 'ATLAS.md'} and "
        f"{Path(args.out) / 'atlas.json'}",
        markup=False,
        highlight=False,
        soft_wrap=True,
    )
    unexpected = [f"{c['row']} {c['policy']}" for c in done if c["matched"] is False]
    if unexpected:
        out.print(
            f"cells that do not match the known verdicts: {', '.join(unexpected)}",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )
        return EXIT_UNEXPECTED
    return EXIT_OK
