"""Worker processes that expand the frontier beside the rows search (``checker.local.workers``).

A run with workers must store the same states with the same numbers as one without: the
same counts per level and per action, the same coverage, the same counterexamples. The
chunks are made small here (``CHUNK_ROWS``) so that every level past the first few runs
through the workers, and each test checks that the workers did take chunks; the counts
are checked against the pinned numbers of tests/pins.py as well (recomputed by the
independent checker of tests/test_oracle.py), not only against the run without workers.
"""

from __future__ import annotations

import argparse
import os
import pickle
from pathlib import Path

import attrs
import kmc.checker.local.rows
import kmc.checker.local.workers
import pytest
from kmc.app.cli import SHARED_OPTIONS
from kmc.app.specs import load_spec, parse_spec
from kmc.checker.local.rows import BatchEngine
from kmc.checker.stores.disk import DiskStore
from kmc.checker.core.options import Options
from pins import ACKS_PINS, AP_PINS, AVAIL_PINS, FETCH_PINS, LIVE_PINS, PINS

SPECS = Path(__file__).resolve().parent.parent / "specs"
ROWS = 32  # states a chunk: every level of more than 3 chunks goes to the workers


@pytest.fixture
def small_chunks(monkeypatch):
    """Small chunks (the disk store's too), and a count of the chunks the workers took."""
    monkeypatch.setattr(kmc.checker.local.rows, "CHUNK_ROWS", ROWS)
    monkeypatch.setattr(DiskStore, "chunk_factor", 1)
    sent = []
    send = kmc.checker.local.workers.ExpandPool.send

    def counted(self, task):
        sent.append(len(task[0]))
        return send(self, task)

    monkeypatch.setattr(kmc.checker.local.workers.ExpandPool, "send", counted)
    return sent


def summary(result):
    s = result.stats
    cov = s.coverage
    return (
        (s.distinct, s.generated, s.depth, s.terminal, list(s.levels), dict(s.fired), dict(s.new)),
        (result.complete, result.stopped, tuple(result.checked)),
        {k: (v.kind, v.explanation, v.path.init_index, v.path.choices) for k, v in result.violations.items()},
        (
            dict(cov.enabled),
            {a: dict(k) for a, k in cov.kinds.items()},
            {v: sorted(map(repr, x)) for v, x in cov.values.items()},
        ),
    )


def run(name, workers, options=None, store=None):
    spec = load_spec(SPECS / f"{name}.toml")
    opts = attrs.evolve(options or Options(keep_going=spec.keep_going, max_depth=spec.max_depth), workers=workers)
    engine = BatchEngine(spec.model(), spec.properties(), opts, store=store)
    return engine.run(), engine


SLOW = pytest.mark.skipif(os.environ.get("KMC_SLOW") != "1", reason="another spec of the same options: set KMC_SLOW=1")
CASES = {
    "hw-data-loss": PINS["hw-data-loss"],  # a violation: the run stops at its level
    "hw-unclean": PINS["hw-unclean"],  # two violations and a step property, kept going
    "kip279-unclean": PINS["kip279-unclean"],
    "acks1-data-loss": ACKS_PINS["acks1-data-loss"],
    "ap-c2": AP_PINS["ap-c2"],  # AlterPartition requests in flight
    "fetch-c1-both-bugs": FETCH_PINS["fetch-c1-both-bugs"],  # the fetch path's four violations
}
# Each option of the model is in one of the specs that run by default: a violation that
# stops the run, a step property kept going, the acknowledgements, AlterPartition, the
# fetch path.
DEFAULT = {"hw-data-loss", "hw-unclean", "acks1-data-loss", "ap-c2", "fetch-c1-both-bugs"}


@pytest.mark.parametrize("name", [n if n in DEFAULT else pytest.param(n, marks=SLOW) for n in sorted(CASES)])
def test_workers_store_what_one_process_stores(name, small_chunks):
    pin = CASES[name]
    alone, _ = run(name, 1)
    assert not small_chunks
    together, engine = run(name, 2)
    assert len(small_chunks) > 10 and max(small_chunks) == ROWS  # the workers took the levels
    assert engine.search.pool is None  # ended with the run
    assert summary(together) == summary(alone)
    st = together.stats
    assert (st.distinct, st.generated, st.depth) == (pin.distinct, pin.generated, pin.depth)
    assert {k: len(v.path.states) for k, v in together.violations.items()} == pin.traces


def test_workers_with_the_disk_store(small_chunks, tmp_path):
    alone, _ = run("hw-unclean", 1)
    together, _ = run("hw-unclean", 2, store=DiskStore(parent=str(tmp_path)))
    assert len(small_chunks) > 10
    assert summary(together) == summary(alone)


# Three replicas, any initial leader: 2,556 orbits under symmetry (tests/test_engines.py).
SYMMETRIC = b"""
[model]
replicas = 3
initial_leader = "any"
max_messages = 1
max_crashes = 1
max_leader_epoch = 1
truncation = "leader-epoch-kip279"
"""


def test_workers_under_symmetry_and_without_coverage(small_chunks):
    spec = parse_spec(SYMMETRIC)
    got = []
    plain = load_spec(SPECS / "hw-unclean.toml")
    for spec, opts in ((spec, Options(keep_going=True, symmetry=True)), (plain, Options(keep_going=True, coverage=False))):
        runs = [BatchEngine(spec.model(), spec.properties(), attrs.evolve(opts, workers=w)).run() for w in (1, 2)]
        assert summary(runs[1]) == summary(runs[0])
        got.append(runs[1].stats.distinct)
    assert got == [2556, PINS["hw-unclean"].distinct]
    assert len(small_chunks) > 10


def test_a_run_with_workers_stopped_inside_a_level_resumes_to_the_same_result(small_chunks, monkeypatch):
    """A stop request in the middle of a level with chunks at the workers: the run goes back
    to the level boundary, and its snapshot resumes (with or without workers) to the counts
    of a run never stopped."""
    want, _ = run("hw-unclean", 1)
    spec = load_spec(SPECS / "hw-unclean.toml")
    opts = Options(keep_going=True, workers=2)
    engine = BatchEngine(spec.model(), spec.properties(), opts)
    expand = kmc.checker.local.rows.RowsSearch.expand

    def stop_at_depth_12(self, piece, first, stats, level_found, found):
        if stats.depth == 12 and first > self._level_first + 3 * ROWS:
            engine.cancel()
        return expand(self, piece, first, stats, level_found, found)

    monkeypatch.setattr(kmc.checker.local.rows.RowsSearch, "expand", stop_at_depth_12)
    stopped = engine.run()
    assert stopped.stopped == "interrupted" and stopped.stats.depth == 12
    snap = pickle.dumps(engine.snapshot())
    monkeypatch.setattr(kmc.checker.local.rows.RowsSearch, "expand", expand)
    for workers in (1, 2):
        resumed = BatchEngine(spec.model(), spec.properties(), Options(keep_going=True, workers=workers))
        resumed.restore(pickle.loads(snap))
        assert summary(resumed.run())[:3] == summary(want)[:3]


def test_a_worker_s_error_is_raised_by_the_search_itself(small_chunks, monkeypatch):
    """A kernel that raises deep in the run: with workers the run ends with the same
    exception, raised in the search's own process from the kernel's own line."""
    import kmc.model.batch

    expand = kmc.model.batch.KafkaBatchKernel.expand

    def overflowing(self, rows):
        if len(rows) and int(rows[:, 9].max()) >= 2:  # a second record committed in epoch 2: depth 8
            raise OverflowError("a column overflowed")
        return expand(self, rows)

    monkeypatch.setattr(kmc.model.batch.KafkaBatchKernel, "expand", overflowing)
    errors = []
    for workers in (1, 2):
        with pytest.raises(OverflowError) as info:
            run("hw-unclean", workers)
        errors.append((str(info.value), info.traceback[-1].name))
    assert errors[0] == errors[1] == ("a column overflowed", "overflowing")
    assert small_chunks  # the workers had taken chunks when it raised


def test_a_worker_that_ends_stops_the_run_at_its_level_boundary(small_chunks, monkeypatch):
    """A worker killed (as the system's memory killer would): the run stops as at the
    memory ceiling, and resumes to the counts of a run never stopped."""
    want, _ = run("hw-unclean", 1)
    main = os.getpid()
    prepare = kmc.checker.local.rows.RowsSearch.prepare_chunk

    def dies_at_depth_14(self, chunk, depth, rank, level, skip):
        if os.getpid() != main and depth == 14:
            os._exit(9)
        return prepare(self, chunk, depth, rank, level, skip)

    monkeypatch.setattr(kmc.checker.local.rows.RowsSearch, "prepare_chunk", dies_at_depth_14)
    spec = load_spec(SPECS / "hw-unclean.toml")
    engine = BatchEngine(spec.model(), spec.properties(), Options(keep_going=True, workers=2))
    stopped = engine.run()
    assert (stopped.stopped, stopped.stats.depth) == ("out-of-memory", 14)
    assert "expansion worker" in engine.stop_detail and "--workers" in engine.stop_detail
    snap = engine.snapshot()
    monkeypatch.setattr(kmc.checker.local.rows.RowsSearch, "prepare_chunk", prepare)
    resumed = BatchEngine(spec.model(), spec.properties(), Options(keep_going=True, workers=2))
    resumed.restore(snap)
    assert summary(resumed.run())[:3] == summary(want)[:3]


def test_small_levels_stay_in_one_process(small_chunks, monkeypatch):
    """Levels of fewer than three chunks never start the workers."""
    monkeypatch.setattr(kmc.checker.local.rows, "CHUNK_ROWS", 1 << 15)
    run("hw-unclean", 2)
    assert not small_chunks


def graph_summary(result):
    """What the graph's properties answer: verdicts, lassos (the path, where the cycle starts,
    the obligation) and trap counts."""
    return {
        name: (result.verdict(name), v.path.choices, v.loop, v.obligation, v.traps, v.explanation)
        for name, v in result.violations.items()
    } | {name: result.verdict(name) for name in result.checked if name not in result.violations}


@pytest.mark.parametrize("name", ["live-c2-elr", "avail-c2-elr"])
def test_workers_send_the_graph_s_edges_back(name, small_chunks):
    """A liveness property (both violated, live-c2-elr: lassos under fairness) and an
    always-possibly one (avail-c2-elr: 1,296 trap states, a trace of 4): the workers send
    every edge of their chunks, with its fair instance, back to the graph visitor, and the
    verdicts, lassos and trap counts are those of one process and of the pinned table."""
    alone, _ = run(name, 1)
    assert not small_chunks
    together, _ = run(name, 2)
    assert len(small_chunks) > 10
    assert summary(together) == summary(alone)
    assert graph_summary(together) == graph_summary(alone)
    if name == "avail-c2-elr":
        pin = AVAIL_PINS[name]
        pr = together.violations["PartitionRecoverable"]
        assert (together.stats.distinct, pr.traps, len(pr.path.states)) == (pin.distinct, 1296, 4)
    else:
        pin = LIVE_PINS[name]
        assert together.stats.distinct == pin.distinct
        assert {p: together.verdict(p) for p in pin.verdicts} == pin.verdicts


@pytest.mark.parametrize("value", ["0", "-1", "257", "two", ""])
def test_a_bad_workers_option_is_one_line(value, capsys):
    from kmc.app.cli import main

    try:
        code = main(["check", str(SPECS / "hw-data-loss.toml"), "--workers", value])
    except SystemExit as e:
        code = e.code
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "--workers" in err[0] and "1 to 256" in err[0], err


def test_the_workers_come_from_the_option_the_spec_or_the_machine(tmp_path):
    from kmc.app.commands.common import options_from
    from kmc.checker.base.memory import default_workers

    path = tmp_path / "w.toml"
    path.write_bytes(SYMMETRIC + b"[check]\nworkers = 3\n")
    spec = load_spec(path)
    assert options_from(spec, argparse.Namespace(**{**SHARED_OPTIONS, "workers": 5})).workers == 5
    assert options_from(spec, argparse.Namespace(**SHARED_OPTIONS)).workers == 3
    plain = load_spec(SPECS / "hw-data-loss.toml")
    assert options_from(plain, argparse.Namespace(**SHARED_OPTIONS)).workers == default_workers() == len(os.sched_getaffinity(0))


def test_a_task_and_its_answer_cross_the_pipe_whole():
    """``send``/``receive`` pass arrays beside their pickle (protocol 5's out-of-band
    buffers): every array comes back equal, with its dtype, shape and layout's values,
    whether contiguous or not, empty, or larger than the pipe's buffer; a pipe closed
    half-way through an array is an ``EOFError``, not a short array."""
    import multiprocessing
    import threading

    import numpy as np
    from kmc.checker.local.workers import PIPE_BYTES, receive, send

    rng = np.random.default_rng(7)
    big = rng.integers(0, 255, (3 * PIPE_BYTES // 72 + 5, 72), dtype=np.uint8)
    obj = {
        "rows": big,
        "every_other": big[::2, 3:9],  # not contiguous: pickled in-band
        "fps": rng.integers(0, 2**63, 100_000, dtype=np.uint64),
        "empty": np.zeros((0, 72), dtype=np.uint8),
        "by_column": np.asfortranarray(big[:1000]),
        "plain": (1, "two", frozenset({3})),
    }
    out_end, in_end = multiprocessing.Pipe(duplex=False)
    writer = threading.Thread(target=send, args=(in_end, obj))
    writer.start()
    got = receive(out_end)
    writer.join()
    assert got["plain"] == obj["plain"]
    for name in ("rows", "every_other", "fps", "empty", "by_column"):
        assert got[name].dtype == obj[name].dtype and got[name].shape == obj[name].shape, name
        assert np.array_equal(got[name], obj[name]), name
    got["rows"][0, 0] ^= 1  # the receiver's own memory
    assert got["rows"][0, 0] != big[0, 0]

    out_end, in_end = multiprocessing.Pipe(duplex=False)
    head, sizes = pickle.dumps(None, protocol=5), pickle.dumps([1000], protocol=5)  # promises 1000 bytes, sends 10
    for part in (len(head).to_bytes(8, "big"), head, len(sizes).to_bytes(8, "big"), sizes, b"0123456789"):
        os.write(in_end.fileno(), part)
    in_end.close()
    with pytest.raises(EOFError):
        receive(out_end)
