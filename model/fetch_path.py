"""Truncation in the fetch path (docs/model.md, "Kafka 2.8+: truncation in the fetch
path"): the epoch cache of a replica, the end offset of an epoch by that cache, the
leader's diverging check, and the offset a follower truncates to on a diverging answer.

Plain functions of states and logs, which ``model.kafka_actions`` applies and the tests
read; nothing here changes a state.
"""

from __future__ import annotations

from collections.abc import Sequence

from .state import Log, State, leads, leso

# The answer EO(r, E) has when no epoch of the cache is above E and E is not its largest.
UNDEFINED = None


def log_cache(log: Log) -> tuple[tuple[int, int], ...]:
    """The epoch cache of a log alone: ``((epoch, first offset), ...)`` for every epoch of
    a record of ``log``, in increasing epoch order (a follower's cache)."""
    out: list[tuple[int, int]] = []
    for offset, (e, _) in enumerate(log):
        if not out or out[-1][0] != e:
            out.append((e, offset))
    return tuple(out)


def cache(state: State, r: int) -> tuple[tuple[int, int], ...]:
    """``cache(r)``: the epoch cache of replica ``r``, a tuple of ``(epoch, start offset)``
    pairs in increasing epoch order. It holds every epoch of a record of ``r``'s log with
    the offset of its first record there; while ``r`` leads, also ``(r.epoch, leso(r))``,
    the entry a leader writes at its election (before it has a record of that epoch, it
    is the log end at that moment)."""
    out = log_cache(state.replicas[r].log)
    if leads(state, r):
        epoch = state.replicas[r].epoch
        if not out or out[-1][0] != epoch:
            out += ((epoch, leso(state, r)),)
    return out


def end_offset_for(entries: Sequence[tuple[int, int]], epoch: int, leo: int) -> tuple[int, int] | None:
    """``EO(r, E)`` over ``entries`` (``cache(r)``) and ``leo`` (``LEO(r)``): the end offset
    of epoch ``epoch`` as ``(epoch, offset)``, or ``UNDEFINED``.

    - ``epoch`` is the largest epoch of the cache: ``(epoch, leo)``;
    - else with ``H`` the smallest cached epoch above ``epoch`` (none: ``UNDEFINED``) and
      ``h`` its start offset: ``(F, h)`` for ``F`` the largest cached epoch not above
      ``epoch``, or ``(epoch, h)`` when every cached epoch is above it.
    """
    if entries and entries[-1][0] == epoch:
        return (epoch, leo)
    below = None
    for e, start in entries:  # in increasing epoch order
        if e > epoch:
            return (epoch if below is None else below, start)
        below = e
    return UNDEFINED


def diverging_epoch(state: State, f: int, l: int) -> tuple[int, int] | None:
    """The leader's check of a fetch (FetchRequest with ``truncate_on_fetch``): the
    diverging epoch ``(E', O') = EO(l, E)`` the leader ``l`` answers follower ``f`` with,
    ``E`` the epoch of ``f``'s last record, or ``None`` when the fetch does not diverge
    (``f``'s log is empty, or ``E' = E`` and ``O' ≥ LEO(f)``).

    ``EO(l, E)`` is never undefined here: ``l`` leads, so its own epoch, at least ``E``,
    is in its cache."""
    log = state.replicas[f].log
    if not log:
        return None
    epoch = log[-1][0]
    leader = state.replicas[l]
    answer = end_offset_for(cache(state, l), epoch, len(leader.log))
    assert answer is not UNDEFINED, "a leading replica's cache has an epoch at least its followers'"
    e2, o2 = answer
    if e2 < epoch or o2 < len(log):
        return answer
    return None


def truncation_on_answer(log: Log, epoch: int, offset: int) -> int:
    """The offset a follower with ``log`` truncates to on the diverging epoch
    ``(epoch, offset)``: with ``(F, G) = EO(f, epoch)`` by its own cache,
    ``min(G, offset, LEO)`` if ``F = epoch``, ``min(G, LEO)`` otherwise, and
    ``min(offset, LEO)`` when ``EO(f, epoch)`` is undefined."""
    leo = len(log)
    mine = end_offset_for(log_cache(log), epoch, leo)
    if mine is UNDEFINED:
        return min(offset, leo)
    f_epoch, g = mine
    if f_epoch == epoch:
        return min(g, offset, leo)
    return min(g, leo)
