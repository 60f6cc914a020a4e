"""The terminal face of a counterexample, drawn with rich through ``__rich_console__`` (the
engines never import rich).

``TraceView`` shows one counterexample the way TLC numbers it (``State 1: initial``,
``State 2: Produce(A)``, ...), each step headed by the action's text and the model's
sentence for what it did (``checker.contract.protocol.format_action`` and ``describe_step``), each
state a ``render.state_view.StateView`` (or its ``diff_lines``). The whole run's view is
``render.result_view``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING

from rich.console import Console, ConsoleOptions, Group, RenderResult
from rich.padding import Padding
from rich.panel import Panel
from rich.rule import Rule
from rich.text import Text

from .counterexample import lasso_mark, lasso_summary
from .state_view import (
    CHANGED,
    CHANGED_MARK,
    COLUMNS,
    DIM,
    EPOCH_STYLES,
    UNCLEAN_NOTE,
    StateView,
    column_widths,
    diff_lines,
    no_colour,
    record_text,
    table_layout,
)

if TYPE_CHECKING:
    from kmc.checker.core.result import Step, Violation
    from kmc.model.kafka import KafkaModel

__all__ = [
    "COLUMNS",
    "EPOCH_STYLES",
    "StateView",
    "TraceView",
    "UNCLEAN_NOTE",
    "column_widths",
    "diff_lines",
    "table_layout",
    "trap_share",
]


# -- a counterexample ---------------------------------------------------------------------


def trap_share(traps: int | None, distinct: int | None) -> str:
    """``"1,296 trap states: 18.4% of the 7,057 reachable states"`` (a possibly-violation's
    count and share; orbits under symmetry reduction)."""
    if traps is None:
        return "trap states: not counted"
    text = f"{traps:,} trap state{'s' if traps != 1 else ''}"
    if distinct:
        text += f": {100.0 * traps / distinct:.1f}% of the {distinct:,} reachable states"
    return text


class TraceView:
    """One violation's counterexample, state by state, then the violated property.

    Args:
        model: the ``KafkaModel`` the path belongs to (names, action texts).
        violation: a ``checker.core.result.Violation``.
        diff: show, after the first state, only the action and the variables it changed.
        also: other violations of the same path (``by_path``): their verdicts follow.
    """

    def __init__(
        self,
        model: KafkaModel,
        violation: Violation,
        *,
        diff: bool = False,
        distinct: int | None = None,
        also: Iterable[Violation] = (),
    ) -> None:
        self.model = model
        self.violation = violation
        self.also = tuple(also)
        self.diff = diff
        self.distinct = distinct  # the run's distinct states: a trap count's share

    def _header(self, index: int, step: Step, previous: Step | None) -> Text:
        head = Text()
        head.append(f"State {index}: ", "bold")
        if step.action is None:
            head.append("initial", "bold")
            return head
        head.append(self.model.format_action(step.action), "bold cyan")
        if previous is None:  # the action alone (a narrow terminal: the gloss goes below)
            return head
        gloss = self.model.describe_step(previous.state, step.action, step.state)
        if gloss:
            head.append(f"  {gloss}", "italic dim")
        return head

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        model, v = self.model, self.violation
        steps = v.path.steps
        widths = column_widths(model, [s.state for s in steps])
        yield from self.legend(console)
        for index, step in enumerate(steps, 1):
            previous = steps[index - 2] if index > 1 else None
            header = self._header(index, step, previous)
            if header.cell_len + 6 <= options.max_width:
                yield Rule(header, align="left", style="dim")
            else:  # a rule would cut the header short: the step in the rule, its gloss below
                short = self._header(index, step, None) if step.action is not None else header
                if previous is not None and short.cell_len + 6 <= options.max_width:
                    yield Rule(short, align="left", style="dim")
                    gloss = model.describe_step(previous.state, step.action, step.state)
                    if gloss:
                        yield Padding(Text(gloss, "italic dim"), (0, 0, 0, 2), expand=False)
                else:
                    yield header
                    yield Rule(style="dim")
            if previous is None or not self.diff:  # the first step: nothing to compare with
                yield StateView(model, step.state, previous.state if previous else None, widths=widths)
            else:
                lines = diff_lines(model, previous.state, step.state)
                yield Padding(Group(*lines) if lines else Text("(no change)", DIM), (0, 0, 0, 2), expand=False)
            mark = lasso_mark(v, index)  # a liveness counterexample: where its cycle starts and ends
            if mark is not None:
                yield Text(f"↺ {mark}", "bold magenta")
            yield Text("")
        yield self.verdict_panel()
        for other in self.also:
            yield TraceView(model, other, distinct=self.distinct).verdict_panel()

    def legend(self, console: Console) -> Iterator[Text]:
        """The lines that explain the notation, once per trace: how a record is written and
        how a changed value is shown."""
        text = Text("Records: ", DIM)
        text.append_text(record_text(0, 1, 2))
        text.append(
            " is the record at offset 2, written in leader epoch 0, the producer's record 1 (colour = epoch)", DIM
        )
        if self.diff:
            text.append("; ", DIM)
            text.append_text(record_text(0, 1))
            text.append(" is the same record without its offset.", DIM)
            yield text
            yield Text("After State 1, each state lists only the variables that changed (before → after).", DIM)
            return
        text.append(".", DIM)
        yield text
        if no_colour(console):
            yield Text(f"{CHANGED_MARK} marks a value that changed since the previous state.", DIM)
        else:
            line = Text("Highlighted", CHANGED)
            line.append(" values changed since the previous state.", DIM)
            yield line

    def verdict_panel(self) -> Panel:
        model, v = self.model, self.violation
        n = len(v.path)
        text = Text()
        if v.kind == "cover":  # a cover's witness: the scenario happens
            text.append(f"✓ {v.property} is reached in State {n}", "bold green")
            return Panel(text, border_style="green", expand=False, padding=(0, 1))
        if v.kind == "step-cover":  # a step cover's: its last step is the scenario
            action = model.format_action(v.path.steps[-1].action)
            text.append(
                f"✓ {v.property} is reached by the last step, State {n - 1} → State {n} ({action})", "bold green"
            )
            return Panel(text, border_style="green", expand=False, padding=(0, 1))
        text.append(f"✗ {v.property}", "bold red")
        if v.kind == "possibly":
            text.append(
                f" is violated: State {n} is a trap, from which no path leads to a state "
                f"where a replica leads or can be elected:\n",
                "red",
            )
            text.append(v.explanation, "red")
            text.append("\n" + trap_share(v.traps, self.distinct), "red")
            return Panel(text, border_style="red", expand=False, padding=(0, 1))
        if v.loop is not None:  # a liveness property: the trace is a lasso
            text.append(f" is violated by a fair behaviour: {lasso_summary(v)}:\n", "red")
            text.append(v.explanation, "red")
            return Panel(text, border_style="red", expand=False, padding=(0, 1))
        if v.kind == "step" and n > 1:
            action = model.format_action(v.path.steps[-1].action)
            text.append(f" is violated by the last transition, State {n - 1} → State {n} ({action}):\n", "red")
        else:
            text.append(f" is violated in State {n}:\n", "red")
        text.append(v.explanation, "red")
        if v.property == "CommittedNeverLost" and model.config.unclean_leader_election:
            text.append("\n" + UNCLEAN_NOTE, "dim")
        return Panel(text, border_style="red", expand=False, padding=(0, 1))
