"""A counterexample as one self-contained HTML page: a header (the spec's title, its
configuration and the run's counts), then for each violation the swimlane diagram
(``render.svg``, inline), the violated property and the steps in words.

Everything is inline: the CSS in a ``<style>`` element, the SVG in the page, no script, no
font, no image, no link to anything outside the file, so it opens offline and can be sent
as an attachment. It prints in landscape, one diagram per page.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from kmc.checker.base.text import xml_text

from . import svg
from .diagram import MARKER, cycle_text

if TYPE_CHECKING:
    from .diagram import Diagram

CSS = """
:root { color-scheme: light; }
body { font-family: Helvetica, Arial, 'DejaVu Sans', sans-serif; color: #1a1a1a; margin: 8px;
       background: #fff; font-size: 14px; }
header h1 { font-size: 20px; margin: 4px 0; }
header .path { font-family: Menlo, Consolas, 'DejaVu Sans Mono', monospace; color: #555; margin: 0; }
header .description { color: #444; font-style: italic; max-width: 1180px; margin: 6px 0; }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: 2px 14px; margin: 8px 0;
           font-size: 13px; }
dl.facts dt { color: #666; }
dl.facts dd { margin: 0; }
section.trace { margin: 18px 0 8px; }
section.trace h2 { font-size: 17px; color: #b71c1c; margin: 6px 0; }
section.trace h2.trap { color: #e65100; }
.scroll { overflow-x: auto; }
.scroll svg { display: block; }
p.note { color: #555; max-width: 1230px; }
ol.steps { font-size: 13px; max-width: 1230px; padding-left: 28px; overflow-wrap: anywhere; }
header .path, header h1, dl.facts dd, footer, p.note { overflow-wrap: anywhere; }
ol.steps li { margin: 2px 0; }
ol.steps code { font-weight: bold; }
ol.steps .desc { color: #444; }
ol.steps li.last { color: #b71c1c; }
ol.steps li.cycle, ol.steps span.cycle { color: #b71c1c; }
section.coverage table { border-collapse: collapse; font-size: 13px; margin: 6px 0; }
section.coverage th, section.coverage td { text-align: left; padding: 1px 10px 1px 0; vertical-align: top; }
section.coverage td.n { text-align: right; font-variant-numeric: tabular-nums; }
section.coverage tr.never td:first-child, section.coverage li { color: #b26a00; }
table.steps, table.verdicts { border-collapse: collapse; font-size: 13px; margin: 6px 0; max-width: 1230px; }
table.steps th, table.steps td, table.verdicts th, table.verdicts td { text-align: left; padding: 2px 12px 2px 0;
  vertical-align: top; overflow-wrap: anywhere; }
table.steps th, table.verdicts th { color: #666; font-weight: normal; border-bottom: 1px solid #ccc; }
table.steps td.n { text-align: right; color: #666; font-variant-numeric: tabular-nums; }
table.steps td.action { font-weight: bold; font-family: Menlo, Consolas, 'DejaVu Sans Mono', monospace; }
table.steps td.state { font-family: Menlo, Consolas, 'DejaVu Sans Mono', monospace; }
table.steps tr.last td { color: #b71c1c; }
table.steps tr.cycle td { background: #fdecea; }
table.steps span.cycle { color: #b71c1c; font-weight: bold; }
table.verdicts td.violated { color: #b71c1c; font-weight: bold; }
table.verdicts td.holds { color: #2e7d32; }
footer { color: #777; font-size: 12px; margin-top: 16px; }
@media print {
  @page { size: A4 landscape; margin: 8mm; }
  body { margin: 0; font-size: 11px; }
  .scroll { overflow: visible; }
  .scroll svg { width: 100%; height: auto; print-color-adjust: exact; -webkit-print-color-adjust: exact; }
  dl.facts { grid-template-columns: max-content 1fr max-content 1fr; }
  section.trace { break-before: page; }
  section.trace:first-of-type { break-before: auto; }
  ol.steps { break-inside: auto; }
}
"""


_x = xml_text


def page(
    diagrams: Sequence[Diagram],
    *,
    title: str = "",
    path: str | None = None,
    description: str = "",
    config: Iterable[tuple[str, str]] = (),
    counts: Iterable[tuple[str, str]] = (),
    verdicts: Iterable[tuple[str, str]] = (),
    command: str = "",
    empty: str = "",
    coverage: dict[str, Any] | None = None,
) -> str:
    """The whole HTML document.

    Args:
        diagrams: ``render.diagram.Diagram`` values, one section each.
        title: the spec's title (else a generic one).
        path: the spec's (or the saved result's) file name.
        description: the spec's description.
        config: ``(label, value)`` pairs of the configuration.
        counts: ``(label, value)`` pairs of the run's counts.
        verdicts: ``(property, verdict)`` pairs.
        command: the command that made the page (shown in the footer).
        empty: what to say when ``diagrams`` is empty.
        coverage: the run's coverage (``render.coverage.coverage_to_dict``), a section
            after the diagrams.
    """
    heading = title or "kmc counterexample"
    parts = head(heading)
    if path:
        parts.append(f'<p class="path">{_x(path)}</p>')
    if description.strip():
        parts.append(f'<p class="description">{_x(" ".join(description.split()))}</p>')
    facts = list(config) + list(counts)
    if verdicts:
        facts.append(("verdicts", ", ".join(f"{n} {v}" for n, v in verdicts)))
    if facts:
        parts.append('<dl class="facts">' + "".join(f"<dt>{_x(k)}</dt><dd>{_x(v)}</dd>" for k, v in facts) + "</dl>")
    parts.append("</header>")
    if not diagrams:
        parts.append(f'<p class="note">{_x(empty or "No counterexample.")}</p>')
    for d in diagrams:
        parts.append(_section(d))
    if coverage:
        parts.append(_coverage(coverage))
    parts += foot(command, " Colours: leader epochs, as in the terminal.")
    return "\n".join(parts) + "\n"


def head(heading: str) -> list[str]:
    """The lines of every page kmc writes up to its header's title (``heading``): the
    first lines name kmc (``app.outputs`` knows its pages by them), then the style."""
    return [
        "<!DOCTYPE html>",
        '<html lang="en">',
        "<head>",
        '<meta charset="utf-8">',
        f"<!-- {MARKER} -->",
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{_x(heading)}</title>",
        f"<style>{CSS}</style>",
        "</head>",
        "<body>",
        "<header>",
        f"<h1>{_x(heading)}</h1>",
    ]


def foot(command: str, note: str = "") -> list[str]:
    """The last lines of every page: the kmc version and the command that made it."""
    from kmc.checker import __version__

    made = f"Made by kmc {__version__}" + (f": <code>{_x(command)}</code>" if command else "") + "."
    return [f"<footer>{made}{note}</footer>", "</body>", "</html>"]


def _section(d: Diagram) -> str:
    trap = d.kind == "possibly"
    what = "trace to an availability trap" if trap else "counterexample"
    if d.loop is not None:  # a liveness property's lasso: a path, then its cycle or its stuttering state
        what = "lasso" if d.stutters else f"lasso (a cycle from State {d.loop + 1})"
    out = [
        f'<section class="trace" data-property="{_x(d.property)}">',
        f'<h2 class="{"trap" if trap else "violation"}">✗ {_x(d.property)}: '
        f"a {_x(what)} of {len(d.columns)} states</h2>",
        '<div class="scroll">',
        svg.render(d, standalone=False),
        "</div>",
        '<ol class="steps">',
    ]
    last = len(d.columns) - 1
    for i, col in enumerate(d.columns):
        cls = ' class="last"' if i == last else ' class="cycle"' if d.loop is not None and i >= d.loop else ""
        back = f' <span class="cycle">↺ {_x(cycle_text(d))}</span>' if d.lasso and i == last else ""
        out.append(f'<li{cls}><code>{_x(col.action)}</code> <span class="desc">{_x(col.description)}</span>{back}</li>')
    out.append("</ol>")
    out.append("</section>")
    return "\n".join(out)


def _coverage(doc: dict[str, Any]) -> str:
    out = [
        '<section class="coverage">',
        "<h2>Coverage</h2>",
        "<table><tr><th>action</th><th>enabled in</th><th>fired</th><th>new states</th><th>kinds fired</th></tr>",
    ]
    for name, a in doc["actions"].items():
        kinds = ", ".join(f"{k} {n:,}" for k, n in a.get("kinds", {}).items())
        cls = ' class="never"' if not a["fired"] else ""
        out.append(
            f'<tr{cls}><td>{_x(name)}</td><td class="n">{a["enabled"]:,}</td><td class="n">'
            f'{a["fired"]:,}</td><td class="n">{a["new"]:,}</td><td>{_x(kinds)}</td></tr>'
        )
    out.append("</table>")
    if doc["warnings"]:
        out.append("<ul>" + "".join(f"<li>{_x(w)}</li>" for w in doc["warnings"]) + "</ul>")
    out.append("<table><tr><th>variable</th><th>distinct</th><th>values</th></tr>")
    for var, v in doc["variables"].items():
        out.append(
            f'<tr><td>{_x(var)}</td><td class="n">{v["distinct"]}</td><td>{_x(", ".join(v["values"]))}</td></tr>'
        )
    out += ["</table>", "</section>"]
    return "\n".join(out)


def write_text(path: str | os.PathLike[str], text: str, *, exclusive: bool = False) -> None:
    """Write ``text`` to ``path`` (UTF-8; what cannot be encoded as its backslash escape)
    whole (``checker.base.files.write_file``: an interrupted write leaves the old file whole;
    a destination that is not a regular file, ``/dev/stdout``, is written to directly).

    Args:
        exclusive: fail rather than replace a file at ``path`` (one that appeared since
            the path was checked).

    Raises:
        OSError: the write fails (the temporary file is removed), or ``exclusive`` and a
            file is there.
    """
    from kmc.checker.base.files import write_file

    write_file(path, text.encode("utf-8", "backslashreplace"), exclusive=exclusive)
