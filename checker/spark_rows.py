"""The Spark engine on rows: the batch engine's search, distributed with Apache Spark.

Used for every model that has a batch kernel (``model.batch_kernel()``, see
``checker.batch``); it reports exactly what ``checker.batch.BatchEngine`` reports (counts,
per-action counters, verdicts, counterexample paths, choices and explanations).

No Python object per state goes through Spark: a partition's records are a few tuples of
numpy arrays (rows, fingerprints, keys), pickled as whole arrays.

Small leading levels run on the driver
--------------------------------------
While a level has at most ``driver_level_limit`` states, the search runs on the driver
with ``BatchEngine`` itself (no Spark session is even started). When a level grows past
the limit, the driver's seen-set is split by ``fp % P`` into P *seen blocks* and its
frontier into P *rank ranges*, and Spark continues. A spec whose levels all stay small
never starts Spark.

Tie-breaking without paths
--------------------------
``BatchEngine`` numbers a level's states in discovery order: by the least ``(parent
number, choice)`` that reaches each new fingerprint. Here every frontier state of level
``d`` has a *dense global rank* ``g`` in ``[0, L_d)``, its position in that order. The
frontier is kept in P *rank partitions*: partition ``j`` holds a contiguous range of
ranks, and the driver knows every partition's count, so ``g = offset_j + local index``
(the offsets are a few ints in the task closure). A successor's *key* is ``g * 256 +
choice``; the least key reaching a fingerprint is its discovery, and the new states in
key order are the next level's discovery order. One level is one Spark job with two
shuffles:

1. Rank partition ``j``: its states (routed to it by the previous level) sorted by key
   are its part of the frontier; ``kernel.expand``; key, fingerprint (of
   ``kernel.canonical(rows)`` under symmetry), parent fingerprint, action code and row of
   every successor; duplicates within a slice dropped (least key kept); step properties
   checked (``kernel.step_mask``), the least-key violator per property reported; the
   successors routed to their owner ``fp % P`` (shuffle 1).
2. Owner (fingerprint partition ``i``): its seen block (the union of two RDDs with the
   same partitioner, so the seen-set never moves) and the incoming successors; the least
   key per fingerprint kept, the seen ones dropped, the new ones added to the block (a
   new version of it), the invariants checked on the new rows (``kernel.invariant_mask``;
   only a violating row is decoded), and the new states keyed by their next rank
   partition ``g * P // L_d``, which is monotone in ``g``: the next level's order is
   (rank partition, key order inside it). The owner's summary counts them per rank
   partition, which gives the driver the next level's offsets.
3. The job collects the owners' summaries; the next level's job starts by shuffling the
   new states to their rank partitions (shuffle 2), whose tasks sort them (step 1).

So the sort of step 3 of the design runs inside the next level's expansion tasks: the
driver needs only the per-rank-partition counts, which the owners know, and a level
costs three stages (the owners' output read back for shuffle 2, the expansion, the
owners), not four.

Counts come from the summaries the tasks return (no accumulators), so a retried task
cannot change a count. The owners' output of every level (seen blocks, routed new
states, summaries) is persisted and locally checkpointed by the level's job (it is the
marked RDD nearest the job's end, which Spark checkpoints), and the previous level's is
unpersisted.

Counterexamples: a seen block keeps, per state, its fingerprint, its parent's fingerprint
and its choice (the states handed over by the driver have choice -1: their path is on
the driver). The driver follows the chain fp -> parent fp with one small lookup job per
step (all properties at once) back to a state of the level it handed over, whose path its
own seen-set gives, and replays the choices (``checker.trace.replay_choices``, and
``extend`` for a step property).

Known limitation: no ``snapshot()``/``restore()`` yet (``--checkpoint`` needs the
per-state Spark engine, ``--per-state``); a lost executor fails the run (its local
checkpoints cannot be recomputed).
"""

from __future__ import annotations

import time
from functools import partial

import attrs
import numpy as np

from .batch import BatchEngine
from .errors import EngineError
from .fingerprint import fingerprint_rows
from .kernel import require_symmetric, split_properties, stop_after_level
from .local import Options
from .protocol import successors
from .result import CheckResult, Stats, Violation
from .spark import (_cancel_group, _default_partitions, _one_line, _owner, _quiet_py4j, _union,
                    partitions_bad, spark_context)
from .trace import extend, replay_choices

DRIVER_LEVEL_LIMIT = 50_000  # levels up to this many states are expanded on the driver
SLICE_ROWS = 1 << 16  # frontier rows expanded and deduplicated together in a task
_CHUNK = 1 << 14  # rows per kernel call
_HANDOFF = "kmc-handoff"  # the driver phase's stop reason when a level outgrows the limit


class SparkRowsEngine:
    """Breadth-first exploration of a model with a batch kernel, on Apache Spark.

    Same arguments, attributes and hooks as ``checker.spark.SparkEngine`` (``run()``,
    ``stop_requested``, ``cancel()``, ``on_level``), and gives exactly the results of
    ``checker.batch.BatchEngine``.

    Args:
        model, properties, options, progress, master, partitions, verbose: as
            ``SparkEngine``.
        driver_level_limit: leading levels of at most this many states are expanded on
            the driver (``BatchEngine``); 0 hands over to Spark right after the initial
            states.

    After ``run()``, ``metrics`` holds what ``kmc bench`` reports: the session's start
    time, every Spark level's states and seconds, and the bytes routed through both
    shuffles.
    """

    name = "spark"
    path = "rows"

    def __init__(self, model, properties=None, options=None, progress=None, *,
                 master=None, partitions=None, verbose=False, checkpoint_dir=None,
                 driver_level_limit=DRIVER_LEVEL_LIMIT, _fail_first_attempt=False):
        self.model = model
        self.kernel = model.batch_kernel()
        self.properties = list(model.properties() if properties is None else properties)
        self.invariants, self.step_props = split_properties(self.properties)
        self.options = options or Options()
        self.progress = progress
        self.master = master
        self.partitions = partitions
        self.verbose = verbose
        self.checkpoint_dir = checkpoint_dir
        self.driver_level_limit = driver_level_limit
        # Test hook: every expansion task of rank partition 0 fails on its first attempt.
        self._fail_first_attempt = _fail_first_attempt
        self.stop_requested = None
        self.on_level = None
        self.stats = Stats()
        # property -> (kind, explanation, where); where is ("driver", number) or
        # ("driver", (number, choice)) for a violation found on the driver, ("fp", fp) or
        # ("step", (parent fp, choice)) for one found on Spark.
        self.found: dict[str, tuple] = {}
        self.metrics: dict = {"session_start_seconds": None, "spark_levels": [], "shuffle_bytes": 0,
                              "driver_levels": 0}
        self._local = None
        self._probe = None  # test hook: called with each level's owners' RDD after its job
        self._sc = None
        self._group = f"kmc-rows-{id(self):x}"
        self._canceller = None
        if self.options.symmetry:
            require_symmetric(self.properties)

    # -- the search ---------------------------------------------------------------------

    def run(self) -> CheckResult:
        """Explore, and return the result (with full counterexample paths).

        Raises:
            EngineError: Spark could not start, or a Spark job failed.
        """
        if partitions_bad(self.partitions):
            raise EngineError(f"spark partitions must be a positive integer, got {self.partitions!r}")
        _check_master(self.master)  # at once, even when every level stays on the driver
        started = time.perf_counter()
        local = self._local = BatchEngine(self.model, self.properties, self.options, self.progress)
        local.on_level = self._driver_level
        local._start()
        if local._frontier_size() > self.driver_level_limit and local._stop_reason_after_level() is None:
            local.stop_requested = _HANDOFF
        if self.stop_requested is not None:
            local.stop_requested = self.stop_requested
        result = local.run()
        self.stats = local.stats
        self.metrics["driver_levels"] = local.stats.depth
        if result.stopped != _HANDOFF:
            return attrs.evolve(result, engine=self.name)
        self.found = {prop: (kind, why, ("driver", where)) for prop, (kind, why, where) in local.found.items()}
        handed_over = time.perf_counter()
        sc, owned = spark_context(self.master, self.verbose)
        self.metrics["session_start_seconds"] = round(time.perf_counter() - handed_over, 3)
        self._sc = sc
        leave_running = False
        try:
            with _quiet_py4j(not self.verbose):
                return self._explore(sc, handed_over)
        except KeyboardInterrupt:
            leave_running = True  # see SparkEngine.run: stopping now could hang
            raise
        except EngineError:
            raise
        except Exception as e:
            if type(e).__module__.startswith(("py4j", "pyspark")):
                where = f" (master {self.master})" if self.master else ""
                raise EngineError(f"Spark failed{where}: {_one_line(e)}") from None
            raise
        finally:
            self._sc = None
            if owned and not leave_running:
                sc.stop()

    def cancel(self, reason="interrupted"):
        """Stop as soon as possible: abort the level being computed (it is dropped)."""
        self.stop_requested = reason
        if self._local is not None and self._local.stop_requested is None:
            self._local.stop_requested = reason
        sc = self._sc
        if sc is not None and self._canceller is None:
            import threading

            self._canceller = threading.Thread(target=_cancel_group, args=(sc, self._group),
                                               name="kmc-spark-cancel", daemon=True)
            self._canceller.start()

    def _driver_level(self, local):
        """``BatchEngine.on_level``: hand over to Spark once a level outgrows the limit."""
        self.stats = local.stats
        if self.on_level is not None:
            self.on_level(self)
        if self.stop_requested is not None:
            local.stop_requested = self.stop_requested
        elif local._frontier_size() > self.driver_level_limit:
            local.stop_requested = _HANDOFF

    def _explore(self, sc, started) -> CheckResult:
        from pyspark import StorageLevel

        local, stats = self._local, self.stats
        # One partition a core by default (not SparkEngine's two): a level is three
        # stages of n tasks, whose fixed cost is most of a small level's time, and rows
        # keep a partition's memory small enough without more of them.
        n = self._n = self.partitions or _rows_partitions(sc)
        sc.setJobGroup(self._group, "kmc breadth-first search (rows)", interruptOnCancel=False)
        symmetry = bool(self.options.symmetry)

        # The hand-over: the driver's seen-set split by owner, its frontier by rank.
        seen_fps = np.concatenate(local.seen._runs + local.seen._level_runs)
        owners = seen_fps % np.uint64(n)
        blocks = []
        for i in range(n):
            fps = np.sort(seen_fps[owners == i])
            blocks.append((i, _SeenBlock.of(fps, np.zeros(len(fps), np.uint64), np.full(len(fps), -1, np.int16))))
        seen = (sc.parallelize(blocks, n).partitionBy(n, _owner)
                .mapPartitions(_tag_seen, preservesPartitioning=True))
        rows = np.concatenate(local.frontier)
        fps = _fingerprints(self.kernel, rows, symmetry)
        level = len(rows)
        self._handoff = {int(fp): len(local.seen) - level + i for i, fp in enumerate(fps.tolist())}
        # Rank partition j holds the ranks g with g * n // L == j: from ceil(j * L / n) on.
        bounds = [(j * level + n - 1) // n for j in range(n)] + [level]
        ranks = np.arange(level, dtype=np.int64)
        fronts = [(j, ("s", ranks[bounds[j]:bounds[j + 1]], fps[bounds[j]:bounds[j + 1]],
                       rows[bounds[j]:bounds[j + 1]])) for j in range(n)]
        frontier = sc.parallelize(fronts, n).partitionBy(n, _owner)
        counts = [bounds[j + 1] - bounds[j] for j in range(n)]
        seen.persist(StorageLevel.MEMORY_AND_DISK)
        merged = None
        stopped = self.stop_requested  # the driver phase ended with no other reason to stop
        while level and stopped is None:
            if self.options.max_depth is not None and stats.depth >= self.options.max_depth:
                stopped = "max-depth"
                break
            t0 = time.perf_counter()
            offsets = np.concatenate(([0], np.cumsum(counts))).tolist()
            found = frozenset(self.found)
            grow = partial(_expand_partition, self.kernel, self.model, self.step_props, found, symmetry,
                           n, offsets, self._fail_first_attempt)
            own = partial(_own_partition, self.kernel, self.model, self.invariants, found, n, level)
            # One job, two stages: the rank partitions (sort by key, expand) and, after
            # the shuffle to the owners, the owners (merge, check). The owners' output
            # holds the new seen blocks and the new states keyed by their next rank
            # partition; the next level's job starts with that second shuffle.
            routed = frontier.mapPartitionsWithIndex(grow).partitionBy(n, _owner)
            new_merged = _union(sc, seen, routed).mapPartitionsWithIndex(own, preservesPartitioning=True)
            new_merged.persist(StorageLevel.MEMORY_AND_DISK)
            new_merged.localCheckpoint()
            summaries = self._collect(new_merged.filter(_is_summary).map(_payload), new_merged)
            if self._probe is not None:
                self._probe(new_merged)
            if summaries is None:  # cancelled: the level is dropped, the last one stands
                stopped = self.stop_requested
                break
            if merged is not None:
                merged.unpersist()
            else:
                seen.unpersist()
            merged = new_merged
            seen = merged.filter(_is_seen)  # keeps the owners' partitioner: the seen-set stays
            # Not filter(): it would keep the owners' partitioner, and partitionBy would
            # then leave every record where it is.
            frontier = merged.mapPartitions(_routed_only).partitionBy(n, _owner)
            counts, shipped = self._absorb(summaries)
            level = sum(counts)
            if level:
                stats.depth += 1
                stats.levels.append(level)
            stats.distinct += level
            seconds = time.perf_counter() - t0
            self.metrics["spark_levels"].append((level, round(seconds, 3), shipped, round(self._busy, 3)))
            self.metrics["shuffle_bytes"] += shipped
            self._tick(started, level)
            if self.on_level is not None:
                stats.queue = level
                self.on_level(self)
            stopped = stop_after_level(self.found, self.properties, self.options, stats.distinct, bool(level))
            if stopped is None and self.stop_requested is not None:
                stopped = self.stop_requested
        result = self._result(sc, seen, stopped, level, started)
        (merged if merged is not None else seen).unpersist()
        return result

    def _collect(self, rdd, materialized):
        """Run the level's job; ``None`` when it was cancelled by a stop request."""
        try:
            return rdd.collect()
        except Exception as e:
            try:
                materialized.unpersist()
            except Exception:  # the context is gone
                pass
            if self.stop_requested is not None:
                return None
            where = f" (master {self.master})" if self.master else ""
            raise EngineError(f"a Spark job failed at depth {self.stats.depth + 1}{where}: "
                              f"{_one_line(e)}") from None

    def _absorb(self, summaries):
        """Add a level's summaries to the stats and its first violations to ``found``.

        Returns the rank partitions' counts (in partition order) and the bytes shipped.
        """
        stats, names = self.stats, self.kernel.action_names
        counts = np.zeros(self._n, dtype=np.int64)
        shipped = 0
        candidates: dict[str, tuple] = {}  # property -> (key, kind, explanation, where)
        busy = 0.0
        for _i, per_target, new_codes, state_bad, metas, out_bytes, own_busy in summaries:
            counts += per_target
            shipped += out_bytes
            busy += own_busy
            _add_counts(stats.new, names, new_codes)
            for prop, (key, why, fp) in state_bad.items():
                _keep_least(candidates, prop, (key, "always", why, ("fp", fp)))
            for terminal, generated, fired, step_bad, in_bytes, expand_busy in metas:
                shipped += in_bytes
                busy += expand_busy
                stats.terminal += terminal
                stats.generated += generated
                _add_counts(stats.fired, names, fired)
                for prop, (key, why, pfp, choice) in step_bad.items():
                    _keep_least(candidates, prop, (key, "step", why, ("step", (pfp, choice))))
        # The local engine checks step properties while expanding a level and state
        # invariants on its new states; either way a property's first violation is the
        # least key of this level.
        for prop, (_key, kind, why, where) in candidates.items():
            if prop not in self.found:
                self.found[prop] = (kind, why, where)
        self._busy = busy
        return counts.tolist(), shipped

    def _tick(self, started, queue):
        if self.progress is None:
            return
        self.stats.queue = queue
        self.progress(attrs.evolve(self.stats, seconds=self.stats.seconds + time.perf_counter() - started,
                                   levels=list(self.stats.levels), fired=dict(self.stats.fired),
                                   new=dict(self.stats.new)))

    # -- results --------------------------------------------------------------------------

    def _result(self, sc, seen, stopped, frontier, started) -> CheckResult:
        stats = self.stats
        stats.seconds += time.perf_counter() - started  # the driver phase's time is in already
        stats.queue = frontier
        chains = self._chains(seen)
        violations = {}
        for prop in (p.name for p in self.properties):
            if prop not in self.found:
                continue
            kind, why, (where_kind, where) = self.found[prop]
            if where_kind == "driver":
                if kind == "step":
                    init, choices = self._local.seen.path_to(where[0])
                    path = extend(self.model, replay_choices(self.model, init, choices), where[1])
                else:
                    init, choices = self._local.seen.path_to(where)
                    path = replay_choices(self.model, init, choices)
            elif where_kind == "step":
                init, choices = chains[where[0]]
                path = extend(self.model, replay_choices(self.model, init, choices), where[1])
            else:
                init, choices = chains[where]
                path = replay_choices(self.model, init, choices)
            violations[prop] = Violation(prop, kind, why, path)
        complete = stopped is None or (stopped == "violation" and not frontier)
        return CheckResult(
            engine=self.name,
            checked=[p.name for p in self.properties],
            stats=stats,
            violations=violations,
            complete=complete,
            stopped=stopped,
            max_depth=self.options.max_depth,
        )

    def _chains(self, seen):
        """``{fp: (init index, choices)}`` for the fingerprints the Spark-found violations
        name: parent pointers followed in the seen blocks (one job a step, every chain at
        once) back to a state handed over by the driver."""
        wanted = set()
        for _kind, _why, (where_kind, where) in self.found.values():
            if where_kind == "fp":
                wanted.add(where)
            elif where_kind == "step":
                wanted.add(where[0])
        heads = {fp: fp for fp in wanted}  # chain start -> the fingerprint reached so far
        tails: dict[int, list] = {fp: [] for fp in wanted}  # choices, last first
        done = {}
        while heads:
            for start, fp in list(heads.items()):
                if fp in self._handoff:
                    init, choices = self._local.seen.path_to(self._handoff[fp])
                    done[start] = (init, choices + tails[start][::-1])
                    del heads[start]
            if not heads:
                break
            query = np.array(sorted(set(heads.values())), dtype=np.uint64)
            answers = {}
            for part in seen.mapPartitions(partial(_lookup, query)).collect():
                answers.update(part)
            for start, fp in list(heads.items()):
                if fp not in answers:
                    raise EngineError("trace rebuild: a state's parent is missing from the seen-set")
                parent, choice = answers[fp]
                if choice < 0:
                    raise EngineError("trace rebuild: reached a handed-over state the driver does not know")
                tails[start].append(choice)
                heads[start] = parent
        return done


# -- the seen blocks --------------------------------------------------------------------


class _SeenBlock:
    """A partition's share of the seen-set: sorted runs of fingerprints, each with its
    states' parent fingerprints and choices (18 bytes a state). Runs are merged while a
    newer run is at least half the size of the one before it, as in
    ``checker.seen.CompactSeenSet``."""

    __slots__ = ("runs",)

    def __init__(self, runs):
        self.runs = runs  # [(fps sorted, parent fps, choices)]

    @classmethod
    def of(cls, fps, parents, choices):
        return cls([(fps, parents, choices)] if len(fps) else [])

    def __getstate__(self):
        return self.runs

    def __setstate__(self, runs):
        self.runs = runs

    def __len__(self):
        return sum(len(r[0]) for r in self.runs)

    def contains_sorted(self, fps):
        hit = np.zeros(len(fps), dtype=bool)
        for run, _, _ in self.runs:
            if not len(run):
                continue
            at = np.searchsorted(run, fps)
            at[at == len(run)] = 0
            hit |= run[at] == fps
        return hit

    def add_sorted(self, fps, parents, choices):
        if not len(fps):
            return
        runs = self.runs
        runs.append((fps, parents, choices))
        while len(runs) > 1 and 2 * len(runs[-1][0]) >= len(runs[-2][0]):
            b, a = runs.pop(), runs.pop()
            fp = np.concatenate((a[0], b[0]))
            order = np.argsort(fp, kind="stable")  # timsort: two sorted runs merge in linear time
            runs.append((fp[order], np.concatenate((a[1], b[1]))[order], np.concatenate((a[2], b[2]))[order]))

    def lookup(self, fps):
        """``{fp: (parent fp, choice)}`` for those of the sorted ``fps`` held here."""
        out = {}
        for run, parents, choices in self.runs:
            if not len(run):
                continue
            at = np.searchsorted(run, fps)
            at[at == len(run)] = 0
            for k in np.flatnonzero(run[at] == fps).tolist():
                out[int(fps[k])] = (int(parents[at[k]]), int(choices[at[k]]))
        return out


# -- what runs on the executors -----------------------------------------------------------
# Module-level functions bound with functools.partial; records are ("seen", block),
# ("front", rows, fps), (partition, payload) on their way through a shuffle, and
# ("sum", summary).


def _fingerprints(kernel, rows, symmetry):
    return fingerprint_rows(kernel.canonical(rows) if symmetry else rows)


def _tag_seen(records):
    for _i, block in records:
        yield ("seen", block)


def _is_seen(record):
    return record[0] == "seen"


def _routed_only(records):
    for record in records:
        if record[0].__class__ is int:
            yield record


def _is_summary(record):
    return record[0] == "sum"


def _payload(record):
    return record[1]


def _expand_partition(kernel, model, step_props, found, symmetry, n, offsets, fail_first_attempt, index, records):
    """Stage 1: expand rank partition ``index`` (its first rank is ``offsets[index]``).

    Yields ``(owner, ("s", keys, fps, parent fps, codes, rows))`` for the successors owned
    by ``owner`` (per slice of the frontier, the least key kept for each fingerprint),
    then ``(index, ("m", (terminal, generated, fired per code, step violations, bytes)))``
    where a step violation maps a property to its least ``(key, explanation, parent fp,
    choice)`` in this partition.
    """
    if fail_first_attempt and index == 0:
        from pyspark import TaskContext

        if TaskContext.get().attemptNumber() == 0:
            raise RuntimeError("kmc test hook: the first attempt of this task fails")
    clock = time.perf_counter()
    names = kernel.action_names
    terminal = generated = shipped = 0
    fired = np.zeros(len(names), dtype=np.int64)
    step_bad: dict[str, tuple] = {}
    checks = [p for p in step_props if p.name not in found]
    base = offsets[index]
    nn = np.uint64(n)
    parts = [value[1:] for _key, value in records]
    busy = time.perf_counter() - clock  # not counting the wait for the records
    clock = time.perf_counter()
    if parts:
        keys, fps, rows = (np.concatenate(a) for a in zip(*parts))
        order = np.argsort(keys, kind="stable")  # the rank order: this partition's frontier
        fps, rows = fps[order], rows[order]
        del keys, order, parts
        for s in range(0, len(rows), SLICE_ROWS):
            parts = []
            for c in range(s, min(s + SLICE_ROWS, len(rows)), _CHUNK):
                chunk = rows[c:c + _CHUNK]
                parents, choices, codes, succ = kernel.expand(chunk)
                generated += len(succ)
                terminal += int(np.count_nonzero(np.bincount(parents, minlength=len(chunk)) == 0))
                fired += np.bincount(codes, minlength=len(names))
                if not len(succ):
                    continue
                keys = (base + c + parents.astype(np.int64)) * 256 + choices
                order = np.argsort(keys, kind="stable")
                for prop in checks:
                    if prop.name in step_bad:
                        continue  # an earlier chunk has a smaller key
                    mask = kernel.step_mask(prop.name, chunk, parents, succ)
                    if mask is None:
                        mask = np.array([_step_why(model, kernel, prop, chunk[p], ch) is not None
                                         for p, ch in zip(parents.tolist(), choices.tolist())], dtype=bool)
                    hits = order[mask[order]]
                    if len(hits):
                        i = int(hits[0])
                        why = _step_why(model, kernel, prop, chunk[parents[i]], int(choices[i]))
                        if why is None:
                            raise EngineError(f"the batch kernel and the model disagree on {prop.name}")
                        step_bad[prop.name] = (int(keys[i]), why, int(fps[c + parents[i]]), int(choices[i]))
                parts.append((keys[order], _fingerprints(kernel, succ, symmetry)[order],
                              fps[c + parents[order]], codes[order], succ[order]))
            if not parts:
                continue
            keys, sfps, pfps, codes, succ = (np.concatenate(a) for a in zip(*parts))
            _, first = np.unique(sfps, return_index=True)  # in key order: the least key of each
            first.sort()
            keys, sfps, pfps, codes, succ = keys[first], sfps[first], pfps[first], codes[first], succ[first]
            owner = (sfps % nn).astype(np.int64)
            by_owner = np.argsort(owner, kind="stable")
            cuts = np.searchsorted(owner[by_owner], np.arange(n + 1))
            for o in range(n):
                sel = by_owner[cuts[o]:cuts[o + 1]]
                if len(sel):
                    payload = ("s", keys[sel], sfps[sel], pfps[sel], codes[sel], succ[sel])
                    shipped += sum(a.nbytes for a in payload[1:])
                    busy += time.perf_counter() - clock
                    yield (o, payload)
                    clock = time.perf_counter()
    busy += time.perf_counter() - clock
    yield (index, ("m", (terminal, generated, fired, step_bad, shipped, busy)))


def _step_why(model, kernel, prop, row, choice):
    state = kernel.decode(row)
    action, nxt = successors(model, state)[choice]
    return prop.check(model, state, action, nxt)


def _own_partition(kernel, model, invariants, found, n, level, index, records):
    """Stage 2: merge fingerprint partition ``index``'s seen block with the successors
    routed to it.

    Yields the new seen block ``("seen", block)``, the new states routed to their next
    rank partition ``(g * n // level, ("s", keys, fps, rows))``, and the summary
    ``(index % n, ("o", (index, new, new per code, state violations, expansion
    summaries, bytes)))``; a state violation maps a property to its least ``(key,
    explanation, fp)``.
    """
    names = kernel.action_names
    block = None
    parts, metas = [], []
    for key, value in records:
        if key == "seen":
            block = value
        elif value[0] == "s":
            parts.append(value[1:])
        else:
            metas.append(value[1])
    clock = time.perf_counter()
    if block is None:
        raise EngineError(f"internal error: partition {index} has no seen block")
    new_codes = np.zeros(len(names), dtype=np.int64)
    per_target = np.zeros(n, dtype=np.int64)
    state_bad: dict[str, tuple] = {}
    shipped = new = 0
    if parts:
        keys, fps, pfps, codes, rows = (np.concatenate(a) for a in zip(*parts))
        order = np.lexsort((keys, fps))
        sfps = fps[order]
        first = np.ones(len(order), dtype=bool)
        first[1:] = sfps[1:] != sfps[:-1]
        sel = order[first]  # one per fingerprint, the least key; sorted by fingerprint
        sel = sel[~block.contains_sorted(fps[sel])]
        new = len(sel)
        block.add_sorted(fps[sel], pfps[sel], (keys[sel] & 255).astype(np.int16))
        new_codes += np.bincount(codes[sel], minlength=len(names))
        keys, fps, rows = keys[sel], fps[sel], rows[sel]
        for prop in invariants:
            if prop.name in found:
                continue
            mask = kernel.invariant_mask(prop.name, rows)
            if mask is None:
                mask = np.array([prop.check(model, kernel.decode(r)) is not None for r in rows], dtype=bool)
            if mask.any():
                hits = np.flatnonzero(mask)
                j = int(hits[np.argmin(keys[hits])])
                why = prop.check(model, kernel.decode(rows[j]))
                if why is None:
                    raise EngineError(f"the batch kernel and the model disagree on {prop.name}")
                state_bad[prop.name] = (int(keys[j]), why, int(fps[j]))
        target = (keys >> 8) * n // level
        per_target += np.bincount(target, minlength=n)
        by_target = np.argsort(target, kind="stable")
        cuts = np.searchsorted(target[by_target], np.arange(n + 1))
        for t in range(n):
            sel = by_target[cuts[t]:cuts[t + 1]]
            if len(sel):
                payload = ("s", keys[sel], fps[sel], rows[sel])
                shipped += sum(a.nbytes for a in payload[1:])
                yield (t, payload)
    busy = time.perf_counter() - clock
    yield ("seen", block)
    yield ("sum", (index, per_target, new_codes, state_bad, metas, shipped, busy))


def _lookup(query, records):
    for record in records:
        if record[0] == "seen":
            yield record[1].lookup(query)


# -- driver helpers ---------------------------------------------------------------------


def _rows_partitions(sc) -> int:
    configured = sc.getConf().get("spark.default.parallelism")
    if configured:
        return _default_partitions(sc)
    return max(1, sc.defaultParallelism)


def _add_counts(counter, names, counts):
    for code, k in enumerate(np.asarray(counts).tolist()):
        if k:
            counter[names[code]] = counter.get(names[code], 0) + k


def _keep_least(candidates, prop, entry):
    old = candidates.get(prop)
    if old is None or entry[0] < old[0]:
        candidates[prop] = entry


def _check_master(master) -> None:
    """Refuse a malformed or unreachable master before any work, as the Spark session
    would (``checker.spark_master``), unless a session is already running."""
    try:
        from pyspark import SparkContext
    except ImportError as e:
        raise EngineError(f"the spark engine needs pyspark ({e})") from None
    if SparkContext._active_spark_context is None:
        from .spark_master import DEFAULT_MASTER, check_reachable, validate_master

        check_reachable(validate_master(DEFAULT_MASTER if master is None else master))
