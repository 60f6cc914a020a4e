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
- ``batch_kernel()`` -> a ``BatchKernel`` (``checker.contract.batch_kernel``): the fast path over arrays of rows
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
string, else its class's name (``action_name``). Engines and reports read an action's
name through ``action_name``, never through the attribute directly, and call the optional
members on the model ``with_defaults`` gives them.

The property kinds and ``Property`` live in ``checker.contract.properties``, the batch
kernel's contract in ``checker.contract.batch_kernel``; this module names them too.

Engines know nothing else about the model; the model never imports an engine. Models,
states, actions and property functions must pickle (Spark ships them).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Protocol, cast

import attrs

from .adapted import Adapted
from .batch_kernel import BatchKernel, Expander, KernelBase, KernelDefaults, columns
from .properties import (
    ALWAYS,
    ALWAYS_EVENTUALLY,
    COVER,
    COVER_KINDS,
    KINDS,
    LEADS_TO,
    LIVENESS,
    POSSIBLY,
    STEP,
    STEP_COVER,
    Property,
    is_cover,
    obligation_text,
)

# The property kinds and the kernel's contract are part of the model's contract: they are
# named here too, where a model's author looks for them.
__all__ = [
    "ALWAYS",
    "ALWAYS_EVENTUALLY",
    "COVER",
    "COVER_KINDS",
    "KINDS",
    "LEADS_TO",
    "LIVENESS",
    "POSSIBLY",
    "STEP",
    "STEP_COVER",
    "BatchKernel",
    "CoverageNames",
    "Expander",
    "Guard",
    "KernelBase",
    "KernelDefaults",
    "Model",
    "ModelBase",
    "ModelDefaults",
    "Property",
    "action_name",
    "batch_path",
    "columns",
    "generic_values",
    "is_cover",
    "obligation_text",
    "with_defaults",
]


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


def generic_values(state: Any) -> Iterable[tuple[str, Any]]:
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
    row_kinds: Callable[..., Mapping[str, tuple[Any, Any]]] | None = None
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


class ModelDefaults(Adapted, ModelBase):
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


def action_name(action: Any) -> str:
    """The name ``action`` is counted under: its ``name`` attribute when that is a string,
    else the action itself when it is a string, else its class's name."""
    if action.__class__ is str:
        return action
    name = getattr(action, "name", None)  # an action is any value (the module's last section)
    if name.__class__ is str:
        return name
    return type(action).__name__
