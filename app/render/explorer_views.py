"""How ``kmc explore`` draws a state (``render.explorer``): ``KafkaView``, the per-replica
table of the terminal (``render.state_view``) and the swimlane of the walk
(``render.diagram``/``render.svg``), or ``GenericView``, any model's fields."""

from __future__ import annotations

import io
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from kmc.checker.contract.protocol import with_defaults

if TYPE_CHECKING:  # for the annotations only
    from kmc.checker.core.result import Path, Violation
    from rich.console import RenderableType

MAX_DIAGRAM_STATES = 60  # a longer walk is shown without its swimlane (a page-wide picture)


def html_of(renderable: RenderableType, width: int = 110) -> str:
    """``renderable`` as the HTML of a ``<pre class="state">`` block, its colours inline."""
    from rich.console import Console

    console = Console(record=True, width=width, file=io.StringIO(), color_system="truecolor", force_terminal=True)
    console.print(renderable)
    return console.export_html(inline_styles=True, code_format='<pre class="state">{code}</pre>')


class GenericView:
    """Any model's state: its fields (``checker.core.coverage.generic_values``), no diagram."""

    def __init__(self, model: Any) -> None:
        self.model = with_defaults(model)

    def state_html(self, state: Any, previous: Any = None) -> str:
        from html import escape

        from kmc.checker.core.coverage import generic_values

        before = dict(generic_values(previous)) if previous is not None else {}
        rows = []
        for name, value in generic_values(state):
            changed = previous is not None and before.get(name) != value
            cls = ' class="changed"' if changed else ""
            rows.append(f"<tr{cls}><th>{escape(str(name))}</th><td>{escape(repr(value))}</td></tr>")
        # the model's own words first (its format_state), its fields below
        line = escape(self.model.format_state(state))
        changes = sum('class="changed"' in r for r in rows)
        changed_note = f" ({changes} changed by the last step)" if changes else ""
        return (
            f'<p class="state-line">{line}</p>'
            f'<details class="fields"><summary>its fields{changed_note}</summary>'
            '<table class="fields">' + "".join(rows) + "</table></details>"
        )

    def diagram_svg(
        self, path: Path, violated: dict[str, Any] | None, lasso: Violation | None = None, pending: Sequence[str] = ()
    ) -> str | None:
        return None

    def initial_label(self, state: Any) -> str:
        return self.model.format_state(state)


class KafkaView:
    """A Kafka state as ``kmc check`` draws it: the per-replica table (changed values
    highlighted) and the swimlane diagram of the walk so far."""

    def __init__(self, model: Any) -> None:
        self.model: Any = with_defaults(model)  # a KafkaModel: its config names the replicas

    def state_html(self, state: Any, previous: Any = None) -> str:
        from .state_view import StateView

        return html_of(StateView(self.model, state, previous))

    def initial_label(self, state: Any) -> str:
        from kmc.model.state import leader_of

        lead = leader_of(state)
        names = self.model.config.replicas
        return "no leader" if lead is None else f"{names[lead]} leads at epoch {state.replicas[lead].epoch}"

    def diagram_svg(
        self, path: Path, violated: dict[str, Any] | None, lasso: Violation | None = None, pending: Sequence[str] = ()
    ) -> str | None:
        """The swimlane of ``path``: a lasso walked to its end (``lasso``, a liveness
        ``Violation``) framed as ``kmc check --html`` frames it, else the first violated
        property's (``violated``), else a path whose last state violates nothing, with the
        liveness properties still ``pending`` there named."""
        if len(path.steps) > MAX_DIAGRAM_STATES:
            return None
        from . import svg
        from .diagram import build_path

        if lasso is not None:
            d = build_path(
                self.model,
                path,
                lasso.property,
                lasso.kind,
                lasso.explanation,
                loop=lasso.loop,
                obligation=lasso.obligation,
            )
        elif violated is None:
            note = ""
            if pending:
                names = ", ".join(pending)
                note = (
                    f"no state or step property is violated here; {names} "
                    f"{'waits' if len(pending) == 1 else 'wait'}: decided over whole behaviours (the search's verdict)"
                )
            d = build_path(self.model, path, explanation=note)
        else:
            d = build_path(self.model, path, violated["name"], violated["kind"], violated["reason"])
        return svg.render(d, standalone=False)
