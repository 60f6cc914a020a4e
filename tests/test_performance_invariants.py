"""The local engine's compact seen-set and the fast paths of the hot loop change no result."""

from __future__ import annotations

import pickle
import random

from kmc.checker.local.states import LocalEngine, Options, SeenSet
from kmc.invariants.kafka import leader_epoch_monotonic, logs_never_diverge

from test_checkpoint import summary


def test_seen_set_is_a_mapping_to_parents_through_growth_and_truncation():
    rng = random.Random(7)
    fps = list(dict.fromkeys(rng.getrandbits(64) for _ in range(5000))) + [0, 2**64 - 1]
    want = {}
    seen = SeenSet()
    for i, fp in enumerate(fps):
        parent = -1 if i < 3 else rng.randrange(i)
        assert seen.add(fp, parent)
        assert not seen.add(fp, 0)  # a second add is refused and changes nothing
        want[fp] = None if parent < 0 else fps[parent]
    assert dict(seen) == want and list(seen) == fps and len(seen) == len(fps)
    assert all(seen.number(fp) == i for i, fp in enumerate(fps))
    assert 12345 not in seen and "x" not in seen
    assert seen.nbytes() < 30 * len(seen)  # a dict of ints costs about 90
    seen.truncate(100)
    assert list(seen) == fps[:100] and fps[100] not in seen and fps[99] in seen
    assert seen.add(fps[100], 5) and seen[fps[100]] == fps[5]
    again = pickle.loads(pickle.dumps(seen))
    assert dict(again) == dict(seen) and list(again) == list(seen)


def test_seen_set_from_a_dict_puts_the_frontier_last():
    mapping = {1: None, 2: 1, 3: 1, 4: 2}
    seen = SeenSet.from_mapping(mapping, last=[3, 4])
    assert list(seen) == [1, 2, 3, 4] and dict(seen) == mapping
    seen = SeenSet.from_mapping(mapping, last=[4, 3])
    assert list(seen) == [1, 2, 4, 3] and dict(seen) == mapping


def test_resuming_a_checkpoint_with_a_dict_seen_set(explorations):
    """A snapshot written before the SeenSet (seen as a dict) resumes to the same result."""
    spec, model, whole = explorations["hw-unclean"]  # keep_going = true, as here
    props = spec.properties()
    opts = Options(keep_going=True)
    want = summary(whole)
    snaps = []
    engine = LocalEngine(model, props, opts)
    engine.on_level = lambda e: snaps.append(pickle.dumps(e.snapshot()))
    engine.run()
    snap = pickle.loads(snaps[3])
    snap["seen"] = dict(snap["seen"])
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
