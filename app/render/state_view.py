"""The terminal face of one Kafka state, drawn with rich through ``__rich_console__``.

``StateView`` shows one state as a table of replicas plus the controller and the history
variables, with every value that changed since the previous state highlighted;
``diff_lines`` lists only the changed variables. A counterexample made of them is
``render.terminal.TraceView``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING

from kmc.model.describe import replica_set
from kmc.model.state import EXPAND, leads
from rich import box
from rich.console import Console, ConsoleOptions, RenderResult
from rich.style import Style
from rich.table import Table
from rich.text import Text

if TYPE_CHECKING:
    from kmc.model.kafka import KafkaModel
    from kmc.model.state import Alter, Entry, Fetch, Record, Replica, State

    Cells = dict[str, tuple[object, Text]]  # column -> (comparison key, Text)
    Row = dict[str, tuple[Text, bool]]  # column -> (the Text shown, whether it changed)

__all__ = [
    "COLUMNS",
    "EPOCH_STYLES",
    "StateView",
    "UNCLEAN_NOTE",
    "column_widths",
    "diff_lines",
    "request_text",
    "table_layout",
]

# One colour per leader epoch (cycled past the end), so that records written in
# different epochs are told apart at a glance. Red and yellow are left for verdicts.
EPOCH_STYLES = (
    "cyan",
    "magenta",
    "green",
    "bright_blue",
    "dark_orange",
    "orchid",
    "spring_green3",
    "steel_blue1",
)
CHANGED = Style(bold=True, reverse=True)  # a value that differs from the previous state
CHANGED_MARK = "*"  # appended to changed values when the console shows no colour
DIM = Style(dim=True)
ARROW = " → "

UNCLEAN_NOTE = (
    "Unclean leader election is enabled: electing a replica outside the ISR "
    "loses committed records by design (availability over durability), so "
    "a CommittedNeverLost violation is expected here."
)


def epoch_style(epoch: int) -> str:
    return EPOCH_STYLES[epoch % len(EPOCH_STYLES)]


# -- small formatters ---------------------------------------------------------------------


def record_text(epoch: int, rid: int, offset: int | None = None) -> Text:
    text = f"e{epoch}·r{rid}" if offset is None else f"{offset}:e{epoch}·r{rid}"
    return Text(text, style=epoch_style(epoch))


def _join(parts: Iterable[Text], sep: str = " ", open_: str = "", close: str = "") -> Text:
    out = Text(open_)
    for i, part in enumerate(parts):
        if i:
            out.append(sep)
        out.append_text(part)
    out.append(close)
    return out


def _log(log: Sequence[Record], offsets: bool = True) -> Text:
    """A log as ``0:e0·r0 1:e0·r1`` (table) or ``[e0·r0, e0·r1]`` (diff)."""
    if offsets:
        return _join([record_text(e, i, o) for o, (e, i) in enumerate(log)]) if log else Text("empty", DIM)
    return _join([record_text(e, i) for e, i in log], ", ", "[", "]")


def _fetch(model: KafkaModel, f: Fetch) -> Text:
    if f.diverging is not None:  # the fetch path's answer: an epoch and its end offset, no records
        out = Text(f"from {model.name(f.leader)} e{f.epoch} ")
        out.append(f"diverging e{f.diverging} ends @{f.start}", "bold magenta")
        out.append(f" hw={f.leader_hw}")
        if f.applied:
            out.append(" (hw applied, truncation to come)", "bold red")
        return out
    out = Text(f"from {model.name(f.leader)} e{f.epoch} @{f.start} ")
    out.append_text(_log(f.records, offsets=False))
    out.append(f" hw={f.leader_hw}")
    return out


def _committed(committed: Iterable[Entry]) -> Text:
    return _join([record_text(e, i, o) for o, e, i in committed], ", ", "{", "}")


# -- one state as cells -------------------------------------------------------------------

COLUMNS = ("replica", "alive", "role", "epoch", "log", "LEO", "HW", "remote LEO", "in flight")
_RIGHT = {"epoch", "LEO", "HW"}
_WRAPS = {"role", "log", "remote LEO", "in flight"}  # may wrap (at spaces) on a narrow console
_MIN_WIDTHS = {"log": 8, "in flight": 10}  # never cut a record short


def _alive(rep: Replica) -> Text:
    if rep.alive and rep.shutting:  # in controlled shutdown (max_controlled_shutdowns)
        return Text("up, shutting down", "bold dark_orange")
    if rep.alive:
        return Text("up", "green")
    return Text("DOWN (lossy)", "bold red") if rep.lossy else Text("DOWN", "bold red")


def _role(model: KafkaModel, state: State, r: int) -> tuple[str, Text]:
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


def _replica_cells(model: KafkaModel, state: State, r: int) -> Cells:
    """column -> (comparison key, Text) for one replica."""
    rep = state.replicas[r]
    cells: Cells = {
        "replica": (None, Text(model.name(r), "bold")),
        "alive": ((rep.alive, rep.lossy, rep.shutting), _alive(rep)),
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


def _summary_cells(model: KafkaModel, state: State) -> dict[str, tuple[object, str, Text]]:
    """The controller and history values: name -> (comparison key, label, Text)."""
    q = state.quorum
    leader = Text(model.name(q.leader)) if q.leader is not None else Text("none", DIM)
    cells: dict[str, tuple[object, str, Text]] = {
        "quorum.leader": (q.leader, "leader", leader),
        "quorum.epoch": (q.epoch, "epoch", Text(str(q.epoch))),
        "quorum.isr": (q.isr, "ISR", Text(replica_set(model, q.isr))),
    }
    if model.config.eligible_leader_replicas:  # the ELR, next to the ISR
        cells["quorum.elr"] = (q.elr, "ELR", Text(replica_set(model, q.elr)))
    if model.config.alter_partition:  # the AlterPartition request in flight
        request = Text("none", DIM) if q.alter is None else Text(request_text(model, q.alter))
        cells["quorum.alter"] = (q.alter, "request", request)
    cfg = model.config
    if cfg.min_isr_changes:  # the controller's min ISR, and the leader's broker's if it lags
        cells["quorum.min_isr"] = (q.min_isr_step, "min ISR", Text(str(cfg.min_isr_at(q.min_isr_step))))
        if cfg.min_isr_lag:
            least = cfg.min_isr_at(state.leader_min_isr_step)
            cells["leader_min_isr"] = (state.leader_min_isr_step, "leader's min ISR", Text(str(least)))
    return {
        **cells,
        "produced": (state.produced, "produced", Text(str(state.produced))),
        "crashes": (state.crashes, "crashes", Text(str(state.crashes))),
        "committed": (state.committed, "committed", _committed(state.committed)),
        "acked": (state.acked, "acked", _committed(state.acked)),
        "disk_failures": (state.disk_failures, "disk failures", Text(str(state.disk_failures))),
    }


def request_text(model: KafkaModel, alter: Alter) -> str:
    """The AlterPartition request in flight, short: ``A asks to add B``, ``A asks to
    remove B``."""
    p, change, r = alter
    verb = "add" if change == EXPAND else "remove"
    return f"{model.name(p)} asks to {verb} {model.name(r)}"


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


def no_colour(console: Console) -> bool:
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

    def __init__(
        self, model: KafkaModel, state: State, previous: State | None = None, *, widths: dict[str, int] | None = None
    ) -> None:
        self.model = model
        self.state = state
        self.previous = previous
        self.widths = widths or {}

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        plain = no_colour(console)
        model, state, prev = self.model, self.state, self.previous
        rows: list[Row] = []  # per replica: column -> the Text to show (marked when it changed)
        for r in range(len(state.replicas)):
            cells = _replica_cells(model, state, r)
            old = _replica_cells(model, prev, r) if prev is not None else None
            rows.append(
                {
                    c: (
                        _mark(cells[c][1], old is not None and old[c][0] != cells[c][0], plain),
                        old is not None and old[c][0] != cells[c][0],
                    )
                    for c in COLUMNS
                }
            )
        columns, widths = table_layout(self.widths or column_widths(model, [state]), options.max_width)
        if columns is None:  # too narrow for any table: one block of text per replica
            yield from self._stacked(rows)
        else:
            assert widths is not None  # table_layout gives both or neither
            table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, header_style="bold dim", padding=(0, 1))
            for col in columns:
                wraps = col in _WRAPS
                table.add_column(
                    col,
                    justify="right" if col in _RIGHT else "left",
                    no_wrap=not wraps,
                    overflow="fold" if wraps else "ellipsis",
                    min_width=widths[col],
                    max_width=widths[col] if wraps else None,
                )
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

    def _stacked(self, rows: list[Row]) -> Iterator[Table]:
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

    def _summary_lines(self, plain: bool) -> Iterator[Text]:
        """The controller's and the history variables' lines."""
        model, state, prev = self.model, self.state, self.previous
        now = _summary_cells(model, state)
        old = _summary_cells(model, prev) if prev is not None else None
        controller: tuple[str, ...] = ("quorum.leader", "quorum.epoch", "quorum.isr")
        if "quorum.elr" in now:
            controller += ("quorum.elr",)
        if "quorum.alter" in now:
            controller += ("quorum.alter",)
        controller += tuple(k for k in ("quorum.min_isr", "leader_min_isr") if k in now)
        history: tuple[str, ...] = ("produced", "crashes", "committed")
        if model.config.acks:  # what the producer was told, next to committed
            history += ("acked",)
        if model.config.max_disk_failures:
            history += ("disk_failures",)
        for label, keys in (("controller", controller), ("history", history)):
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


def table_layout(widths: dict[str, int], max_width: int) -> tuple[tuple[str, ...], dict[str, int]] | tuple[None, None]:
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


def _fields(model: KafkaModel, state: State) -> list[tuple[str, object, Text]]:
    """Every variable of a state as ``(name, comparison key, Text)``, in a fixed order."""
    out: list[tuple[str, object, Text]] = []
    for r, rep in enumerate(state.replicas):
        n = model.name(r)
        out.append((f"{n}.alive", rep.alive, Text("up", "green") if rep.alive else Text("DOWN", "bold red")))
        if model.config.eligible_leader_replicas:
            out.append((f"{n}.lossy", rep.lossy, Text("true" if rep.lossy else "false")))
        if model.config.max_controlled_shutdowns:
            out.append((f"{n}.shutting", rep.shutting, Text("true" if rep.shutting else "false")))
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


def diff_lines(model: KafkaModel, before: State, after: State) -> list[Text]:
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


def column_widths(model: KafkaModel, states: Iterable[State]) -> dict[str, int]:
    """The widest value of every replica column over ``states`` (so that the tables of a
    trace line up), counting room for a change mark."""
    widths = {c: len(c) for c in COLUMNS}
    for state in states:
        for r in range(len(state.replicas)):
            for col, (_, text) in _replica_cells(model, state, r).items():
                widths[col] = max(widths[col], text.cell_len + len(CHANGED_MARK))
    return widths
