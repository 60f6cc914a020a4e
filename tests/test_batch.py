"""The batch kernel and the batch engine against the reference attrs model.

Differential tests: the kernel's successors of a state are the reference model's, in
the same order with the same actions, on every shipped spec's configuration, on the
matrix's default grid and on hypothesis-generated random walks; full runs of the batch
engine give the pinned numbers and the per-state engine's counterexamples; symmetry
reduction counts orbits computed by brute force.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kmc.checker.local.rows import BatchEngine
from kmc.checker.base.errors import UsageError
from kmc.checker.base.fingerprint import fingerprint_rows
from kmc.checker.local.states import LocalEngine, Options
from kmc.checker.contract.protocol import ALWAYS, Property
from kmc.checker.stores.seen import CompactSeenSet
from kmc.checker.core.trace import replay_choices
from kmc.model import INITIAL_LEADERS, TRUNCATION_RULES, Config, KafkaModel
from kmc.model.batch import KafkaBatchKernel
from kmc.app.specs import load_spec
from kmc.model.symmetry import permute, symmetries
from helpers import assert_same_successors, random_walk, reachable
from pins import PINS

ROOT = Path(__file__).resolve().parent.parent
# The fetch path's specs (truncate_on_fetch) are pinned apart (tests/pins.py's FETCH_PINS):
# tests/test_fetch_kernel.py runs them on the batch kernel against those pins and the model.
# (A spec whose configuration the kernel declined, batch_unsupported, would run per state: none is.)
SPECS = sorted(p.stem for p in (ROOT / "specs").glob("*.toml")
               if not load_spec(p).config.truncate_on_fetch and load_spec(p).model().batch_unsupported() is None)


@pytest.mark.parametrize("name", SPECS)
def test_successors_equal_the_model_on_every_shipped_spec(name):
    model = load_spec(ROOT / "specs" / f"{name}.toml").model()
    assert_same_successors(model, reachable(model, 800))


def _grid():
    from kmc.app.commands.matrix import grid

    return grid(list(TRUNCATION_RULES), [2, 3], None, [False, True], [False, True])


@pytest.mark.parametrize("config", _grid(), ids=lambda c: f"{c.truncation}-{c.n}-{c.min_insync_replicas}-"
                         f"{c.unclean_leader_election}-{c.unflushed_loss}")
def test_successors_equal_the_model_on_the_matrix_grid(config):
    model = KafkaModel(config)
    assert_same_successors(model, reachable(model, 250))


_CONFIGS = st.builds(
    lambda gate, elr, ap, be, **kw: Config(hw_requires_min_isr=gate or elr, eligible_leader_replicas=elr,
                                           alter_partition=ap or be, broker_epochs=be, **kw),
    gate=st.booleans(),
    elr=st.booleans(),
    ap=st.booleans(),
    be=st.booleans(),
    replicas=st.sampled_from([("A", "B"), ("A", "B", "C"), ("A", "B", "C", "D")]),
    max_messages=st.integers(0, 4),
    max_crashes=st.integers(0, 3),
    max_leader_epoch=st.integers(0, 4),
    truncation=st.sampled_from(TRUNCATION_RULES),
    min_insync_replicas=st.integers(1, 2),
    unclean_leader_election=st.booleans(),
    unflushed_loss=st.booleans(),
    preferred_election=st.booleans(),
    initial_leader=st.sampled_from(INITIAL_LEADERS),
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(config=_CONFIGS, walk=st.lists(st.integers(0, 10**6), min_size=1, max_size=40))
def test_successors_equal_the_model_along_random_walks(config, walk):
    model = KafkaModel(config)
    state = model.init_states()[walk[0] % len(model.init_states())]
    assert_same_successors(model, random_walk(model, state, walk))


def test_rows_round_trip_on_every_state_of_a_small_spec():
    model = load_spec(ROOT / "specs" / "hw-unflushed.toml").model()
    kernel = model.batch_kernel()
    states = reachable(model, 10**6)
    assert len(states) == 10717  # the pinned count: the whole space
    for s in states:
        assert kernel.decode(kernel.encode(s)) == s


def test_row_fingerprints_do_not_depend_on_the_process():
    code = ("import numpy as np; from kmc.checker.base.fingerprint import fingerprint_rows; "
            "r = (np.arange(64 * 80) % 251 - 120).astype(np.int8).reshape(64, 80); "
            "print(','.join(map(str, fingerprint_rows(r).tolist())))")
    outs = set()
    for seed in ("0", "1", "12345"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        outs.add(subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True,
                                text=True, check=True).stdout)
    assert len(outs) == 1
    here = (np.arange(64 * 80) % 251 - 120).astype(np.int8).reshape(64, 80)
    assert outs.pop().strip() == ",".join(map(str, fingerprint_rows(here).tolist()))


def test_row_fingerprints_tell_rows_apart():
    rows = np.zeros((4096, 16), dtype=np.int8)
    rows[np.arange(4096), np.arange(4096) % 16] = (np.arange(4096) // 16 % 200).astype(np.int8)
    distinct = len(np.unique(rows, axis=0))
    assert len(np.unique(fingerprint_rows(rows))) == distinct


# -- full runs ----------------------------------------------------------------------------

@pytest.mark.parametrize("name", sorted(PINS))
def test_batch_engine_gives_the_pinned_numbers(name):
    distinct, generated, depth, checked, lengths, stopped = PINS[name]
    spec = load_spec(ROOT / "specs" / f"{name}.toml")
    result = BatchEngine(spec.model(), spec.properties(),
                         Options(keep_going=spec.keep_going, max_depth=spec.max_depth)).run()
    assert (result.stats.distinct, result.stats.depth, result.stats.generated) == (distinct, depth, generated)
    assert {k: len(v.path) for k, v in result.violations.items()} == lengths
    assert result.stopped == stopped


@pytest.mark.parametrize("name", ["hw-data-loss", "hw-unclean", "le-unclean", "kip279-unflushed"])
def test_batch_engine_equals_the_per_state_engine(name):
    spec = load_spec(ROOT / "specs" / f"{name}.toml")
    model = spec.model()
    opts = Options(keep_going=spec.keep_going, max_depth=spec.max_depth)
    a = LocalEngine(model, spec.properties(), opts).run()
    b = BatchEngine(model, spec.properties(), opts).run()
    assert attrs_tuple(a.stats) == attrs_tuple(b.stats)
    assert a.violations.keys() == b.violations.keys()
    for k in a.violations:
        va, vb = a.violations[k], b.violations[k]
        assert (va.path.choices, va.path.init_index, va.explanation) == (vb.path.choices, vb.path.init_index,
                                                                        vb.explanation)
        assert va.path.states == vb.path.states


def attrs_tuple(stats):
    return (stats.distinct, stats.generated, stats.depth, stats.terminal, stats.levels, stats.fired, stats.new)


def test_a_stop_inside_a_level_resumes_to_the_same_counts():
    spec = load_spec(ROOT / "specs" / "le-three-replicas.toml")
    model = spec.model()
    engine = BatchEngine(model, spec.properties(), Options())
    calls = []

    def on_level(e):
        calls.append(len(e.seen))
        if len(calls) == 10:
            e.stop_requested = "interrupted"

    engine.on_level = on_level
    first = engine.run()
    assert first.stopped == "interrupted" and not first.complete
    snap = engine.snapshot()
    again = BatchEngine(model, spec.properties(), Options())
    again.restore(snap)
    done = again.run()
    assert (done.stats.distinct, done.stats.depth, done.stats.generated) == (50294, 24, 168775)


# -- the seen-set -------------------------------------------------------------------------

def test_seen_set_stores_each_fingerprint_once_and_rebuilds_paths():
    seen = CompactSeenSet()
    new = seen.add(np.array([5, 9], np.uint64), [-1, -1], [0, 1])
    assert new.tolist() == [True, True]
    seen.end_level()
    fps = np.array([3, 9, 11], np.uint64)  # sorted; 9 is stored already
    fresh = ~seen.contains_sorted(fps)
    assert fresh.tolist() == [True, False, True]
    seen.add_sorted(fps[fresh], [1, 0], [4, 2])
    assert len(seen) == 4
    assert seen.path_to(2) == (1, [4]) and seen.path_to(3) == (0, [2])
    seen.rollback()
    assert len(seen) == 2 and not seen.contains(np.array([3, 11], np.uint64)).any()
    assert seen.nbytes() == 2 * 13


# -- symmetry -----------------------------------------------------------------------------

def _orbits(model, states):
    perms = symmetries(model.config)
    return {min(model.encode(permute(s, p)) for p in perms) for s in states}


@pytest.mark.parametrize("config", [
    Config(replicas=("A", "B", "C"), max_messages=1, max_crashes=1, truncation="leader-epoch-kip279"),
    Config(replicas=("A", "B", "C"), max_messages=1, max_crashes=1, truncation="high-watermark",
           unflushed_loss=True),
    Config(replicas=("A", "B", "C", "D"), max_messages=1, max_crashes=0, max_leader_epoch=1,
           truncation="leader-epoch"),
    Config(replicas=("A", "B", "C"), max_messages=1, max_crashes=1, truncation="leader-epoch-2.1",
           initial_leader="any"),
    # (ELR's symmetry by brute force in every suite: tests/test_alter_partition.py)
    pytest.param(Config(replicas=("A", "B", "C"), max_messages=1, max_crashes=1, max_leader_epoch=1,
                        truncation="leader-epoch-2.1", min_insync_replicas=2, unflushed_loss=True,
                        hw_requires_min_isr=True, eligible_leader_replicas=True, initial_leader="any"),
                 marks=pytest.mark.skipif(os.environ.get("KMC_SLOW") != "1",
                                          reason="about 50,000 states by brute force (~10 s): set KMC_SLOW=1")),
])
def test_symmetry_counts_the_orbits_found_by_brute_force(config):
    model = KafkaModel(config)
    everything = reachable(model, 10**6)
    orbits = len(_orbits(model, everything))
    assert orbits < len(everything)
    for engine in (LocalEngine, BatchEngine):
        result = engine(model, [], Options(symmetry=True)).run()
        assert result.stats.distinct == orbits
    plain = BatchEngine(model, [], Options()).run()
    assert plain.stats.distinct == len(everything)


def test_row_permutation_equals_the_attrs_permutation():
    config = Config(replicas=("A", "B", "C"), max_messages=2, max_crashes=2, truncation="leader-epoch",
                    unflushed_loss=True)
    model = KafkaModel(config)
    kernel = model.batch_kernel()
    states = reachable(model, 3000)
    rows = np.stack([kernel.encode(s) for s in states])
    import itertools

    for perm in itertools.permutations(range(3)):
        moved = kernel.codec.permuter(perm)(rows)
        for s, r in zip(states[::37], moved[::37]):
            assert kernel.decode(r) == permute(s, perm)


def test_symmetry_keeps_verdicts_and_trace_lengths_and_traces_are_real_behaviours():
    spec = load_spec(ROOT / "specs" / "kip279-isr-expansion.toml")
    model = spec.model()
    plain = BatchEngine(model, spec.properties(), Options(keep_going=spec.keep_going)).run()
    reduced = BatchEngine(model, spec.properties(), Options(keep_going=spec.keep_going, symmetry=True)).run()
    assert reduced.stats.distinct < plain.stats.distinct
    assert {k: len(v.path) for k, v in reduced.violations.items()} == \
        {k: len(v.path) for k, v in plain.violations.items()} == {"CommittedNeverLost": 13}
    path = reduced.violations["CommittedNeverLost"].path
    again = replay_choices(model, path.init_index, path.choices)
    assert again.states == path.states  # re-executed from a real initial state
    from kmc.invariants import committed_never_lost

    assert committed_never_lost(model, path.states[-1]) is not None


def test_symmetry_refuses_an_invariant_not_declared_symmetric():
    model = KafkaModel(Config())
    mine = Property("MyInvariant", ALWAYS, _never)
    for engine in (LocalEngine, BatchEngine):
        with pytest.raises(UsageError, match="MyInvariant"):
            engine(model, [mine], Options(symmetry=True))


def _never(model, state):
    return None


def test_the_named_columns_read_the_state_docs_model_md_describes():
    # The layout read by name: each named column of a row holds the field of that name.
    cfg = Config(replicas=("A", "B", "C"), max_messages=2, max_crashes=1, max_leader_epoch=2, acks="all")
    model = KafkaModel(cfg)
    kernel = KafkaBatchKernel(cfg)
    c = kernel.codec
    names = c.column_names()
    assert len(names) == c.width and len(set(names[:c.used])) == c.used
    assert set(names[c.used:]) <= {"padding"}
    state = next(s for s in reachable(model, 400) if s.committed and s.replicas[1].log and s.acked)
    row = kernel.encode(state)
    assert names[c.Q_EPOCH] == "quorum.epoch" and row[c.Q_EPOCH] == state.quorum.epoch
    assert names[c.PRODUCED] == "produced" and row[c.PRODUCED] == state.produced
    offset, epoch, rid = state.committed[0]
    assert names[c.COMMITTED_OFFSET + rid] == f"committed[{rid}].offset" and row[c.COMMITTED_OFFSET + rid] == offset
    offset, epoch, rid = state.acked[0]
    assert names[c.ACKED_EPOCH + rid] == f"acked[{rid}].epoch" and row[c.ACKED_EPOCH + rid] == epoch
    b = c.block(1)
    rep = state.replicas[1]
    assert [names[b + k] for k in (c.ALIVE, c.HW, c.EPOCH, c.LEO, c.LOG)] == [
        "r1.alive", "r1.hw", "r1.epoch", "r1.leo", "r1.log[0]"]
    assert (row[b + c.HW], row[b + c.EPOCH], row[b + c.LEO]) == (rep.hw, rep.epoch, len(rep.log))
    assert names[b + c.REMOTE_LEO + 2] == "r1.remote_leo[2]" and names[b + c.INFLIGHT_HW] == "r1.inflight.leader_hw"
    assert names[b + c.BLOCK - 1] == f"r1.inflight.records[{c.m - 1}]"
