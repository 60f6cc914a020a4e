"""What ``kmc explore`` shows, as plain data: a walk through a model, one state at a time.

An ``Explorer`` holds a model and its properties. A *walk* is an initial state's index and
a sequence of choices (the position of an action among the enabled actions of a state,
in the model's order): deterministic, so the same walk gives the same states on any
machine with the same spec (``checker.core.trace.replay_choices``). For a walk the explorer
gives the steps so far, the enabled next steps (named as traces name them), every
property's status in the last state, and the state drawn by a *view*: ``KafkaView`` (the
per-replica table of the terminal, ``render.state_view``, and the swimlane of the walk,
``render.diagram``/``render.svg``: the renderers of ``kmc check``'s outputs) or
``GenericView`` (any model: the state's fields).

A background search (the engine ``kmc check`` runs) fills in the spec's verdicts, each
violated property with its counterexample as a walk. ``reports.explorer_server`` serves
all of this as JSON under ``/api/``.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import attrs
from kmc.checker.contract.protocol import (
    ALWAYS,
    ALWAYS_EVENTUALLY,
    COVER,
    LEADS_TO,
    POSSIBLY,
    STEP,
    STEP_COVER,
    action_name,
    obligation_text,
    with_defaults,
)
from kmc.checker.core.result import Path
from kmc.checker.core.trace import replay_choices

from .counterexample import lasso_mark, lasso_summary
from .explorer_status import lasso_page_doc, pending_liveness, waiting_text
from .explorer_views import GenericView

if TYPE_CHECKING:
    from kmc.checker.contract.protocol import Property
    from kmc.checker.core.result import CheckResult, Stats, Violation

    from .explorer_views import KafkaView

    Search = Callable[[Callable[[Stats], None]], CheckResult]  # run(progress) -> the check's result

MAX_STEPS = 10_000  # the longest walk the explorer replays
MAX_TRAP_STATES = 200_000  # states a trap check visits at most (beyond: not decided here)
MAX_LABEL = 80  # characters of an initial state's label
MAX_LABELS = 1_000  # initial states the page's menu offers


class WalkError(ValueError):
    """A walk that does not replay (an unknown initial state or choice); one line."""


@attrs.define
class SearchStatus:
    state: str = "idle"  # idle, running, done, stopped, failed
    distinct: int = 0
    depth: int = 0
    seconds: float = 0.0
    verdicts: dict[str, dict[str, Any]] = attrs.field(factory=dict)  # property -> {"verdict", "walk", "explanation"}
    message: str = ""


class Explorer:
    """A model to walk, its properties, and (optionally) a background search.

    Args:
        model: any ``checker.contract.protocol.Model``.
        properties: the properties shown in every state (and checked by the search).
        view: how a state is drawn (default ``GenericView``).
        title, path: the spec's title and file, for the page's header.
        search: a function ``search(progress) -> CheckResult`` that runs the check (the
            command builds it with the spec's options); ``progress`` takes a ``Stats``.
        cancel: called to stop the search (the engine's ``cancel``).
        traces: ``{name: (init_index, choices)}``, saved traces the user named.
        lassos: liveness counterexamples (``checker.core.result.Violation`` with a ``loop``) a
            walk on their cycle is shown as (``add_lasso`` adds one; the search's are added
            when it ends).
    """

    def __init__(
        self,
        model: Any,
        properties: Iterable[Property],
        *,
        view: GenericView | KafkaView | None = None,
        title: str = "",
        path: str = "",
        search: Search | None = None,
        traces: Mapping[str, tuple[int, Sequence[int]]] | None = None,
        lassos: Iterable[Violation] = (),
    ) -> None:
        self.model = model = with_defaults(model)
        self.properties = list(properties)
        self.view = view or GenericView(model)
        self.title, self.path = title, path
        self.traces = dict(traces or {})
        self._search = search
        self._engine_cancel: Callable[[], object] | None = None
        self.status = SearchStatus()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._actions = list(model.coverage_names().actions or model.action_names() or ())
        self._distances: dict[
            tuple[str, bytes], int | None
        ] = {}  # (property, encoded state) -> steps to a goal (_goal_distance)
        # The liveness counterexamples (``checker.core.result.Violation`` with a ``loop``) a walk
        # is matched against: the --trace files' first, then the search's.
        self._lassos: list[Violation] = [v for v in lassos if v.loop is not None]

    # -- walks ----------------------------------------------------------------------------

    def walk(self, init_index: int, choices: Sequence[int]) -> Path:
        """The ``checker.core.result.Path`` of a walk; ``WalkError`` when it does not replay."""
        inits = self.model.init_states()
        if not 0 <= init_index < len(inits):
            raise WalkError(f"no initial state number {init_index} (the model has {len(inits)})")
        if len(choices) > MAX_STEPS:
            raise WalkError(f"a walk of {len(choices):,} steps; the explorer replays at most {MAX_STEPS:,}")
        try:
            return replay_choices(self.model, init_index, list(choices))
        except Exception as e:  # the engine's replay error names the step
            raise WalkError(str(e)) from None

    def valid_prefix(self, init_index: int, choices: Sequence[int]) -> tuple[int, list[int], dict[str, Any] | None]:
        """The longest prefix of a walk that replays: ``(init, choices, broken)``, where
        ``broken`` (``None`` when all of it replays) says at which state of the walk it
        broke (``step``: 1 is the initial state) and why (``error``)."""
        model = self.model
        inits = model.init_states()
        if not 0 <= init_index < len(inits):
            error = f"no initial state number {init_index} (the model has {len(inits)}); initial state 0 shown"
            return 0, [], {"step": 1, "error": error}
        state = inits[init_index]
        for i, choice in enumerate(choices):
            if i >= MAX_STEPS:
                error = f"the explorer replays at most {MAX_STEPS:,} steps"
                return init_index, list(choices[:i]), {"step": i + 2, "error": error}
            succ = model.successors(state)
            if not 0 <= choice < len(succ):
                error = f"no action number {choice} (state {i + 1} has {len(succ)} enabled)"
                return init_index, list(choices[:i]), {"step": i + 2, "error": error}
            state = succ[choice][1]
        return init_index, list(choices), None

    def state_doc_prefix(
        self, init_index: int, choices: Sequence[int], syntax_error: str | None = None
    ) -> dict[str, Any]:
        """``state_doc`` of the longest valid prefix of a walk, with ``broken``: where the
        walk broke and why (``None`` when it replays whole), so that a link cut or edited
        by hand keeps what it can. ``syntax_error``: the walk's text stopped being numbers
        after ``choices`` (``explore_http.parse_walk_prefix``)."""
        init, prefix, broken = self.valid_prefix(init_index, choices)
        if broken is None and syntax_error is not None:
            broken = {"step": len(choices) + 2, "error": syntax_error}
        if broken is not None:
            broken["error"] = f"the walk breaks at state {broken['step']}: {broken['error']}"
            broken["kept"] = len(prefix) + 1
        doc = self.state_doc(init, prefix)
        doc["broken"] = broken
        return doc

    def state_doc(self, init_index: int, choices: Sequence[int]) -> dict[str, Any]:
        """Everything the page shows for a walk (the ``/api/state`` answer)."""
        model = self.model
        path = self.walk(init_index, choices)
        states = [s.state for s in path.steps]
        steps = []
        for i, step in enumerate(path.steps):
            if step.action is None:
                steps.append({"index": 1, "action": "initial", "name": "", "description": ""})
            else:
                steps.append(
                    {
                        "index": i + 1,
                        "action": model.format_action(step.action),
                        "name": action_name(step.action),
                        "description": model.describe_step(states[i - 1], step.action, step.state),
                    }
                )
        state = states[-1]
        nexts = model.successors(state)
        enabled: list[dict[str, Any]] = [
            {
                "choice": c,
                "action": model.format_action(a),
                "name": action_name(a),
                "description": model.describe_step(state, a, nxt),
            }
            for c, (a, nxt) in enumerate(nexts)
        ]
        disabled = self._disabled(state, {e["name"] for e in enabled})
        props = self.property_status(path)
        walk = [init_index, *choices]
        lasso = self.lasso_of(walk)
        lasso_doc = None
        if lasso is not None:
            lasso_doc = lasso_page_doc(lasso, len(walk))
            known = [*self.properties, *model.properties()]
            prop = next((p for p in known if p.name == lasso.property), None)
            if prop is not None and lasso.obligation is not None:
                lasso_doc["obligation"] = obligation_text(model, prop, lasso.obligation)
            for i, step_doc in enumerate(steps):
                step_doc["cycle"] = lasso.loop is not None and i >= lasso.loop  # the cycle's states, from its start
                step_doc["mark"] = lasso_mark(lasso, i + 1) or ""
            if lasso_doc["at_end"]:  # the lasso walked whole: its property is violated here
                for doc in props:
                    if doc["name"] == lasso.property:
                        doc.update(status="violated", reason=lasso.explanation)
        violated = next((p for p in props if p["status"] == "violated"), None)
        at_end = lasso if lasso_doc is not None and lasso_doc["at_end"] else None
        return {
            "walk": walk,
            "steps": steps,
            "enabled": enabled,
            "disabled": disabled,
            "properties": props,
            "lasso": lasso_doc,
            "state_html": self.view.state_html(states[-1], states[-2] if len(states) > 1 else None),
            "diagram_svg": self.view.diagram_svg(path, violated, at_end, pending_liveness(props)),
        }

    def _disabled(self, state: Any, enabled_names: set[str]) -> list[dict[str, Any]]:
        """The actions not enabled in ``state``, each with why: the conditions of its guard
        that fail (``render.why_not``), or, for a model that declares none, each action
        name none of whose actions is enabled, "no guard conditions declared"."""
        from .why_not import NOT_DECLARED, answers

        why = answers(self.model, state)
        if not why["declared"]:
            return [
                {"name": n, "action": n, "reason": f"not enabled in this state ({NOT_DECLARED})", "failing": []}
                for n in self._actions
                if n not in enabled_names
            ]
        return [
            {"name": r["name"], "action": r["action"], "reason": "; ".join(r["failing"]), "failing": r["failing"]}
            for r in why["actions"]
            if not r["enabled"]
        ]

    def add_lasso(self, violation: Violation) -> None:
        """Know the liveness counterexample ``violation`` (a ``--trace`` file's): a walk
        along it is shown as a lasso (``lasso_of``)."""
        if violation.loop is None:
            return
        with self._lock:
            self._lassos.append(violation)

    def lasso_of(self, walk: Iterable[int]) -> Violation | None:
        """The first liveness counterexample the explorer knows (a --trace file's, then the
        search's) whose walk starts with ``walk`` and that ``walk`` follows at least to its
        cycle's start (``None``: none): a walk on a lasso's cycle is shown as one, its cycle
        marked and its end violating the property. (Before the cycle's start a walk is a
        path like any other: the lasso's prefix is a shortest path that many walks share.)"""
        walk = list(walk)
        with self._lock:
            known = list(self._lassos)
        for v in known:
            whole = [v.path.init_index, *v.path.choices]
            if v.loop is not None and len(walk) > v.loop and whole[: len(walk)] == walk:
                return v
        return None

    def property_status(self, path: Path) -> list[dict[str, Any]]:
        """Every property's status in the walk's last state (a step property: on its last
        step): holds, violated (with the property's reason), for an always-possibly
        property whether this state is a goal, for a cover (a step cover) whether this
        state (the last step) is a witness: reached, or not here."""
        model = self.model
        steps = path.steps
        state = steps[-1].state
        out = []
        for prop in self.properties:
            doc = {"name": prop.name, "kind": prop.kind, "description": prop.description}
            if prop.kind == ALWAYS:
                why = prop.check(model, state)
                doc.update(status="violated" if why else "holds", reason=why or "")
            elif prop.kind == STEP:
                if len(steps) < 2:
                    doc.update(status="holds", reason="no step taken yet")
                else:
                    why = prop.check(model, steps[-2].state, steps[-1].action, state)
                    doc.update(status="violated" if why else "holds", reason=why or "")
            elif prop.kind == POSSIBLY:
                goal = bool(prop.check(model, state))
                if goal:
                    doc.update(status="goal", reason="")
                else:
                    doc.update(self._possibly_status(prop, state))
            elif prop.kind == ALWAYS_EVENTUALLY:
                why = prop.check(model, state)
                doc.update(
                    status="not a goal" if why else "goal",
                    reason=f"{why}; it must hold again later in every fair behaviour (the search decides it)"
                    if why
                    else "",
                )
            elif prop.kind == COVER:
                here = bool(prop.check(model, state))
                doc.update(status="reached" if here else "not here", reason="" if here else "not a witness state")
            elif prop.kind == STEP_COVER:
                here = len(steps) > 1 and bool(prop.check(model, steps[-2].state, steps[-1].action, state))
                why = "" if here else "the last step is no witness"
                doc.update(status="reached" if here else "not here", reason=why)
            elif prop.kind == LEADS_TO:
                waiting = waiting_text(model, prop, state)
                doc.update(
                    status="waits" if waiting else "goal",
                    reason=f"{waiting}: each must hold later in every fair behaviour (the search decides it)"
                    if waiting
                    else "",
                )
            out.append(doc)
        return out

    def _possibly_status(self, prop: Property, state: Any) -> dict[str, str]:
        """A state that is not a goal of the always-possibly ``prop``: ``not a goal``
        while the search has not decided ``prop``; once it has, ``trap`` when no goal
        state is reachable from it (the property is violated then), else ``not a goal``
        with the distance to the nearest goal."""
        with self._lock:
            decided = self.status.state == "done" and (self.status.verdicts.get(prop.name) or {}).get("verdict")
        if decided not in ("holds", "violated"):
            return {
                "status": "not a goal",
                "reason": "a goal state must stay reachable from here (the search decides it)",
            }
        if decided == "holds":
            return {"status": "not a goal", "reason": "a goal state is reachable from here (the search found no trap)"}
        distance = self._goal_distance(prop, state)
        if distance is None:
            return {"status": "trap", "reason": "no goal state is reachable from here: a trap"}
        if distance < 0:
            return {"status": "not a goal", "reason": "a trap or not: too many states reachable from here to decide"}
        steps = "1 step" if distance == 1 else f"{distance:,} steps"
        return {"status": "not a goal", "reason": f"the nearest goal state is {steps} away"}

    def _goal_distance(self, prop: Property, state: Any) -> int | None:
        """The number of steps from ``state`` to the nearest goal of ``prop``: ``None``
        when none is reachable (a trap), ``-1`` when more than ``MAX_TRAP_STATES`` states
        were visited without deciding. Remembered per state."""
        model = self.model
        key = (prop.name, model.encode(state))
        with self._lock:
            if key in self._distances:
                return self._distances[key]
        seen = {key[1]}
        level = [state]
        depth = 0
        found: int | None = None
        while level:
            depth += 1
            nxt = []
            for s in level:
                for _, t in model.successors(s):
                    code = model.encode(t)
                    if code in seen:
                        continue
                    if prop.check(model, t):
                        found = depth
                        break
                    seen.add(code)
                    nxt.append(t)
                if found is not None:
                    break
            if found is not None:
                break
            if len(seen) > MAX_TRAP_STATES:
                found = -1
                break
            level = nxt
        with self._lock:
            if len(self._distances) > 10_000:
                self._distances.clear()
            self._distances[key] = found
        return found

    def initial_count(self) -> int:
        return len(self.model.init_states())

    def initial_labels(self) -> list[str]:
        """A short label of each of the first ``MAX_LABELS`` initial states (the view's, at
        most ``MAX_LABEL`` characters); the others are reached through the URL."""
        out = []
        for i, state in enumerate(self.model.init_states()[:MAX_LABELS]):
            text = " ".join(str(self.view.initial_label(state)).split())
            if len(text) > MAX_LABEL:
                text = text[: MAX_LABEL - 1] + "…"
            out.append(f"{i}: {text}" if text else str(i))
        return out

    def spec_doc(self) -> dict[str, Any]:
        return {
            "title": self.title,
            "path": self.path,
            "initial_states": self.initial_count(),
            "initial_labels": self.initial_labels(),
            "actions": self._actions,
            "properties": [{"name": p.name, "kind": p.kind, "description": p.description} for p in self.properties],
            "traces": [self._trace_doc(n, [i, *c]) for n, (i, c) in self.traces.items()],
        }

    def _trace_doc(self, name: str, walk: list[int]) -> dict[str, Any]:
        lasso = self.lasso_of(walk)
        whole = lasso if lasso is not None and len(lasso.path) == len(walk) else None
        return {
            "name": name,
            "walk": walk,
            "lasso": {"property": whole.property, "summary": lasso_summary(whole)} if whole is not None else None,
        }

    # -- the background search ----------------------------------------------------------------

    def start_search(self, run: Search, cancel: Callable[[], object] | None = None) -> None:
        """Run ``run(progress) -> CheckResult`` in a thread; ``cancel()`` stops it."""
        self._engine_cancel = cancel
        self.status.state = "running"
        started = time.perf_counter()

        def progress(stats: Stats) -> None:
            with self._lock:
                self.status.distinct, self.status.depth = stats.distinct, stats.depth
                self.status.seconds = time.perf_counter() - started

        def work() -> None:
            try:
                result = run(progress)
            except Exception as e:  # shown on the page; the explorer goes on
                with self._lock:
                    self.status.state, self.status.message = "failed", f"the search failed: {e}"
                return
            verdicts = {}
            for name in result.checked:
                v = result.violations.get(name)
                entry: dict[str, Any] = {
                    "verdict": result.verdict(name),
                    "explanation": "" if v is None else v.explanation,
                    "walk": None if v is None else [v.path.init_index, *v.path.choices],
                }
                if name in result.unknown:
                    entry["explanation"] = result.unknown[name]
                if v is not None and v.loop is not None:
                    entry["lasso"] = {"cycle_start": v.loop + 1, "stutters": v.stutters, "summary": lasso_summary(v)}
                verdicts[name] = entry
            lassos = [v for v in result.violations.values() if v.loop is not None]
            with self._lock:
                self._lassos.extend(lassos)
                st = self.status
                st.distinct, st.depth = result.stats.distinct, result.stats.depth
                st.seconds = time.perf_counter() - started
                st.verdicts = verdicts
                st.state = "stopped" if result.stopped == "interrupted" else "done"
                st.message = (
                    ""
                    if result.complete
                    else "stopped at the level of the first violation"
                    if result.stopped == "violation"
                    else f"incomplete: stopped at {result.stopped}"
                )

        self._thread = threading.Thread(target=work, name="kmc-explore-search", daemon=True)
        self._thread.start()

    def search_doc(self) -> dict[str, Any]:
        with self._lock:
            return attrs.asdict(self.status)

    def close(self, timeout: float = 10.0) -> None:
        """Stop the search, if one runs, and wait for it."""
        if self._thread is not None and self._thread.is_alive():
            if self._engine_cancel is not None:
                self._engine_cancel()
            self._thread.join(timeout)
