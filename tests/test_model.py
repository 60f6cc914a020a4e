"""The actions of docs/model.md, one by one, on hand-built states: the initial state and the
replicas' actions 1–5 (Produce, FetchRequest, FetchResponse, Crash, Restart), guards and effects
(tests/test_model_controller.py: actions 6–9 and the order of enumeration).

Replicas are numbered A=0, B=1, C=2, ...; records are (epoch, id).
"""

from __future__ import annotations

import attrs
import pytest

from kmc.model import Action, Fetch, Quorum
from kmc.model.kafka import ACTION_NAMES, KafkaModel
from kmc.model.config import Config

from helpers import leader_a, step, texts

A, B, C, D, E = range(5)


# -- initial state ---------------------------------------------------------------------


@pytest.mark.parametrize("names", [("A", "B"), ("A", "B", "C")])
def test_initial_state(build, names):
    model = build.model(replicas=names)
    (s,) = model.init_states()
    n = len(names)
    assert s.quorum == Quorum(A, 0, tuple(range(n)))
    assert (s.produced, s.crashes, s.committed) == (0, 0, ())
    for rep in s.replicas:
        assert rep.alive is True
        assert rep.log == ()
        assert rep.hw == 0
        assert rep.epoch == 0
        assert rep.leader == A
        assert rep.remote_leo == (0,) * n
        assert rep.inflight is None


def test_initial_actions(build):
    model = build.model(max_messages=2, max_crashes=1)
    (s,) = model.init_states()
    assert texts(model, s) == ["Produce(A)", "FetchRequest(B)", "Crash(A)", "Crash(B)"]
    assert model.actions(s) == [Action("Produce", A), Action("FetchRequest", B),
                                Action("Crash", A), Action("Crash", B)]


def test_action_names_in_model_order():
    assert ACTION_NAMES == ("Produce", "FetchRequest", "FetchResponse", "Crash", "Restart",
                            "ElectLeader", "BecomeFollower", "ShrinkIsr", "ExpandIsr", "AlterPartition")
    # AlterPartition is an action of alter_partition's configurations only
    assert KafkaModel(Config()).action_names() == ACTION_NAMES[:-1]
    assert KafkaModel(Config(alter_partition=True)).action_names() == ACTION_NAMES


def test_next_state_agrees_with_successors_and_rejects_disabled(build):
    model = build.model()
    (s,) = model.init_states()
    for a, nxt in model.successors(s):
        assert model.next_state(s, a) == nxt
    with pytest.raises(ValueError, match=r"Restart\(A\) is not enabled"):
        model.next_state(s, Action("Restart", A))


# -- 1. Produce ---------------------------------------------------------------------------


def test_produce_appends_epoch_and_sequence_no_hw_while_follower_lags(build):
    model = build.model(max_messages=3)
    s = leader_a(build, log=[(0, 0)], epoch=1, produced=1)
    t = step(model, s, "Produce(A)")
    assert t.replicas[A].log == ((0, 0), (1, 1))
    assert t.produced == 2
    assert t.replicas[A].hw == 0          # B (in the ISR) is known to be at 0
    assert t.committed == ()
    assert t.replicas[B] == s.replicas[B]


def test_produce_commits_at_once_when_leader_alone_in_isr(build):
    model = build.model()
    s = leader_a(build, isr=[A])
    t = step(model, s, "Produce(A)")
    assert t.replicas[A].log == ((0, 0),)
    assert t.replicas[A].hw == 1
    assert t.committed == ((0, 0, 0),)


def test_produce_hw_follows_slowest_isr_member(build):
    model = build.model(replicas=("A", "B", "C"), max_messages=4)
    s = leader_a(build, n=3, log=[(0, 0), (0, 1)], hw=0, remote=(0, 2, 1), produced=2)
    t = step(model, s, "Produce(A)")
    assert t.replicas[A].hw == 1          # min(LEO 3, B 2, C 1)
    assert t.committed == ((0, 0, 0),)


def test_produce_guards(build):
    model = build.model(max_messages=2)
    assert "Produce(A)" not in texts(model, leader_a(build, produced=2))        # bound
    dead = leader_a(build)
    dead = build.state([build.replica(2, alive=False), dead.replicas[B]])
    assert "Produce(A)" not in texts(model, dead)                               # not alive
    stale = leader_a(build)
    stale = build.state(stale.replicas, leader=A, epoch=1)                     # A on epoch 0
    assert "Produce(A)" not in texts(model, stale)
    strict = build.model(min_insync_replicas=2)
    assert "Produce(A)" not in texts(strict, leader_a(build, isr=[A]))         # ISR too small
    assert "Produce(A)" in texts(strict, leader_a(build, isr=[A, B]))


def test_produce_needs_replica_to_believe_it_leads(build):
    model = build.model()
    s = build.state([build.replica(2, leader=B), build.replica(2, leader=B)], leader=A)
    assert "Produce(A)" not in texts(model, s)


# -- 2. FetchRequest ------------------------------------------------------------------------


def test_fetch_request_first_round(build):
    model = build.model()
    s = leader_a(build, log=[(0, 0)], produced=1)
    t = step(model, s, "FetchRequest(B)")
    assert t.replicas[A].remote_leo == (0, 0)
    assert t.replicas[A].hw == 0
    assert t.replicas[B].inflight == Fetch(A, 0, 0, ((0, 0),), 0)
    assert t.replicas[B].log == ()           # nothing applied until the response
    assert t.committed == ()


def test_fetch_request_advances_leader_hw_before_answering(build):
    """The one-round lag: the leader learns B has offset 0 and commits it in the same
    request, and the response carries the new HW."""
    model = build.model()
    a = build.replica(2, log=[(0, 0)], hw=0)
    b = build.replica(2, log=[(0, 0)], hw=0)
    s = build.state([a, b], produced=1)
    t = step(model, s, "FetchRequest(B)")
    assert t.replicas[A].remote_leo[B] == 1
    assert t.replicas[A].hw == 1
    assert t.committed == ((0, 0, 0),)
    assert t.replicas[B].inflight == Fetch(A, 0, 1, (), 1)
    assert t.replicas[B].hw == 0             # B learns it one response later


def test_fetch_request_follower_longer_than_leader(build):
    model = build.model()
    a = build.replica(2, log=[(0, 0)], hw=0, epoch=1)
    b = build.replica(2, log=[(0, 0), (0, 1), (0, 2)], hw=0, epoch=1)
    s = build.state([a, b], epoch=1, produced=3)
    t = step(model, s, "FetchRequest(B)")
    assert t.replicas[A].remote_leo[B] == 1      # min(LEO(B) 3, LEO(A) 1)
    assert t.replicas[B].inflight == Fetch(A, 1, 1, (), 1)


def test_fetch_request_guards(build):
    model = build.model()
    base = leader_a(build)
    a, b = base.replicas
    cases = {
        "follower dead": [a, attrs.evolve(b, alive=False)],
        "follower follows nobody": [a, attrs.evolve(b, leader=None)],
        "follower on an older epoch": [attrs.evolve(a, epoch=1), b],
        "response in flight": [a, attrs.evolve(b, inflight=Fetch(A, 0, 0, (), 0))],
        "leader dead": [attrs.evolve(a, alive=False), b],
    }
    for why, reps in cases.items():
        epoch = 1 if why == "follower on an older epoch" else 0
        s = build.state(reps, epoch=epoch)
        assert "FetchRequest(B)" not in texts(model, s), why
    # The leader never fetches from itself.
    assert "FetchRequest(A)" not in texts(model, base)


# -- 3. FetchResponse ----------------------------------------------------------------------


def test_fetch_response_truncates_to_start_appends_and_sets_hw(build):
    model = build.model()
    a = build.replica(2, log=[(0, 0), (1, 2)], hw=1, epoch=1)
    b = build.replica(2, log=[(0, 0), (0, 1)], hw=1, epoch=1,
                      inflight=Fetch(A, 1, 1, ((1, 2),), 2))
    s = build.state([a, b], epoch=1, produced=3)
    t = step(model, s, "FetchResponse(B)")
    assert t.replicas[B].log == ((0, 0), (1, 2))
    assert t.replicas[B].hw == 2
    assert t.replicas[B].inflight is None
    assert t.replicas[A] == a


def test_fetch_response_hw_can_go_down(build):
    model = build.model()
    a = build.replica(2, log=[(0, 0), (0, 1)], hw=1, epoch=1)
    b = build.replica(2, log=[(0, 0), (0, 1)], hw=2, epoch=1, inflight=Fetch(A, 1, 2, (), 1))
    t = step(model, build.state([a, b], epoch=1, produced=2), "FetchResponse(B)")
    assert t.replicas[B].hw == 1
    assert t.replicas[B].log == ((0, 0), (0, 1))


def test_fetch_response_hw_capped_by_log_end(build):
    model = build.model()
    a = build.replica(2, log=[(0, 0), (0, 1), (0, 2)], hw=3)
    b = build.replica(2, log=[(0, 0), (0, 1)], inflight=Fetch(A, 0, 0, (), 3))
    t = step(model, build.state([a, b], produced=3), "FetchResponse(B)")
    assert t.replicas[B].log == ()
    assert t.replicas[B].hw == 0           # min(3, LEO 0)


def test_fetch_response_delivered_after_leader_crashed(build):
    model = build.model()
    a = build.replica(2, alive=False, log=[(0, 0)], hw=1)
    b = build.replica(2, inflight=Fetch(A, 0, 0, ((0, 0),), 1))
    t = step(model, build.state([a, b], produced=1, crashes=1), "FetchResponse(B)")
    assert t.replicas[B].log == ((0, 0),)
    assert t.replicas[B].hw == 1


@pytest.mark.parametrize("change", ["alive", "leader", "epoch"])
def test_stale_fetch_response_is_dropped(build, change):
    model = build.model()
    a = build.replica(2, log=[(0, 0)], hw=1, epoch=1)
    kw = {"log": [(0, 5)], "hw": 0, "epoch": 1, "inflight": Fetch(A, 1, 0, ((0, 0),), 1)}
    kw.update({"alive": {"alive": False}, "leader": {"leader": B},
               "epoch": {"epoch": 2}}[change])
    b = build.replica(2, **kw)
    s = build.state([a, b], epoch=1, produced=6)
    t = step(model, s, "FetchResponse(B)")
    assert t.replicas[B].inflight is None
    assert t.replicas[B].log == ((0, 5),)
    assert t.replicas[B].hw == 0
    assert t.replicas[A] == a and t.quorum == s.quorum


# -- 4. Crash ------------------------------------------------------------------------------


def test_crash_keeps_log_and_hw(build):
    model = build.model(max_crashes=2)
    b = build.replica(2, log=[(0, 0)], hw=1, inflight=Fetch(A, 0, 1, (), 1))
    s = build.state([build.replica(2, log=[(0, 0)], hw=1, remote=(0, 1)), b], produced=1,
                    crashes=1, committed=[(0, 0, 0)])
    t = step(model, s, "Crash(B)")
    rb = t.replicas[B]
    assert (rb.alive, rb.log, rb.hw, rb.epoch, rb.leader, rb.inflight) == (False, ((0, 0),), 1, 0, A, None)
    assert t.crashes == 2
    assert t.quorum == s.quorum                # the quorum is not told
    assert t.replicas[A] == s.replicas[A]


def test_crash_bound(build):
    model = build.model(max_crashes=1)
    s = leader_a(build, crashes=1)
    assert not any(x.startswith("Crash") for x in texts(model, s))


def test_crash_with_unflushed_loss_every_cut_in_order(build):
    model = build.model(unflushed_loss=True, max_crashes=1)
    s = leader_a(build, log=[(0, 0), (0, 1)], hw=2, remote=(0, 2), isr=[A, B], produced=2)
    s = build.state([s.replicas[A], build.replica(2, log=[(0, 0), (0, 1)], hw=2)], produced=2,
                    committed=[(0, 0, 0), (1, 0, 1)])
    crashes = [x for x in texts(model, s) if x.startswith("Crash")]
    assert crashes == ["Crash(A, keeps 0)", "Crash(A, keeps 1)", "Crash(A, keeps 2)",
                       "Crash(B, keeps 0)", "Crash(B, keeps 1)", "Crash(B, keeps 2)"]
    for cut in range(3):
        t = step(model, s, f"Crash(A, keeps {cut})")
        assert t.replicas[A].log == ((0, 0), (0, 1))[:cut]
        assert t.replicas[A].hw == cut         # min(hw 2, cut): may go below the HW
        assert t.replicas[A].alive is False
        assert t.crashes == 1
        assert t.committed == s.committed      # history remembers what was committed


def test_crash_keeping_everything_equals_plain_crash(build):
    lossy = build.model(unflushed_loss=True)
    plain = build.model()
    s = leader_a(build, log=[(0, 0)], hw=0, produced=1)
    assert step(lossy, s, "Crash(A, keeps 1)") == step(plain, s, "Crash(A)")


def test_crash_cut_below_hw_keeps_hw_when_above_cut(build):
    model = build.model(unflushed_loss=True)
    s = leader_a(build, log=[(0, 0), (0, 1), (0, 2)], hw=1, produced=3)
    t = step(model, s, "Crash(A, keeps 2)")
    assert t.replicas[A].hw == 1               # min(1, 2)
    assert t.replicas[A].log == ((0, 0), (0, 1))


# -- 5. Restart ----------------------------------------------------------------------------


def test_restart_forgets_epoch_leader_and_remote_leos(build):
    model = build.model(max_leader_epoch=3)
    a = build.replica(2, alive=False, log=[(1, 0), (1, 1)], hw=1, epoch=1, leader=A, remote=(0, 2))
    b = build.replica(2, log=[(1, 0)], hw=1, epoch=1)
    s = build.state([a, b], epoch=1, produced=2, crashes=1, committed=[(0, 1, 0)])
    assert "Restart(A)" in texts(model, s) and "Restart(B)" not in texts(model, s)
    t = step(model, s, "Restart(A)")
    ra = t.replicas[A]
    assert (ra.alive, ra.epoch, ra.leader, ra.remote_leo) == (True, -1, None, (0, 0))
    assert (ra.log, ra.hw) == (((1, 0), (1, 1)), 1)
    assert t.quorum == s.quorum and t.crashes == 1
