"""The pinned numbers of every shipped spec: the one table the tests read them from (the
classic specs, the acks specs, the "Kafka 2.1 and later" rows and the availability specs).

The numbers follow docs/model.md's counting (TLC's): distinct states include the initial
state, states generated = 1 + every successor computed, depth = states on the longest
shortest path, a trace's length = its number of states. Each row is what the local
engine reports for the spec as shipped (its own ``[check]`` options). A change to any of
them is a change to the transition system (or to an engine) and must be explained, not
re-pinned blindly; ``tests/test_oracle.py`` recomputes them with an independent checker.
"""

from __future__ import annotations

from typing import NamedTuple

from kmc.checker.core.result import HOLDS

CNL, LND = "CommittedNeverLost", "LogsNeverDiverge"
H = HOLDS
HWB, LEM = "HighWatermarkBelowLogEnd", "LeaderEpochMonotonic"
ALL4 = (HWB, CNL, LND, LEM)


class Pin(NamedTuple):
    distinct: int
    generated: int
    depth: int
    checked: tuple  # the properties the spec checks, in order
    traces: dict  # violated property -> shortest counterexample length (states)
    stopped: str | None  # why the run stopped (None: it ran out of states)


PINS = {
    "hw-data-loss": Pin(1834, 3455, 10, (CNL,), {CNL: 10}, "violation"),
    "hw-divergence": Pin(3754, 7696, 10, (LND,), {LND: 10}, "violation"),
    "hw-fast-leader-change": Pin(76116, 154855, 28, ALL4, {CNL: 9, LND: 12}, None),
    "hw-unclean": Pin(5548, 12276, 21, ALL4, {CNL: 5, LND: 8}, None),
    "hw-unflushed": Pin(10717, 25566, 20, ALL4, {CNL: 6, LND: 10}, None),
    "kip279-data-loss": Pin(4267, 9202, 17, ALL4, {}, None),
    "kip279-fast-leader-change": Pin(47577, 98343, 22, ALL4, {}, None),
    "kip279-isr-expansion": Pin(51649, 181744, 23, ALL4, {CNL: 13}, None),
    "kip279-unclean": Pin(4770, 10406, 17, ALL4, {CNL: 5}, None),
    "kip279-unflushed": Pin(10652, 24480, 19, ALL4, {CNL: 6}, None),
    "le-data-loss": Pin(4274, 9213, 17, ALL4, {}, None),
    "le-fast-leader-change": Pin(48499, 100059, 22, ALL4, {LND: 9}, None),
    "le-three-replicas": Pin(50294, 168775, 24, ALL4, {}, None),
    "le-unclean": Pin(4958, 10787, 19, ALL4, {CNL: 5, LND: 8}, None),
    "le-unflushed": Pin(10960, 25087, 20, ALL4, {CNL: 6, LND: 10}, None),
}

# Specs not pinned here, each with the reason.
EXCLUDED = {
    "three-replicas-large": "a benchmark (2,843,518 states), measured by `kmc bench`, too slow for the suite",
    "three-replicas-huge": "a benchmark (tens of millions of states), measured by `kmc bench`, too slow for the suite",
    "three-replicas-mid": "a benchmark (8,573,699 states), measured by `kmc bench`, too slow for the suite",
    "three-replicas-billion": "a benchmark (1,620,314,011 states) for the Spark engine, see docs/spark.md",
    "three-replicas-large-ap": "a benchmark (5,649,527 states) of alter_partition's batch kernel, measured by `kmc bench`",
    "three-replicas-large-fetch": "a benchmark (2,989,290 states) of the fetch path's batch kernel, measured by `kmc bench`",
}

# hw-data-loss run with keep-going (every reachable state: the run does not stop once its
# only property has failed). Recomputed by the oracle in tests/test_oracle.py.
HW_DATA_LOSS_KEEP_GOING = Pin(4913, 10749, 20, (CNL,), {CNL: 10}, None)

# Specs whose exploration takes several seconds: their tests are marked slow, so that
# `pytest -m "not slow and not spark"` never explores them.
SLOW_ABOVE = 20_000


def spec_param(name):
    """``pytest.param(name)``, marked slow when the spec has more than SLOW_ABOVE states."""
    import pytest

    pin = PINS.get(name)
    marks = [pytest.mark.slow] if pin is not None and pin.distinct > SLOW_ABOVE else []
    return pytest.param(name, marks=marks, id=name)


# -- producer acknowledgements (model.acks) ----------------------------------------------
#
# The specs that track acknowledgements, one per row of the acks verdict table (TLC's; plus
# acks-all-two-replicas-min-isr, the docs' worked example), run with the spec's own [check]
# options (keep-going: every reachable state). tests/test_acks.py checks them, the verdicts
# and trace lengths against that table, and the small ones against the oracle.
LCC, ANL = "LeaderCandidateCompleteness", "AcknowledgedNeverLost"
ALL6 = (HWB, CNL, LND, LEM, LCC, ANL)
ACKS_PINS = {
    "acks-all-data-loss": Pin(5589, 11568, 18, ALL6, {}, None),
    "acks1-data-loss": Pin(4355, 9341, 17, ALL6, {ANL: 4}, None),
    "acks-all-two-replicas-min-isr": Pin(2213, 4229, 20, ALL6, {CNL: 6, LCC: 5, ANL: 8}, None),
    "acks1-zombie-preferred": Pin(81506, 163456, 22, ALL6, {ANL: 3}, None),
    "acks-all-min-isr": Pin(97047, 311488, 28, ALL6, {}, None),
    "acks1-min-isr": Pin(49646, 165725, 22, ALL6, {ANL: 4}, None),
    "acks-all-lrs": Pin(175914, 583116, 28, ALL6, {CNL: 7, LCC: 6, ANL: 9}, None),
    "acks-all-lrs-gate": Pin(100230, 340572, 26, ALL6, {CNL: 9, LCC: 8, ANL: 9}, None),
    "acks-all-lrs-elr": Pin(97385, 323606, 26, ALL6, {}, None),
    "acks1-lrs-elr": Pin(91970, 312889, 24, ALL6, {ANL: 4}, None),
    "acks-all-lrs2": Pin(2683315, 9730608, 33, ALL6, {CNL: 7, LCC: 6, ANL: 9}, None),
    "acks-all-lrs2-elr": Pin(1528475, 5233966, 31, ALL6, {}, None),
    "acks-all-lrs2-elr-lkl": Pin(1544517, 5291120, 31, ALL6, {CNL: 11, LCC: 11, ANL: 11}, None),
    "acks-all-unclean-two-crashes": Pin(1020165, 3578586, 34, ALL6, {CNL: 6, LCC: 6, ANL: 9}, None),
    "acks-all-kip279-unclean-two-crashes": Pin(1076889, 3791710, 35, (HWB, CNL, LND, LEM, ANL),
                                               {CNL: 6, ANL: 9}, None),
}


# -- the "Kafka 2.1 and later" specs (tests/test_modern.py) ---------------------------------
#
# docs/model.md, "Known verdicts", second table: spec -> (distinct states,
# depth, states generated, {invariant: "holds" or the shortest trace's length}). An
# invariant the table marks "—" is not checked by the spec and is absent here.
MODERN_FAST_ROWS = {
    # C1: 2 replicas, 2 msgs, 2 crashes, epochs <= 2, min ISR 1
    "v21-data-loss": (4267, 17, 9202, {CNL: H, LND: H, LCC: H}),
    # C2: C1 + unflushed_loss
    "v21-unflushed": (10652, 19, 24480, {CNL: 6, LND: H, LCC: 5}),
    "v21-gate-unflushed": (10652, 19, 24480, {CNL: 6, LND: H, LCC: 5}),
    "v21-elr-unflushed": (7057, 17, 15830, {CNL: H, LND: H, LCC: H}),
    # C3: C1 + unclean
    "v21-unclean": (4770, 17, 10406, {CNL: 5, LND: H, LCC: 5}),
    # 3 replicas, min ISR 1, 1 msg, 2 crashes (the ISR re-join; kip279: CNL 13)
    "v21-isr-expansion": (50523, 23, 176762, {CNL: H}),
    # C4: 4 msgs, 1 crash, preferred
    "v21-fast-leader-change": (47577, 22, 98343, {CNL: H, LND: H, LCC: H}),
}
MODERN_SLOW_ROWS = {
    # C5: 3 replicas, min ISR 2, 2 msgs, 1 crash
    "v21-min-isr": (49302, 22, 163100, {CNL: H, LND: H, LCC: H}),
    "v21-gate-min-isr": (51446, 24, 176972, {CNL: H, LND: H, LCC: H}),
    "v21-elr-min-isr": (59506, 24, 204547, {CNL: H, LND: H, LCC: H}),
    # LRS: C5 + unflushed_loss (last replica standing)
    "lrs-v21": (85503, 22, 290640, {CNL: 7, LND: H, LCC: 6}),
    "lrs-v21-gate": (91119, 24, 314827, {CNL: 9, LND: H, LCC: 8}),
    "lrs-v21-elr": (88614, 24, 298429, {CNL: H, LND: H, LCC: H}),
    "lrs-kip279-gate": (93383, 24, 330539, {CNL: 9, LND: H, LCC: 8}),
    "lrs-kip279-elr": (97976, 24, 342649, {CNL: H, LND: H, LCC: 10}),
    # 3 replicas, min ISR 2, 2 msgs, 2 crashes, preferred
    "v21-preferred-two-crashes": (7872072, 33, 27343365, {CNL: H, LND: H, LCC: H}),
    # LRS with 2 crashes
    "lrs2-v21": (1207522, 27, 4465456, {CNL: 7, LND: H, LCC: 6}),
    "lrs2-v21-gate": (1371240, 30, 4995651, {CNL: 9, LND: H, LCC: 8}),
    "lrs2-v21-elr": (1227129, 29, 4269582, {CNL: H, LND: H, LCC: H}),
    "lrs2-kip279-elr": (1471455, 30, 5275876, {CNL: 12, LND: H}),
}


# -- availability: the specs/avail-*.toml (tests/test_availability.py) -----------------------
#
# Every spec checks PartitionRecoverable, explores every reachable state (``keep_going``), and
# most also check CommittedNeverLost and LeaderCandidateCompleteness. The numbers were
# computed by the independent oracle (tests/oracle.py: whole states, a plain BFS,
# the traps by a plain BFS over the reversed graph); the verdicts and trace lengths are those
# of the known-verdict table of the availability property (TLC's state graph of an independent
# TLA+ rendering), which tests/test_availability.py checks the oracle against.
PR = "PartitionRecoverable"


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


# -- ISR changes through the controller: specs with alter_partition (tests/test_alter_partition.py)
#
# One spec per row of docs/model.md's AlterPartition verdict table (TLC's, on an independent
# TLA+ rendering), run with the spec's own [check] options (keep-going: every reachable state).
# The C5 rows were also computed on the per-state path; the small ones are recomputed by the
# oracle (tests/oracle.py).
ALL5 = (HWB, CNL, LND, LEM, LCC)
AP_PINS = {
    # C1: 2 replicas, min ISR 1, 2 msgs, 2 crashes, epochs <= 2
    "ap-c1": Pin(7394, 17735, 18, ALL5, {}, None),
    "ap-be-c1": Pin(7390, 17654, 19, ALL5, {}, None),
    "ap-elr-c1": Pin(7394, 17735, 18, ALL5, {}, None),
    # C2: C1 + unflushed_loss
    "ap-c2": Pin(18417, 47071, 20, ALL5, {CNL: 7, LCC: 6}, None),
    "ap-be-c2": Pin(18313, 46738, 20, ALL5, {CNL: 7, LCC: 6}, None),
    "kafka-14139-two-replicas": Pin(12664, 31695, 22, ALL5, {CNL: 13, LCC: 11}, None),
    "kip903-two-replicas": Pin(11644, 29117, 19, ALL5, {}, None),
    # C4: 2 replicas, 4 msgs, 1 crash, preferred election
    "ap-c4": Pin(86253, 196800, 25, ALL5, {}, None),
    # C5: 3 replicas, min ISR 2, 2 msgs, 1 crash
    "ap-c5": Pin(105268, 360992, 25, ALL5, {}, None),
    "ap-be-c5": Pin(104992, 360060, 25, ALL5, {}, None),
    "ap-elr-c5": Pin(143610, 499743, 29, ALL5, {}, None),
    "ap-elr-be-c5": Pin(142654, 496787, 29, ALL5, {}, None),
    # LRS2: 3 replicas, min ISR 2, 2 msgs, 2 crashes, unflushed_loss
    "ap-lrs2": Pin(2539801, 9885621, 32, ALL5, {CNL: 9, LCC: 8}, None),
    "ap-be-lrs2": Pin(2519603, 9815765, 32, ALL5, {CNL: 9, LCC: 8}, None),
    "kafka-14139-three-replicas": Pin(2501827, 9516618, 35, ALL5, {CNL: 16, LCC: 14}, None),
    "kip903-three-replicas": Pin(2338627, 8950968, 35, ALL5, {}, None),
    "kafka-14139-acks-all": Pin(3128571, 11701870, 37, ALL6, {CNL: 16, LCC: 14, ANL: 16}, None),
}


# -- liveness under fairness: the specs/live-*.toml (tests/test_liveness_kafka.py) ----------------
#
# One spec per row of docs/model.md's liveness table (TLC with the same fairness on an
# independent TLA+ rendering), run with keep-going (the properties need every reachable
# state). The liveness properties change no count: each row's numbers are those pinned above
# for the same configuration (the spec named last), which the tests check too; the two-replica
# rows are recomputed by the oracle. Verdicts: the table's ("violated" with a lasso).
EL, CER = "EventuallyLeader", "CommittedEventuallyReplicated"


class LivePin(NamedTuple):
    distinct: int
    generated: int
    depth: int
    verdicts: dict  # property -> "holds" or "violated"
    same_as: str  # the spec with the same configuration whose counts are pinned above


V = "violated"
LIVE_PINS = {
    "live-c1": LivePin(4267, 9202, 17, {EL: H, CER: H}, "v21-data-loss"),
    "live-c1-ap-be": LivePin(7390, 17654, 19, {EL: H, CER: H}, "ap-be-c1"),
    "live-c1-hw": LivePin(4913, 10749, 20, {EL: H, CER: V}, "hw-data-loss"),  # HW_DATA_LOSS_KEEP_GOING
    "live-c2": LivePin(10652, 24480, 19, {EL: H, CER: V}, "avail-c2"),
    "live-c2-ap": LivePin(18417, 47071, 20, {EL: H, CER: V}, "ap-c2"),
    "live-c2-elr": LivePin(7057, 15830, 17, {CNL: H, EL: V, CER: V}, "avail-c2-elr"),
    "live-c2-elr-lkl": LivePin(8325, 18718, 17, {EL: H, CER: V}, "avail-c2-elr-lkl"),
    "live-c3": LivePin(4770, 10406, 17, {EL: H, CER: V}, "avail-c3"),
    "live-c4": LivePin(47577, 98343, 22, {EL: V, CER: V}, "v21-fast-leader-change"),
    "live-c5": LivePin(49302, 163100, 22, {EL: H, CER: H}, "v21-min-isr"),
    "live-lrs2": LivePin(1207522, 4465456, 27, {EL: H, CER: V}, "avail-lrs2"),
    "live-lrs2-elr": LivePin(1227129, 4269582, 29, {CNL: H, EL: V, CER: V}, "avail-lrs2-elr"),
}


# -- truncation in the fetch path: specs with truncate_on_fetch (tests/test_fetch_path.py) ----
#
# One spec per row of docs/model.md's fetch-path verdict table (TLC's, on an independent TLA+
# rendering), run with the spec's own [check] options (keep-going: every reachable state) on the
# per-state engine; every one of 20,000 states or fewer is recomputed by the oracle
# (tests/oracle.py) in every suite, the C4 and C5 rows with KMC_ORACLE_ALL=1 (LRS2, too big for
# the oracle, with KMC_SLOW=1 on the engine only).
UNE = "UncommittedNeverExposed"
ALL6F = (HWB, CNL, LND, LEM, LCC, UNE)
FETCH_PINS = {
    # C1: 2 replicas, min ISR 1, 2 msgs, 2 crashes, epochs <= 2
    "fetch-c1": Pin(4526, 9981, 17, ALL6F, {}, None),
    "fetch-c1-kafka-14704": Pin(4658, 10252, 18, ALL6F, {LND: 9, UNE: 9}, None),
    "fetch-c1-kafka-13141": Pin(4630, 10164, 18, ALL6F, {CNL: 10, LND: 12, LCC: 8}, None),
    "fetch-c1-both-bugs": Pin(4709, 10330, 20, ALL6F, {CNL: 10, LND: 9, LCC: 8, UNE: 9}, None),
    # C2: C1 + unflushed_loss
    "fetch-c2": Pin(11851, 27879, 19, ALL6F, {CNL: 6, LND: 10, LCC: 5}, None),
    "fetch-c2-kafka-14704": Pin(12329, 28908, 19, ALL6F, {CNL: 6, LND: 9, LCC: 5, UNE: 9}, None),
    "fetch-c2-kafka-13141": Pin(12574, 29153, 19, ALL6F, {CNL: 6, LND: 10, LCC: 5}, None),
    "fetch-c2-both-bugs": Pin(13042, 30132, 20, ALL6F, {CNL: 6, LND: 9, LCC: 5, UNE: 9}, None),
    "fetch-c2-elr": Pin(7418, 17275, 17, ALL6F, {}, None),
    "fetch-c2-elr-ap-be": Pin(12182, 31464, 19, ALL6F, {}, None),
    "fetch-c2-ap-be": Pin(20282, 52802, 21, ALL6F, {CNL: 7, LND: 11, LCC: 6}, None),
    # C4: 2 replicas, 4 msgs, 1 crash, preferred election
    "fetch-c4": Pin(54377, 114261, 23, ALL6F, {}, None),
    "kafka-14704-exposure": Pin(60485, 126771, 25, ALL6F, {LND: 8, UNE: 8}, None),
    "kafka-13141-data-loss": Pin(64264, 133372, 24, ALL6F, {CNL: 7, LND: 9, LCC: 6}, None),
    "fetch-c4-both-bugs": Pin(68112, 141078, 26, ALL6F, {CNL: 7, LND: 7, LCC: 6, UNE: 7}, None),
    # C5: 3 replicas, min ISR 2, 2 msgs, 1 crash
    "fetch-c5": Pin(51918, 171304, 22, ALL6F, {}, None),
    "fetch-c5-kafka-14704": Pin(53222, 175320, 24, ALL6F, {LND: 10, UNE: 10}, None),
    "fetch-c5-kafka-13141": Pin(53162, 175288, 23, ALL6F, {LCC: 9}, None),
    "fetch-c5-both-bugs": Pin(54600, 179778, 22, ALL6F, {LND: 10, LCC: 9, UNE: 10}, None),
    # LRS2: 3 replicas, min ISR 2, 2 msgs, 2 crashes, unflushed_loss (35 minutes on the per-state engine)
    "fetch-lrs2": Pin(1414507, 5359241, 27, ALL6F, {CNL: 7, LND: 13, LCC: 6}, None),
}
