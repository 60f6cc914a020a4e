"""The recipe of a graph client (docs/architecture.md): a client of the graph visitor written
in this file alone, registered, and handed every stored state and expanded edge by
``kmc check`` on every local path.

The model is the shipped two-phase commit with one resource manager (RM),
``specs/models/two_phase.py``. Worked by hand, writing a state as (RM, TM, the RMs the TM
knows prepared, the "Prepared" messages, "Commit" sent, "Abort" sent):

    1 (W, init, 0, 0, -, -)    -> TMAbort 2, RMPrepare 3, RMChooseToAbort 4
    2 (W, abort, 0, 0, -, A)   -> RMPrepare 5, RMChooseToAbort 6, RMRcvAbortMsg 6
    3 (P, init, 0, 1, -, -)    -> TMRcvPrepared 7, TMAbort 5
    4 (Ab, init, 0, 0, -, -)   -> TMAbort 6
    5 (P, abort, 0, 1, -, A)   -> RMRcvAbortMsg 9
    6 (Ab, abort, 0, 0, -, A)  -> RMRcvAbortMsg 6
    7 (P, init, 1, 1, -, -)    -> TMRcvPrepared 7, TMCommit 10, TMAbort 11
    9 (Ab, abort, 0, 1, -, A)  -> RMRcvAbortMsg 9
    10 (P, commit, 1, 1, C, -) -> RMRcvCommitMsg 12
    11 (P, abort, 1, 1, -, A)  -> RMRcvAbortMsg 13
    12 (C, commit, 1, 1, C, -) -> RMRcvCommitMsg 12
    13 (Ab, abort, 1, 1, -, A) -> RMRcvAbortMsg 13

12 states, 19 edges; the RM has decided (committed or aborted) in 5 of them (4, 6, 9, 12,
13) and committed in one (12), whose shortest path is 1, 3, 7, 10, 12 (5 states).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import attrs
import numpy as np
import pytest
from kmc.app.cli import main
from kmc.checker.contract.protocol import ALWAYS
from kmc.checker.core.level import LevelStep
from kmc.checker.core.result import Violation
from kmc.checker.core.visitor import Decision, Explored
from kmc.checker.graph import clients

TWO_PHASE = Path(__file__).resolve().parent.parent / "specs" / "models" / "two_phase.py"
MODEL = f"{TWO_PHASE}:two_phase"
COMMITTED, ABORTED = 2, 3  # an RM's state (two_phase.py)


@attrs.frozen
class RMState:
    """The record of stored states: the RM's state in each (small and picklable)."""

    width = 1

    def flags(self, rows: Any, level: LevelStep) -> np.ndarray:
        return np.array([level.kernel.decode(row).rm[0] for row in rows], dtype=np.int64)

    def keeps(self, flags: np.ndarray, count: int) -> np.ndarray:
        return np.zeros(count, dtype=np.bool_)  # no edge is kept: they are only counted


class DecidedCounter:
    """Counts the stored states, the edges and the states where the RM has decided; with
    ``judge``, decides "the RM never commits" (violated at the first state where it does)."""

    task = RMState()
    fairness = False
    saved_as = ("recipe", "decided")

    def __init__(self, judge: bool = False) -> None:
        self.rm = np.zeros(0, dtype=np.int64)  # by state number
        self.edges = 0
        self.judge = judge

    def add_flags(self, first: int, flags: np.ndarray) -> None:
        self.rm = np.concatenate([self.rm[:first], flags])

    def add_edges(self, src: np.ndarray, dst_fp: np.ndarray, choices: np.ndarray, fair: np.ndarray | None) -> None:
        self.edges += len(src)

    def rollback(self, n_states: int) -> None:
        self.rm = self.rm[:n_states]

    def save(self) -> object:
        return self.rm

    def restore(self, saved: object) -> None:
        self.rm = np.asarray(saved)

    @property
    def decided(self) -> int:
        return int(np.count_nonzero((self.rm == COMMITTED) | (self.rm == ABORTED)))

    def decide(self, explored: Explored) -> Decision | None:
        committed = np.flatnonzero(self.rm == COMMITTED)
        if not self.judge or not len(committed):
            return None
        path = explored.path(int(committed[0]))
        return Decision("NeverCommits", Violation("NeverCommits", ALWAYS, "the RM committed", path))


@pytest.fixture
def registered():
    """The counters the registered factory made, one a search."""
    made: list[DecidedCounter] = []

    def factory(model: Any, properties: Any, options: Any) -> list[DecidedCounter]:
        made.append(DecidedCounter())
        return made[-1:]

    clients.register(factory)
    try:
        yield made
    finally:
        clients.unregister(factory)


@pytest.mark.parametrize("path", [[], ["--per-state"]], ids=["rows", "per-state"])
def test_kmc_check_hands_a_registered_client_every_state_and_edge(registered, capsys, path):
    code = main(["check", "--model", MODEL, "--param", "rms=1", "--no-progress", "--no-trace", *path])
    out = capsys.readouterr().out
    assert code == 0 and "12 distinct states" in out
    (client,) = registered
    assert (len(client.rm), client.edges, client.decided) == (12, 19, 5)


def test_a_client_decides_a_property_of_its_own(registered):
    from kmc.checker.local.states import LocalEngine

    spec = importlib.util.spec_from_file_location("two_phase_recipe", TWO_PHASE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    judge = DecidedCounter(judge=True)
    result = LocalEngine(module.two_phase(rms=1), clients=[judge]).run()
    assert (len(judge.rm), judge.edges, judge.decided) == (12, 19, 5)
    assert len(registered[0].rm) == 12  # the registered one ran beside it
    violation = result.violations["NeverCommits"]
    assert len(violation.path) == 5 and violation.path.states[-1].rm == (COMMITTED,)
