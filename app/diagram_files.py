"""The options that write counterexample pictures (``--html``, ``--mermaid``): adding them
to a subcommand, checking their files before a run starts (``outputs.check_output_path``),
and writing them after it."""

from __future__ import annotations

import os

from kmc.checker.base.errors import UsageError
from kmc.checker.base.text import display_path, safe_text

from .outputs import check_output_path, exclusive


def add_diagram_arguments(parser) -> None:
    parser.add_argument(
        "--html",
        metavar="FILE",
        help="also write the counterexamples as one self-contained HTML page (swimlane diagrams)",
    )
    parser.add_argument(
        "--mermaid", metavar="FILE", help="also write the shortest counterexample as a Mermaid sequenceDiagram"
    )


def check_diagram_paths(args, protected) -> None:
    """Refuse, before the run, a ``--html`` or ``--mermaid`` file that could not or must
    not be written, or two outputs that name one file."""
    outputs = [(o, p) for o, p in (("--json", args.json), ("--html", args.html), ("--mermaid", args.mermaid)) if p]
    for i, (option, path) in enumerate(outputs):
        for other, earlier in outputs[:i]:
            if same_destination(path, earlier):
                raise UsageError(f"{option}: {path} is also the {other} file ({earlier}); choose another file")
    for option in ("--html", "--mermaid"):
        check_output_path(option, vars(args)[option[2:]], protected=protected, force=args.force, kind="diagram")


def same_destination(a, b) -> bool:
    """True when the output paths ``a`` and ``b`` would write one file: the same path once
    symbolic links are resolved, or one existing file under two names (a hard link)."""
    if os.path.realpath(a) == os.path.realpath(b):
        return True
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def write_diagrams(args, err, html, mermaid) -> bool:
    """Write ``--html`` and ``--mermaid`` (``html()`` and ``mermaid()`` make their text);
    a failed write is one line on ``err``. Returns False when a write failed."""
    from kmc.app.render.pictures import write_text

    ok = True
    for option, path, make in (("--html", args.html, html), ("--mermaid", args.mermaid, mermaid)):
        if not path:
            continue
        try:
            write_text(path, make(), exclusive=exclusive(path))
        except OSError as e:
            err.print(
                f"kmc: error: {option}: cannot write {safe_text(path)} ({e.strerror or e})",
                markup=False,
                highlight=False,
                soft_wrap=True,
            )
            ok = False
        else:
            err.print(f"kmc: wrote {safe_text(path)}", markup=False, highlight=False, soft_wrap=True)
    return ok


def command_line(args, words=None) -> str:
    """The command that made a page (its footer): the command line as the user typed it
    (every option kept; paths as given), or ``kmc`` and ``words`` when there is none."""
    import shlex

    argv = args.argv
    return "kmc " + shlex.join([display_path(w) for w in (argv if argv is not None else words or [])])
