"""What every engine shares around a level: the per-state expansion, the split of the
properties, the stop policy, the result, and symmetry reduction's encoder. (The rules
that ask the properties are ``checker.core.level``'s.)
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from ..base.fingerprint import fingerprint_bytes
from ..contract.protocol import (
    ALWAYS,
    COVER,
    LIVENESS,
    POSSIBLY,
    STEP,
    STEP_COVER,
    Property,
    is_cover,
)

if TYPE_CHECKING:
    from .options import Options
    from .result import CheckResult, Stats, Violation


def split_properties(properties: Iterable[Property]) -> tuple[tuple[Property, ...], tuple[Property, ...]]:
    """Split properties into (state invariants, step properties), keeping their order. A
    cover is asked as the state invariants are (its first witness of the breadth-first
    order is recorded as an invariant's first violation is; ``checker.core.level``), a step
    cover as the step properties are."""
    props = list(properties)
    return (
        tuple(p for p in props if p.kind in (ALWAYS, COVER)),
        tuple(p for p in props if p.kind in (STEP, STEP_COVER)),
    )


def expand(model: Any, state: Any, encode: Callable[[Any], bytes] | None = None) -> list[tuple[int, Any, Any, int]]:
    """Every successor of ``state``, in the model's fixed order.

    ``encode`` (default ``model.encode``) gives the bytes a successor is fingerprinted by
    (``canonical_encoder`` under symmetry reduction). Properties are asked by the rules of
    a level (``checker.core.level``), not here.

    Returns a list of ``(choice, action, successor, fingerprint)``, where ``choice`` is
    the action's position among the state's enabled actions.
    """
    encode = encode or model.encode
    return [
        (choice, action, nxt, fingerprint_bytes(encode(nxt)))
        for choice, (action, nxt) in enumerate(model.successors(state))
    ]


def result_of(
    engine: Any, violations: dict[str, Violation], stopped: str | None, frontier_left: int, stats: Stats | None = None
) -> CheckResult:
    """The ``CheckResult`` an engine returns: its ``name``, ``properties``, ``options`` and
    ``stats`` (unless ``stats`` is given), the counterexamples found, and why it stopped.
    A run is complete when it was not stopped, or stopped at a violation with nothing
    left to expand."""
    from .result import CheckResult

    return CheckResult(
        engine=engine.name,
        checked=[p.name for p in engine.properties if not is_cover(p)],
        stats=engine.stats if stats is None else stats,
        violations={name: v for name, v in violations.items() if v.kind != COVER},
        complete=stopped is None or (stopped == "violation" and not frontier_left),
        stopped=stopped,
        max_depth=engine.options.max_depth,
        covers=[p.name for p in engine.properties if is_cover(p)],
        witnesses={name: v.path for name, v in violations.items() if v.kind == COVER},
        step_covers=[p.name for p in engine.properties if p.kind == STEP_COVER],
    )


def keep_least(candidates: dict[str, tuple[Any, ...]], prop: str, entry: tuple[Any, ...]) -> None:
    """Keep ``entry`` as ``prop``'s candidate violation if it comes first (``entry[0]``,
    a path or a key, is the least seen so far): the one every engine reports."""
    old = candidates.get(prop)
    if old is None or entry[0] < old[0]:
        candidates[prop] = entry


def stop_after_level(
    found: Iterable[str], properties: Any, options: Options, distinct: int, frontier_left: bool
) -> str | None:
    """Why a run stops at a level boundary, or ``None`` to go on: the policy every engine
    shares, so that they stop at the same level.

    Args:
        found: the names of the properties that have failed so far.
        properties: the properties being checked (a cover's witness stops nothing).
        options: ``checker.local.states.Options`` (``keep_going``, ``max_states``).
        distinct: the distinct states stored so far.
        frontier_left: whether the next level has any state to expand.
    """
    # With keep_going the whole state space is explored even once every property has
    # failed (as TLC's -continue does): the counts are then the full ones. A cover's witness
    # (recorded in ``found`` as a violation is) is no failure: the run goes on.
    covers = {p.name for p in properties if is_cover(p)} if properties else set()
    if not options.keep_going and any(name not in covers for name in found):
        return "violation"
    if options.max_states is not None and distinct >= options.max_states and frontier_left:
        return "max-states"
    return None


def require_symmetric(properties: Iterable[Property]) -> None:
    """Refuse symmetry reduction for a liveness property (weak fairness per action instance
    is not preserved by the quotient), and for a state invariant not declared symmetric."""
    from ..base.errors import UsageError

    properties = list(properties)
    for p in properties:
        if p.kind in LIVENESS:
            raise UsageError(
                f"--symmetry: {p.name} is a liveness property, and weak fairness per action instance "
                "is not preserved by the symmetry quotient; check it without --symmetry"
            )
    for p in properties:
        if p.kind in (ALWAYS, POSSIBLY, COVER, STEP_COVER) and not p.symmetric:  # a goal predicate too
            raise UsageError(
                f"--symmetry: the invariant {p.name} is not declared symmetric "
                "(Property(symmetric=True)); check it without symmetry reduction"
            )


def canonical_encoder(model: Any) -> Callable[[Any], bytes]:
    """The encoding of a state's orbit under the model's replica symmetries: the least
    ``model.encode`` over ``model.symmetries()`` applied by ``model.permute``."""
    from ..base.errors import UsageError

    perms = model.symmetries()
    if perms is None:
        raise UsageError("--symmetry: this model declares no symmetries")
    encode, permute = model.encode, model.permute

    def canonical(state: Any) -> bytes:
        least: bytes = min(encode(permute(state, p)) for p in perms)
        return least

    return canonical
