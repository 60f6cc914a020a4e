"""The local engine's compact seen-set and the fast paths of the hot loop change no result."""

from __future__ import annotations

import pickle

from kmc.checker.local.states import LocalEngine, Options
from kmc.invariants.kafka import leader_epoch_monotonic, logs_never_diverge

from test_checkpoint import summary


def test_resuming_a_checkpoint_of_the_older_per_state_search(explorations):
    """A snapshot of the per-state search of an older kmc (untagged: its frontier
    ``[(fingerprint, state), ...]``, its seen-set a dict fingerprint -> parent fingerprint)
    resumes to the same result."""
    spec, model, whole = explorations["hw-unclean"]  # keep_going = true, as here
    props = spec.properties()
    opts = Options(keep_going=True)
    want = summary(whole)
    snaps = []
    engine = LocalEngine(model, props, opts)
    engine.on_level = lambda e: snaps.append(pickle.dumps(e.snapshot()))
    engine.run()
    snap = pickle.loads(snaps[3])
    frontier = [state for chunk in snap["queue"].blocks() for state in chunk]
    del snap["format"], snap["queue"]
    snap["seen"] = {}  # (an older kmc's entries: not read, the levels are explored again)
    snap["frontier"] = [(0, state) for state in frontier]
    resumed = LocalEngine(model, props, opts)
    resumed.restore(snap)
    assert summary(resumed.run()) == want


def test_step_property_skips_shared_replicas_but_not_changed_ones(build):
    model = build.model()
    a, b = build.replica(2, epoch=2), build.replica(2, epoch=2)
    before = build.state([a, b], epoch=2)
    same = build.state([a, b], epoch=2)
    assert leader_epoch_monotonic(model, before, None, same) is None
    lower = build.state([a, build.replica(2, epoch=1)], epoch=2)
    assert "went down from 2 to 1" in leader_epoch_monotonic(model, before, _Action(), lower)


class _Action:
    name, replica, cut, to = "BecomeFollower", 1, None, None


def test_logs_never_diverge_names_the_first_differing_offset(build):
    model = build.model()
    a = build.replica(2, log=[(0, 0), (0, 1), (0, 2)], hw=3)
    b = build.replica(2, log=[(0, 0), (1, 5), (1, 6)], hw=3)
    why = logs_never_diverge(model, build.state([a, b]))
    assert "disagree at offset 1" in why
    assert logs_never_diverge(model, build.state([a, a])) is None
