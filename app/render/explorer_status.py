"""What ``kmc explore``'s page says of the properties at a walk (``render.explorer``): the
obligations of a leads-to property that wait, the liveness properties still pending, and
the lasso the walk follows."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kmc.checker.contract.protocol import LIVENESS, obligation_text

from .counterexample import lasso_summary

if TYPE_CHECKING:  # for the annotations only
    from kmc.checker.contract.protocol import Model, Property
    from kmc.checker.core.result import Violation


def waiting_text(model: Model, prop: Property, state: Any) -> str:
    """The obligations of a leads-to property that wait in ``state`` (their ``P`` holds and
    their ``Q`` does not), as text; ``""`` when none does."""
    p, q = prop.check(model, state)
    if prop.obligations is None:
        return "its Q does not hold yet" if p and not q else ""
    done = set(q)
    waiting = [ob for ob in prop.obligations(model) if ob in set(p) and ob not in done]
    if not waiting:
        return ""
    shown = "; ".join(obligation_text(model, prop, ob) for ob in waiting[:4]) + ("; ..." if len(waiting) > 4 else "")
    return f"{len(waiting)} obligation{'s' if len(waiting) > 1 else ''} wait{'' if len(waiting) > 1 else 's'} ({shown})"


def pending_liveness(props: list[dict[str, Any]]) -> list[str]:
    """The liveness properties that wait in a state (decided over whole behaviours)."""
    return [p["name"] for p in props if p["status"] in ("waits", "not a goal") and p["kind"] in LIVENESS]


def lasso_page_doc(v: Violation, states: int) -> dict[str, Any]:
    """What the page shows of the lasso ``v`` (a liveness ``Violation``) at a walk of
    ``states`` states along it: its property, where its cycle starts, whether the walk is
    at its end, the walk back to the cycle's start and the whole lasso's walk."""
    assert v.loop is not None  # a lasso: the explorer keeps only violations with a loop
    whole = [v.path.init_index, *v.path.choices]
    n = len(whole)
    start = v.loop + 1
    at_end = states == n
    if v.stutters:
        end_text = f"state {n} stutters for ever: no fair action is enabled in it"
    else:
        end_text = f"the last step leads back to state {start}: the cycle repeats for ever"
    return {
        "property": v.property,
        "kind": v.kind,
        "summary": lasso_summary(v),
        "cycle_start": start,
        "states": n,
        "stutters": v.stutters,
        "at_end": at_end,
        "in_cycle": states >= start,
        "end": end_text,
        "back": whole[:start],
        "walk": whole,
        "explanation": v.explanation,
        "obligation": None if v.obligation is None else str(v.obligation),
    }
