"""The batch forms of the truncation rules: each takes the rows in which a follower ``r``
(block ``b``) becomes a follower of ``l`` (block ``bl``) and returns, per row, the offset the
follower truncates its log to, as the rule's per-state form in ``model.truncation`` would.

A rule's batch form is one function of the codec, the record modulus ``m`` (a record is
``epoch * m + index``), the rows and the two blocks, with the follower's high watermarks.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:  # for the annotations only
    from .rows import RowCodec


def batch_high_watermark(c: RowCodec, m: int, s: np.ndarray, b: int, bl: int, hw: np.ndarray) -> np.ndarray:
    """Pre-0.11: truncate to the high watermark."""
    return hw


def batch_common_prefix(c: RowCodec, m: int, s: np.ndarray, b: int, bl: int, hw: np.ndarray) -> np.ndarray:
    """KIP-279: the longest prefix on which offsets and epochs agree."""
    n_r = s[:, b + c.LEO].astype(np.int64)
    n_l = s[:, bl + c.LEO].astype(np.int64)
    pos = np.arange(m)
    same = (s[:, b + c.LOG : b + c.LOG + m] == s[:, bl + c.LOG : bl + c.LOG + m]) & (
        pos < np.minimum(n_r, n_l)[:, None]
    )
    out: np.ndarray = np.cumprod(same, axis=1).sum(axis=1).astype(np.int64)
    return out


def batch_leader_epoch(c: RowCodec, m: int, s: np.ndarray, b: int, bl: int, hw: np.ndarray) -> np.ndarray:
    """KIP-101's truncation offset (``model.truncation.truncate_leader_epoch``)."""
    rows = np.arange(len(s))
    n_r = s[:, b + c.LEO].astype(np.int64)
    n_l = s[:, bl + c.LEO].astype(np.int64)
    le_l = s[:, bl + c.LOG : bl + c.LOG + m].astype(np.int64) // m  # epochs; none stays -1
    e = s[rows, b + c.LOG + np.maximum(n_r - 1, 0)].astype(np.int64) // m  # the follower's last epoch
    last_l = le_l[rows, np.maximum(n_l - 1, 0)]
    valid = np.arange(m) < n_l[:, None]
    later = valid & (le_l > e[:, None])
    has_later = later.any(axis=1)
    answer = np.where(has_later, later.argmax(axis=1), n_l)  # end_offset(l.log, e)
    undefined = (n_l == 0) | (((e < le_l[:, 0]) | ~has_later) & (last_l != e))
    answer = np.where((n_l > 0) & (last_l == e), n_l, answer)
    t = np.where(undefined, hw, np.minimum(answer, n_r))
    out: np.ndarray = np.where(n_r == 0, 0, t)
    return out
