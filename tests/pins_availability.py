"""The pinned numbers of the availability specs (specs/avail-*.toml): one row each.

Every spec checks PartitionRecoverable, explores every reachable state (``keep_going``), and
most also check CommittedNeverLost and LeaderCandidateCompleteness. The numbers were
computed by the independent oracle (tests/oracle_available.py: whole states, a plain BFS,
the traps by a plain BFS over the reversed graph); the verdicts and trace lengths are those
of the known-verdict table of the availability property (TLC's state graph of an independent
TLA+ rendering), which tests/test_availability.py checks the oracle against.
"""

from __future__ import annotations

from typing import NamedTuple

CNL, LCC, PR = "CommittedNeverLost", "LeaderCandidateCompleteness", "PartitionRecoverable"


class AvailPin(NamedTuple):
    distinct: int
    generated: int
    depth: int
    traces: dict  # violated state property -> shortest counterexample length (states)
    traps: int  # trap states among the distinct states (0: PartitionRecoverable holds)
    trap_trace: int | None  # states on a shortest path into a trap


AVAIL_PINS = {
    # C2: 2 replicas, min ISR 1, 2 msgs, 2 crashes, epochs <= 2, unflushed loss, 2.1 rule
    "avail-c2": AvailPin(10652, 24480, 19, {CNL: 6, LCC: 5}, 0, None),
    "avail-c2-elr": AvailPin(7057, 15830, 17, {}, 1296, 4),
    "avail-c2-elr-lkl": AvailPin(8325, 18718, 17, {CNL: 6, LCC: 6}, 0, None),
    "avail-c2-elr-unclean": AvailPin(8980, 21518, 18, {}, 0, None),  # checks PR only
    # C3: C1 + unclean election
    "avail-c3": AvailPin(4770, 10406, 17, {CNL: 5, LCC: 5}, 0, None),
    # C2m2: C2 with min ISR 2
    "avail-c2m2-elr": AvailPin(11335, 25356, 23, {}, 524, 6),
    "avail-c2m2-elr-lkl": AvailPin(11611, 25943, 23, {CNL: 10, LCC: 10}, 0, None),
    "avail-c2m2-elr-unclean": AvailPin(12050, 27080, 22, {}, 0, None),  # checks PR only
    # C5: 3 replicas, min ISR 2, 2 msgs, 1 crash, ELR
    "avail-c5-elr": AvailPin(59506, 204547, 24, {}, 0, None),
    # LRS with 2 crashes: 3 replicas, min ISR 2, 2 msgs, 2 crashes, unflushed loss
    "avail-lrs2": AvailPin(1207522, 4465456, 27, {CNL: 7, LCC: 6}, 0, None),
    "avail-lrs2-elr": AvailPin(1227129, 4269582, 29, {}, 26134, 7),
    "avail-lrs2-elr-lkl": AvailPin(1242984, 4326258, 29, {CNL: 11, LCC: 11}, 0, None),
    "avail-lrs2-elr-unclean": AvailPin(1304857, 4556812, 29, {}, 0, None),  # checks PR only
}

# More than this many states: the oracle and the engine runs are behind KMC_SLOW=1.
FAST_LIMIT = 20_000
