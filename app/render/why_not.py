""" "Why is this action not enabled?": an action's guard in one state, condition by
condition (``checker.contract.protocol.Guard``, the model's ``guards``), for ``kmc why-not`` and the
explorer's disabled actions. Any model: one that declares no guard conditions is answered
so ("no guard conditions declared")."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from kmc.checker.contract.protocol import Guard, action_name

if TYPE_CHECKING:
    from kmc.checker.contract.protocol import Model

NOT_DECLARED = "no guard conditions declared"


class UnknownAction(ValueError):
    """An action text that names no action of the model (one line, with the known ones)."""


def answers(model: Model, state: Any, wanted: str | None = None) -> dict[str, Any]:
    """The guards of ``state`` as plain data: ``declared`` (whether the model declares its
    guards) and ``actions``, one entry per action the text ``wanted`` names (an action as
    traces show it, ``ElectLeader(B)``, or a name, ``ElectLeader``: every action of that
    name; ``None``: every action), each with its text, its name, whether it is enabled
    (the model's successors say so), its conditions (``condition``, ``holds``) and the
    failing ones, and ``disagrees`` when the declared conditions say otherwise than the
    successors (a model whose guards are wrong).

    Raises:
        UnknownAction: ``wanted`` names no action of the model in this state's guards (or,
            for a model without guards, none of its enabled actions or action names).
    """
    enabled: set[str] = {model.format_action(a) for a, _ in model.successors(state)}
    declared: Sequence[Guard] | None = model.guards(state)
    if declared is None:
        if wanted is not None:
            names = set(model.action_names() or ()) | {action_name(a) for a, _ in model.successors(state)}
            if wanted not in enabled and wanted not in names:
                raise UnknownAction(f"no action {wanted!r} in this model (its actions: {_list(sorted(names))})")
            hits = [wanted] if wanted in enabled else sorted(t for t in enabled if t.startswith(f"{wanted}("))
            rows = [{"action": t, "name": wanted, "enabled": True, "conditions": [], "failing": []} for t in hits]
            if not hits:  # a name none of whose actions is enabled: nothing is known of its guard
                rows = [{"action": wanted, "name": wanted, "enabled": False, "conditions": [], "failing": []}]
            return {"declared": False, "actions": rows}
        return {"declared": False, "actions": []}
    rows = []
    for g in declared:
        text = model.format_action(g.action)
        name = action_name(g.action)
        if wanted is not None and wanted not in (text, name) and not _instance_of(text, wanted):
            continue
        on = text in enabled
        rows.append(
            {
                "action": text,
                "name": name,
                "enabled": on,
                "conditions": [{"condition": c, "holds": bool(h)} for c, h in g.conditions],
                "failing": g.failing,
                "disagrees": on != g.enabled,
            }
        )
    if wanted is not None and not rows:
        known = list(dict.fromkeys(model.format_action(g.action) for g in declared))
        raise UnknownAction(f"no action {wanted!r} in this model (its actions here: {_list(known)})")
    return {"declared": True, "actions": rows}


def _instance_of(text: str, wanted: str) -> bool:
    """``Crash(B, keeps 1)`` is an instance of ``Crash(B)``: the same action with more
    parameters."""
    return wanted.endswith(")") and text.startswith(wanted[:-1] + ", ")


def _list(items: Iterable[str], most: int = 12) -> str:
    items = list(items)
    return ", ".join(items[:most]) + (f", ... ({len(items)} in all)" if len(items) > most else "")


def lines(doc: dict[str, Any], where: str) -> list[str]:
    """``answers`` as the terminal shows it: for each action whether it is enabled in
    ``where`` (``"state 5"``), then each of its conditions, ✗ where it fails."""
    out = []
    for row in doc["actions"]:
        if not doc["declared"]:
            state = "is enabled" if row["enabled"] else "is not enabled"
            out.append(f"{row['action']} {state} in {where}: {NOT_DECLARED} by the model")
            continue
        if row["enabled"]:
            out.append(f"{row['action']} is enabled in {where}: every condition of its guard holds")
        else:
            n = len(row["failing"])
            out.append(
                f"{row['action']} is not enabled in {where}: {n} condition{'s' if n != 1 else ''} "
                f"of its guard {'fail' if n != 1 else 'fails'}"
            )
        for c in row["conditions"]:
            out.append(f"  {'✓' if c['holds'] else '✗'} {c['condition']}")
        if row["disagrees"]:
            out.append(
                "  (the model's declared conditions disagree with its actions here: "
                f"its guards say {'enabled' if not row['enabled'] else 'not enabled'})"
            )
    if doc["declared"] and not doc["actions"]:
        out.append(f"no action in {where}")
    if not doc["declared"] and not doc["actions"]:
        out.append(f"{NOT_DECLARED} by the model")
    return out


__all__ = ["NOT_DECLARED", "UnknownAction", "answers", "lines"]
