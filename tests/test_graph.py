"""``kmc graph``: the reachable state graph, exported as DOT, GraphML and GEXF.

Edges are counted as generated transitions: one per (state, enabled action), which is
also the number of distinct (from, to, action) triples, since a state's enabled actions
are all different. It equals the local engine's "states generated" minus the initial
states.
"""

from __future__ import annotations


import networkx as nx
import pydot
import pytest

from kmc.app.cli import EXIT_BAD_INPUT, EXIT_OK, main
from kmc.checker.graph.export import GraphTooLarge, dot_text
from kmc.checker.local.state_graph import state_graph
from kmc.checker.local.states import LocalEngine, Options
from kmc.model import Config, KafkaModel
from kmc.app.specs import load_spec

TINY = """title = "tiny"
[model]
replicas = 2
max_messages = 1
max_crashes = 0
max_leader_epoch = 1
truncation = "high-watermark"
"""
TINY_STATES, TINY_TRANSITIONS = 18, 27


@pytest.fixture
def tiny(tmp_path):
    path = tmp_path / "tiny.toml"
    path.write_text(TINY)
    return path


def test_tiny_counts_equal_the_local_engine(tiny):
    spec = load_spec(tiny)
    result = LocalEngine(spec.model(), spec.properties(), Options(keep_going=True)).run()
    assert result.stats.distinct == TINY_STATES
    assert result.stats.generated - 1 == TINY_TRANSITIONS
    g = state_graph(spec.model(), spec.properties())
    assert (g.number_of_nodes(), g.number_of_edges()) == (TINY_STATES, TINY_TRANSITIONS)
    triples = {(u, v, d["label"]) for u, v, d in g.edges(data=True)}
    assert len(triples) == TINY_TRANSITIONS


@pytest.mark.parametrize("suffix", [".dot", ".graphml", ".gexf"])
def test_tiny_export_in_every_format(tiny, tmp_path, suffix, capsys):
    out = tmp_path / f"g{suffix}"
    assert main(["graph", str(tiny), "--out", str(out)]) == EXIT_OK
    assert f"{TINY_STATES} states, {TINY_TRANSITIONS} transitions" in capsys.readouterr().out
    if suffix == ".dot":
        assert out.read_text().startswith('digraph "kmc state graph" {')
        (dot,) = pydot.graph_from_dot_file(str(out))
        nodes = [n for n in dot.get_nodes() if n.get_name() not in ("node", "edge", "graph")]
        assert (len(nodes), len(dot.get_edges())) == (TINY_STATES, TINY_TRANSITIONS)
        assert sum(n.get("initial") == "True" for n in nodes) == 1
        assert sum(n.get("peripheries") == "2" for n in nodes) == 1
        return
    g = nx.read_graphml(out) if suffix == ".graphml" else nx.read_gexf(out)
    assert (g.number_of_nodes(), g.number_of_edges()) == (TINY_STATES, TINY_TRANSITIONS)
    initial = [n for n, d in g.nodes(data=True) if d["initial"] in (True, "true")]
    assert len(initial) == 1
    assert g.nodes[initial[0]]["label"] == "A* - hw0 e0 | B - hw0 e0 | ctl A e0 isr A,B"
    labels = sorted({d["label"] for _, _, d in g.edges(data=True)})
    assert labels == ["ExpandIsr(B)", "FetchRequest(B)", "FetchResponse(B)", "Produce(A)", "ShrinkIsr(B)"]


def test_violating_states_are_marked():
    model = KafkaModel(Config(max_messages=1, max_crashes=1, max_leader_epoch=1, unclean_leader_election=True))
    g = state_graph(model)
    assert (g.number_of_nodes(), g.number_of_edges()) == (222, 416)
    bad = [n for n, d in g.nodes(data=True) if d["violates"]]
    assert len(bad) == 10
    assert {g.nodes[n]["violates"] for n in bad} == {"CommittedNeverLost"}
    assert all(g.nodes[n]["depth"] >= 2 for n in bad)
    # In the DOT text, a statement a line (pydot parses the text the tests above write: parsing
    # these 642 lines would take it seconds): the violating nodes red, no edge coloured.
    statements = dot_text(g).splitlines()
    nodes = [s for s in statements if s.endswith("];") and " -> " not in s and not s.startswith(("node ", "edge "))]
    edges = [s for s in statements if " -> " in s]
    assert (len(nodes), len(edges)) == (222, 416)
    assert sum(s.endswith(", color=red];") for s in nodes) == 10
    assert not any("color=" in s for s in edges)  # no step property fails here


def test_over_the_limit_is_refused_before_building(tiny, tmp_path, capsys):
    with pytest.raises(GraphTooLarge):
        state_graph(load_spec(tiny).model(), max_states=TINY_STATES - 1)
    out = tmp_path / "g.dot"
    assert main(["graph", str(tiny), "--out", str(out), "--max-states", str(TINY_STATES - 1)]) == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert "more than 17 states" in err and len(err.strip().splitlines()) == 1
    assert not out.exists()
    assert main(["graph", str(tiny), "--out", str(out), "--max-states", str(TINY_STATES)]) == EXIT_OK


@pytest.mark.parametrize("name", ["g.png", "g", "g.json"])
def test_unknown_suffix_is_a_one_line_error(tiny, tmp_path, capsys, name):
    assert main(["graph", str(tiny), "--out", str(tmp_path / name)]) == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert "unknown graph format" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / name).exists()


def test_dot_quotes_awkward_labels():
    g = nx.MultiDiGraph()
    g.add_node("a", label='say "hi"\nthere', initial=True, violates="")
    g.add_edge("a", "a", label="loop")
    (dot,) = pydot.graph_from_dot_data(dot_text(g))
    (node,) = [n for n in dot.get_nodes() if n.get_name() == "a"]
    assert node.get("label") == '"say \\"hi\\"\\nthere"'
    assert [e.get("label") for e in dot.get_edges()] == ["loop"]


def test_out_errors_name_the_option_and_come_before_exploring(tiny, tmp_path, capsys):
    assert main(["graph", str(tiny), "--out", str(tmp_path / "g.txt")]) == EXIT_BAD_INPUT
    assert capsys.readouterr().err.startswith("kmc: error: --out:")
    assert main(["graph", str(tiny), "--out", str(tmp_path / "none" / "g.dot")]) == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert err.startswith("kmc: error: --out:") and "does not exist" in err
    (tmp_path / "d.dot").mkdir()
    assert main(["graph", str(tiny), "--out", str(tmp_path / "d.dot")]) == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert "is a directory" in err and len(err.strip().splitlines()) == 1
