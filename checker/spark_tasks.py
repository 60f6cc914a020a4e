"""What runs on the executors for the per-state Spark engine (``checker.spark``).

Plain module-level functions (bound with ``functools.partial``), so that the tasks carry
only the model and the properties, and hold no state between calls. A partition of the
state RDD holds records tagged ``_SEEN`` (the partition's seen block), ``_FRONT`` (pickled
chunks of frontier states) and ``_SUMMARY`` (what the driver collects of a level).
"""

from __future__ import annotations

import os
import pickle
import signal
from array import array

from .kernel import check_state, expand
from .protocol import action_name
from .spark_pickle import dumps

_SEEN = "seen"  # record tags of the state RDD
_FRONT = "front"
_SUMMARY = "sum"
_LEVEL_DATA = (_SEEN, _FRONT)  # what a checkpoint saves of a partition
_CHUNK = 2048  # frontier states per pickled chunk


def _owner(key):
    """The partition function: PySpark sends a record with key ``k`` to partition
    ``_owner(k) % n``.

    The keys are partition numbers: an expansion task groups the successors of state
    ``fp`` under ``fp % n``, the partition that owns ``fp``, so a fingerprint's owner is a
    deterministic function of the fingerprint alone. The negative keys are free:
    expansion task ``i`` sends its counters under ``-1 - i``, to any partition.
    """
    return key


def _is_summary(record):
    return record[0] == _SUMMARY


def _payload(record):
    return record[1]


def _expand_partition(model, step_props, n, fail_first_attempt, index, records):
    """Expand the frontier states of one partition.

    Yields ``(owner, blob)``: ``blob`` is a pickled list of ``(fp, path, parent fp, action
    name, successor)`` for successors owned by partition ``owner``, keeping within a chunk
    of the frontier only the least path to each successor; then ``(-1 - index,
    (terminal, generated, fired, step violations))``, where the step violations map a
    property to the least ``(path, explanation)`` among this partition's violating edges.

    Successors that this partition owns and has already seen are dropped here rather
    than after the shuffle: most successors are old states, and shipping a state costs
    more than generating it.
    """
    if fail_first_attempt and index == 0:
        from pyspark import TaskContext

        if TaskContext.get().attemptNumber() == 0:
            _test_fault(fail_first_attempt)
    terminal = generated = 0
    fired: dict[str, int] = {}
    step_bad: dict[str, tuple] = {}
    known: set = set()
    for tag, payload in records:
        if tag == _SEEN:  # the merge writes the seen block before the frontier
            known = set(payload)
            continue
        if tag != _FRONT:
            continue
        best: dict[int, tuple] = {}
        for fp, path, state in pickle.loads(payload):
            edges = expand(model, state, step_props)
            if not edges:
                terminal += 1
            generated += len(edges)
            for choice, action, succ, sfp, bad in edges:
                name = action_name(action)
                fired[name] = fired.get(name, 0) + 1
                spath = path + (choice,)
                for prop, why in bad:
                    old = step_bad.get(prop)
                    if old is None or spath < old[0]:
                        step_bad[prop] = (spath, why)
                old = best.get(sfp)
                if old is None or spath < old[0]:
                    best[sfp] = (spath, fp, name, succ)
        buckets: dict[int, list] = {}
        for sfp, (spath, fp, name, succ) in best.items():
            owner = sfp % n
            if owner == index and sfp in known:
                continue
            buckets.setdefault(owner, []).append((sfp, spath, fp, name, succ))
        for owner, items in buckets.items():
            yield (owner, dumps(items))
    yield (-1 - index, (terminal, generated, fired, step_bad))


def _test_fault(kind):
    """Test hooks, on the first attempt of partition 0's expansion tasks: ``True`` raises;
    ``"kill"`` ends this Python worker as a crash would (the OOM killer, a stray signal),
    ``"kill:PATH"`` does so once (``PATH`` is created to remember it);
    ``"sigint:GROUP:PATH"`` sends SIGINT to the driver's process group ``GROUP`` once, as
    Ctrl-C in a terminal does, and to this worker (``PATH`` is created to remember it was
    sent; PySpark's daemon gives its workers a process group of their own, but a worker
    started without it is in the terminal's group)."""
    if kind == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    if isinstance(kind, str) and kind.startswith("kill:"):
        try:
            os.close(os.open(kind[len("kill:"):], os.O_CREAT | os.O_EXCL | os.O_WRONLY))
        except FileExistsError:
            return
        os.kill(os.getpid(), signal.SIGKILL)
    if isinstance(kind, str) and kind.startswith("sigint:"):
        group, _, marker = kind[len("sigint:"):].partition(":")
        try:
            os.close(os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
        except FileExistsError:
            return
        os.killpg(int(group), signal.SIGINT)
        os.kill(os.getpid(), signal.SIGINT)  # and this worker, as without PySpark's daemon
        return
    raise RuntimeError("kmc test hook: the first attempt of this task fails")


def _merge_partition(model, invariants, index, records):
    """Merge one partition's seen block with the successors routed to it.

    ``records`` is the partition's previous version (only its seen block is used)
    followed by the blobs of successors routed to it and the expansion tasks' counters
    (see ``_expand_partition``). Yields the new seen block, the new frontier in pickled
    chunks, and one summary ``(index, new states, new states per action, state
    violations, counters)``; a state violation maps a property to the least ``(path,
    explanation, fp)`` among this partition's new states.
    """
    block = None
    incoming: dict[int, tuple] = {}
    metas = []
    for key, value in records:
        if key.__class__ is str:
            if key == _SEEN:
                block = value
            continue
        if key < 0:
            metas.append(value)
            continue
        for fp, path, parent, name, state in pickle.loads(value):
            old = incoming.get(fp)
            if old is None or path < old[0]:
                incoming[fp] = (path, parent, name, state)
    fps = block if block is not None else array("Q")
    known = set(fps)
    new_by_action: dict[str, int] = {}
    state_bad: dict[str, tuple] = {}
    fresh = []
    for fp, (path, parent, name, state) in incoming.items():
        if fp in known:
            continue
        fps.append(fp)
        if parent is not None:  # not an initial state
            new_by_action[name] = new_by_action.get(name, 0) + 1
        for prop, why in check_state(model, state, invariants):
            old = state_bad.get(prop)
            if old is None or path < old[0]:
                state_bad[prop] = (path, why, fp)
        fresh.append((fp, path, state))
    del incoming, known
    yield (_SEEN, fps)
    for i in range(0, len(fresh), _CHUNK):
        yield (_FRONT, dumps(fresh[i:i + _CHUNK]))
    yield (_SUMMARY, (index, len(fresh), new_by_action, state_bad, metas))


def _is_level_data(record):
    return record[0] in _LEVEL_DATA


def _route_saved(n, records):
    """Split a saved partition's records by their new owner (``fp % n``).

    Yields ``(owner, (tag, payload, count))``: a seen block or a pickled frontier chunk
    holding only fingerprints owned by ``owner``, and how many states it holds. Neither
    the order of a seen block nor the chunking of the frontier changes a result (every
    choice the engine makes is by least path), so any partition count can resume.
    """
    for tag, payload in records:
        if tag == _SEEN:
            if isinstance(payload, tuple):  # saved by an older kmc: (fps, parents, choices)
                payload = payload[0]
            blocks: dict[int, array] = {}
            for fp in payload:
                block = blocks.get(fp % n)
                if block is None:
                    block = blocks[fp % n] = array("Q")
                block.append(fp)
            for owner, block in blocks.items():
                yield owner, (_SEEN, block, len(block))
        elif tag == _FRONT:
            chunks: dict[int, list] = {}
            for item in pickle.loads(payload):
                chunks.setdefault(item[0] % n, []).append(item)
            for owner, items in chunks.items():
                yield owner, (_FRONT, dumps(items), len(items))


def _assemble_partition(index, records):
    """One partition of a restored level, laid out as ``_merge_partition`` writes one:
    the seen block, the frontier chunks, a summary ``(seen states, frontier states)``."""
    fps = array("Q")
    chunks = []
    front = 0
    for _owner, (tag, payload, count) in records:
        if tag == _SEEN:
            fps.extend(payload)
        else:
            chunks.append(payload)
            front += count
    yield (_SEEN, fps)
    for chunk in chunks:
        yield (_FRONT, chunk)
    yield (_SUMMARY, (len(fps), front))
