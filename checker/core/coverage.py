"""Coverage: which behaviours a search reached, counted as it goes.

Per action name: in how many expanded states it was enabled (a state counts once however
many instances of the action it enables), how often it fired, and how many new distinct
states it found (those two are ``Stats.fired``/``Stats.new``); per *kind* of an action the
model names (``CoverageNames.kinds``), how often that kind fired; per model variable the
distinct values seen over the stored states. An action or a kind that never fired is the
first thing to look at when a spec "holds".

The model describes its kinds and variables with ``Model.coverage_names()`` (a
``CoverageNames``; the protocol's default names the top-level fields of a state and no
kinds). Every engine calls this module once per expanded piece: ``row_counts`` with
``Coverage.add_counts`` and ``Coverage.add_new_rows`` (the rows search, whose expansion
workers count a chunk of rows, and the Spark tasks: the kernel's parents and codes, the
successors, which were new); ``Coverage.add_initial_rows`` for the initial states. The
counts are the same on every engine and partition count: they depend only on which states
are expanded and stored, never on their order.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from ..contract.protocol import CoverageNames, Expander, Model, action_name, generic_values
from .states_kernel import successors_of

# What a Spark task ships of its coverage (``task_part``): the enabled counts per action
# code and the kind counts (``None``: no chunk expanded), and the values it met per variable.
TaskPart = tuple[np.ndarray | None, dict[str, np.ndarray] | None, dict[str, set[Any]]]

__all__ = ["Coverage", "CoverageNames", "NoCoverage", "coverage_warnings", "generic_values", "task_part"]


class Coverage:
    """The coverage counts of one run (kept in ``Stats.coverage``; pickles with a
    checkpoint). ``names`` is the model's ``CoverageNames``."""

    def __init__(self, names: CoverageNames) -> None:
        self.names = names
        self.enabled: dict[str, int] = dict.fromkeys(names.actions, 0)
        self.kinds: dict[str, dict[str, int]] = {a: dict.fromkeys(k, 0) for a, k in names.kinds.items()}
        self.values: dict[str, set[Any]] = {v: set() for v in names.variables}
        self._met: set[Any] = set()  # parts of states whose values are counted (parts_of)
        self._columns: _Columns | None = None  # the rows' value columns (``_Columns``), made at the first rows

    # -- counting -----------------------------------------------------------------------

    def add_initial_rows(self, kernel: Expander, model: Model, rows: Any) -> None:
        """The stored initial states, as rows."""
        self._add_row_values(kernel, model, rows)

    def add_new_rows(self, kernel: Expander, model: Model, new_rows: Any) -> None:
        """The values of the successors an expanded chunk of rows stored (its counts:
        ``add_counts`` of ``row_counts``)."""
        self._add_row_values(kernel, model, new_rows)

    def add_counts(self, names: Sequence[str], enabled: np.ndarray, kinds: Mapping[str, np.ndarray]) -> None:
        """Add ``row_counts``' result (an array per action code of ``names``, action ->
        an array of kind counts)."""
        for code, k in enumerate(np.asarray(enabled).tolist()):
            if k:
                self.enabled[names[code]] = self.enabled.get(names[code], 0) + k
        for action, counts in kinds.items():
            slot = self.kinds[action]
            for kind, k in zip(self.names.kinds[action], counts):
                slot[kind] += int(k)

    def _add_values(self, state: Any) -> None:
        values, names = self.values, self.names
        if names.parts_of is None:
            for var, value in names.values_of(state):
                values.setdefault(var, set()).add(value)
            return
        met = self._met
        if len(met) > _MET_LIMIT:  # a cache: bounded
            met.clear()
        for part in names.parts_of(state):
            if part in met:
                continue
            met.add(part)
            for var, value in names.values_of(part):
                values.setdefault(var, set()).add(value)

    def _add_row_values(
        self, kernel: Expander, model: Model, rows: Any, ranges: Mapping[str, tuple[int, int]] | None = None
    ) -> None:
        if not len(rows):
            return
        names = self.names
        row_columns = names.row_columns
        if row_columns is None or rows.dtype == object:  # object rows: states on rows
            for row in rows:
                self._add_values(kernel.decode(row))
            return
        columns = self._columns
        if columns is None:
            domains = names.row_domains(kernel) if names.row_domains is not None else {}
            columns = self._columns = _Columns(row_columns(kernel), domains)
            if ranges:
                columns.assume(ranges)
        columns.add(rows)
        if names.row_derived is not None:
            for var, vals in names.row_derived(kernel, rows, columns.wanted()):
                columns.add_derived(var, vals)

    def add_task(self, names: Sequence[str], part: TaskPart) -> None:
        """Add a Spark task's ``task_part`` (``names``: the kernel's action names)."""
        enabled, kinds, values = part
        if enabled is not None and kinds is not None:  # (both, or neither: no chunk expanded)
            self.add_counts(names, enabled, kinds)
        for var, vals in values.items():
            self.values.setdefault(var, set()).update(vals)

    def merge(self, other: Coverage) -> None:
        """Add another run's counts (a Spark task's) to these."""
        for name, k in other.enabled.items():
            self.enabled[name] = self.enabled.get(name, 0) + k
        for action, counts in other.kinds.items():
            for kind, k in counts.items():
                self.kinds.setdefault(action, {}).setdefault(kind, 0)
                self.kinds[action][kind] += k
        for var, vals in other.values.items():
            self.values.setdefault(var, set()).update(vals)
        for var, vals in other._column_values().items():
            self.values.setdefault(var, set()).update(vals)

    def full_ranges(self) -> dict[str, tuple[int, int]]:
        """Per variable whose integer values seen so far fill a range ``lo..hi`` without
        a gap: that range. A Spark task is given them (``task_part``), so that it need not
        look at a column whose values in its rows all fall inside its variable's range."""
        out = {}
        for var, vals in self.distinct_values().items():
            if vals and all(type(v) is int for v in vals) and len(vals) == vals[-1] - vals[0] + 1:
                out[var] = (vals[0], vals[-1])
        return out

    def copy(self) -> Coverage:
        c = Coverage.__new__(Coverage)
        c.names, c.enabled, c._met = self.names, dict(self.enabled), set()
        c.kinds = {a: dict(k) for a, k in self.kinds.items()}
        c.values = {v: set(s) for v, s in self.values.items()}
        c._columns = None if self._columns is None else self._columns.copy()
        return c

    # -- reading ------------------------------------------------------------------------

    def distinct_values(self) -> dict[str, list[Any]]:
        """Variable -> its distinct values seen, sorted, in the variables' order."""
        out: dict[str, set[Any]] = {v: set(s) for v, s in self.values.items()}
        for var, vals in self._column_values().items():
            out.setdefault(var, set()).update(vals)
        order = list(self.names.variables) + sorted(set(out) - set(self.names.variables))
        return {v: sorted(out.get(v, ()), key=_sort_key) for v in order}

    # pickling: CoverageNames holds functions; keep only the counts, the names are
    # the model's and come back with it (``restore_names``).
    def __getstate__(self) -> dict[str, Any]:
        return {"enabled": self.enabled, "kinds": self.kinds, "values": self.values, "_columns": self._columns}

    # (``_met`` is a cache: a restored or copied coverage starts without it)

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self.names = CoverageNames()
        self._met = set()

    def _column_values(self) -> dict[str, set[Any]]:
        return {} if self._columns is None else self._columns.values()

    def restore_names(self, names: CoverageNames) -> None:
        self.names = names
        for action, kinds in names.kinds.items():
            slot = self.kinds.setdefault(action, {})
            for kind in kinds:
                slot.setdefault(kind, 0)


class NoCoverage(Coverage):
    """Coverage not counted (``Options.coverage`` off: to measure what counting costs)."""

    def __init__(self) -> None:
        super().__init__(CoverageNames())

    def add_initial_rows(self, kernel: Expander, model: Model, rows: Any) -> None:
        pass

    def add_new_rows(self, kernel: Expander, model: Model, new_rows: Any) -> None:
        pass

    def add_counts(self, names: Sequence[str], enabled: np.ndarray, kinds: Mapping[str, np.ndarray]) -> None:
        pass

    def add_task(self, names: Sequence[str], part: TaskPart) -> None:
        pass

    def copy(self) -> NoCoverage:
        return self

    def restore_names(self, names: CoverageNames) -> None:
        pass


_MET_LIMIT = 1 << 17  # parts remembered by ``Coverage._add_values`` before it forgets them


class _Columns:
    """The distinct values seen in some columns of rows, cheaply. A column whose values so
    far fill its whole domain (``row_domains``: the least and greatest value it can hold)
    is never looked at again; one whose values fill a range ``lo..hi`` needs no look at a
    chunk whose least and greatest values in it fall inside that range (after the first
    levels, nearly every chunk)."""

    def __init__(self, columns: Mapping[str, Sequence[int]], domains: Mapping[str, tuple[int, int]]) -> None:
        self.var_columns = {var: list(cols) for var, cols in columns.items()}
        self.cols = np.array(sorted({c for cols in columns.values() for c in cols}), dtype=np.int64)
        self.domains = dict(domains)
        domain = {c: domains.get(var) for var, cols in columns.items() for c in cols}
        self.domain = [domain[c] for c in self.cols.tolist()]
        self.seen: dict[int | str, set[Any]] = {}  # column (or derived variable) -> set of values
        self.lo = np.zeros(len(self.cols), dtype=np.int64)
        self.hi = np.full(len(self.cols), -1, dtype=np.int64)  # hi < lo: nothing seen
        self.full = np.zeros(len(self.cols), dtype=bool)
        self.done = np.zeros(len(self.cols), dtype=bool)  # every value of the domain seen
        self.derived_done: set[str] = set()

    def add(self, rows: np.ndarray) -> None:
        active = np.flatnonzero(~self.done)
        if not len(active):
            return
        idx = self.cols[active]
        if rows.flags.f_contiguous and rows.ndim == 2:  # laid out by column: each read whole
            sub = rows.T[idx]
            lows, highs = sub.min(axis=1), sub.max(axis=1)
        elif 3 * len(idx) < rows.shape[1]:  # a few columns left: gather them
            sub = np.take(rows, idx, axis=1)
            lows, highs = sub.min(axis=0), sub.max(axis=0)
        else:
            lows, highs = rows.min(axis=0)[idx], rows.max(axis=0)[idx]
        ok = self.full[active] & (lows >= self.lo[active]) & (highs <= self.hi[active])
        for j in active[~ok].tolist():
            col = int(self.cols[j])
            values = self.seen.setdefault(col, set())
            values.update(np.unique(rows[:, col]).tolist())
            self.lo[j], self.hi[j] = min(values), max(values)
            self.full[j] = len(values) == self.hi[j] - self.lo[j] + 1
            dom = self.domain[j]
            self.done[j] = dom is not None and self.full[j] and (self.lo[j], self.hi[j]) == tuple(dom)

    def assume(self, ranges: Mapping[str, tuple[int, int]]) -> None:
        """Start from values already seen elsewhere: every value of ``ranges[var]`` (a
        full range, ``Coverage.full_ranges``) counts as seen in each of ``var``'s columns,
        so that rows inside it are skipped. (The range's values are reported again with
        the rest: a union does not mind.)"""
        position = {c: j for j, c in enumerate(self.cols.tolist())}
        for var, cols in self.var_columns.items():
            if var not in ranges:
                continue
            lo, hi = ranges[var]
            for col in cols:
                j = position[col]
                self.seen[col] = set(range(lo, hi + 1))
                self.lo[j], self.hi[j], self.full[j] = lo, hi, True
                dom = self.domain[j]
                self.done[j] = dom is not None and (lo, hi) == tuple(dom)
        for var, dom in self.domains.items():
            if var not in self.var_columns and var in ranges:
                lo, hi = ranges[var]
                self.seen[var] = set(range(lo, hi + 1))
                if (lo, hi) == tuple(dom):
                    self.derived_done.add(var)

    def wanted(self) -> set[str]:
        """The derived variables whose domain is not seen whole yet."""
        return {v for v in self.domains if v not in self.var_columns} - self.derived_done

    def add_derived(self, var: str, vals: np.ndarray) -> None:
        if not len(vals):
            return
        values = self.seen.setdefault(var, set())
        if (
            values
            and len(values) == max(values) - min(values) + 1
            and min(values) <= vals.min()
            and vals.max() <= max(values)
        ):
            return
        values.update(np.unique(vals).tolist())
        dom = self.domains.get(var)
        if dom is not None and len(values) == dom[1] - dom[0] + 1 and (min(values), max(values)) == tuple(dom):
            self.derived_done.add(var)

    def values(self) -> dict[str, set[Any]]:
        out: dict[str, set[Any]] = {}
        for var, cols in self.var_columns.items():
            out[var] = set().union(*(self.seen.get(c, ()) for c in cols))
        for key, vals in self.seen.items():
            if isinstance(key, str):
                out.setdefault(key, set()).update(vals)
        return out

    def copy(self) -> _Columns:
        c = _Columns.__new__(_Columns)
        c.var_columns, c.cols, c.domains, c.domain = self.var_columns, self.cols, self.domains, self.domain
        c.seen = {k: set(v) for k, v in self.seen.items()}
        c.lo, c.hi, c.full, c.done = self.lo.copy(), self.hi.copy(), self.full.copy(), self.done.copy()
        c.derived_done = set(self.derived_done)
        return c


def task_part(
    model: Model,
    kernel: Expander,
    expanded: Iterable[tuple[Any, tuple[np.ndarray, np.ndarray, np.ndarray, Any]]] | None = None,
    new_rows: Any = None,
    ranges: Mapping[str, tuple[int, int]] | None = None,
) -> TaskPart:
    """What a Spark task ships: ``expanded`` a list of ``(chunk, (parents, choices, codes,
    succ))`` it expanded (enabled and kind counts), ``new_rows`` the rows it stored (the
    distinct values of the variables, as small sets), looked at only outside ``ranges``
    (the driver's ``Coverage.full_ranges`` at the level's start)."""
    names = model.coverage_names()
    enabled = kinds = None
    for chunk, exp in expanded or ():
        e, k = row_counts(names, kernel, model, chunk, *exp)
        enabled = e if enabled is None else enabled + e
        kinds = k if kinds is None else {a: kinds[a] + c for a, c in k.items()}
    part = Coverage(names)
    if new_rows is not None:
        part._add_row_values(kernel, model, new_rows, ranges)
    values = {v: s for v, s in part.values.items() if s}
    for var, vals in part._column_values().items():
        values.setdefault(var, set()).update(vals)
    return enabled, kinds, values


def row_counts(
    names: CoverageNames,
    kernel: Expander,
    model: Model,
    chunk: Any,
    parents: np.ndarray,
    choices: np.ndarray,
    codes: np.ndarray,
    succ: Any,
) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """The enabled counts per action code (a state counts once per action name it
    enables) and the kind counts (action -> an array per kind) of one expanded chunk."""
    action_names = kernel.action_names
    k = len(action_names)
    if len(codes):
        flags = np.zeros(len(chunk) * k, dtype=bool)
        flags[parents.astype(np.int64) * k + codes] = True
        enabled = np.count_nonzero(flags.reshape(len(chunk), k), axis=0).astype(np.int64)
    else:
        enabled = np.zeros(k, dtype=np.int64)
    # every action that has kinds, fired in this chunk or not: the counts of two chunks add
    # up action by action
    kinds: dict[str, np.ndarray] = {a: np.zeros(len(ks), dtype=np.int64) for a, ks in names.kinds.items()}
    if names.kinds:
        if names.row_kinds is not None and chunk.dtype != object:
            for action, (where, kind_numbers) in names.row_kinds(kernel, chunk, parents, codes, succ).items():
                unsure = np.flatnonzero(kind_numbers < 0)  # (the rows do not say: the model does)
                if len(unsure) and names.kind_of is not None:
                    kind_numbers = kind_numbers.copy()
                    for j in unsure.tolist():
                        i = int(where[j])
                        state = kernel.decode(chunk[parents[i]])
                        step, nxt = successors_of(model, kernel, chunk, int(parents[i]))[int(choices[i])]
                        said = names.kind_of(model, state, step, nxt)
                        assert said is not None, (action, step)  # an action with kinds has one
                        kind_numbers[j] = list(names.kinds[action]).index(said)
                kinds[action] = np.bincount(kind_numbers, minlength=len(names.kinds[action]))
        elif names.kind_of is not None:
            wanted = [c for c, a in enumerate(action_names) if a in names.kinds]
            for i in np.flatnonzero(np.isin(codes, wanted)).tolist():
                state = kernel.decode(chunk[parents[i]])
                action, nxt = successors_of(model, kernel, chunk, int(parents[i]))[int(choices[i])]
                kind = names.kind_of(model, state, action, nxt)
                if kind is not None:
                    kinds[action_name(action)][list(names.kinds[action_name(action)]).index(kind)] += 1
    return enabled, kinds


def _sort_key(value: object) -> tuple[int, object, str]:
    return (0, value, "") if isinstance(value, (int, float)) else (1, 0, repr(value))


def coverage_warnings(cov: Coverage, fired: Mapping[str, int]) -> list[str]:
    """One line per action that never fired, and per kind of a fired action that never
    fired, worded for the user (the model's ``hint`` when it has one; none where the hint
    is ``""``: the configuration turned it off)."""
    hint = cov.names.hint
    out = []
    for action in cov.enabled:
        if not fired.get(action, 0):
            line = hint(action, None)
            out.append(f"{action} never fired: a modelling bug or an unreachable action?" if line is None else line)
            continue
        for kind, k in cov.kinds.get(action, {}).items():
            if not k:
                line = hint(action, kind)
                out.append(f"{action} never took the {kind} kind" if line is None else line)
    return [line for line in out if line]
