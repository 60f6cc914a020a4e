"""State identity: the canonical encoding and its 64-bit fingerprint (checker/base/fingerprint.py).

Every variable is part of a state (docs/model.md, "Counting"), the ghost ones
included, so states differing in any one of them have different fingerprints.
"""

from __future__ import annotations

import struct

import attrs
import pytest

from kmc.checker.base.fingerprint import DIGEST_BYTES, fingerprint, fingerprint_bytes
from kmc.model import Fetch, encode

A, B = 0, 1

# The initial state of the default 2-replica model, encoded by hand as docs/model.md's
# variables in encode()'s order: produced, crashes, quorum leader, quorum epoch, |isr|,
# isr..., |committed|, then per replica alive, hw, epoch, leader, remote_leo..., |log|,
# inflight (-1 = none).
INITIAL_2 = [0, 0, 0, 0, 2, 0, 1, 0] + [1, 0, 0, 0, 0, 0, 0, -1] * 2
# blake2b-64 of that encoding, pinned: a change means every stored fingerprint
# (checkpoints, Spark partitioning, cross-release comparisons) changes too.
INITIAL_2_FP = 0xD3E2872291F1195C


@pytest.fixture
def model(build):
    return build.model()


@pytest.fixture
def base(build):
    a = build.replica(2, log=[(0, 0), (0, 1)], hw=1, remote=(0, 1))
    b = build.replica(2, log=[(0, 0)], hw=1, inflight=Fetch(A, 0, 1, ((0, 1),), 1))
    return build.state([a, b], produced=2, crashes=1, committed=[(0, 0, 0)])


def test_initial_state_encoding_and_fingerprint_pinned(model):
    (s,) = model.init_states()
    assert encode(s) == struct.pack(f"<{len(INITIAL_2)}q", *INITIAL_2)
    assert fingerprint(model, s) == INITIAL_2_FP


def test_fingerprint_is_64_bits(model, base):
    assert DIGEST_BYTES == 8
    fp = fingerprint(model, base)
    assert isinstance(fp, int) and 0 <= fp < 2**64
    assert fingerprint_bytes(encode(base)) == fp


def test_equal_states_equal_fingerprints(model, build, base):
    a = build.replica(2, log=[(0, 0), (0, 1)], hw=1, remote=(0, 1))
    b = build.replica(2, log=[(0, 0)], hw=1, inflight=Fetch(A, 0, 1, ((0, 1),), 1))
    again = build.state([a, b], produced=2, crashes=1, committed=[(0, 0, 0)])
    assert again == base and again is not base
    assert fingerprint(model, again) == fingerprint(model, base)


def _variants(base):
    """``base`` changed in exactly one variable each."""
    a, b = base.replicas
    q = base.quorum

    def rep(i, **kw):
        reps = list(base.replicas)
        reps[i] = attrs.evolve(reps[i], **kw)
        return attrs.evolve(base, replicas=tuple(reps))

    return {
        "committed": attrs.evolve(base, committed=((0, 0, 0), (1, 0, 1))),
        "committed empty": attrs.evolve(base, committed=()),
        "produced": attrs.evolve(base, produced=3),
        "crashes": attrs.evolve(base, crashes=2),
        "stale remote_leo on a follower": rep(B, remote_leo=(0, 1)),
        "leader remote_leo": rep(A, remote_leo=(0, 2)),
        "alive": rep(B, alive=False),
        "hw": rep(B, hw=0),
        "epoch": rep(B, epoch=-1),
        "leader None": rep(B, leader=None),
        "leader other": rep(B, leader=B),
        "log record": rep(A, log=((0, 0), (1, 1))),
        "log length": rep(A, log=((0, 0),)),
        "no inflight": rep(B, inflight=None),
        "inflight hw": rep(B, inflight=Fetch(A, 0, 1, ((0, 1),), 0)),
        "inflight start": rep(B, inflight=Fetch(A, 0, 0, ((0, 1),), 1)),
        "inflight epoch": rep(B, inflight=Fetch(A, 1, 1, ((0, 1),), 1)),
        "inflight records": rep(B, inflight=Fetch(A, 0, 1, (), 1)),
        "quorum leader": attrs.evolve(base, quorum=attrs.evolve(q, leader=None)),
        "quorum epoch": attrs.evolve(base, quorum=attrs.evolve(q, epoch=1)),
        "quorum isr": attrs.evolve(base, quorum=attrs.evolve(q, isr=(A,))),
    }


def test_one_variable_changes_the_fingerprint(model, base):
    variants = _variants(base)
    fps = {name: fingerprint(model, s) for name, s in variants.items()}
    base_fp = fingerprint(model, base)
    for name, fp in fps.items():
        assert fp != base_fp, name
    # ... and all differ from each other.
    assert len(set(fps.values())) == len(fps)


def test_encoding_is_unambiguous_across_field_boundaries(model, build):
    """A record moved from one replica's log to the next must not encode the same."""
    s1 = build.state([build.replica(2, log=[(0, 0), (0, 1)]), build.replica(2, log=[(0, 0)])])
    s2 = build.state([build.replica(2, log=[(0, 0)]), build.replica(2, log=[(0, 0), (0, 1)])])
    assert encode(s1) != encode(s2)
    assert fingerprint(model, s1) != fingerprint(model, s2)


def test_distinct_reachable_states_distinct_fingerprints(model):
    """No two different states of a few BFS levels share a fingerprint."""
    seen = {}
    frontier = list(model.init_states())
    for _ in range(6):
        nxt = []
        for s in frontier:
            for _, t in model.successors(s):
                fp = fingerprint(model, t)
                if fp in seen:
                    assert seen[fp] == t
                else:
                    seen[fp] = t
                    nxt.append(t)
        frontier = nxt
    assert len(seen) > 100


@pytest.mark.parametrize("n", [0, 1, 2, 1000, 70_000])
def test_the_fingerprint_order_sorts_and_the_least_key_wins(n):
    """``checker.core.keys.fingerprint_order`` packs positions into the low bits of one sort:
    it sorts like an argsort on random fingerprints with repeats, and on fingerprints
    made equal in every bit above the packed ones but out of order (which the packed
    sort cannot order, and sorts again), alone or in several groups, and keeps equal ones in
    the order of their positions (a stable argsort); ``least_per_fingerprint`` keeps, of
    each fingerprint, the successor of least key, as a brute force does, and
    ``first_per_fingerprint`` the first, which is the least when keys grow with positions
    (the order of the Spark owners' files)."""
    import numpy as np

    from kmc.checker.core.keys import first_per_fingerprint, fingerprint_order, least_per_fingerprint

    rng = np.random.default_rng(n)
    fps = rng.integers(0, 2**64 - 1, n, dtype=np.uint64, endpoint=True)
    if n > 4:
        fps[rng.integers(0, n, n // 3)] = fps[rng.integers(0, n, n // 3)]  # repeats
    cases = [fps]
    if n > 1:
        tied = fps.copy()
        bits = (n - 1).bit_length()
        low = np.uint64((1 << bits) - 1)
        tied[0], tied[1] = tied[0] | low, tied[0] & ~low
        cases.append(tied)  # equal above the low bits, the larger first
    if n > 100:
        groups = fps.copy()  # several such groups, of two to four, each out of order
        for g, size in enumerate([2, 3, 4, 3, 2]):
            at = rng.choice(n, size, replace=False)
            high = groups[at[0]] & ~low
            groups[at] = high | np.arange(size, 0, -1, dtype=np.uint64) * np.uint64(g + 1) % (low + np.uint64(1))
        groups[-1] = groups[-2]  # a repeat as well
        cases.append(groups)
    for f in cases:
        order, sorted_fps = fingerprint_order(f)
        assert sorted(order.tolist()) == list(range(n))
        assert sorted_fps.tolist() == np.sort(f).tolist() == f[order].tolist()
        assert order.tolist() == np.argsort(f, kind="stable").tolist()
        first: dict[int, int] = {}
        for i, fp in enumerate(f.tolist()):
            first.setdefault(fp, i)
        assert first_per_fingerprint(f).tolist() == [first[fp] for fp in sorted(first)]
        growing = np.cumsum(rng.integers(1, 300, n)).astype(np.int64)
        assert first_per_fingerprint(f).tolist() == least_per_fingerprint(growing, f).tolist()
        keys = rng.permutation(n).astype(np.int64) * 256 + rng.integers(0, 256, n)
        pick = least_per_fingerprint(keys, f)
        least: dict[int, int] = {}
        for i, (fp, k) in enumerate(zip(f.tolist(), keys.tolist())):
            if fp not in least or k < keys[least[fp]]:
                least[fp] = i
        assert pick.tolist() == [least[fp] for fp in sorted(least)]


@pytest.mark.parametrize("n", [0, 1, 2, 1000, 70_000])
def test_the_key_order_is_a_stable_argsort(n):
    """``checker.core.keys.key_order`` packs positions below the keys in one sort: it orders
    like a stable argsort on distinct keys, on repeated ones (the positions settle
    them), and on keys too large to share 64 bits with a position (left to the
    argsort)."""
    import numpy as np

    from kmc.checker.core.keys import CHOICES, key_order

    rng = np.random.default_rng(n)
    distinct = rng.permutation(n).astype(np.int64) * CHOICES + rng.integers(0, CHOICES, n)
    repeated = rng.integers(0, 50, n).astype(np.int64)
    large = rng.integers(0, 2**62, n, dtype=np.int64)
    for keys in (distinct, repeated, large):
        order = key_order(keys)
        assert order.tolist() == np.argsort(keys, kind="stable").tolist()
