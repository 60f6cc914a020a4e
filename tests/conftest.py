"""Shared fixtures: builders for hand-made model states.

Kept small on purpose; a test file with its own needs (Spark, ...) defines its own
fixtures.
"""

from __future__ import annotations

import types

import pytest

from model import Config, Fetch, KafkaModel, Quorum, Replica, State


def _replica(n, *, alive=True, log=(), hw=0, epoch=0, leader=0, remote=None, inflight=None,
             lossy=False):
    """A replica of an ``n``-replica model; ``log`` is a sequence of (epoch, id)."""
    return Replica(
        alive=alive, log=tuple(tuple(r) for r in log), hw=hw, epoch=epoch, leader=leader,
        remote_leo=tuple(remote) if remote is not None else (0,) * n, inflight=inflight,
        lossy=lossy,
    )


def _state(replicas, *, leader=0, epoch=0, isr=None, elr=(), produced=0, crashes=0, committed=()):
    """A whole state; ``isr`` defaults to every replica, ``elr`` and ``committed`` to ``()``."""
    n = len(replicas)
    isr = tuple(range(n)) if isr is None else tuple(sorted(isr))
    quorum = Quorum(leader, epoch, isr, tuple(sorted(elr)))
    return State(replicas=tuple(replicas), quorum=quorum, produced=produced,
                 crashes=crashes, committed=tuple(sorted(tuple(c) for c in committed)))


def _model(**kw):
    """A ``KafkaModel`` for ``Config(**kw)``; replicas default to ("A", "B")."""
    return KafkaModel(Config(**kw))


@pytest.fixture
def build():
    """``build.replica(n, ...)``, ``build.state(replicas, ...)``, ``build.model(**config)``,
    ``build.fetch(...)``: builders for hand-made states (see the functions above)."""
    return types.SimpleNamespace(replica=_replica, state=_state, model=_model, fetch=Fetch)
