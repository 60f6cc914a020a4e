"""The reference model's controller and leadership actions, one at a time, on hand-built states
(docs/model.md, "Actions" 6–9): ElectLeader, BecomeFollower, ShrinkIsr and ExpandIsr, and the
order in which every action is enumerated (tests/test_model.py: the initial state and actions 1–5).

Replicas are numbered A=0, B=1, C=2, ...; records are (epoch, id).
"""

from __future__ import annotations

import pytest

from kmc.model import HIGH_WATERMARK, LEADER_EPOCH, LEADER_EPOCH_KIP279, Action, Fetch, Quorum

from helpers import leader_a, step, texts

A, B, C, D, E = range(5)


# -- 6. ElectLeader ------------------------------------------------------------------------


def test_no_election_while_leader_leads(build):
    model = build.model(max_leader_epoch=5)
    assert not any(x.startswith("ElectLeader") for x in texts(model, leader_a(build)))


def test_clean_election_after_leader_death(build):
    model = build.model(replicas=("A", "B", "C"), max_leader_epoch=2, max_messages=3)
    a = build.replica(3, alive=False, log=[(0, 0), (0, 1)], hw=1, remote=(0, 2, 1))
    b = build.replica(3, log=[(0, 0), (0, 1)], hw=0, inflight=Fetch(A, 0, 2, (), 1))
    c = build.replica(3, log=[(0, 0)], hw=1)
    s = build.state([a, b, c], isr=[A, B, C], produced=2, crashes=1, committed=[(0, 0, 0)])
    assert [x for x in texts(model, s) if x.startswith("Elect")] == ["ElectLeader(B)", "ElectLeader(C)"]
    t = step(model, s, "ElectLeader(B)")
    assert t.quorum == Quorum(B, 1, (B, C))        # the live ISR members
    rb = t.replicas[B]
    assert (rb.leader, rb.epoch, rb.remote_leo, rb.inflight) == (B, 1, (0, 0, 0), None)
    assert rb.hw == 0                              # unchanged: C's remote LEO is 0
    assert rb.log == ((0, 0), (0, 1))              # leaders never truncate
    assert t.committed == s.committed
    assert t.replicas[C] == c and t.replicas[A] == a


def test_election_alone_in_isr_advances_hw_and_commits(build):
    model = build.model()
    a = build.replica(2, alive=False, log=[(0, 0), (0, 1)], hw=1, remote=(0, 2))
    b = build.replica(2, log=[(0, 0), (0, 1)], hw=0)
    s = build.state([a, b], produced=2, crashes=1, committed=[(0, 0, 0)])
    t = step(model, s, "ElectLeader(B)")
    assert t.quorum == Quorum(B, 1, (B,))
    assert t.replicas[B].hw == 2
    assert t.committed == ((0, 0, 0), (1, 0, 1))


def test_election_bounded_by_max_leader_epoch(build):
    model = build.model(max_leader_epoch=1)
    a = build.replica(2, alive=False, epoch=1)
    s = build.state([a, build.replica(2, epoch=1)], epoch=1, crashes=1)
    assert not any(x.startswith("Elect") for x in texts(model, s))
    s0 = build.state([build.replica(2, alive=False), build.replica(2)], epoch=0, crashes=1)
    assert "ElectLeader(B)" in texts(model, s0)


def test_restarted_quorum_leader_may_be_reelected(build):
    """n = q is allowed when q restarted since its election (epoch -1 != quorum epoch)."""
    model = build.model()
    a = build.replica(2, log=[(0, 0)], hw=0, epoch=-1, leader=None)
    b = build.replica(2, log=[], hw=0)
    s = build.state([a, b], produced=1, crashes=1)
    assert [x for x in texts(model, s) if x.startswith("Elect")] == ["ElectLeader(A)", "ElectLeader(B)"]
    t = step(model, s, "ElectLeader(A)")
    assert t.quorum == Quorum(A, 1, (A, B))
    assert (t.replicas[A].leader, t.replicas[A].epoch) == (A, 1)


def test_dead_and_out_of_isr_replicas_not_electable_cleanly(build):
    model = build.model(replicas=("A", "B", "C"))
    a = build.replica(3, alive=False)
    s = build.state([a, build.replica(3, alive=False), build.replica(3)], isr=[A, B], crashes=2)
    assert not any(x.startswith("Elect") for x in texts(model, s))   # C is out of the ISR


def test_unclean_election_only_without_live_isr_member(build):
    model = build.model(replicas=("A", "B", "C"), unclean_leader_election=True, max_crashes=3)
    a = build.replica(3, alive=False, log=[(0, 0)], hw=1)
    b = build.replica(3, log=[(0, 0)], hw=0)
    c = build.replica(3, log=[], hw=0)
    live_isr = build.state([a, b, c], isr=[A, B], produced=1, crashes=1, committed=[(0, 0, 0)])
    assert [x for x in texts(model, live_isr) if x.startswith("Elect")] == ["ElectLeader(B)"]
    no_live = build.state([a, build.replica(3, alive=False, log=[(0, 0)]), c], isr=[A, B],
                          produced=1, crashes=2, committed=[(0, 0, 0)])
    assert [x for x in texts(model, no_live) if x.startswith("Elect")] == ["ElectLeader(C)"]
    t = step(model, no_live, "ElectLeader(C)")
    assert t.quorum == Quorum(C, 1, (C,))
    assert t.replicas[C].log == () and t.replicas[C].hw == 0
    clean_only = build.model(replicas=("A", "B", "C"), max_crashes=3)
    assert not any(x.startswith("Elect") for x in texts(clean_only, no_live))


def test_unclean_election_commits_the_new_leaders_log(build):
    model = build.model(unclean_leader_election=True)
    a = build.replica(2, alive=False, log=[(0, 0)], hw=1)
    b = build.replica(2, log=[(0, 0), (0, 1)], hw=0)
    s = build.state([a, b], isr=[A], produced=2, crashes=1, committed=[(0, 0, 0)])
    t = step(model, s, "ElectLeader(B)")
    assert t.quorum == Quorum(B, 1, (B,))
    assert t.replicas[B].hw == 2
    assert t.committed == ((0, 0, 0), (1, 0, 1))


def test_preferred_election_moves_leadership_from_a_live_leader(build):
    model = build.model(preferred_election=True, max_leader_epoch=2)
    s = leader_a(build, log=[(0, 0)], hw=0, produced=1)
    assert [x for x in texts(model, s) if x.startswith("Elect")] == ["ElectLeader(B)"]
    t = step(model, s, "ElectLeader(B)")
    assert t.quorum == Quorum(B, 1, (A, B))
    assert (t.replicas[B].leader, t.replicas[B].epoch, t.replicas[B].hw) == (B, 1, 0)
    # A keeps acting on its old epoch (its own state is untouched) but no longer leads.
    assert t.replicas[A] == s.replicas[A]
    assert "Produce(A)" not in texts(model, t)
    assert "Produce(B)" in texts(model, t)


def test_preferred_election_needs_live_isr_candidate(build):
    model = build.model(replicas=("A", "B", "C"), preferred_election=True)
    s = leader_a(build, n=3, isr=[A, B])
    s = build.state([s.replicas[A], build.replica(3, alive=False), s.replicas[C]], isr=[A, B], crashes=1)
    assert not any(x.startswith("Elect") for x in texts(model, s))


# -- 7. BecomeFollower -------------------------------------------------------------------


def _after_election(build, b_log, b_hw, a_log, a_alive=True):
    """B (epoch 0) learns that A was elected at epoch 1; A leads unless dead."""
    a = build.replica(2, alive=a_alive, log=a_log, hw=0, epoch=1, leader=A)
    b = build.replica(2, log=b_log, hw=b_hw, epoch=0, leader=B, inflight=Fetch(B, 0, 0, (), 0))
    return build.state([a, b], leader=A, epoch=1, isr=[A], produced=3)


@pytest.mark.parametrize("rule, t_want", [
    (HIGH_WATERMARK, 1),
    (LEADER_EPOCH, 2),
    (LEADER_EPOCH_KIP279, 1),
])
def test_become_follower_truncates_by_rule(build, rule, t_want):
    model = build.model(truncation=rule)
    s = _after_election(build, b_log=[(0, 0), (0, 1), (0, 2)], b_hw=1, a_log=[(0, 0), (0, 5), (1, 9)])
    t = step(model, s, "BecomeFollower(B)")
    rb = t.replicas[B]
    assert rb.log == ((0, 0), (0, 1), (0, 2))[:t_want]
    assert rb.hw == min(1, t_want)
    assert (rb.leader, rb.epoch, rb.inflight) == (A, 1, None)
    assert t.replicas[A] == s.replicas[A] and t.quorum == s.quorum


def test_become_follower_lowers_hw_to_t(build):
    model = build.model(truncation=LEADER_EPOCH_KIP279)
    s = _after_election(build, b_log=[(0, 0), (0, 1)], b_hw=2, a_log=[(0, 0), (1, 2)])
    t = step(model, s, "BecomeFollower(B)")
    assert (t.replicas[B].log, t.replicas[B].hw) == (((0, 0),), 1)


@pytest.mark.parametrize("rule", [LEADER_EPOCH, LEADER_EPOCH_KIP279])
def test_leader_epoch_rules_need_a_leading_leader(build, rule):
    model = build.model(truncation=rule)
    s = _after_election(build, b_log=[(0, 0)], b_hw=1, a_log=[(0, 0)], a_alive=False)
    assert "BecomeFollower(B)" not in texts(model, s)


def test_high_watermark_become_follower_with_dead_leader(build):
    """Under high-watermark a restarted replica truncates to its HW as soon as it learns
    the quorum's epoch, whether or not the leader is alive."""
    model = build.model(truncation=HIGH_WATERMARK)
    a = build.replica(2, alive=False, log=[(0, 0), (0, 1)], hw=2, epoch=1, leader=A)
    b = build.replica(2, log=[(0, 0), (0, 1)], hw=1, epoch=-1, leader=None)
    s = build.state([a, b], leader=A, epoch=1, isr=[A], produced=2, crashes=2)
    t = step(model, s, "BecomeFollower(B)")
    assert (t.replicas[B].log, t.replicas[B].hw) == (((0, 0),), 1)
    assert (t.replicas[B].leader, t.replicas[B].epoch) == (A, 1)


def test_become_follower_guards(build):
    model = build.model(truncation=HIGH_WATERMARK)
    s = leader_a(build, epoch=1)                         # B already on epoch 1
    assert "BecomeFollower(B)" not in texts(model, s)
    # The quorum leader itself never becomes a follower, even on an old epoch.
    a = build.replica(2, epoch=-1, leader=None)
    s = build.state([a, build.replica(2, epoch=0)], leader=A, epoch=1, crashes=1)
    assert "BecomeFollower(A)" not in texts(model, s)
    assert "BecomeFollower(B)" in texts(model, s)
    # A dead replica does not.
    s = build.state([build.replica(2, epoch=1), build.replica(2, alive=False, epoch=0)],
                    leader=A, epoch=1, crashes=1)
    assert "BecomeFollower(B)" not in texts(model, s)
    # No quorum leader: nothing to follow.
    s = build.state([build.replica(2, epoch=-1, leader=None), build.replica(2, epoch=-1, leader=None)],
                    leader=None, epoch=1)
    assert not any(x.startswith("BecomeFollower") for x in texts(model, s))


def test_deposed_leader_becomes_follower_keeping_stale_remote_leo(build):
    model = build.model(truncation=LEADER_EPOCH_KIP279, preferred_election=True, max_messages=3)
    s = leader_a(build, log=[(0, 0), (0, 1)], hw=1, remote=(0, 1), produced=2, committed=[(0, 0, 0)])
    s = build.state([s.replicas[A], build.replica(2, log=[(0, 0)], hw=1)], produced=2,
                    committed=[(0, 0, 0)])
    t = step(model, s, "ElectLeader(B)")
    u = step(model, t, "BecomeFollower(A)")
    ra = u.replicas[A]
    assert (ra.log, ra.hw, ra.leader, ra.epoch) == (((0, 0),), 1, B, 1)
    # remote_leo is reset only by Restart and ElectLeader: the stale view stays.
    assert ra.remote_leo == (0, 1)


def test_fetch_responses_are_never_stale_when_they_arrive(build):
    """Every action that changes a follower's alive, leader or epoch clears its in-flight
    response (docs/model.md), so in every reachable state the response matches its receiver;
    and a response from a leader that crashed since is reachable (still delivered)."""
    model = build.model(truncation=LEADER_EPOCH, max_crashes=2, unflushed_loss=True,
                        preferred_election=True, max_leader_epoch=2)
    seen = set(model.init_states())
    frontier = list(seen)
    from_dead_leader = 0
    while frontier:
        nxt = []
        for s in frontier:
            for _, t in model.successors(s):
                if t not in seen:
                    seen.add(t)
                    nxt.append(t)
        frontier = nxt
    for s in seen:
        for rep in s.replicas:
            f = rep.inflight
            if f is not None:
                assert rep.alive and rep.leader == f.leader and rep.epoch == f.epoch, s
                from_dead_leader += not s.replicas[f.leader].alive
    assert len(seen) > 1000
    assert from_dead_leader > 0


# -- 8. ShrinkIsr, 9. ExpandIsr ------------------------------------------------------------


def test_shrink_isr_of_lagging_follower_commits(build):
    model = build.model(max_messages=3)
    s = leader_a(build, log=[(0, 0), (0, 1), (0, 2)], hw=1, remote=(0, 1), produced=3,
                 committed=[(0, 0, 0)])
    assert "ShrinkIsr(B)" in texts(model, s)
    t = step(model, s, "ShrinkIsr(B)")
    assert t.quorum == Quorum(A, 0, (A,))
    assert t.replicas[A].hw == 3
    # Exactly offsets old hw (1) .. new hw - 1 (2) are added.
    assert t.committed == ((0, 0, 0), (1, 0, 1), (2, 0, 2))


def test_shrink_isr_of_dead_caught_up_follower(build):
    model = build.model()
    s = leader_a(build, log=[(0, 0)], hw=1, remote=(0, 1), produced=1, committed=[(0, 0, 0)])
    s = build.state([s.replicas[A], build.replica(2, alive=False, log=[(0, 0)], hw=1)],
                    produced=1, crashes=1, committed=[(0, 0, 0)])
    t = step(model, s, "ShrinkIsr(B)")
    assert t.quorum.isr == (A,)
    assert t.committed == s.committed


def test_shrink_isr_guards(build):
    model = build.model()
    caught_up = leader_a(build, log=[(0, 0)], hw=1, remote=(0, 1), produced=1)
    assert "ShrinkIsr(B)" not in texts(model, caught_up)
    out = leader_a(build, log=[(0, 0)], remote=(0, 0), isr=[A], produced=1)
    assert "ShrinkIsr(B)" not in texts(model, out)              # not in the ISR
    no_leader = build.state([build.replica(2, alive=False, log=[(0, 0)]), build.replica(2)],
                            produced=1, crashes=1)
    assert "ShrinkIsr(B)" not in texts(model, no_leader)        # nobody leads
    assert "ShrinkIsr(A)" not in texts(model, leader_a(build, log=[(0, 0)], produced=1))


def test_expand_isr(build):
    model = build.model(replicas=("A", "B", "C"))
    s = leader_a(build, n=3, log=[(0, 0)], hw=1, remote=(0, 1, 1), isr=[A], produced=1,
                 committed=[(0, 0, 0)])
    assert [x for x in texts(model, s) if x.startswith("Expand")] == ["ExpandIsr(B)", "ExpandIsr(C)"]
    t = step(model, s, "ExpandIsr(C)")
    assert t.quorum == Quorum(A, 0, (A, C))
    assert t.replicas == s.replicas and t.committed == s.committed
    u = step(model, t, "ExpandIsr(B)")
    assert u.quorum.isr == (A, B, C)                   # kept sorted


def test_expand_isr_guards(build):
    model = build.model()
    # remote_leo below the leader's HW
    s = leader_a(build, log=[(0, 0)], hw=1, remote=(0, 0), isr=[A], produced=1)
    assert "ExpandIsr(B)" not in texts(model, s)
    # equal to the HW suffices
    s = leader_a(build, log=[(0, 0), (0, 1)], hw=1, remote=(0, 1), isr=[A], produced=2)
    assert "ExpandIsr(B)" in texts(model, s)
    # a follower on an older epoch, or following someone else, or dead, is not added
    a = build.replica(2, log=[(0, 0)], hw=1, epoch=1, remote=(0, 1))
    for b in (build.replica(2, epoch=0), build.replica(2, epoch=1, leader=B),
              build.replica(2, alive=False, epoch=1)):
        s = build.state([a, b], epoch=1, isr=[A], produced=1)
        assert "ExpandIsr(B)" not in texts(model, s), b


# -- enumeration order ---------------------------------------------------------------


def test_enumeration_order_actions_then_replicas_then_cuts(build):
    """One state with every action enabled: 1-9 in docs/model.md's order, replicas in order
    within an action, cut points in order within a lossy crash."""
    model = build.model(replicas=("A", "B", "C", "D", "E"), max_messages=4, max_crashes=2,
                        max_leader_epoch=3, unflushed_loss=True, preferred_election=True)
    n = 5
    a = build.replica(n, log=[(0, 0), (1, 1)], hw=1, epoch=1, leader=A, remote=(0, 1, 1, 0, 0))
    b = build.replica(n, log=[(0, 0)], hw=1, epoch=1, leader=A)
    c = build.replica(n, log=[(0, 0)], hw=1, epoch=1, leader=A, inflight=Fetch(A, 1, 1, ((1, 1),), 1))
    d = build.replica(n, alive=False, log=[], hw=0, epoch=0, leader=A)
    e = build.replica(n, log=[], hw=0, epoch=0, leader=A)
    s = build.state([a, b, c, d, e], leader=A, epoch=1, isr=[A, B, D], produced=2, crashes=1,
                    committed=[(0, 0, 0)])
    assert texts(model, s) == [
        "Produce(A)",
        "FetchRequest(B)",
        "FetchResponse(C)",
        "Crash(A, keeps 0)", "Crash(A, keeps 1)", "Crash(A, keeps 2)",
        "Crash(B, keeps 0)", "Crash(B, keeps 1)",
        "Crash(C, keeps 0)", "Crash(C, keeps 1)",
        "Crash(E, keeps 0)",
        "Restart(D)",
        "ElectLeader(B)",
        "BecomeFollower(E)",
        "ShrinkIsr(B)", "ShrinkIsr(D)",
        "ExpandIsr(C)",
    ]


def test_format_action(build):
    m = build.model(replicas=("x1", "y2"))
    assert m.format_action(Action("Crash", 1, 0)) == "Crash(y2, keeps 0)"
    assert m.format_action(Action("ElectLeader", 0)) == "ElectLeader(x1)"
    assert m.name(None) == "none"
