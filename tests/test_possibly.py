"""The edge log of always-possibly properties, on graphs whose traps are worked out by hand."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kmc.checker.graph.possibly import EdgeLog

# State i is stored under the fingerprint FP[i]: arbitrary, unordered 64-bit values, so that a
# mix-up between numbers and fingerprints cannot pass by accident.
FP = np.array([0xDEAD_BEEF_0000_0011 * (i + 3) % 2**64 for i in range(64)], dtype=np.uint64)
NUMBER = {int(fp): i for i, fp in enumerate(FP)}


def numbers_of(fps):
    return np.array([NUMBER[int(f)] for f in fps], dtype=np.int64)


def build(goal, edges, chunks=1):
    """A log with states 0..len(goal)-1 (``goal`` a string of 'g' and '.') and ``edges``
    (pairs of state numbers), added in ``chunks`` pieces as an engine adds them level by level."""
    log = EdgeLog()
    mask = np.array([c == "g" for c in goal])
    bounds = np.linspace(0, len(mask), chunks + 1).astype(int)
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        log.add_states(int(lo), mask[lo:hi])
    src = np.array([s for s, _ in edges], dtype=np.int64)
    dst = FP[np.array([d for _, d in edges], dtype=np.int64)] if edges else np.empty(0, np.uint64)
    for part in np.array_split(np.arange(len(src)), chunks):
        log.add_edges(src[part], dst[part])
    return log


def test_no_goal_at_all_every_state_is_a_trap():
    log = build("...", [(0, 1), (1, 2), (2, 0)])
    assert log.traps(numbers_of) == (3, 0)


def test_every_state_a_goal_no_trap_and_no_edge_kept():
    log = build("ggg", [(0, 1), (1, 2), (2, 0), (0, 0)])
    assert log.edges == 0
    assert log.traps(numbers_of) == (0, None)


def test_chain_into_a_goal_and_a_dead_end():
    # 0 -> 1 -> 2(goal); 0 -> 3 -> 4 (4 has no successor); 3 -> 3
    # 0, 1 reach the goal; 3 and 4 do not: 2 traps, the least is 3.
    log = build("..g..", [(0, 1), (0, 3), (1, 2), (3, 3), (3, 4)])
    assert log.traps(numbers_of) == (2, 3)


def test_goal_sources_are_dropped():
    # The goal state 1 has edges back to 0 and into the trap 2: neither is kept.
    log = build(".g.", [(0, 1), (1, 0), (1, 2), (1, 1), (2, 2)])
    assert log.edges == 2  # (0, 1) and (2, 2)
    assert log.traps(numbers_of) == (1, 2)


def test_duplicates_and_self_loops_count_once():
    # 0 -> 0 (self loop) twice, 0 -> 1 three times, 1 -> 1; no goal reachable from 0 or 1.
    # 2 -> 3 (goal) twice, 2 -> 2.
    edges = [(0, 0), (0, 0), (0, 1), (0, 1), (0, 1), (1, 1), (2, 3), (2, 3), (2, 2)]
    log = build("...g", edges)
    assert log.edges == 9  # duplicates are kept; they change nothing
    assert log.traps(numbers_of) == (2, 0)


def test_a_cycle_that_can_leave_is_not_a_trap():
    # 1 -> 2 -> 3 -> 1 cycle, 3 -> 4 (goal); 0 -> 1. 5 -> 6 -> 5, a closed cycle: 2 traps.
    edges = [(0, 1), (1, 2), (2, 3), (3, 1), (3, 4), (5, 6), (6, 5), (4, 5)]
    log = build("....g..", edges)
    assert log.traps(numbers_of) == (2, 5)


def test_long_backward_chain_in_chunks():
    # 0 -> 1 -> ... -> 39 -> 40 (goal), 41 -> 42 -> 43 (43 a dead end), added in 5 pieces.
    edges = [(i, i + 1) for i in range(40)] + [(41, 42), (42, 43)]
    log = build("." * 40 + "g" + "...", edges, chunks=5)
    assert log.traps(numbers_of) == (3, 41)


def test_rollback_forgets_states_and_their_edges():
    # Before rollback: 0 -> 1 -> 2 (goal), 3 -> 4, 4 -> 2.
    log = build("..g..", [(0, 1), (1, 2), (3, 4), (4, 2)])
    assert log.traps(numbers_of) == (0, None)
    log.rollback(3)  # states 3 and 4 and the edges leaving them are gone
    assert log.states == 3
    assert log.edges == 2
    assert log.traps(numbers_of) == (0, None)
    # The level is redone differently: state 3 now has no successor and 4 leads to 3.
    log.add_states(3, np.array([False, False]))
    log.add_edges(np.array([4]), FP[[3]])
    assert log.traps(numbers_of) == (2, 3)


def test_rollback_to_a_larger_number_changes_nothing():
    log = build("..", [(0, 1)])
    log.rollback(5)
    assert (log.states, log.edges) == (2, 1)
    assert log.traps(numbers_of) == (2, 0)


def test_pickle_round_trip_keeps_the_log_and_can_grow():
    log = build(".g..", [(0, 1), (2, 3), (3, 2)])
    copy = pickle.loads(pickle.dumps(log))
    assert (copy.states, copy.edges) == (4, 3)
    assert copy.traps(numbers_of) == (2, 2)
    copy.add_states(4, np.array([True]))
    copy.add_edges(np.array([3]), FP[[4]])
    assert copy.traps(numbers_of) == (0, None)
    assert log.traps(numbers_of) == (2, 2)  # the original is untouched


def test_growth_past_the_initial_capacity():
    # 3000 states in one chain 0 -> 1 -> ... ; only the last is a goal, except that state
    # 1500 has no successor: states 0..1500 are traps, 1501..2999 reach the goal.
    n = 3000
    fps = np.arange(n, dtype=np.uint64) * np.uint64(7) + np.uint64(1)
    log = EdgeLog()
    goal = np.zeros(n, dtype=bool)
    goal[-1] = True
    for lo in range(0, n, 700):
        log.add_states(lo, goal[lo:lo + 700])
    src = np.array([i for i in range(n - 1) if i != 1500], dtype=np.int64)
    log.add_edges(src, fps[src + 1])
    count, least = log.traps(lambda f: ((f - np.uint64(1)) // np.uint64(7)).astype(np.int64))
    assert (count, least) == (1501, 0)
    assert log.edges == n - 2
    assert 12 * log.edges + n <= log.nbytes() <= 1.5 * (12 * log.edges + n) + 12 * 1024  # 4 + 8 bytes an edge, 1 a state


def test_out_of_order_states_and_unknown_sources_are_refused():
    log = EdgeLog()
    with pytest.raises(ValueError, match="expected state 0 next, got 2"):
        log.add_states(2, np.array([False]))
    log.add_states(0, np.array([False]))
    with pytest.raises(ValueError, match="not added"):
        log.add_edges(np.array([1]), FP[[0]])
    with pytest.raises(ValueError, match="2 sources but 1 successors"):
        log.add_edges(np.array([0, 0]), FP[[0]])


def test_empty_log():
    assert EdgeLog().traps(numbers_of) == (0, None)
    log = EdgeLog()
    log.add_states(0, np.array([False]))
    log.add_edges(np.empty(0, np.int64), np.empty(0, np.uint64))
    assert log.traps(numbers_of) == (1, 0)  # a lone non-goal state without successors


def _naive_traps(goal, edges):
    """The traps by fixpoint iteration over Python sets: a state can reach a goal when it is
    one or has an edge to a state that can."""
    good = {i for i, g in enumerate(goal) if g}
    changed = True
    while changed:
        changed = False
        for s, d in edges:
            if d in good and s not in good:
                good.add(s)
                changed = True
    traps = [i for i in range(len(goal)) if i not in good]
    return len(traps), (traps[0] if traps else None)


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_random_graphs_agree_with_a_fixpoint(data):
    n = data.draw(st.integers(1, 30))
    goal = data.draw(st.lists(st.booleans(), min_size=n, max_size=n))
    edges = data.draw(st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=80))
    chunks = data.draw(st.integers(1, 4))
    log = build("".join("g" if g else "." for g in goal), edges, chunks=chunks)
    assert log.traps(numbers_of) == _naive_traps(goal, edges)
