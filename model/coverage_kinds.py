"""The kinds of the Kafka model's actions that coverage counts (see ``model.coverage_names``):
their names, and the kind of a step, per state (``kind_of``) and over the batch kernel's
successors (``row_kinds``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .config import Config
from .rows import RowCodec
from .state import State

if TYPE_CHECKING:
    from .views import KernelView, ModelView

import numpy as np

from .actions import (
    ALTER_PARTITION,
    CHANGE_MIN_ISR,
    CONTROLLED_SHUTDOWN,
    CRASH,
    DISK_FAILURE,
    ELECT_LEADER,
    FETCH_REQUEST,
    FETCH_RESPONSE,
    Action,
)
from .rows import NONE

ELECT_KINDS = ("clean", "ELR", "unclean", "last-known-leader")
CRASH_KINDS = ("keeps its log", "lossy cut")
ALTER_KINDS = ("removes", "adds", "refused")  # the controller's answer (alter_partition)
FETCH_REQUEST_KINDS = ("records", "diverging")  # truncate_on_fetch only
FETCH_RESPONSE_KINDS = ("append", "truncate", "hw-first")  # truncate_on_fetch only
# How the controller answers a ControlledShutdown (max_controlled_shutdowns only): a follower
# outside the ISR (only the mark), a follower in the ISR (removed), the quorum's leader replaced
# by an election of one of ElectLeader's kinds, or by nobody.
SHUTDOWN_KINDS = ("not in the ISR", "leaves the ISR", "clean", "ELR", "unclean", "leaderless")
# What the controller does with a replica whose log directory failed (max_disk_failures only).
DISK_KINDS = ("not in the ISR", "leaves the ISR", "enters the ELR", "ISR kept")
# What a min ISR change does to a non-empty ELR (min_isr_changes only).
MIN_ISR_KINDS = ("ELR empty", "clears the ELR", "keeps the ELR")
# each action's kinds, by its name (what ``row_kinds`` numbers)
KINDS_OF = {
    ELECT_LEADER: ELECT_KINDS,
    CRASH: CRASH_KINDS,
    ALTER_PARTITION: ALTER_KINDS,
    FETCH_REQUEST: FETCH_REQUEST_KINDS,
    FETCH_RESPONSE: FETCH_RESPONSE_KINDS,
    CONTROLLED_SHUTDOWN: SHUTDOWN_KINDS,
    DISK_FAILURE: DISK_KINDS,
    CHANGE_MIN_ISR: MIN_ISR_KINDS,
}


def kind_of(model: ModelView, before: State, action: Action, after: State) -> str | None:
    if action.name == ELECT_LEADER:
        q, c = before.quorum, action.replica
        if c in q.isr:
            return "clean"
        if c in q.elr:
            return "ELR"
        if model.config.last_known_leader and not q.isr and not q.elr and q.leader == c:
            return "last-known-leader"
        return "unclean"
    if action.name == CRASH:
        r = action.replica
        return "lossy cut" if len(after.replicas[r].log) < len(before.replicas[r].log) else "keeps its log"
    if action.name == ALTER_PARTITION:
        if after.quorum.isr == before.quorum.isr:
            return "refused"
        return "adds" if len(after.quorum.isr) > len(before.quorum.isr) else "removes"
    if action.name == CONTROLLED_SHUTDOWN:
        q, r = before.quorum, action.replica
        if q.leader != r:
            return "leaves the ISR" if r in q.isr else "not in the ISR"
        n = action.to
        if n is None:
            return "leaderless"
        if n in q.isr:
            return "clean"
        return "ELR" if n in q.elr else "unclean"
    if action.name == DISK_FAILURE:
        q, r = before.quorum, action.replica
        if r not in q.isr:
            return "not in the ISR"
        if r in after.quorum.isr:
            return "ISR kept"
        return "enters the ELR" if r in after.quorum.elr else "leaves the ISR"
    if action.name == CHANGE_MIN_ISR:
        if not before.quorum.elr:
            return "ELR empty"
        return "keeps the ELR" if after.quorum.elr else "clears the ELR"
    if action.name in (FETCH_REQUEST, FETCH_RESPONSE) and model.config.truncate_on_fetch:
        r = action.replica
        if action.name == FETCH_REQUEST:
            sent = after.replicas[r].inflight
            assert sent is not None  # a FetchRequest puts a response in flight
            return "diverging" if sent.diverging is not None else "records"
        taken = before.replicas[r].inflight
        assert taken is not None  # a FetchResponse takes the response in flight
        if taken.diverging is None:
            return "append"
        return "truncate" if after.replicas[r].inflight is None else "hw-first"
    return None


def row_kinds(
    kernel: KernelView, chunk: np.ndarray, parents: np.ndarray, codes: np.ndarray, succ: np.ndarray
) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    from .actions import ALTER_PARTITION_CODE, CRASH_CODE, ELECT_LEADER_CODE

    c = kernel.codec
    out: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    codes = codes.astype(np.int8, copy=False)
    where = np.flatnonzero(codes == ELECT_LEADER_CODE)
    if len(where):
        p = parents[where]
        cand = succ[where, c.Q_LEADER].astype(np.int64)
        bit = np.left_shift(1, cand)
        isr, elr = chunk[p, c.Q_ISR].astype(np.int64), chunk[p, c.Q_ELR].astype(np.int64)
        kind = np.full(len(where), 2, dtype=np.int64)  # unclean
        if kernel.config.last_known_leader:
            kind[(isr == 0) & (elr == 0) & (chunk[p, c.Q_LEADER] == cand)] = 3
        kind[(elr & bit) != 0] = 1
        kind[(isr & bit) != 0] = 0
        out[ELECT_LEADER] = (where, kind)
    where = np.flatnonzero(codes == CRASH_CODE)
    if len(where):
        leo = np.array([c.block(r) + c.LEO for r in range(c.n)])
        lost = (succ[np.ix_(where, leo)] < chunk[np.ix_(parents[where], leo)]).any(axis=1)
        out[CRASH] = (where, lost.astype(np.int64))
    if c.fetch:
        out.update(_fetch_row_kinds(c, chunk, parents, codes, succ))
    if c.alter:
        where = np.flatnonzero(codes == ALTER_PARTITION_CODE)
        if len(where):
            same = succ[where, c.Q_ISR] == chunk[parents[where], c.Q_ISR]
            kind = chunk[parents[where], c.ALTER_CHANGE].astype(np.int64)  # 0 removes, 1 adds
            kind[same] = 2
            out[ALTER_PARTITION] = (where, kind)
    if c.SHUTTING is not None:
        where = np.flatnonzero(codes == kernel.action_names.index(CONTROLLED_SHUTDOWN))
        if len(where):
            out[CONTROLLED_SHUTDOWN] = (where, _shutdown_kinds(c, chunk, parents[where], succ[where]))
    if c.DISK_FAILURES is not None:
        where = np.flatnonzero(codes == kernel.action_names.index(DISK_FAILURE))
        if len(where):
            out[DISK_FAILURE] = (where, _disk_kinds(c, kernel.config, chunk[parents[where]], succ[where]))
    if c.MIN_ISR_STEP is not None:
        where = np.flatnonzero(codes == kernel.action_names.index(CHANGE_MIN_ISR))
        if len(where):
            elr_before = chunk[parents[where], c.Q_ELR] != 0
            kind = np.where(succ[where, c.Q_ELR] != 0, 2, 1)  # keeps the ELR, clears it
            kind[~elr_before] = 0  # ELR empty
            out[CHANGE_MIN_ISR] = (where, kind.astype(np.int64))
    return out


def _disk_kinds(c: RowCodec, cfg: Config, before: np.ndarray, after: np.ndarray) -> np.ndarray:
    """The kinds of DiskFailure steps (``DISK_KINDS``, as ``kind_of`` reads them) from the
    ISR and the ELR alone: a step that changed the ISR removed the failed replica (into the
    ELR or not); one that did not found it outside the ISR, except where the ISR was one
    replica and, without the ELR, is kept whole: there the row does not say whether that
    replica failed ("ISR kept") or another, and the kind is -1 (``row_counts`` asks the
    model)."""
    isr = before[:, c.Q_ISR].astype(np.int64)
    isr_after = after[:, c.Q_ISR].astype(np.int64)
    removed = isr & ~isr_after
    kind = np.zeros(len(before), dtype=np.int64)  # not in the ISR
    changed = removed != 0
    kind[changed] = np.where((after[changed, c.Q_ELR].astype(np.int64) & removed[changed]) != 0, 2, 1)
    if not cfg.eligible_leader_replicas:
        kind[~changed & (isr != 0) & ((isr & (isr - 1)) == 0)] = -1
    return kind


def _shutdown_kinds(c: RowCodec, before: np.ndarray, parents: np.ndarray, after: np.ndarray) -> np.ndarray:
    """The kinds of ControlledShutdown steps (``SHUTDOWN_KINDS``, as ``kind_of`` reads
    them): the replica ``r`` is the one the step marked; a follower's step is "not in the
    ISR" or "leaves the ISR" by ``r``'s membership before; the quorum leader's by whom it
    elected (none: "leaderless"), by that replica's membership of the ISR or the ELR before."""
    marked = after[:, c.SHUTTING].astype(np.int64) & ~before[parents, c.SHUTTING].astype(np.int64)
    r = np.zeros(len(parents), dtype=np.int64)
    for k in range(c.n):
        r[marked == 1 << k] = k
    isr = before[parents, c.Q_ISR].astype(np.int64)
    elr = before[parents, c.Q_ELR].astype(np.int64)
    ql = before[parents, c.Q_LEADER].astype(np.int64)
    elected = after[:, c.Q_LEADER].astype(np.int64)
    bit = np.left_shift(1, np.maximum(elected, 0))
    kind = np.full(len(parents), 4, dtype=np.int64)  # unclean
    kind[(elr & bit) != 0] = 3  # ELR
    kind[(isr & bit) != 0] = 2  # clean
    kind[elected == NONE] = 5  # leaderless
    follower = ql != r
    kind[follower] = np.where((isr[follower] >> r[follower] & 1) == 1, 1, 0)  # leaves the ISR, not in it
    return kind


def _fetch_row_kinds(
    c: RowCodec, chunk: np.ndarray, parents: np.ndarray, codes: np.ndarray, succ: np.ndarray
) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """The kinds of FetchRequest and FetchResponse with truncation in the fetch path, read
    from the in-flight columns (one column at a time: a gather of one byte a successor):
    the follower is the replica whose response the step sends (FetchRequest: none was in
    flight, one is) or takes (FetchResponse: its response is gone, or, KAFKA-14704's first
    half, now marked applied)."""
    from .actions import FETCH_REQUEST_CODE, FETCH_RESPONSE_CODE

    out: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    diverging_at = c.INFLIGHT_DIVERGING
    assert diverging_at is not None  # only with truncate_on_fetch
    where = np.flatnonzero(codes == FETCH_REQUEST_CODE)
    if len(where):
        p = parents[where]
        sent = np.zeros(len(where), dtype=bool)
        for r in range(c.n):
            b = c.block(r)
            sent |= (chunk[p, b + c.INFLIGHT_LEADER] == NONE) & (succ[where, b + diverging_at] != NONE)
        out[FETCH_REQUEST] = (where, sent.astype(np.int64))  # records 0, diverging 1
    where = np.flatnonzero(codes == FETCH_RESPONSE_CODE)
    if len(where):
        p = parents[where]
        kind = np.zeros(len(where), dtype=np.int64)  # append 0
        applied = c.INFLIGHT_APPLIED
        for r in range(c.n):
            b = c.block(r)
            diverging = chunk[p, b + diverging_at] != NONE
            if not diverging.any():
                continue
            gone = succ[where, b + c.INFLIGHT_LEADER] == NONE
            kind[diverging & gone] = 1  # truncate
            if applied is not None:  # marked applied at this step: the HW first
                first = (chunk[p, b + applied] != 1) & (succ[where, b + applied] == 1)
                kind[diverging & first] = 2
        out[FETCH_RESPONSE] = (where, kind)
    return out


# -- variables --------------------------------------------------------------------------
