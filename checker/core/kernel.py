"""What the engines share around a state: the per-state expansion, the least candidate
violation, and symmetry reduction's encoder. (The rules that ask the properties are
``checker.core.level``'s; the split of the properties is the assembly's, the stop policy and
the result the driver's.)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..base.fingerprint import fingerprint_bytes

if TYPE_CHECKING:
    pass


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


def keep_least(candidates: dict[str, tuple[Any, ...]], prop: str, entry: tuple[Any, ...]) -> None:
    """Keep ``entry`` as ``prop``'s candidate violation if it comes first (``entry[0]``,
    a path or a key, is the least seen so far): the one every engine reports."""
    old = candidates.get(prop)
    if old is None or entry[0] < old[0]:
        candidates[prop] = entry


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
