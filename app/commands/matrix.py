"""``kmc matrix [SPEC_DIR] --out DIR``: check a grid of configurations, write a results table.

Without SPEC_DIR the grid is truncation rule × replicas × min.insync.replicas × unclean
election × unflushed loss; with it, every ``*.toml`` spec in the directory. Every row
runs the local engine with every safety property its configuration checks by default
(``invariants.default_properties``) and keep-going, so every one gets a verdict; the
rows go to DIR/RESULTS.md and DIR/results.json (app/render/matrix.py), and each row's
shortest counterexamples to DIR/traces/<row id>-<invariant>.json, in the JSON result
format of ``kmc check --json`` that ``kmc replay`` reads.

The default grid's constants (``BASE``) are chosen so that the whole grid runs in a few
minutes on two cores: with three replicas, one crash (two crashes make a single row take
30–90 s and the grid about half an hour).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kmc.checker.base.errors import UsageError
from kmc.model.versions import (  # noqa: F401  (the versions grid's tables; imported from here by the tests)
    ALTER_PARTITION_VERSIONS,
    LAST_KNOWN_LEADER_VERSIONS,
    OPERATOR_VERSIONS,
    VERSION_CONFIGS,
    VERSIONS,
)

from ..matrix_grids import (  # noqa: F401  (the grids' tables; imported from here by the tests and reports)
    BASE,
    DEFAULT_MAX_STATES,
    FALLBACK_BASE,
    KNOWN_CONSTANTS,
    KNOWN_LIVENESS_VERDICTS,
    KNOWN_VERDICTS,
    KNOWN_VERSION_VERDICTS,
    LIVENESS_PROPERTIES,
    LIVENESS_VERSION_CONFIGS,
    RULE_ALIASES,
    RowItem,
    check_rows,
    grid,
    known_verdicts,
    liveness_grid,
    row_id,
    run_row,
    version_grid,
)
from .common import positive_int
from .matrix_rows import OPTIONS, command_line, row_items

if TYPE_CHECKING:  # for the annotations only
    from rich.console import Console


def register(p: argparse.ArgumentParser) -> None:
    p.description = (
        "Check every configuration of a grid — truncation rule × replicas × "
        "min.insync.replicas × unclean election × unflushed loss — or, given SPEC_DIR, every "
        "spec file in it, each completely and with every safety property its configuration checks by "
        "default (as kmc check: the four classic invariants, LeaderCandidateCompleteness with the 2.1 rule, "
        "the HW gate or the ELR, AcknowledgedNeverLost with acks, UncommittedNeverExposed with the fetch "
        "path). Writes DIR/RESULTS.md "
        "(a Markdown table), DIR/results.json (schema in docs/results.md) and every shortest "
        "counterexample to DIR/traces/ (read them with 'kmc replay'). Default grid constants: "
        "2 replicas: 2 messages, 2 crashes, epochs <= 2; 3 replicas: 2 messages, 1 crash, "
        "epochs <= 2."
    )
    p.epilog = (
        "Exit codes: 0 every row with an expected verdict (a spec's [expect], or "
        "docs/model.md's known-verdict table) matches it, 3 some row does not, 2 bad input."
    )
    p.add_argument(
        "spec_dir", metavar="SPEC_DIR", nargs="?", help="a directory of spec files to run instead of the grid"
    )
    p.add_argument("--out", metavar="DIR", required=True, help="where to write RESULTS.md, results.json and traces/")
    _add_version_arguments(p)
    _add_grid_arguments(p)
    _add_run_arguments(p)
    p.set_defaults(run=run, _defaults={d: p.get_default(d) for d in OPTIONS})


def _add_version_arguments(p: argparse.ArgumentParser) -> None:
    """The Kafka versions' grid instead of the default one."""
    v = p.add_argument_group("Kafka through the versions")
    v.add_argument(
        "--versions",
        action="store_true",
        help="instead of the grid: docs/model.md's configurations under each Kafka version's rule "
        "and options (pre-0.11 .. 4.1; from 2.7 also with ISR changes through the controller, "
        "AlterPartition, and from 3.5 broker epochs, as Kafka runs them), every row with every safety "
        "property its configuration checks by default, and a configuration x version table in RESULTS.md",
    )
    v.add_argument(
        "--liveness",
        action="store_true",
        help="with --versions: instead of the safety properties, EventuallyLeader and "
        "CommittedEventuallyReplicated under weak fairness of the healing actions, on the small "
        f"configurations ({', '.join(LIVENESS_VERSION_CONFIGS)} unless --configs says otherwise)",
    )
    v.add_argument(
        "--configs",
        metavar="LIST",
        default="all",
        help=f"with --versions: configurations ({', '.join(VERSION_CONFIGS)}; default all)",
    )
    v.add_argument(
        "--kafka", metavar="LIST", default="all", help=f"with --versions: versions ({', '.join(VERSIONS)}; default all)"
    )


def _add_grid_arguments(p: argparse.ArgumentParser) -> None:
    """The default grid's lists and constants."""
    g = p.add_argument_group("grid (without SPEC_DIR)")
    g.add_argument(
        "--rules",
        metavar="LIST",
        default="hw,le,kip279",
        help=f"truncation rules: {', '.join(_rule_names())} (default: hw,le,kip279)",
    )
    g.add_argument("--replicas", metavar="LIST", default="2,3", help="replica counts (default 2,3)")
    g.add_argument(
        "--min-isr",
        metavar="LIST",
        default="all",
        help="min.insync.replicas values; 'all' = 1..replicas (default), larger values are skipped",
    )
    g.add_argument("--unclean", metavar="LIST", default="off,on", help="unclean election: off,on (default both)")
    g.add_argument("--unflushed", metavar="LIST", default="off,on", help="unflushed loss: off,on (default both)")
    g.add_argument("--messages", type=int, metavar="N", help="max_messages for every row (default: per replica count)")
    g.add_argument("--crashes", type=int, metavar="N", help="max_crashes for every row (default: per replica count)")
    g.add_argument(
        "--epochs", type=int, metavar="N", help="max_leader_epoch for every row (default: per replica count)"
    )


def _add_run_arguments(p: argparse.ArgumentParser) -> None:
    """How far a row runs, how many at once, and what is written."""
    p.add_argument(
        "--max-states",
        type=positive_int,
        metavar="N",
        default=DEFAULT_MAX_STATES,
        help=f"stop a row at N distinct states; its undecided verdicts are 'unknown' (default {DEFAULT_MAX_STATES:,})",
    )
    p.add_argument(
        "--jobs",
        type=positive_int,
        metavar="N",
        default=1,
        help="rows to run at once, in separate processes (default 1; times are per row)",
    )
    p.add_argument("--title", metavar="TEXT", help="the title of RESULTS.md")
    p.add_argument(
        "--force",
        action="store_true",
        help="replace files in DIR that kmc did not write (RESULTS.md, results.json, traces/*.json)",
    )
    p.add_argument(
        "--atlas",
        action="store_true",
        help="instead: the answer page, which Kafka setting is safe and what it costs in availability "
        "(settings x every Kafka version, each cell AcknowledgedNeverLost, CommittedNeverLost, every "
        "other safety property its options check, and PartitionRecoverable, and a conclusion) "
        "in DIR/ATLAS.md and DIR/atlas.json",
    )


def _rule_names() -> list[str]:
    """Every name ``--rules`` accepts, short ones first (``RULE_ALIASES``: the parser's own table)."""
    from kmc.model.truncation import TRUNCATION_RULES

    short = [a for a in RULE_ALIASES if a not in TRUNCATION_RULES]
    return short + [r for r in TRUNCATION_RULES if r in RULE_ALIASES]


_LIVENESS_NOTE = (
    "The small configurations of the versions grid under the truncation rule and options of "
    "successive Kafka versions, each checked for EL = EventuallyLeader (the partition is never "
    "left without a leader for ever) and CER = CommittedEventuallyReplicated (every committed "
    "record comes back to every replica's log), in every behaviour that keeps taking the healing "
    "actions (weak fairness of fetches, BecomeFollower, Restart, ExpandIsr, failover elections and "
    "the controller's answer; never of Produce, Crash, ShrinkIsr or preferred elections: "
    'docs/model.md, "Liveness under fairness"). A violation is a lasso: a path, then a cycle '
    "back to one of its states, or a last state kept for ever; *at the bound* marks a lasso where "
    "only max_leader_epoch blocks an election. Where the safety columns say a record is never lost "
    "while some replica leads, EL says whether a leader comes back at all; *expected* compares a row "
    "with docs/model.md's liveness table where it has it."
)


def _default_note(source: str, constants: dict[Any, Any]) -> str:
    if source == "versions":
        return (
            "docs/model.md's configurations under the truncation rule and options of successive "
            "Kafka versions; *expected* compares a row with docs/model.md's known-verdict tables "
            "where they have it. LCC = LeaderCandidateCompleteness: every live ISR or ELR "
            "member holds every committed record. A column without AlterPartition has the leader "
            "write the ISR itself (atomically); the 2.7, 2.8.0 and 2.8.1–3.4.0 columns and the columns "
            'marked "+ AlterPartition" send ISR changes to the controller, and those marked "+ broker '
            'epochs" also fence them as Kafka 3.5+ does (KIP-903). The 2.8.0, 2.8.1–3.4.0 and "fetch '
            'path" columns truncate followers in the fetch path (2.8+), with the bugs each shipped, and '
            "also check UNE = UncommittedNeverExposed: every record below a live replica's high "
            "watermark was committed. Every column is a Kafka release of docs/model.md's table (a spec's "
            '`kafka = "X.Y.Z"`), with the keys it names set over it. The operators\' rows (a rolling restart, '
            "a min ISR change, a failed log directory) run on the columns from 3.3 on, each with the bugs "
            "its release shipped where the row's action meets them (KAFKA-15221, KAFKA-16540, KAFKA-16234), "
            "a failed directory only from 3.7 (KRaft's JBOD); their other cells are empty."
        )
    if source != "grid":
        return ""
    note = (
        "The first three rows of docs/model.md's known-verdict table are rows of this grid "
        "(2 replicas, min ISR 1); the *expected* column compares them with it. With "
        "unclean election on, CNL fails by design: a replica outside the ISR may be "
        "elected."
    )
    if 3 in constants and constants[3]["max_crashes"] < 2:
        note += (
            " Three-replica rows allow one crash only: with two, a single row takes "
            "30–90 s and the grid about half an hour on two cores. The high-watermark "
            "rule's data loss needs two crashes (a follower's, so that it truncates to a "
            "stale high watermark, and then the leader's, so that it is elected), which is "
            "why that rule holds there under clean elections and flushed logs."
        )
    return note


def run(args: argparse.Namespace, out: Console, err: Console) -> int:
    from kmc.app.render.json_result import write_json
    from kmc.app.render.matrix import results_document, to_markdown, validate
    from kmc.checker.base.exitcodes import EXIT_OK, EXIT_UNEXPECTED

    if not args.out.strip():
        raise UsageError("--out: the path is empty; name a directory")
    if args.atlas:
        from .atlas import run_atlas

        return run_atlas(args, out, err)
    items, source, constants, spec_dir = row_items(args)
    out_dir = Path(args.out)
    traces_dir = out_dir / "traces"
    _check_out_dir(out_dir, [item[0] for item in items], args.force)
    try:
        traces_dir.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise UsageError(f"--out: cannot create the directory {args.out} ({e.strerror or e})") from None
    from ..outputs import probe_folder

    probe_folder("--out", str(traces_dir))
    started = time.perf_counter()
    rows, written = _run_rows(items, args.jobs, out_dir, err)
    _remove_stale_traces(traces_dir, [r["id"] for r in rows], written)
    total = time.perf_counter() - started
    liveness = bool(args.liveness)
    title = args.title or {
        "grid": "kmc results: the default configuration grid",
        "versions": "kmc results: Kafka through the versions" + (", under fairness" if liveness else ""),
    }.get(source, f"kmc results: the specs in {spec_dir}")
    doc = results_document(
        rows=rows,
        command=command_line(args),
        title=title,
        source=source,
        invariants=_invariants(rows),
        constants=constants,
        spec_dir=spec_dir,
        max_states=args.max_states,
        total_seconds=total,
        note=_LIVENESS_NOTE if liveness else _default_note(source, constants),
    )
    problems = validate(doc)
    if problems:  # a bug in kmc, not bad input: say so plainly
        raise RuntimeError("results.json does not follow its schema: " + "; ".join(problems))
    _write(out_dir / "results.json", lambda: write_json(out_dir / "results.json", doc))
    from kmc.checker.base.files import write_file

    # a spec's undecodable file name (a lone surrogate) as its escape, as in every picture
    text = to_markdown(doc).encode("utf-8", "backslashreplace")
    _write(out_dir / "RESULTS.md", lambda: write_file(out_dir / "RESULTS.md", text))
    unexpected = [r["id"] for r in rows if r["matched"] is False]
    rows_text = "1 configuration" if len(rows) == 1 else f"{len(rows)} configurations"
    count = sum(1 for name in written if name.endswith(".json"))
    traces_text = ("1 trace" if count == 1 else f"{count} traces") + (" with their diagrams" if count else "")
    out.print(
        f"{rows_text} in {total:.1f} s: wrote {out_dir / 'RESULTS.md'}, "
        f"{out_dir / 'results.json'} and {traces_text} in {traces_dir}",
        markup=False,
        highlight=False,
        soft_wrap=True,
    )
    if unexpected:
        out.print(
            f"rows that do not match their expected verdicts (contradicted, or left undecided "
            f"by --max-states): {', '.join(unexpected)}",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )
        return EXIT_UNEXPECTED
    return EXIT_OK


def _run_rows(items: list[RowItem], jobs: int, out_dir: Path, err: Console) -> tuple[list[dict[str, Any]], set[str]]:
    """Run every row (``jobs`` at once), each row's counterexamples written to traces/ with
    their diagrams and its verdicts said in one line as it ends; ``(rows, trace file names)``."""
    from kmc.app.render.json_result import write_json
    from kmc.app.render.pictures import trace_page, write_text

    rows: list[dict[str, Any]] = []
    written: set[str] = set()
    width = len(str(len(items)))
    for i, (row, traces) in enumerate(check_rows(items, jobs), 1):
        rows.append(row)
        for name, doc in traces.items():
            path = out_dir / row["counterexamples"][name]["trace"]
            _write(path, lambda p=path, d=doc: write_json(p, d))
            written.add(path.name)
            page = path.with_suffix(".html")  # the trace's swimlane diagram, next to it
            _write(
                page,
                lambda p=page, d=doc, t=row["title"] or row["id"]: write_text(
                    p, trace_page(d, f"traces/{p.name[:-5]}.json", t)
                ),
            )
            written.add(page.name)
        bad = [n for n, v in row["verdicts"].items() if v != "holds"]
        status = "all hold" if not bad else ", ".join(f"{n} {row['verdicts'][n]}" for n in bad)
        if row["matched"] is False:
            undecided = all(
                row["verdicts"].get(n) == "unknown"
                for n in row["expected"]
                if row["verdicts"].get(n) != row["expected"][n]
            )
            status += "  [UNDECIDED: the row stopped at --max-states]" if undecided else "  [UNEXPECTED]"
        err.print(
            f"[{i:>{width}}/{len(items)}] {row['id']}: {status} "
            f"({row['distinct_states']:,} states, {row['seconds']:.1f} s)",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )
    return rows, written


def _invariants(rows: list[dict[str, Any]]) -> list[str]:
    """Every invariant some row was checked against, in the model's order."""
    from kmc.invariants import EVERY

    return [p.name for p in EVERY if any(p.name in r["verdicts"] for r in rows)]


def _write(path: Path, write: Callable[..., object]) -> None:
    try:
        write()
    except OSError as e:
        raise UsageError(f"{path}: cannot write ({e.strerror or e})") from None


def _check_out_dir(out_dir: Path, ids: list[str], force: bool) -> None:
    """Before any row runs: every file the run will write (or remove) in ``out_dir`` is
    either absent, one kmc wrote, or ``force`` allows replacing it.

    Raises:
        UsageError: naming the file, one line.
    """
    from ..outputs import check_output_path

    for part in (out_dir, out_dir / "traces"):
        if part.exists() and not part.is_dir():
            raise UsageError(f"--out: cannot create the directory {part} (a file of that name exists)")
    for name, kind in (("RESULTS.md", "results"), ("results.json", "json")):
        path = out_dir / name
        if path.exists() or path.is_symlink():
            check_output_path("--out", str(path), force=force, kind=kind)
    traces = out_dir / "traces"
    if traces.is_dir():
        for path in sorted([*traces.glob("*.json"), *traces.glob("*.html")]):
            if any(path.name.startswith(rid + "-") for rid in ids):
                kind = "json" if path.suffix == ".json" else "diagram"
                check_output_path("--out", str(path), force=force, kind=kind)


def _remove_stale_traces(traces_dir: Path, ids: list[str], written: set[str]) -> None:
    """Remove trace files left by an earlier run of these same rows (a verdict that no
    longer fails would otherwise keep a dead counterexample next to the table); only
    files kmc wrote."""
    from ..outputs import is_kmc_output

    for path in [*traces_dir.glob("*.json"), *traces_dir.glob("*.html")]:
        kind = "json" if path.suffix == ".json" else "diagram"
        if path.name in written or not is_kmc_output(path, kind):
            continue
        if any(path.name.startswith(rid + "-") for rid in ids):
            try:
                path.unlink()
            except OSError:
                pass
