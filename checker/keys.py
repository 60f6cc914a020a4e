"""The rules every engine shares about a successor's place in the search's order, and
its counters, written once.

A successor's *key* is ``parent * CHOICES + choice``: ``parent`` its parent's position in
the order the search expands the level (a number in a chunk, a global rank on Spark),
``choice`` the position of its action among the parent's enabled actions. Keys order the
successors as the per-state search meets them, so of the successors with one
fingerprint the one with the least key is the one that search stores
(``least_per_fingerprint``), and the new states in key order are the next level's order.

The counters of a run (``Stats.fired``, ``Stats.new``) map an action name to a count;
``tally`` adds one action, ``add_counts`` the counts per action code of a batch.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

CHOICES = 256  # a state has fewer enabled actions than this: a choice is kept in a byte
_CHOICE_BITS = 8
_CHOICE_MASK = CHOICES - 1


def key(parents: Any, choices: Any) -> Any:
    """The keys of successors (``parents``: positions in the expansion order, ``int64``
    arrays or ints)."""
    return parents * CHOICES + choices


def key_parent(keys: Any) -> Any:
    """The parent position of each key."""
    return keys >> _CHOICE_BITS


def key_choice(keys: Any) -> Any:
    """The choice of each key."""
    return keys & _CHOICE_MASK


def least_per_fingerprint(keys: np.ndarray, fps: np.ndarray) -> np.ndarray:
    """The index of one successor per distinct fingerprint, the one with the least key
    (``keys`` distinct), in fingerprint order."""
    order, sfps = fingerprint_order(fps)  # ties are settled by the keys below
    starts = np.flatnonzero(np.concatenate(([True], sfps[1:] != sfps[:-1])))
    if len(starts) >= len(order):  # every fingerprint once (or none at all)
        return order
    skeys = keys[order]
    least = np.minimum.reduceat(skeys, starts)
    sizes = np.diff(np.append(starts, len(order)))
    return order[skeys == np.repeat(least, sizes)]


def fingerprint_order(fps: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(order, fps[order])``: an order that sorts the fingerprints (``uint64``), the
    equal ones in any order. Found by one sort of the fingerprints themselves with each
    one's position in the low bits, which is several times cheaper than an argsort of
    them; two fingerprints equal in every other bit may then come out of order, which
    is seen (the result is not sorted) and settled by the argsort."""
    n = len(fps)
    bits = max(1, (n - 1).bit_length())
    if n > 1 and bits <= 32:
        low = np.uint64((1 << bits) - 1)
        packed = (fps & ~low) | np.arange(n, dtype=np.uint64)
        packed.sort()
        order = (packed & low).astype(np.intp)
        sfps = fps[order]
        if not (sfps[1:] < sfps[:-1]).any():
            return order, sfps
    order = np.argsort(fps)
    return order, fps[order]


def tally(counter: dict[str, int], name: str, k: int = 1) -> None:
    """Add ``k`` to the count of the action ``name``."""
    counter[name] = counter.get(name, 0) + k


def add_counts(counter: dict[str, int], names: Sequence[str], counts: Any) -> None:
    """Add per-action-code ``counts`` to ``counter`` (``names[code]``: the action's name)."""
    for code, k in enumerate(np.asarray(counts).tolist()):
        if k:
            tally(counter, names[code], k)
