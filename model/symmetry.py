"""Replica permutations of attrs states (docs/model.md, "Symmetry reduction").

The readable form of what ``model.rows.RowCodec.permuter`` does to rows; the per-state
engine uses it, and the tests compare the two.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

from .config import Config
from .state import Fetch, Quorum, Replica, State


def symmetries(config: Config) -> list[tuple[int, ...]]:
    """The replica permutations symmetry reduction may apply: those that map the set of
    initial states onto itself, i.e. all of them with ``initial_leader = any`` and those
    fixing the first replica otherwise. Each maps replica ``r`` to ``p[r]``; the identity
    comes first."""
    n = config.n
    if config.initial_leader == "any":
        return list(itertools.permutations(range(n)))
    return [(0,) + p for p in itertools.permutations(range(1, n))]


def permute(state: State, perm: Sequence[int]) -> State:
    """``state`` with replica ``r`` renamed ``perm[r]``: replica ids are renamed wherever
    they occur (leaders, ``remote_leo`` indices, the in-flight leader, the quorum's
    leader, ISR and ELR, the AlterPartition request's leader and replica); a replica's marks
    (``lossy``, ``shutting``) move with it; records, epochs, offsets and history (the
    counters of crashes and controlled shutdowns among them) are not replica ids."""
    n = len(state.replicas)

    def rid(r: int | None) -> int | None:
        return None if r is None else perm[r]

    reps = list(state.replicas)  # every slot is overwritten: perm is a permutation
    for r, rep in enumerate(state.replicas):
        remote = [0] * n
        for f in range(n):
            remote[perm[f]] = rep.remote_leo[f]
        inflight = rep.inflight
        if inflight is not None:
            inflight = Fetch(
                perm[inflight.leader],
                inflight.epoch,
                inflight.start,
                inflight.records,
                inflight.leader_hw,
                inflight.diverging,  # an epoch, not a replica id
                inflight.applied,
            )
        reps[perm[r]] = Replica(
            rep.alive, rep.log, rep.hw, rep.epoch, rid(rep.leader), tuple(remote), inflight, rep.lossy, rep.shutting
        )
    q = state.quorum
    alter = q.alter
    if alter is not None:  # the request names two replicas: its leader and its subject
        alter = (perm[alter[0]], alter[1], perm[alter[2]])
    quorum = Quorum(
        rid(q.leader),
        q.epoch,
        tuple(sorted(perm[r] for r in q.isr)),
        tuple(sorted(perm[r] for r in q.elr)),
        alter,
        q.min_isr_step,  # a count, not a replica id
    )
    # the operators' counters are not replica ids either
    return State(
        tuple(reps),
        quorum,
        state.produced,
        state.crashes,
        state.committed,
        state.acked,
        state.controlled_shutdowns,
        state.leader_min_isr_step,
        state.disk_failures,
    )
