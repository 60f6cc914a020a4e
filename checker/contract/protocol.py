"""The contract between a model and the engines.

A model is any object with

- ``init_states()`` -> sequence of initial states, in a fixed order;
- ``actions(state)`` -> the enabled actions of ``state``, in a fixed order;
- ``next_state(state, action)`` -> the successor (deterministic);
- ``properties()`` -> the ``Property`` values that may be checked;
- ``encode(state)`` -> bytes, a canonical encoding (equal states, equal bytes; the
  fingerprint is a digest of it, so it must not depend on the process);

and optionally (``ModelBase`` gives each its default: a model may inherit it, and one that
does not is given the defaults once, when an engine or the application takes it:
``with_defaults``)

- ``successors(state)`` -> list of ``(action, next_state)``, a faster way to compute both
  at once;
- ``format_action(action)`` -> str, an action as a trace shows it (default ``str(action)``);
- ``describe_step(before, action, after)`` -> str, one sentence saying what the action did
  between two states, for a trace's step headers (default: none);
- ``format_state(state)`` -> str, a state in one line for a generic trace (default: its
  fields, or its ``repr``);
- ``action_names()`` -> every action name the model can fire, in a fixed order: the Spark
  engine counts actions by their position there when the model has no batch kernel
  (default ``None``: not declared);
- ``batch_kernel()`` -> a ``BatchKernel`` (below): the fast path over arrays of rows
  (default ``None``: none);
- ``batch_unsupported()`` -> ``None``, or one sentence saying why the batch kernel cannot
  run this model's configuration: the engines then take the per-state path (``batch_path``);
- ``coverage_names()`` -> a ``CoverageNames``: the kinds of its actions
  and its variables, as coverage reports them (default: the top-level fields of a state
  and no kinds);
- ``fair_instances()`` and ``fair_instance(state, action)`` -> its weakly fair action
  instances, for the liveness properties (default: none, no fairness; see "Fairness"
  below);
- ``symmetries()`` and ``permute(state, perm)`` -> the replica permutations symmetry
  reduction (``--symmetry``) applies (default ``None``: none declared);
- ``guards(state)`` -> every action the model may take, enabled in ``state`` or not, each
  with its guard as named conditions (``Guard``), for "why is this action not enabled?"
  (``kmc why-not``, the explorer); an action is enabled exactly when each of its
  conditions holds (default ``None``: no guard conditions declared).

Fairness (for the ``"always-eventually"`` and ``"leads-to"`` properties)
-------------------------------------------------------------------------

An *action instance* is an action with its parameters as far as fairness cares
(``FetchRequest(A)`` and ``FetchRequest(B)`` are two). A model declares its weakly fair
instances with two methods:

- ``fair_instances()`` -> every weakly fair instance the model may name, a sequence of
  distinct hashable values in a fixed order (their positions are the instances' *codes*,
  ``0 .. len - 1``; reports show an instance by ``str``). Fixed for the model object: the
  engines ask once per run.
- ``fair_instance(state, action)`` -> the instance the step ``state --action-->`` is one of
  (a member of ``fair_instances()``), or ``None`` when the step is not fair (a Produce, a
  Crash). Several actions of one state may share an instance; an instance is *enabled* in
  a state when at least one of the state's actions is of it.

A batch kernel gives the same as an array:
``fair_codes(rows, parents, choices, codes, succ)`` over ``expand(rows)``'s four arrays ->
an integer array, one entry per successor: the code of the step's instance (its position in
the model's ``fair_instances()``), or ``-1`` when the step is not fair. It must agree with
``fair_instance`` (``checker.contract.kernel_check`` compares them where it compares the
successors); a kernel without it has its rows decoded and the model asked, state by state.

A behaviour is weakly fair for an instance unless, from some point on, the instance is
enabled in every state and never taken. A model that declares no instances has no fairness:
every behaviour may stop (stutter) in any state, and a liveness verdict says so.

An action is any value. Engines count the actions that fired and the new states each
found per action *name*: an action's ``name`` attribute when it has a string one (several
actions may share a name, e.g. one per replica), else the action itself when it is a
string, else its class's name (``action_name``). Engines and reports reach these
through the functions below, never through the attributes directly.

Engines know nothing else about the model; the model never imports an engine. Models,
states, actions and property functions must pickle (Spark ships them).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Protocol, cast

import attrs
import numpy as np

from ..base.fingerprint import fingerprint_rows

ALWAYS = "always"
STEP = "step"
POSSIBLY = "possibly"  # AG EF: from every reachable state some goal state stays reachable
ALWAYS_EVENTUALLY = "always-eventually"  # []<>P under weak fairness
LEADS_TO = "leads-to"  # P ~> Q under weak fairness, for every obligation
LIVENESS = (ALWAYS_EVENTUALLY, LEADS_TO)  # the kinds decided on fair behaviours (lassos)
COVER = "cover"  # "this can happen": some reachable state satisfies the predicate
STEP_COVER = "step-cover"  # "this step can happen": some reachable transition satisfies the predicate
COVER_KINDS = (COVER, STEP_COVER)  # the kinds answered "reached" (with a witness) or "never reached"
KINDS = (ALWAYS, STEP, POSSIBLY, ALWAYS_EVENTUALLY, LEADS_TO, COVER, STEP_COVER)


@attrs.frozen
class Property:
    """A property to check.

    Args:
        name: the name users select it by (``--invariant NAME``).
        kind: ``"always"`` (a state invariant: ``check(model, state)``), ``"step"``
            (checked on every transition: ``check(model, before, action, after)``),
            ``"possibly"`` (AG EF: ``check(model, state)`` returns True for a *goal* state,
            and the property holds when a goal state stays reachable from every reachable
            state; it needs the whole reachable graph), or one of the two liveness kinds,
            decided over the fair behaviours of the whole reachable graph (see
            "Liveness" below): ``"always-eventually"`` (``[]<>P``) and ``"leads-to"``
            (``P ~> Q``); or ``"cover"`` ("this can happen", a vacuity check:
            ``check(model, state)`` returns True for a *witness* state, and the cover is
            answered with a shortest behaviour to the first witness of the breadth-first
            order, or "never reached" when the whole reachable graph holds none, which a
            run reports as a failure); or ``"step-cover"`` ("this step can happen"): a
            cover of a transition, ``check(model, before, action, after)`` returns True
            for a *witness* step, answered with a shortest behaviour whose last step is
            the first witness of the breadth-first order (the per-state search's order
            of a level's transitions), or "never reached".
        check: a plain module-level function returning ``None`` when the property holds
            and a one-sentence explanation when it does not (for ``"always"`` and
            ``"step"``; the other kinds' answers are below).
        description: what the property says, for help texts and reports.
        symmetric: the property's verdict does not change when replicas are renamed, so
            it may be checked on one state per orbit (symmetry reduction refuses the
            state invariants that do not say so).
        explain: for a ``"possibly"`` property, ``explain(model, state)`` says in a sentence
            why no goal state can be reached from the trap ``state`` (default: none); for
            a liveness property, ``explain(model, states, loop, obligation)`` says in a
            sentence why the lasso violates it (``states``: the lasso's states, as
            ``Violation.path`` holds them; ``loop``: ``Violation.loop``; ``obligation``:
            the violated obligation of a ``"leads-to"`` property, ``None`` for the other
            kind) or ``None`` for the engine's generic sentence.
        mask: the property's array form for the model's batch kernel, a plain module-level
            function beside ``check``: ``mask(kernel, rows)`` -> a boolean per row, true where
            an ``"always"`` property is violated or where a ``"possibly"`` property's goal
            (a ``"cover"``'s predicate) holds; ``mask(kernel, rows, parents, after)`` for a
            ``"step"`` property, true for the transitions ``rows[parents[i]] -> after[i]``
            that violate it; ``mask(kernel, rows, parents, codes, after)`` for a
            ``"step-cover"``, true for the witness transitions (``codes``: each step's
            action code, as the kernel's ``expand`` gives it); for the liveness kinds,
            below. The kernel's ``invariant_mask``/``step_mask``/``goal_mask`` may answer
            with it; ``None`` (the default): no array form, the engines call ``check``
            state by state (a step cover's: a transition at a time, a parent's together).
        obligations: for a ``"leads-to"`` property that is a family of ``P_i ~> Q_i`` (one
            per index ``i``), ``obligations(model)`` -> every index, a sequence of distinct
            hashable values in a fixed order; ``None`` (the default): one obligation.
        obligation_text: for such a family, ``obligation_text(model, obligation)`` -> the
            obligation in the user's words (Kafka's: ``committed record 0 (epoch 0) at
            offset 0``), for the explorer and the explanations; ``None`` (the default): its
            ``str``.

    Liveness
    --------

    Both kinds are decided over the weakly fair behaviours (the model's
    ``fair_instances``, see the module) of the whole reachable graph; a run that did not
    explore every reachable state leaves them ``unknown``. A violation is a *lasso*
    (``checker.core.result.Violation.loop``).

    ``"always-eventually"`` (``[]<>P``: at every point of every fair behaviour, ``P`` holds
    again later): ``check(model, state)`` -> ``None`` where ``P`` holds, else a sentence
    saying why it does not; ``mask(kernel, rows)`` -> a boolean per row, true where ``P``
    does *not* hold (where ``check`` answers a sentence). It is violated by a fair
    behaviour that, from some point on, stays in states where ``P`` fails.

    ``"leads-to"`` (``P ~> Q``: whenever ``P`` holds, ``Q`` holds then or later) is a family
    of obligations ``P_i ~> Q_i``, each checked on its own (Kafka's "every committed record
    ``(o, m)`` eventually reaches every replica at ``o``" is one obligation per ``(o, m)``):

    - ``check(model, state)`` -> ``(p, q)``: the obligations whose ``P_i`` holds in
      ``state`` and those whose ``Q_i`` holds, each a collection of members of
      ``obligations(model)``; with ``obligations`` ``None``, ``p`` and ``q`` are two bools
      (``P`` and ``Q`` of ``state``).
    - ``mask(kernel, rows)`` -> ``(p, q)``: two boolean arrays of shape ``(len(rows), K)``,
      ``K = len(obligations(model))``, column ``j`` for the ``j``-th obligation (shape
      ``(len(rows),)`` with one obligation), true where ``P_j`` (``Q_j``) holds.

    Obligation ``i`` is violated by a fair behaviour that reaches a state where ``P_i``
    holds and ``Q_i`` does not, and never afterwards a state where ``Q_i`` holds. The
    engines check the obligations in the order of ``obligations(model)`` and report the
    first violated one (``Violation.obligation``).

    What the engines keep: the states where some obligation *waits* (its ``Q_i`` fails),
    with two bits an obligation and the fair instances enabled there, and the edges that
    leave them (about 15 bytes an edge). A ``P_i`` that, once true, stays true for ever
    (a history variable: a record once committed stays committed) may be written so that
    few states wait: answer ``Q_i or not P_i`` as ``q`` (``P_i ~> Q_i`` and ``P_i ~> (Q_i
    or not P_i)`` then say the same). ``[]<>P`` is ``true ~> P``: its states wait where ``P``
    fails.
    """

    name: str
    kind: str = attrs.field(validator=attrs.validators.in_(KINDS))
    check: Callable[..., Any]
    description: str = ""
    symmetric: bool = False
    explain: Callable[..., str | None] | None = None
    mask: Callable[..., Any] | None = None
    obligations: Callable[[Any], Sequence[Any]] | None = None
    obligation_text: Callable[[Any, Any], str] | None = None


def is_cover(prop: Property) -> bool:
    """Whether ``prop`` is a cover of a state or of a step (answered "reached" with a
    witness, or "never reached"), not a property that holds or fails."""
    return prop.kind in COVER_KINDS


def obligation_text(model: Any, prop: Property, obligation: Any) -> str:
    """A leads-to family's ``obligation`` in words (``Property.obligation_text``, else its
    ``str``)."""
    if prop.obligation_text is not None:
        return prop.obligation_text(model, obligation)
    return str(obligation)


@attrs.frozen
class Guard:
    """An action and its guard in one state (``Model.guards``).

    Args:
        action: the action, as ``actions(state)`` gives it when it is enabled.
        conditions: ``(condition, holds)`` pairs: each condition in the user's words
            (``"B is in the ISR"``), and whether it holds in the state. The action is
            enabled exactly when every one holds.
    """

    action: Any
    conditions: tuple[tuple[str, bool], ...]

    @property
    def enabled(self) -> bool:
        return all(holds for _, holds in self.conditions)

    @property
    def failing(self) -> list[str]:
        """The conditions that do not hold, in order."""
        return [text for text, holds in self.conditions if not holds]


def generic_values(state) -> Iterable[tuple[str, Any]]:
    """``(variable, value)`` pairs of any state: the fields of an attrs class or a named
    tuple, the positions of a tuple, else the state as one variable ``state``. A value
    that does not hash counts by its ``repr``."""
    pairs: Iterable[tuple[str, Any]]
    if attrs.has(type(state)):
        pairs = ((f.name, getattr(state, f.name)) for f in attrs.fields(type(state)))
    elif isinstance(state, tuple) and hasattr(state, "_fields"):
        pairs = zip(state._fields, state)
    elif isinstance(state, tuple):
        pairs = ((f"[{i}]", v) for i, v in enumerate(state))
    else:
        pairs = (("state", state),)
    for name, value in pairs:
        try:
            hash(value)
        except TypeError:
            value = repr(value)
        yield name, value


@attrs.frozen
class CoverageNames:
    """What a model names for coverage (all optional).

    Args:
        actions: every action name the model can fire, in order (default: those seen).
        kinds: action name -> the names of its kinds, in order (``ElectLeader``: clean,
            ELR, unclean, last-known-leader).
        kind_of: ``kind_of(model, before, action, after)`` -> the kind's name, or ``None``
            for an action without kinds (the per-state search).
        row_kinds: ``row_kinds(kernel, chunk, parents, codes, succ)`` -> action name ->
            ``(positions, kind numbers)`` of the successors of that action (the batch form).
        variables: the variables' names, in the order a report lists them.
        values_of: ``values_of(state)`` -> ``(variable, value)`` pairs (values hashable);
            default ``generic_values``.
        parts_of: ``parts_of(state)`` -> the state's hashable parts (a replica, the
            controller, ...) such that ``values_of`` is the union of ``values_of(part)``
            over them: a part met before (an equal one) is skipped, as many states share a
            replica's or the controller's values; default none: ``values_of(state)``
            every time.
        row_columns: ``row_columns(kernel)`` -> variable -> the row columns that hold its
            values as they are, and ``row_derived(kernel, rows, wanted)`` -> ``(variable,
            one int per row)`` pairs for the others (those in ``wanted`` at least):
            together the same values as ``values_of`` (the batch form; without it the rows
            are decoded).
        row_domains: ``row_domains(kernel)`` -> variable -> ``(least, greatest)`` value it
            can take (true bounds: a column that has shown every value of its domain is
            not looked at again).
        text: ``text(variable, value)`` -> the value as a report shows it (default ``str``).
        hint: ``hint(action, kind)`` -> the warning for a kind (``kind`` ``None``: the
            action) that never fired, worded for the user (``None``, the default: a plain
            sentence; ``""``: none, its never firing is what the configuration asked
            for, e.g. a kind whose option is off).
    """

    actions: Sequence[str] = ()
    kinds: Mapping[str, Sequence[str]] = attrs.field(factory=dict)
    kind_of: Callable[..., str | None] | None = None
    row_kinds: Callable[..., Mapping[str, tuple]] | None = None
    variables: Sequence[str] = ()
    values_of: Callable[[Any], Iterable[tuple[str, Any]]] = generic_values
    parts_of: Callable[[Any], Iterable[Any]] | None = None
    row_columns: Callable[..., Mapping[str, Sequence[int]]] | None = None
    row_derived: Callable[..., Iterable[tuple[str, Any]]] | None = None
    row_domains: Callable[..., Mapping[str, tuple[int, int]]] | None = None
    text: Callable[[str, Any], str] = lambda _var, value: str(value)
    hint: Callable[[str, str | None], str | None] = lambda _action, _kind: None


class Model(Protocol):
    """What the engines call on a model: its required members and the optional ones, which
    ``ModelBase`` gives their defaults (``with_defaults`` applies them once, to a model
    that does not inherit it)."""

    def init_states(self) -> Sequence[Any]: ...

    def actions(self, state: Any) -> Sequence[Any]: ...

    def next_state(self, state: Any, action: Any) -> Any: ...

    def properties(self) -> Sequence[Property]: ...

    def encode(self, state: Any) -> bytes: ...

    def successors(self, state: Any) -> list[tuple[Any, Any]]: ...

    def format_action(self, action: Any) -> str: ...

    def describe_step(self, before: Any, action: Any, after: Any) -> str: ...

    def format_state(self, state: Any) -> str: ...

    def action_names(self) -> Sequence[str] | None: ...

    def batch_kernel(self) -> BatchKernel | None: ...

    def batch_unsupported(self) -> str | None: ...

    def coverage_names(self) -> CoverageNames: ...

    def fair_instances(self) -> Sequence[Any]: ...

    def fair_instance(self, state: Any, action: Any) -> Any: ...

    def symmetries(self) -> Sequence[Any] | None: ...

    def permute(self, state: Any, perm: Any) -> Any: ...

    def guards(self, state: Any) -> Sequence[Guard] | None: ...


class ModelBase:
    """The optional members of a model, with their defaults (the module's list): a model
    may inherit this class and define only what it has. A model that does not inherit it
    is given the same defaults once, when an engine or the application takes it
    (``with_defaults``)."""

    __slots__ = ()

    def successors(self, state: Any) -> list[tuple[Any, Any]]:
        """``(action, next_state)`` for each enabled action, in the model's order."""
        model = cast(Model, self)
        return [(a, model.next_state(state, a)) for a in model.actions(state)]

    def format_action(self, action: Any) -> str:
        """An action as a trace shows it."""
        return str(action)

    def describe_step(self, before: Any, action: Any, after: Any) -> str:
        """What the action did, in one sentence (``""``: nothing to add to its text)."""
        return ""

    def format_state(self, state: Any) -> str:
        """A state in one line: its fields (``name=value``, for an attrs class) or its
        ``repr``."""
        if attrs.has(type(state)):
            return ", ".join(f"{k}={v!r}" for k, v in attrs.asdict(state, recurse=False).items())
        return repr(state)

    def action_names(self) -> Sequence[str] | None:
        """Every action name the model can fire, in a fixed order (``None``: undeclared)."""
        return None

    def batch_kernel(self) -> BatchKernel | None:
        """The batch kernel (``None``: none, the per-state path)."""
        return None

    def batch_unsupported(self) -> str | None:
        """Why the batch kernel cannot run this configuration (``None``: it can)."""
        return None

    def coverage_names(self) -> CoverageNames:
        """The model's action kinds and variables for coverage (``checker.core.coverage``):
        by default none of the first, and the top-level fields of a state."""
        return CoverageNames()

    def fair_instances(self) -> Sequence[Any]:
        """The weakly fair action instances (none: no fairness)."""
        return ()

    def fair_instance(self, state: Any, action: Any) -> Any:
        """The fair instance of a step (``None``: not fair)."""
        return None

    def symmetries(self) -> Sequence[Any] | None:
        """The replica permutations ``permute`` takes (``None``: no symmetries declared)."""
        return None

    def permute(self, state: Any, perm: Any) -> Any:
        """``state`` with its replicas renamed by ``perm`` (only with ``symmetries``)."""
        raise NotImplementedError("this model declares no symmetries")

    def guards(self, state: Any) -> Sequence[Guard] | None:
        """Every action with its guard's conditions in ``state`` (``None``: none declared)."""
        return None


_MODEL_MEMBERS = (
    "init_states",
    "actions",
    "next_state",
    "properties",
    "encode",
    *(name for name in vars(ModelBase) if not name.startswith("_")),
)


def _declared(cls: type, name: str) -> bool:
    """Whether a class (or one of its bases) declares the member ``name``: its
    declaration read once, never an attribute looked up on an object."""
    return any(name in vars(k) for k in cls.__mro__ if k is not object)


class _Adapted:
    """A model or a kernel given the defaults of the members its class leaves out: the
    members it declares are bound once, here; everything else it holds (the attributes
    its properties read) is its own. The original is ``__wrapped__``."""

    def __init__(self, inner: Any, members: Iterable[str]) -> None:
        self.__wrapped__ = inner
        for name in members:
            if _declared(type(inner), name):
                self.__dict__[name] = getattr(inner, name)

    def __getattr__(self, name: str) -> Any:
        if "__wrapped__" not in self.__dict__:  # while unpickling
            raise AttributeError(name)
        return getattr(self.__wrapped__, name)

    def __repr__(self) -> str:
        return repr(self.__wrapped__)


class ModelDefaults(_Adapted, ModelBase):
    """A model that does not inherit ``ModelBase``, with its defaults."""

    def __init__(self, model: Any) -> None:
        super().__init__(model, _MODEL_MEMBERS)


def with_defaults(model: Any) -> Model:
    """``model`` with every optional member: itself when it inherits ``ModelBase``, else
    ``ModelDefaults(model)``. Engines and the application call it once, when they take a
    model."""
    if isinstance(model, ModelBase):
        return cast(Model, model)
    return cast(Model, ModelDefaults(model))


class Expander(Protocol):
    """What the rules of a level (``checker.core.level``) and the searches over rows use of a
    kernel: a ``BatchKernel``, or ``checker.core.states_kernel.StatesKernel``'s rows of Python
    states. The contract of each member is ``BatchKernel``'s."""

    @property
    def action_names(self) -> Sequence[str]:
        """Every action name the kernel's codes stand for, in code order."""
        ...

    def init_rows(self, states: Sequence[Any]) -> Any: ...

    def decode(self, row: Any) -> Any: ...

    def expand(self, rows: Any) -> tuple[Any, Any, Any, Any]: ...

    def invariant_mask(self, name: str, rows: Any) -> Any: ...

    def step_mask(self, name: str, rows: Any, parents: Any, after: Any) -> Any: ...

    def goal_mask(self, name: str, rows: Any) -> Any: ...

    def fingerprints(self, rows: Any, symmetry: bool) -> Any: ...

    def fair_codes(self, rows: Any, parents: Any, choices: Any, codes: Any, succ: Any) -> Any: ...

    # Whether rows are arrays that properties' array forms read (``KernelBase``: true).
    arrays: bool
    # Whether the array forms (and the coverage) may be given the new rows laid out a
    # column at a time (``columns`` below: same values, Fortran order), which
    # suits forms that read a few columns of every row (``KernelBase``: false, the rows
    # as ``expand`` made them).
    by_columns: bool


class BatchKernel(Expander, Protocol):
    """The fast path a model may offer with ``batch_kernel()``: its states as fixed-width
    rows of bytes (a two-dimensional ``uint8`` array, one row a state, the width a multiple
    of 8), expanded a chunk at a time with array operations.

    Determinism contract (what makes every engine store the same states in the same
    order, and so report the same counts and counterexamples):

    - ``expand(rows)`` returns ``(parents, choices, codes, successors)``: for every
      successor, its parent's position in ``rows``, its *choice* (the position of the
      action among the parent's enabled actions, as ``Model.actions`` orders them, less
      than 256), the code of its action's name in ``action_names``, and its row; every
      enabled action of every parent once, and ``decode`` of a successor's row is exactly
      ``successors(model, decode(parent row))[choice][1]``. Successor order is ``(parent,
      choice)``: the engines sort by that key (the order in which the per-state search
      meets the successors), so a kernel may return them in any order, but the pair
      must be exact.
    - ``encode``/``decode`` are inverse, and two rows are equal exactly when their states
      are: a row's bytes are its fingerprint's input. A column never wraps: a kernel
      whose integers may pass their type's range must use a wider type.
    - ``canonical(rows)`` maps every row to one row of its orbit under the model's
      symmetries, the same for every member of the orbit.
    - ``invariant_mask``/``step_mask``/``goal_mask`` agree with the properties' own
      checks; ``None`` means no array form (the engine asks the property state by
      state). A property's own ``mask`` (``Property.mask``) is read first, by the engine.
    - ``fingerprints(rows, symmetry)``: the 64-bit fingerprints of rows (of their orbits'
      canonical rows under symmetry reduction).

    The engines compare a kernel with its model (``checker.contract.kernel_check``): on every
    state of every run, or, for a kernel that sets ``sampled_comparison``, on a sample of
    every level (and on every state with ``--verify-kernel``).
    ``KernelBase`` gives the optional members (``canonical``, the masks, ``fingerprints``,
    ``fair_codes``) their defaults; a kernel that does not inherit it may leave them out
    (``batch_path`` gives it the defaults once).
    """

    width: int
    # compared with its model on a sample of each level only (``KernelBase``)
    sampled_comparison: bool

    def init_rows(self, states: Sequence[Any]) -> Any: ...

    def encode(self, state: Any) -> Any: ...

    def decode(self, row: Any) -> Any: ...

    def expand(self, rows: Any) -> tuple[Any, Any, Any, Any]: ...

    def canonical(self, rows: Any) -> Any: ...

    def invariant_mask(self, name: str, rows: Any) -> Any: ...

    def step_mask(self, name: str, rows: Any, parents: Any, after: Any) -> Any: ...

    def goal_mask(self, name: str, rows: Any) -> Any: ...

    def fingerprints(self, rows: Any, symmetry: bool) -> Any: ...


class KernelBase:
    """The defaults of a batch kernel's optional members: no array form of any property
    (the engine asks the properties, or reads ``Property.mask``), no symmetries, the
    fingerprints of the rows' bytes, and no array form of the fair instances. A kernel
    that does not inherit it is given them once, when the engines take it
    (``batch_path``)."""

    __slots__ = ()

    arrays = True  # rows are arrays (``checker.core.states_kernel``'s rows of Python states are not)
    by_columns = False  # the array forms are given the rows as expand made them
    # Whether the engines may compare the kernel with its model on a sample of each level
    # only (``checker.contract.kernel_check``). False: on every state, so that a kernel wrong on a
    # single state stops the run rather than turn into a wrong verdict. Only a kernel
    # compared with its model on every state of many configurations by tests of its own
    # (the Kafka kernel: the suite's differential tests) sets it.
    sampled_comparison = False

    def canonical(self, rows: Any) -> Any:
        return rows

    def invariant_mask(self, name: str, rows: Any) -> Any:
        return None

    def step_mask(self, name: str, rows: Any, parents: Any, after: Any) -> Any:
        return None

    def goal_mask(self, name: str, rows: Any) -> Any:
        return None

    def fingerprints(self, rows: Any, symmetry: bool = False) -> Any:
        return fingerprint_rows(self.canonical(rows) if symmetry else rows)

    def fair_codes(self, rows: Any, parents: Any, choices: Any, codes: Any, succ: Any) -> Any:
        """The fair instance code of every successor of ``expand(rows)`` (the module's
        "Fairness"), or ``None``: no array form, the model is asked state by state."""
        return None


# Rows transposed this many at a time: a block and its transpose stay in the cache.
_COLUMN_BLOCK = 512


def columns(rows):
    """``rows`` (a 2-d array) laid out a column at a time (Fortran order), the same
    array to every reader: an array form reads a few columns of every row, and a column
    read whole is a pass over its own bytes, not over every row's. Other rows (states of
    a Python model's kernel) are returned as they are."""
    if not isinstance(rows, np.ndarray) or rows.ndim != 2 or rows.flags.f_contiguous:
        return rows
    out = np.empty(rows.shape[::-1], dtype=rows.dtype)
    for i in range(0, len(rows), _COLUMN_BLOCK):
        out[:, i : i + _COLUMN_BLOCK] = rows[i : i + _COLUMN_BLOCK].T
    return out.T


_KERNEL_MEMBERS = tuple(name for name, v in vars(KernelBase).items() if not name.startswith("_") and callable(v))


class KernelDefaults(_Adapted, KernelBase):
    """A batch kernel that does not inherit ``KernelBase``, with its defaults."""

    def __init__(self, kernel: Any) -> None:
        super().__init__(kernel, _KERNEL_MEMBERS)


def batch_path(model: Model) -> tuple[BatchKernel | None, str | None]:
    """The batch kernel the engines may run ``model`` on, with its defaults, or ``None``
    and why not: ``(kernel, None)``; ``(None, None)`` for a model without a kernel;
    ``(None, reason)`` for one whose kernel cannot run its configuration
    (``batch_unsupported()``)."""
    why = model.batch_unsupported()
    if why is not None:
        return None, why
    kernel = model.batch_kernel()
    if kernel is None or isinstance(kernel, KernelBase):
        return kernel, None
    return cast(BatchKernel, KernelDefaults(kernel)), None


def action_name(action) -> str:
    """The name ``action`` is counted under: its ``name`` attribute when that is a string,
    else the action itself when it is a string, else its class's name."""
    if action.__class__ is str:
        return action
    name = getattr(action, "name", None)  # an action is any value (the module's last section)
    if name.__class__ is str:
        return name
    return type(action).__name__


def format_action(model: Model, action) -> str:
    """``action`` as a trace shows it (``ModelBase.format_action``)."""
    return model.format_action(action)


def describe_step(model: Model, before, action, after) -> str:
    """What ``action`` did between ``before`` and ``after``, in one sentence
    (``ModelBase.describe_step``; ``""``: nothing to add to the action's own text)."""
    return model.describe_step(before, action, after)


def format_state(model: Model, state) -> str:
    """``state`` in one line, as a generic trace shows it (``ModelBase.format_state``)."""
    return model.format_state(state)


def coverage_names(model: Model) -> CoverageNames:
    """The model's action kinds and variables for coverage (``ModelBase.coverage_names``)."""
    return model.coverage_names()


def successors(model: Model, state: Any) -> list[tuple[Any, Any]]:
    """The ``(action, next_state)`` pairs of ``state`` in the model's fixed order."""
    return model.successors(state)


def kernel_fingerprints(kernel: BatchKernel, rows, symmetry: bool = False) -> Any:
    """The fingerprints of a batch kernel's ``rows`` (of their orbits' canonical rows under
    symmetry reduction)."""
    return kernel.fingerprints(rows, symmetry)


def fair_instances(model: Model) -> tuple:
    """The model's weakly fair action instances, in code order (``()``: no fairness)."""
    return tuple(model.fair_instances())


def fair_instance(model: Model, state: Any, action: Any) -> Any:
    """The fair instance of the step ``state --action-->`` (``None``: not fair, or the model
    declares no fairness)."""
    return model.fair_instance(state, action)


def guards(model: Model, state: Any) -> Sequence[Guard] | None:
    """Every action of ``state``, enabled or not, with its guard (``ModelBase.guards``;
    ``None``: the model declares no guard conditions)."""
    return model.guards(state)
