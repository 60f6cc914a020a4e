"""The terminal face of ``kmc check``: counterexample traces and the run's outcome, drawn
with rich through ``__rich_console__`` (the engines never import rich).

``TraceView`` shows one counterexample the way TLC numbers it (``State 1: initial``,
``State 2: Produce(A)``, ...), each state as a table of replicas plus the controller and
the history variables, with every value that changed since the previous state
highlighted. ``ResultView`` shows a whole run: constants, verdicts, statistics, per-action
counts, the counterexamples and a one-line summary.
"""

from __future__ import annotations

from kmc.checker.text import safe_text
from rich import box
from rich.console import Console, ConsoleOptions, Group, RenderResult
from rich.padding import Padding
from rich.panel import Panel
from rich.rule import Rule
from rich.style import Style
from rich.table import Table
from rich.text import Text

from kmc.checker.result import HOLDS, UNKNOWN, VIOLATED
from kmc.model.kafka import (
    ACTION_NAMES, BECOME_FOLLOWER, CRASH, ELECT_LEADER, EXPAND_ISR, FETCH_REQUEST,
    FETCH_RESPONSE, PRODUCE, RESTART, SHRINK_ISR,
)
from kmc.model.config import LEADER_EPOCH_21
from kmc.model.state import leader_of, leads, leso

from .json_result import expectation

__all__ = [
    "EPOCH_STYLES", "ResultView", "StateView", "TraceView", "column_widths", "describe_step",
    "diff_lines", "expectation", "stop_reason",
]

# One colour per leader epoch (cycled past the end), so that records written in
# different epochs are told apart at a glance. Red and yellow are left for verdicts.
EPOCH_STYLES = (
    "cyan", "magenta", "green", "bright_blue", "dark_orange", "orchid", "spring_green3",
    "steel_blue1",
)
CHANGED = Style(bold=True, reverse=True)  # a value that differs from the previous state
CHANGED_MARK = "*"  # appended to changed values when the console shows no colour
DIM = Style(dim=True)
ARROW = " → "

UNCLEAN_NOTE = ("Unclean leader election is enabled: electing a replica outside the ISR "
                "loses committed records by design (availability over durability), so "
                "a CommittedNeverLost violation is expected here.")


def epoch_style(epoch: int) -> str:
    return EPOCH_STYLES[epoch % len(EPOCH_STYLES)]


# -- small formatters ---------------------------------------------------------------------

def _record(epoch, rid, offset=None) -> Text:
    text = f"e{epoch}·r{rid}" if offset is None else f"{offset}:e{epoch}·r{rid}"
    return Text(text, style=epoch_style(epoch))


def _join(parts, sep=" ", open_="", close="") -> Text:
    out = Text(open_)
    for i, part in enumerate(parts):
        if i:
            out.append(sep)
        out.append_text(part)
    out.append(close)
    return out


def _log(log, offsets=True) -> Text:
    """A log as ``0:e0·r0 1:e0·r1`` (table) or ``[e0·r0, e0·r1]`` (diff)."""
    if offsets:
        return _join([_record(e, i, o) for o, (e, i) in enumerate(log)]) if log else Text("empty", DIM)
    return _join([_record(e, i) for e, i in log], ", ", "[", "]")


def _names(model, members) -> str:
    return "{" + ",".join(model.name(r) for r in members) + "}"


def _fetch(model, f) -> Text:
    out = Text(f"from {model.name(f.leader)} e{f.epoch} @{f.start} ")
    out.append_text(_log(f.records, offsets=False))
    out.append(f" hw={f.leader_hw}")
    return out


def _committed(committed) -> Text:
    return _join([_record(e, i, o) for o, e, i in committed], ", ", "{", "}")


def _count(n) -> str:
    return f"{n:,}"


def collision_text(probability: float) -> str:
    """A probability as TLC prints it: two significant digits, ``1.2E-14``."""
    return f"{probability:.1E}"


def _duration(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.2f} s"
    minutes, secs = divmod(int(round(seconds)), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h {minutes:02d}m {secs:02d}s" if hours else f"{minutes}m {secs:02d}s"


def _plural(n, word) -> str:
    if n == 1:
        return f"{n} {word}"
    return f"{n} {word}es" if word.endswith(("s", "sh", "ch", "x")) else f"{n} {word}s"


# -- what a step did, in words ------------------------------------------------------------

def describe_step(model, before, action, after) -> str:
    """One sentence saying what ``action`` did between two states (for a trace header).

    Returns an empty string for an action this module does not know.
    """
    name = model.name
    r = action.replica
    who = name(r)
    b, a = before.replicas[r], after.replicas[r]
    if action.name == PRODUCE:
        offset = len(a.log) - 1
        return f"{who} appends {model.format_record(a.log[-1])} at offset {offset}"
    if action.name == FETCH_REQUEST:
        f = a.inflight
        n = len(f.records)
        text = (f"{name(f.leader)} answers {who}'s fetch from offset {f.start}: "
                f"{_plural(n, 'record')}, high watermark {f.leader_hw}")
        return text + _rejoin_note(model, after, r, f.leader)
    if action.name == FETCH_RESPONSE:
        f = b.inflight
        sender = name(f.leader)
        if not (b.alive and b.leader == f.leader and b.epoch == f.epoch):
            return f"{who} drops a stale response from {sender} (epoch {f.epoch})"
        what = (f"{_plural(len(f.records), 'record')} at offset {f.start}" if f.records
                else "no new records")
        if len(b.log) > f.start:
            what = f"truncates to offset {f.start}, {what}"
        return f"{who} takes {sender}'s response: {what}, high watermark {a.hw}"
    if action.name == CRASH:
        text = f"{who} crashes; the controller is not told"
        if action.cut is not None and action.cut < len(b.log):
            lost = len(b.log) - action.cut
            text += f"; {_plural(lost, 'unflushed record')} lost"
            if a.lossy:
                text += " (an unclean shutdown: its restart will be reported)"
        return text
    if action.name == RESTART:
        text = f"{who} restarts with its log and high watermark from disk, no leader, epoch -1"
        if b.lossy:
            qb, qa = before.quorum, after.quorum
            text += (f"; after its lossy crash the controller removes it from the ISR "
                     f"{_names(model, qb.isr)} → {_names(model, qa.isr)}")
            if model.config.eligible_leader_replicas:
                text += f" and the ELR {_names(model, qb.elr)} → {_names(model, qa.elr)}"
            text += ", and every leader forgets its fetch position from before the crash"
            ql = qa.leader
            if ql is not None and after.replicas[ql].hw > before.replicas[ql].hw:
                text += f"; {name(ql)}'s high watermark advances to {after.replicas[ql].hw}"
        return text
    if action.name == ELECT_LEADER:
        q = after.quorum
        text = (f"the controller elects {who} in epoch {q.epoch}, ISR {_names(model, q.isr)}, "
                f"its high watermark {a.hw}")
        if r in before.quorum.elr:
            text += (f" (from the ELR: no ISR member is alive, and {who} left the ISR while it "
                     f"was below min ISR, so it holds every committed record; ELR now "
                     f"{_names(model, q.elr)})")
        elif r not in before.quorum.isr:
            text += f" (unclean: {who} was not in the ISR)"
        elif model.config.eligible_leader_replicas and q.elr != before.quorum.elr:
            text += f", ELR {_names(model, q.elr)}"
        return text
    if action.name == BECOME_FOLLOWER:
        leader = name(after.quorum.leader)
        text = f"{who} follows {leader} in epoch {a.epoch}"
        if len(a.log) < len(b.log):
            return text + f", truncating its log to offset {len(a.log)}"
        return text + ", keeping its log"
    if action.name in (SHRINK_ISR, EXPAND_ISR):
        leader = leader_of(before)
        by = "" if leader is None else f"{name(leader)} "
        if action.name == SHRINK_ISR:
            why = "down" if not b.alive else "lagging"
            text = f"{by}removes {who} ({why}) from the ISR"
            if leader is not None and after.replicas[leader].hw > before.replicas[leader].hw:
                hw = after.replicas[leader].hw
                text += f"; {name(leader)}'s high watermark advances to {hw}"
            return text
        text = f"{by}adds {who} back to the ISR"
        if leader is not None:  # the rule's test, which is where ISR expansion goes wrong
            text += (f": its fetch position {before.replicas[leader].remote_leo[r]} is not below "
                     f"{name(leader)}'s high watermark {before.replicas[leader].hw}")
            if model.config.truncation == LEADER_EPOCH_21:
                text += f" nor its epoch start offset {leso(before, leader)}"
        return text
    return ""


def _rejoin_note(model, state, f, l) -> str:
    """Under the 2.1 rule, why a follower outside the ISR that the pre-2.1 test would let
    back in may not re-join yet (KAFKA-7128); else ``""``."""
    if model.config.truncation != LEADER_EPOCH_21 or f in state.quorum.isr or not leads(state, l):
        return ""
    led = state.replicas[l]
    pos, start = led.remote_leo[f], leso(state, l)
    if led.hw <= pos < start:
        return (f"; {model.name(f)} may not re-join the ISR: its log ends at {pos}, before the "
                f"leader's epoch start offset {start}")
    return ""


# -- one state as cells -------------------------------------------------------------------

COLUMNS = ("replica", "alive", "role", "epoch", "log", "LEO", "HW", "remote LEO", "in flight")
_RIGHT = {"epoch", "LEO", "HW"}
_WRAPS = {"role", "log", "remote LEO", "in flight"}  # may wrap (at spaces) on a narrow console
_MIN_WIDTHS = {"log": 8, "in flight": 10}  # never cut a record short


def _alive(rep) -> Text:
    if rep.alive:
        return Text("up", "green")
    return Text("DOWN (lossy)", "bold red") if rep.lossy else Text("DOWN", "bold red")


def _role(model, state, r) -> tuple[str, Text]:
    rep = state.replicas[r]
    if leads(state, r):
        return "leader", Text("leader", "bold green")
    if rep.leader is None:
        return "none", Text("—", DIM)
    if rep.leader == r:
        if not rep.alive:
            return "leader-down", Text("leader (down)", DIM)
        return "deposed", Text("deposed", "bold dark_orange")
    text = f"follower of {model.name(rep.leader)}"
    return text, Text(text, DIM if not rep.alive else "")


def _replica_cells(model, state, r) -> dict:
    """column -> (comparison key, Text) for one replica."""
    rep = state.replicas[r]
    cells = {
        "replica": (None, Text(model.name(r), "bold")),
        "alive": ((rep.alive, rep.lossy), _alive(rep)),
        "role": _role(model, state, r),
        "epoch": (rep.epoch, Text(str(rep.epoch), DIM if rep.epoch < 0 else "")),
        "log": (rep.log, _log(rep.log)),
        "LEO": (len(rep.log), Text(str(len(rep.log)))),
        "HW": (rep.hw, Text(str(rep.hw))),
    }
    # The comparison key is the variable itself, not what is shown: remote LEO is shown
    # only while the replica leads, but it changes only when its values change (so the
    # full view and --diff agree on what changed; a crash hides it without changing it).
    others = [i for i in range(len(state.replicas)) if i != r]
    key = tuple(rep.remote_leo[i] for i in others)
    if leads(state, r):
        cells["remote LEO"] = (key, Text(" ".join(f"{model.name(i)}={rep.remote_leo[i]}" for i in others)))
    else:
        cells["remote LEO"] = (key, Text(""))
    f = rep.inflight
    cells["in flight"] = (f, Text("") if f is None else _fetch(model, f))
    return cells


def _summary_cells(model, state) -> dict:
    """The controller and history values: name -> (comparison key, label, Text)."""
    q = state.quorum
    leader = Text(model.name(q.leader)) if q.leader is not None else Text("none", DIM)
    cells = {
        "quorum.leader": (q.leader, "leader", leader),
        "quorum.epoch": (q.epoch, "epoch", Text(str(q.epoch))),
        "quorum.isr": (q.isr, "ISR", Text(_names(model, q.isr))),
    }
    if model.config.eligible_leader_replicas:  # the ELR, next to the ISR
        cells["quorum.elr"] = (q.elr, "ELR", Text(_names(model, q.elr)))
    return {
        **cells,
        "produced": (state.produced, "produced", Text(str(state.produced))),
        "crashes": (state.crashes, "crashes", Text(str(state.crashes))),
        "committed": (state.committed, "committed", _committed(state.committed)),
    }


def _mark(text: Text, changed: bool, plain: bool) -> Text:
    """Highlight a changed value (a ``*`` after it when the console shows no colour)."""
    if not changed:
        return text
    text = text.copy()
    if not text.plain:
        text = Text("—", DIM)
    text.stylize(CHANGED)
    if plain:
        text.append(CHANGED_MARK)
    return text


def _no_colour(console: Console) -> bool:
    return console.no_color or console.color_system is None


class StateView:
    """One state of a trace: the replica table, then the controller and history lines.

    The table's layout follows the console's width (``table_layout``): every column; or,
    narrower, "remote LEO" and "in flight" as lines under the table; or, narrower still,
    one wrapped block of text per replica. No value is ever cut short.

    Args:
        model: the ``KafkaModel``.
        state: the state to show.
        previous: the state before it, whose differences are highlighted (or ``None``).
    """

    def __init__(self, model, state, previous=None, *, widths=None):
        self.model = model
        self.state = state
        self.previous = previous
        self.widths = widths or {}

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        plain = _no_colour(console)
        model, state, prev = self.model, self.state, self.previous
        rows = []  # per replica: column -> the Text to show (marked when it changed)
        for r in range(len(state.replicas)):
            cells = _replica_cells(model, state, r)
            old = _replica_cells(model, prev, r) if prev is not None else None
            rows.append({c: (_mark(cells[c][1], old is not None and old[c][0] != cells[c][0], plain),
                             old is not None and old[c][0] != cells[c][0]) for c in COLUMNS})
        columns, widths = table_layout(self.widths or column_widths(model, [state]), options.max_width)
        if columns is None:  # too narrow for any table: one block of text per replica
            yield from self._stacked(rows)
        else:
            table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, header_style="bold dim",
                          padding=(0, 1))
            for col in columns:
                wraps = col in _WRAPS
                table.add_column(col, justify="right" if col in _RIGHT else "left", no_wrap=not wraps,
                                 overflow="fold" if wraps else "ellipsis",
                                 min_width=widths[col], max_width=widths[col] if wraps else None)
            for row in rows:
                table.add_row(*(row[c][0] for c in columns))
            yield table
            for r, row in enumerate(rows):  # the columns left out, one line per replica
                for col in COLUMNS:
                    if col in columns or not (row[col][0].plain or row[col][1]):
                        continue
                    line = Text("  ")
                    line.append(model.name(r), "bold")
                    line.append(f" {col}: ", DIM)
                    line.append_text(row[col][0] if row[col][0].plain else Text("—", DIM))
                    yield line
        yield from self._summary_lines(plain)

    def _stacked(self, rows):
        """The replicas as blocks of text that wrap, for a console too narrow for the table."""
        grid = Table.grid(padding=(0, 1))
        grid.add_column(no_wrap=True)
        grid.add_column(ratio=1)
        for r, row in enumerate(rows):
            text = Text()
            for col in COLUMNS[1:]:
                value, changed = row[col]
                if not value.plain and not changed:
                    continue
                if text.plain:
                    text.append(" · ", DIM)
                if col not in ("alive", "role"):
                    text.append(f"{_STACKED_LABELS.get(col, col)} ", DIM)
                text.append_text(value)
            grid.add_row(Text(self.model.name(r), "bold"), text)
        yield grid

    def _summary_lines(self, plain):
        """The controller's and the history variables' lines."""
        model, state, prev = self.model, self.state, self.previous
        now = _summary_cells(model, state)
        old = _summary_cells(model, prev) if prev is not None else None
        controller = ("quorum.leader", "quorum.epoch", "quorum.isr")
        if "quorum.elr" in now:
            controller += ("quorum.elr",)
        for label, keys in (("controller", controller), ("history", ("produced", "crashes", "committed"))):
            line = Text()
            line.append(f"{label:<11}", "bold dim")
            for i, key in enumerate(keys):
                if i:
                    line.append("  ·  ", DIM)
                value, name, text = now[key]
                line.append(f"{name} ", DIM)
                line.append_text(_mark(text, old is not None and old[key][0] != value, plain))
            yield line


_STACKED_LABELS = {"remote LEO": "remote_leo", "in flight": "inflight"}  # one word: no break inside
_FLEXIBLE_MIN = 16  # the fewest cells the column that takes the leftover room may get
_NARROW_COLUMNS = tuple(c for c in COLUMNS if c not in ("remote LEO", "in flight"))


def table_layout(widths, max_width):
    """The columns of the replica table, and the width of each, for a console
    ``max_width`` cells wide: ``(None, None)`` when no table fits.

    ``widths`` holds every column's widest value (``column_widths``). The whole table is
    used when it fits with its last column ("in flight") wrapped into the room left; else
    the table without "remote LEO" and "in flight" (shown as lines under it), its "log"
    column wrapped into the room left. Every state of a trace gets the same layout, so
    the tables line up.
    """
    for columns, flexible in ((COLUMNS, "in flight"), (_NARROW_COLUMNS, "log")):
        fixed = sum(widths.get(c, len(c)) for c in columns if c != flexible) + 3 * len(columns)
        room = max_width - fixed
        want = widths.get(flexible, len(flexible))
        if room >= min(want, _FLEXIBLE_MIN):
            out = {c: widths.get(c, len(c)) for c in columns}
            out[flexible] = min(want, room)
            return columns, out
    return None, None


# -- the field-by-field difference of two states -----------------------------------------

def _fields(model, state) -> list[tuple[str, object, Text]]:
    """Every variable of a state as ``(name, comparison key, Text)``, in a fixed order."""
    out = []
    for r, rep in enumerate(state.replicas):
        n = model.name(r)
        out.append((f"{n}.alive", rep.alive, Text("up", "green") if rep.alive else Text("DOWN", "bold red")))
        if model.config.eligible_leader_replicas:
            out.append((f"{n}.lossy", rep.lossy, Text("true" if rep.lossy else "false")))
        out.append((f"{n}.log", rep.log, _log(rep.log, offsets=False)))
        out.append((f"{n}.hw", rep.hw, Text(str(rep.hw))))
        out.append((f"{n}.epoch", rep.epoch, Text(str(rep.epoch))))
        out.append((f"{n}.leader", rep.leader, Text(model.name(rep.leader))))
        for i, v in enumerate(rep.remote_leo):
            if i != r:
                out.append((f"{n}.remote_leo[{model.name(i)}]", v, Text(str(v))))
        f = rep.inflight
        out.append((f"{n}.inflight", f, Text("none", DIM) if f is None else _fetch(model, f)))
    for key, (value, _, text) in _summary_cells(model, state).items():
        out.append((key, value, text))
    return out


def diff_lines(model, before, after) -> list[Text]:
    """``B.log: [e0·r0] → [e0·r0, e0·r1]`` for every variable that changed."""
    lines = []
    for (name, old, old_text), (_, new, new_text) in zip(_fields(model, before), _fields(model, after)):
        if old == new:
            continue
        line = Text()
        line.append(f"{name}: ", "bold")
        line.append_text(_dimmed(old_text))
        line.append(ARROW, DIM)
        line.append_text(new_text)
        lines.append(line)
    return lines


def _dimmed(text: Text) -> Text:
    text = text.copy()
    text.stylize(DIM)
    return text


# -- a counterexample ---------------------------------------------------------------------

def column_widths(model, states) -> dict:
    """The widest value of every replica column over ``states`` (so that the tables of a
    trace line up), counting room for a change mark."""
    widths = {c: len(c) for c in COLUMNS}
    for state in states:
        for r in range(len(state.replicas)):
            for col, (_, text) in _replica_cells(model, state, r).items():
                widths[col] = max(widths[col], text.cell_len + len(CHANGED_MARK))
    return widths


class TraceView:
    """One violation's counterexample, state by state, then the violated property.

    Args:
        model: the ``KafkaModel`` the path belongs to (names, action texts).
        violation: a ``checker.result.Violation``.
        diff: show, after the first state, only the action and the variables it changed.
    """

    def __init__(self, model, violation, *, diff=False):
        self.model = model
        self.violation = violation
        self.diff = diff

    def _header(self, index, step, previous) -> Text:
        head = Text()
        head.append(f"State {index}: ", "bold")
        if step.action is None:
            head.append("initial", "bold")
            return head
        head.append(self.model.format_action(step.action), "bold cyan")
        gloss = describe_step(self.model, previous.state, step.action, step.state)
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
            else:  # a rule would cut the header short: let it wrap instead
                yield header
            if index == 1 or not self.diff:
                yield StateView(model, step.state, previous.state if previous else None, widths=widths)
            else:
                lines = diff_lines(model, previous.state, step.state)
                yield Padding(Group(*lines) if lines else Text("(no change)", DIM), (0, 0, 0, 2), expand=False)
            yield Text("")
        yield self.verdict_panel()

    def legend(self, console: Console):
        """The lines that explain the notation, once per trace: how a record is written and
        how a changed value is shown."""
        text = Text("Records: ", DIM)
        text.append_text(_record(0, 1, 2))
        text.append(" is the record at offset 2, written in leader epoch 0, the producer's "
                    "record 1 (colour = epoch)", DIM)
        if self.diff:
            text.append("; ", DIM)
            text.append_text(_record(0, 1))
            text.append(" is the same record without its offset.", DIM)
            yield text
            yield Text("After State 1, each state lists only the variables that changed "
                       "(before → after).", DIM)
            return
        text.append(".", DIM)
        yield text
        if _no_colour(console):
            yield Text(f"{CHANGED_MARK} marks a value that changed since the previous state.", DIM)
        else:
            line = Text("Highlighted", CHANGED)
            line.append(" values changed since the previous state.", DIM)
            yield line

    def verdict_panel(self) -> Panel:
        model, v = self.model, self.violation
        n = len(v.path)
        text = Text()
        text.append(f"✗ {v.property}", "bold red")
        if v.kind == "step" and n > 1:
            action = model.format_action(v.path.steps[-1].action)
            text.append(f" is violated by the last transition, State {n - 1} → State {n} "
                        f"({action}):\n", "red")
        else:
            text.append(f" is violated in State {n}:\n", "red")
        text.append(v.explanation, "red")
        if v.property == "CommittedNeverLost" and model.config.unclean_leader_election:
            text.append("\n" + UNCLEAN_NOTE, "dim")
        return Panel(text, border_style="red", expand=False, padding=(0, 1))


# -- a whole run --------------------------------------------------------------------------

_MEANING_MIN = 24  # below this many cells the "meaning" column is left out

_VERDICT_TEXT = {
    HOLDS: Text("holds", "bold green"),
    VIOLATED: Text("VIOLATED", "bold red"),
    UNKNOWN: Text("unknown", "bold yellow"),
}


def stop_reason(result, spec=None, max_states=None) -> str | None:
    """Why the search did not explore every reachable state, in words (``None`` if it did).

    ``max_states`` is the state bound the run used (default: the spec's).
    """
    if result.complete:
        return None
    stopped = result.stopped
    if stopped == "violation":
        unknown = [p for p in result.checked if result.verdict(p) == UNKNOWN]
        if not unknown:
            return ("stopped after the first level with a violation (keep_going is off); "
                    "every checked property is decided")
        return ("stopped after the first level with a violation (keep_going is off), so "
                f"{', '.join(unknown)} {'is' if len(unknown) == 1 else 'are'} unknown "
                f"(--keep-going decides {'it' if len(unknown) == 1 else 'them'})")
    if stopped == "max-depth":
        return f"stopped at the depth bound (max_depth = {result.max_depth}): states deeper than that were not explored"
    if stopped == "max-states":
        if max_states is None and spec is not None:
            max_states = spec.max_states
        bound = f" (max_states = {max_states:,})" if max_states else ""
        return (f"stopped at the end of the level that reached the state bound{bound}: "
                "the rest of the state space was not explored")
    if stopped == "max-memory":
        return "stopped at the memory bound (max_memory): the rest of the state space was not explored"
    if stopped == "interrupted":
        return "interrupted before the search finished"
    return f"stopped early ({stopped})" if stopped else "the search did not finish"


def _never_fired_note(model, name, result) -> str:
    cfg = model.config
    if name in ("Crash", "Restart") and cfg.max_crashes == 0:
        return "never fired (max_crashes = 0)"
    if name == "Produce" and cfg.max_messages == 0:
        return "never fired (max_messages = 0)"
    if name in ("ElectLeader", "BecomeFollower") and cfg.max_leader_epoch == 0:
        return "never fired (max_leader_epoch = 0)"
    if name in ("ElectLeader", "BecomeFollower") and cfg.max_crashes == 0 and not cfg.preferred_election:
        return "never fired (no crash and no preferred election: the first leader stays)"
    if not result.complete:
        return "never fired before the search stopped"
    return "never fired — a modelling bug or an unreachable action?"


def _flags(cfg) -> str:
    on = [name for name in ("unclean_leader_election", "unflushed_loss", "preferred_election",
                            "hw_requires_min_isr", "eligible_leader_replicas")
          if getattr(cfg, name)]
    if cfg.initial_leader != "first":
        on.append(f"initial_leader = {cfg.initial_leader}")
    return ", ".join(on) if on else "none"


class ResultView:
    """The outcome of ``kmc check``: what was checked, the verdicts, the statistics and
    the counterexamples.

    Args:
        spec: the ``model.spec.Spec`` (``None`` when there is none: no title, no
            expectation).
        model: the ``KafkaModel`` that was explored.
        result: the engine's ``CheckResult``.
        diff: show counterexamples in the compact changed-fields form.
        show_traces: show the counterexamples at all.
    """

    def __init__(self, spec, model, result, *, diff=False, show_traces=True, max_states=None):
        self.spec = spec
        self.max_states = max_states
        self.model = model
        self.result = result
        self.diff = diff
        self.show_traces = show_traces
        self.expectation = expectation(spec, result)

    # the parts, in order

    def header(self):
        spec, cfg = self.spec, self.model.config
        if spec is not None:
            # A spec is untrusted: its text is shown as text, control characters escaped.
            title = Text("kmc check  ", "bold")
            title.append(safe_text(spec.path), "bold cyan")
            yield title
            if spec.title:
                yield Text(safe_text(spec.title), "bold")
            if spec.description.strip():
                yield Padding(Text(safe_text(" ".join(spec.description.split())), "dim italic"), (0, 0, 0, 2),
                              expand=False)
        grid = Table.grid(padding=(0, 2))
        grid.add_column(style="dim")
        grid.add_column()
        grid.add_row("replicas", f"{', '.join(cfg.replicas)}  (min ISR {cfg.min_insync_replicas})")
        grid.add_row("truncation", cfg.truncation)
        grid.add_row("bounds", f"≤ {_plural(cfg.max_messages, 'message')} · "
                               f"≤ {_plural(cfg.max_crashes, 'crash')} · "
                               f"leader epochs ≤ {cfg.max_leader_epoch}")
        grid.add_row("flags", _flags(cfg))
        grid.add_row("engine", self.result.engine)
        yield Padding(grid, (1, 0, 0, 2), expand=False)

    def verdict_table(self, max_width=None) -> Table:
        """The verdict of every checked property, its expectation and what it means (the
        meaning is left out when ``max_width`` is too narrow for it: see
        ``kmc invariants``)."""
        from kmc.invariants import BY_NAME

        result, expected = self.result, self.expectation["expected"]
        rows = []
        for name in result.checked:
            verdict = result.verdict(name)
            want = expected.get(name)
            if want is None:
                exp = Text("")
            elif want == verdict:
                exp = Text("as expected", "green")
            elif verdict == UNKNOWN:  # not a contradiction: the search did not get there
                exp = Text(f"not decided (expected {want})", "yellow")
            else:
                exp = Text(f"UNEXPECTED (expected {want})", "bold red")
            prop = BY_NAME.get(name)
            rows.append((name, _VERDICT_TEXT[verdict].copy(), exp, prop.description if prop is not None else ""))
        name_width = max((len(r[0]) for r in rows), default=8)
        exp_width = max((r[2].cell_len for r in rows), default=0)
        needed = name_width + len("VIOLATED") + max(exp_width, len("expectation")) + 4 * 3 + _MEANING_MIN
        show_meaning = max_width is None or needed <= max_width
        table = Table(box=box.SIMPLE_HEAD, header_style="bold dim", show_edge=False)
        table.add_column("property", style="bold", no_wrap=True, min_width=name_width)
        table.add_column("verdict", no_wrap=True)
        table.add_column("expectation")
        if show_meaning:
            table.add_column("meaning", style="dim", ratio=1)
        for name, verdict, exp, meaning in rows:
            table.add_row(name, verdict, exp, *((meaning,) if show_meaning else ()))
        return table

    def statistics(self):
        s = self.result.stats
        line = Text()
        parts = ((_count(s.distinct), " distinct states"), (_count(s.generated), " generated"),
                 ("depth ", str(s.depth)), (_count(s.terminal), " terminal"),
                 (_duration(s.seconds), ""), (f"{s.states_per_second:,.0f}", " states/s"))
        for i, (a, b) in enumerate(parts):
            if i:
                line.append("  ·  ", "dim")
            if a.endswith(" "):  # "depth 10": the label comes first
                line.append(a)
                line.append(b, "bold")
            else:
                line.append(a, "bold")
                line.append(b)
        yield line
        reason = stop_reason(self.result, self.spec, self.max_states)
        if reason is not None:
            yield Text(f"incomplete: {reason}", "yellow")
            if s.queue:
                yield Text(f"{_count(s.queue)} states left on the queue (found, not yet expanded)", "yellow")
        yield Text(f"fingerprint collision probability: calculated (optimistic) "
                   f"{collision_text(s.collision_probability)} (see docs/model.md, \"Counting\")", "dim")

    def action_table(self) -> Table:
        s = self.result.stats
        table = Table(box=box.SIMPLE_HEAD, header_style="bold dim", show_edge=False)
        table.add_column("action", no_wrap=True)
        table.add_column("fired", justify="right")
        table.add_column("new states", justify="right")
        table.add_column("")
        for name in ACTION_NAMES:
            fired, new = s.fired.get(name, 0), s.new.get(name, 0)
            note = Text("") if fired else Text(_never_fired_note(self.model, name, self.result), "yellow")
            table.add_row(name, _count(fired), _count(new), note)
        return table

    def violations(self) -> list:
        """The violations, shortest counterexample first."""
        return sorted(self.result.violations.values(), key=lambda v: (len(v.path), v.path.choices))

    def summary(self):
        result, model = self.result, self.model
        ordered = self.violations()
        n = len(result.checked)
        if not ordered:
            states = _count(result.stats.distinct)
            steps = any(_kind(p) == "step" for p in result.checked)
            what = ("property" if steps else "invariant") if n == 1 else ("properties" if steps else "invariants")
            if not result.complete:
                yield Text(f"No violation in {states} distinct states, but the search is "
                           f"incomplete: {n} {what} unknown.", "bold yellow")
            elif n == 1:
                yield Text(f"✓ {result.checked[0]} holds over {states} distinct states.", "bold green")
            else:
                yield Text(f"✓ All {n} {what} hold over {states} distinct states.", "bold green")
        else:
            first = ordered[0]
            text = Text(f"✗ {first.property} violated: shortest counterexample has "
                        f"{len(first.path)} states.", "bold red")
            rest = [f"{v.property} ({len(v.path)} states)" for v in ordered[1:]]
            if rest:
                text.append(f" Also violated: {', '.join(rest)}.", "red")
            unknown = [p for p in result.checked if result.verdict(p) == UNKNOWN]
            if unknown:
                text.append(f" Unknown: {', '.join(unknown)}.", "yellow")
            yield text
            if "CommittedNeverLost" in result.violations and model.config.unclean_leader_election:
                yield Text(UNCLEAN_NOTE, "dim")
        exp = self.expectation
        if exp["expected"]:
            undecided = [n for n in exp["expected"] if exp["got"].get(n) == UNKNOWN]
            checked = [n for n in exp["expected"] if n not in exp["unchecked"]]
            if not checked:
                yield Text("The spec's expectation is about properties that were not checked "
                           f"({', '.join(exp['unchecked'])}).", "dim")
            elif exp["matched"]:
                skipped = (f" (not checked: {', '.join(exp['unchecked'])})" if exp["unchecked"] else "")
                yield Text(f"This matches the spec's expectation{skipped}.", "green")
            elif len(undecided) == len(exp["mismatches"]):  # nothing contradicts it
                yield Text("The spec's expectation is not confirmed yet: the search stopped "
                           f"before deciding {', '.join(undecided)}.", "yellow")
            else:
                yield Text("This does NOT match the spec's expectation: "
                           + "; ".join(exp["mismatches"]) + ".", "bold red")

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield from self.header()
        yield Text("")
        yield self.verdict_table(options.max_width)
        yield Text("")
        yield from self.statistics()
        yield Text("")
        yield self.action_table()
        if self.show_traces:
            for v in self.violations():
                yield Text("")
                title = Text(f"Counterexample: {v.property} ({len(v.path)} states)", "bold red")
                # a rule would cut a title that does not fit: then the title alone, wrapped
                yield Rule(title, style="red") if title.cell_len + 6 <= options.max_width else title
                yield TraceView(self.model, v, diff=self.diff)
        yield Text("")
        yield from self.summary()


def _kind(name) -> str | None:
    from kmc.invariants import BY_NAME

    prop = BY_NAME.get(name)
    return None if prop is None else prop.kind
