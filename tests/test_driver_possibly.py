"""Always-possibly (AG EF) properties in the level driver, on a small graph worked out by hand.

The graph: ``s -> a1, b1``; ``a1 -> s, a2``; ``b1 -> s, b2``; ``a2 -> a2``; ``b2 -> b2``.
The goal is ``s``. From ``a1`` and ``b1`` the goal is one step away; from ``a2`` and ``b2``
it can never be reached: two trap states, the first of the breadth-first order being
``a2`` (levels ``[s]``, ``[a1, b1]``, ``[a2, b2]``), three states from the start. Renaming
``a`` to ``b`` is a symmetry: one trap orbit under symmetry reduction, the same path.
"""

from __future__ import annotations

import attrs
import pytest

from kmc.checker.local.rows import BatchEngine
from kmc.checker.engines import make_engine
from kmc.checker.base.errors import UsageError
from kmc.checker.core.options import Options
from kmc.checker.contract.protocol import POSSIBLY, Property
from kmc.checker.core.states_kernel import StatesKernel

EDGES = {"s": ("a1", "b1"), "a1": ("s", "a2"), "b1": ("s", "b2"), "a2": ("a2",), "b2": ("b2",)}


@attrs.frozen
class Go:
    to: str
    name: str = "go"


def at_home(model, state):
    return state == "s"


def why_trapped(model, state):
    return f"{state} only leads to itself"


Home = Property("Home", POSSIBLY, at_home, "the start stays reachable", symmetric=True, explain=why_trapped)


class Graph:
    def init_states(self):
        return ("s",)

    def actions(self, state):
        return [Go(t) for t in EDGES[state]]

    def next_state(self, state, action):
        return action.to

    def properties(self):
        return (Home,)

    def encode(self, state):
        return state.encode()

    def action_names(self):
        return ("go",)

    def symmetries(self):
        return ("id", "swap")

    def permute(self, state, p):
        return state.translate(str.maketrans("ab", "ba")) if p == "swap" else state


def _engines():
    yield "per-state", lambda o: make_engine(Graph(), [Home], o, engine="local")
    yield "batch", lambda o: BatchEngine(Graph(), [Home], o, kernel=StatesKernel(Graph()))


@pytest.mark.parametrize("path", ["per-state", "batch"])
@pytest.mark.parametrize("symmetry,traps,distinct", [(False, 2, 5), (True, 1, 3)])
def test_traps_by_hand(path, symmetry, traps, distinct):
    engine = dict(_engines())[path](Options(symmetry=symmetry))
    result = engine.run()
    assert result.stats.distinct == distinct and result.complete
    v = result.violations["Home"]
    assert (v.kind, v.traps) == ("possibly", traps)
    assert v.path.states == ("s", "a1", "a2") and v.path.choices == (0, 1)
    assert v.explanation == "a2 only leads to itself"
    assert result.verdict("Home") == "violated"


@pytest.mark.parametrize("path", ["per-state", "batch"])
def test_unknown_under_max_depth(path):
    result = dict(_engines())[path](Options(max_depth=2)).run()
    assert result.verdict("Home") == "unknown" and "Home" not in result.violations
    assert result.unknown["Home"] == "Home needs every reachable state; the run stopped at max_depth 2"


@pytest.mark.parametrize("path", ["per-state", "batch"])
def test_holds_without_the_trap_edges(path, monkeypatch):
    monkeypatch.setitem(EDGES, "a1", ("s",))
    monkeypatch.setitem(EDGES, "b1", ("s",))
    result = dict(_engines())[path](Options()).run()
    assert result.stats.distinct == 3 and result.verdict("Home") == "holds" and not result.unknown


@pytest.mark.parametrize("path", ["per-state", "batch"])
def test_a_checkpoint_keeps_the_edge_log(path):
    import pickle

    snaps = []

    def keep(engine):
        snaps.append(pickle.dumps(engine.snapshot()))

    first = dict(_engines())[path](Options(max_depth=2))
    first = type(first)(Graph(), [Home], Options(max_depth=2), on_level=keep,
                        **({"kernel": StatesKernel(Graph())} if path == "batch" else {}))
    assert first.run().verdict("Home") == "unknown"
    resumed = dict(_engines())[path](Options())
    resumed.restore(pickle.loads(snaps[-1]))
    v = resumed.run().violations["Home"]
    assert v.traps == 2 and v.path.states == ("s", "a1", "a2")


@pytest.mark.spark
@pytest.mark.parametrize("symmetry,traps,distinct", [(False, 2, 5), (True, 1, 3)])
def test_spark_finds_the_same_traps(symmetry, traps, distinct, spark_sc):
    """On Spark (the second level and on run as Spark levels: the executors write what the
    graph visitor keeps into the store), the traps by hand and the same path."""
    spark_sc.addPyFile(__file__)  # the executors import the graph model
    engine = make_engine(Graph(), [Home], Options(symmetry=symmetry), engine="spark", partitions=2,
                         driver_level_limit=0)
    result = engine.run()
    assert engine.metrics["spark_levels"]  # the levels did run on Spark
    v = result.violations["Home"]
    assert (result.stats.distinct, v.traps, v.path.states) == (distinct, traps, ("s", "a1", "a2"))


def test_symmetry_refuses_a_goal_not_declared_symmetric():
    lopsided = Property("Home", POSSIBLY, at_home, symmetric=False)
    with pytest.raises(UsageError, match="Home is not declared symmetric"):
        make_engine(Graph(), [lopsided], Options(symmetry=True), engine="local")



def no_self_loop(model, before, action, after):
    return f"{before} goes to itself" if before == after else None


NoSelfLoop = Property("NoSelfLoop", "step", no_self_loop, "no step stays put", symmetric=True)


@pytest.mark.parametrize("path", ["per-state", "batch"])
def test_a_stop_that_leaves_nothing_to_expand_still_decides_it(path):
    # NoSelfLoop fails while the last level ([a2, b2]) is expanded: a2 -> a2, b2 -> b2, and
    # no new state. The run stops at that violation with nothing left to expand, so every
    # state was explored and Home is decided (two traps, the first a2, 3 states), not left
    # unknown.
    make = {"per-state": lambda: make_engine(Graph(), [NoSelfLoop, Home], Options(), engine="local"),
            "batch": lambda: BatchEngine(Graph(), [NoSelfLoop, Home], Options(), kernel=StatesKernel(Graph()))}
    result = make[path]().run()
    assert result.stopped == "violation" and result.complete and not result.unknown
    assert len(result.violations["NoSelfLoop"].path) == 4
    v = result.violations["Home"]
    assert (v.traps, len(v.path), v.path.states[-1]) == (2, 3, "a2")
