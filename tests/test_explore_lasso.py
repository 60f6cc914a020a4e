"""``kmc explore`` walks a liveness counterexample as a lasso: its cycle marked, a step back
to the cycle's start at its end, its property violated there (never a green "no property
is violated"), and a leads-to family's obligations in words; and the smaller things the
page draws (the current state's frame, the swimlane's legend)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from kmc.app.cli import EXIT_BAD_INPUT, main
from kmc.app.commands.explore import load_traces, trace_lasso
from kmc.app.specs import load_spec
from kmc.app.render.explorer import Explorer
from kmc.app.render.explorer_views import KafkaView

REPO = Path(__file__).resolve().parent.parent
LIVE = str(REPO / "specs" / "live-c2.toml")  # CommittedEventuallyReplicated: a lasso with a cycle
STUTTER = str(REPO / "specs" / "live-c2-elr.toml")  # EventuallyLeader: a lasso that stutters


def _result(tmp_path, spec, name="r.json"):
    out = tmp_path / name
    main(["check", spec, "--no-progress", "--no-trace", "--json", str(out)])
    return out


def _explorer(spec_path, trace):
    spec = load_spec(spec_path)
    model = spec.model()
    traces = load_traces([str(trace)], model)
    explorer = Explorer(model, spec.properties(), view=KafkaView(model), traces={n: (t.init, t.choices)
                                                                                   for n, t in traces.items()})
    for name, saved in traces.items():
        lasso = trace_lasso(name, saved, explorer.walk(saved.init, saved.choices), explorer.model,
                            spec.properties())
        if lasso is not None:
            explorer.add_lasso(lasso)
    return explorer, traces


def test_a_lasso_is_walked_as_a_lasso(tmp_path):
    trace = _result(tmp_path, LIVE)
    explorer, traces = _explorer(LIVE, trace)
    (saved,) = traces.values()
    walk = [saved.init, *saved.choices]
    states = [s.state for s in explorer.walk(saved.init, saved.choices).steps]
    # the lasso's last state is a state met before: the cycle's start (found here, not read)
    start = states.index(states[-1]) + 1
    assert start < len(states)

    doc = explorer.state_doc(saved.init, saved.choices)
    lasso = doc["lasso"]
    assert lasso["at_end"] and lasso["cycle_start"] == start and not lasso["stutters"]
    assert lasso["property"] == "CommittedEventuallyReplicated"
    assert lasso["back"] == walk[:start]  # the step back to the cycle's start ...
    back = explorer.state_doc(lasso["back"][0], lasso["back"][1:])
    assert back["state_html"] == explorer.state_doc(saved.init, saved.choices[: start - 1])["state_html"]
    assert back["lasso"]["in_cycle"] and not back["lasso"]["at_end"]  # ... is on the lasso still
    assert lasso["obligation"] == "committed record 0 (epoch 0) at offset 0 on every replica"
    assert [s["cycle"] for s in doc["steps"]] == [i + 1 >= start for i in range(len(walk))]
    assert doc["steps"][start - 1]["mark"] == "the cycle starts here"
    assert doc["steps"][-1]["mark"] == f"back to state {start}: the cycle repeats for ever"
    prop = {p["name"]: p for p in doc["properties"]}["CommittedEventuallyReplicated"]
    assert prop["status"] == "violated" and "lost for good" in prop["reason"]
    svg = doc["diagram_svg"]
    assert 'class="cycle"' in svg and "cycle-arrow" in svg and f"back to State {start}, for ever" in svg
    assert "no property is violated" not in svg and "✓" not in svg
    spec_doc = explorer.spec_doc()
    assert spec_doc["traces"][0]["lasso"]["summary"] == f"a lasso of {len(walk)} states, its cycle from state " \
                                                         f"{start} back to it"


def test_a_walk_on_the_way_names_its_obligations_in_words(tmp_path):
    explorer, traces = _explorer(LIVE, _result(tmp_path, LIVE))
    (saved,) = traces.values()
    doc = explorer.state_doc(saved.init, saved.choices[:3])
    assert doc["lasso"] is None  # before the cycle's start, a path like any other
    prop = {p["name"]: p for p in doc["properties"]}["CommittedEventuallyReplicated"]
    assert prop["status"] == "waits"
    assert "committed record 0 (epoch 0) at offset 0" in prop["reason"] and "(0, 0, 0)" not in prop["reason"]
    # a state that violates nothing but where a liveness property waits: no bare "no
    # property is violated", and its frame is not the red of a violation
    svg = doc["diagram_svg"]
    assert "no property is violated" not in svg
    assert "no state or step property is violated here; EventuallyLeader," in svg
    assert "CommittedEventuallyReplicated wait: decided over whole behaviours" in svg
    assert 'class="current"' in svg and 'class="violation"' not in svg and 'class="cycle"' not in svg
    assert "red: the lost record" not in svg and 'fill="#c62828"' not in svg.split('class="lane"')[0]


def test_a_stuttering_lasso_says_so(tmp_path):
    trace = _result(tmp_path, STUTTER)
    doc = json.loads(trace.read_text())
    entry = next(v for v in doc["violations"] if v["property"] == "EventuallyLeader")
    explorer, _ = _explorer(STUTTER, trace)
    init, choices = entry["trace"]["init_index"], entry["trace"]["choices"]
    state = explorer.state_doc(init, choices)
    # two lassos share a walk here: the first the file holds is shown
    assert state["lasso"]["at_end"] and state["lasso"]["stutters"]
    assert state["lasso"]["cycle_start"] == len(choices) + 1
    assert state["steps"][-1]["mark"] == "stutters here for ever: no fair action is enabled in this state"
    assert "for ever: no fair action is enabled" in state["diagram_svg"]
    # no fair action is enabled in its last state: every enabled action is unfair (checked here)
    model = explorer.model
    last = explorer.walk(init, choices).steps[-1].state
    assert all(model.fair_instance(last, a) is None for a, _ in model.successors(last))


def test_a_lasso_that_is_not_one_is_refused_in_one_line(tmp_path, capsys):
    trace = _result(tmp_path, LIVE)
    doc = json.loads(trace.read_text())
    doc["violations"][0]["lasso"]["cycle_start"] = 2  # state 2 is not the last state again
    trace.write_text(json.dumps(doc))
    capsys.readouterr()
    assert main(["explore", LIVE, "--port", "0", "--no-search", "--trace", str(trace)]) == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert "lasso" in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_the_search_s_lasso_is_walked_as_one():
    from kmc.checker.engines import make_engine

    spec = load_spec(LIVE)
    model = spec.model()
    explorer = Explorer(model, spec.properties(), view=KafkaView(model))
    engine = make_engine(model, spec.properties())

    def run(progress):
        engine.progress = progress
        return engine.run()

    explorer.start_search(run, engine.cancel)
    explorer._thread.join(120)
    verdict = explorer.search_doc()["verdicts"]["CommittedEventuallyReplicated"]
    assert verdict["verdict"] == "violated" and verdict["lasso"]["summary"].startswith("a lasso of ")
    walk = verdict["walk"]
    doc = explorer.state_doc(walk[0], walk[1:])
    assert doc["lasso"]["at_end"] and doc["lasso"]["cycle_start"] == verdict["lasso"]["cycle_start"]
    assert {p["name"]: p["status"] for p in doc["properties"]}["CommittedEventuallyReplicated"] == "violated"


@pytest.mark.parametrize("spec_name", ["kafka-14704-exposure"])
def test_the_exposure_legend_names_its_record_and_the_kafka_14704_arrow(spec_name, tmp_path):
    from kmc.app.render import svg
    from kmc.app.render.diagram import build

    spec = load_spec(str(REPO / "specs" / f"{spec_name}.toml"))
    model = spec.model()
    from kmc.checker.engines import make_engine

    result = make_engine(model, spec.properties()).run()
    v = result.violations["UncommittedNeverExposed"]
    text = svg.render(build(model, v), standalone=False)
    assert "red: the lost record" not in text
    assert "red: the never-committed record below a follower" in text
    assert re.search(r">hw \d+ first<", text)  # the arrow KAFKA-14704 draws ...
    assert "hw N first: KAFKA-14704" in text  # ... and its legend
