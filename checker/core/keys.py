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
    starts = np.flatnonzero(_firsts(sfps))
    if len(starts) >= len(order):  # every fingerprint once (or none at all)
        return order
    skeys = keys[order]
    least = np.minimum.reduceat(skeys, starts)
    sizes = np.diff(np.append(starts, len(order)))
    picked: np.ndarray = order[skeys == np.repeat(least, sizes)]
    return picked


def first_per_fingerprint(fps: np.ndarray) -> np.ndarray:
    """``least_per_fingerprint`` for successors whose keys grow with their position (so
    the first of each fingerprint has the least key): the index of the first successor of
    each distinct fingerprint, in fingerprint order, found without looking at the keys."""
    order, sfps = fingerprint_order(fps)  # equal fingerprints keep their positions' order
    picked: np.ndarray = order[_firsts(sfps)]
    return picked


def _firsts(sfps: np.ndarray) -> np.ndarray:
    """Which of the sorted fingerprints ``sfps`` is the first of its value."""
    first = np.ones(len(sfps), dtype=bool)
    np.not_equal(sfps[1:], sfps[:-1], out=first[1:])
    return first


def fingerprint_order(fps: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(order, fps[order])``: an order that sorts the fingerprints (``uint64``), the
    equal ones in the order of their positions (a stable argsort). Found by one sort of
    the fingerprints themselves with each one's position in the low bits, which is
    several times cheaper than an argsort of them. Two fingerprints equal in every other
    bit may then come out of order (among a few million, some pair usually is); each such
    group lies together in the sorted array and is sorted again by the whole fingerprint
    (``_settle``, stably: equal ones are already in the order of their positions)."""
    n = len(fps)
    bits = max(1, (n - 1).bit_length())
    if n < 2 or bits > 32:
        order = np.argsort(fps, kind="stable")
        return order, fps[order]
    low = np.uint64((1 << bits) - 1)
    packed = fps & ~low
    packed |= np.arange(n, dtype=np.uint64)
    packed.sort()
    packed &= low  # the positions, in place: an array of this size costs more to make than to sort
    order = packed.view(np.int64)
    sfps = fps[order]
    down = np.flatnonzero(sfps[1:] < sfps[:-1])
    if len(down):
        _settle(order, sfps, ~low, down)
    return order, sfps


def _settle(order: np.ndarray, sfps: np.ndarray, high: np.uint64, down: np.ndarray) -> None:
    """Sort again, in place, the groups of ``fingerprint_order``'s packed sort whose
    fingerprints share their ``high`` bits and came out of order (one at each of
    ``down``: a few among millions). A group lies together in the sorted array, and the
    groups' places taken together in order are where their fingerprints go when sorted
    together, since its high bits order a group among the others: one argsort of the
    few fingerprints concerned settles them all."""
    spans: list[tuple[int, int]] = []  # in order, each walked once
    for i in down.tolist():
        if spans and i < spans[-1][1]:
            continue  # in the group just found
        h, a, b = sfps[i] & high, i, i + 2
        while a > 0 and sfps[a - 1] & high == h:
            a -= 1
        while b < len(sfps) and sfps[b] & high == h:
            b += 1
        spans.append((a, b))
    at = np.concatenate([np.arange(a, b) for a, b in spans])
    by = np.argsort(sfps[at], kind="stable")
    order[at], sfps[at] = order[at[by]], sfps[at[by]]


def key_order(keys: np.ndarray) -> np.ndarray:
    """A stable argsort of ``keys`` (``int64``, none negative): one sort of the keys with
    each one's position packed below it, several times cheaper than an argsort, when
    both fit in 64 bits (a search's keys do: a level's rank times ``CHOICES``); an
    argsort otherwise."""
    n = len(keys)
    bits = max(1, (n - 1).bit_length())
    if n > 1 and int(keys.min()) >= 0 and int(keys.max()).bit_length() + bits <= 64:
        packed = keys.astype(np.uint64) << np.uint64(bits)
        packed |= np.arange(n, dtype=np.uint64)
        packed.sort()
        packed &= np.uint64((1 << bits) - 1)  # the positions, in place
        return packed.view(np.int64)
    return np.argsort(keys, kind="stable")


def tally(counter: dict[str, int], name: str, k: int = 1) -> None:
    """Add ``k`` to the count of the action ``name``."""
    counter[name] = counter.get(name, 0) + k


def add_counts(counter: dict[str, int], names: Sequence[str], counts: Any) -> None:
    """Add per-action-code ``counts`` to ``counter`` (``names[code]``: the action's name)."""
    for code, k in enumerate(np.asarray(counts).tolist()):
        if k:
            tally(counter, names[code], k)
