"""What a user reads, in the user's words: a model of one's own keeps its lasso in every
output (``--html``, ``--mermaid``, ``kmc explore --model``), and no explanation of the
shipped specs' counterexamples names the code's variables (``quorum.epoch``, ``B.hw``)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from kmc.app.cli import main
from kmc.app.specs import load_spec
from kmc.checker.engines import make_engine
from kmc.checker.core.options import Options
from kmc.checker.contract.protocol import with_defaults

REPO = Path(__file__).resolve().parent.parent
SPECS = REPO / "specs"
TOY = str(REPO / "tests" / "toy.py")
TWO_PHASE = str(SPECS / "models" / "two_phase.py") + ":two_phase"


def test_a_model_s_lasso_keeps_its_cycle_in_html_and_mermaid(tmp_path):
    html, mmd = tmp_path / "r.html", tmp_path / "r.mmd"
    assert main(["check", "--model", f"{TOY}:Ring", "--keep-going", "--no-progress", "--html", str(html),
                 "--mermaid", str(mmd)]) == 1
    page = html.read_text()
    # OneLeadsToFinish: x goes 0, 1, 2, 0 and back to 1 (state 2) for ever (tests/toy.py's Ring)
    assert "✗ OneLeadsToFinish: a lasso of 5 states, its cycle from state 2 back to it" in page
    assert "a counterexample of 5 states" not in page
    assert page.count('<tr class="cycle">') == 3 and 'data-cycle-start="2"' in page
    assert "↺ the cycle starts here" in page and "↺ back to state 2: the cycle repeats for ever" in page
    chart = mmd.read_text()
    assert re.search(r"v0s4 -->\|\"Inc\(name='Next', replica=0\)\"\| v0s2\n", chart)  # the back edge
    assert '"5. ' not in chart  # the last state is state 2 again: no box of its own
    assert "↺ the cycle starts here" in chart


def test_the_generic_leads_to_sentence_names_what_never_holds_again():
    from toy import Ring

    model = Ring()
    prop = next(p for p in model.properties() if p.name == "OneLeadsToFinish")
    result = make_engine(model, [prop]).run()
    why = result.violations["OneLeadsToFinish"].explanation
    assert why == (
        "OneLeadsToFinish (once x is 1, y becomes 1): what it waits for (its Q) holds in no state from state 2 "
        "on, where it began to wait (its P held): a fair behaviour goes round a fair cycle from state 2 back to it"
    )


def test_a_leads_to_family_names_its_obligation_in_words():
    from kmc.app.user_model import load_model_spec

    model = load_model_spec(TWO_PHASE, {"rms": 2, "liveness": True, "fair_tm": False}).model()
    props = [p for p in model.properties() if p.name == "PreparedDecides"]
    why = make_engine(model, props).run().violations["PreparedDecides"].explanation
    assert why.startswith("PreparedDecides (an RM that prepared eventually commits or aborts) for RM 0: ")


def test_explore_a_model_shows_its_own_words_and_names_its_actions():
    from kmc.app.user_model import load_model_spec
    from kmc.app.render.explorer import Explorer
    from kmc.app.render.explorer_views import GenericView

    model = load_model_spec(TWO_PHASE, {"rms": 2}).model()
    explorer = Explorer(model, model.properties(), view=GenericView(model))
    doc = explorer.state_doc(0, [])
    assert '<p class="state-line">TM init · RMs working working · sent nothing</p>' in doc["state_html"]
    assert explorer.spec_doc()["actions"] == list(model.action_names())


# -- no internal names in an explanation ------------------------------------------------------------

# The specs whose counterexamples every explanation of the Kafka model is met on: each
# safety property's, PartitionRecoverable's and both liveness properties' (at the bound too).
SCANNED = ["hw-unclean", "acks1-data-loss", "fetch-c1-both-bugs", "avail-c2", "avail-c2-elr", "live-c4",
           "live-c2-elr", "live-c2"]
INTERNAL = re.compile(
    r"\b(quorum|replicas|rep|state|q|s|l|f|r|[A-E])\.[a-z_]+"  # quorum.epoch, B.hw, state.committed
    r"|\b(remote_leo|leader_hw|inflight|committed\[|acked\[)|\bquorum\b"
)


def _texts(model, violation):
    yield violation.explanation
    steps = violation.path.steps
    for before, step in zip(steps, steps[1:]):
        yield model.describe_step(before.state, step.action, step.state)
    for g in model.guards(steps[-1].state):
        yield from (text for text, _ in g.conditions)


def test_no_explanation_names_the_code_s_variables():
    seen = set()
    for name in SCANNED:
        spec = load_spec(str(SPECS / f"{name}.toml"))
        model = with_defaults(spec.model())
        result = make_engine(spec.model(), spec.properties(), Options(keep_going=True)).run()
        assert result.violations, name
        for v in result.violations.values():
            seen.add(v.property)
            for text in _texts(model, v):
                assert not INTERNAL.search(text), (name, v.property, text)
    assert {"CommittedNeverLost", "LogsNeverDiverge", "AcknowledgedNeverLost", "UncommittedNeverExposed",
            "LeaderCandidateCompleteness", "PartitionRecoverable", "EventuallyLeader",
            "CommittedEventuallyReplicated"} <= seen


@pytest.mark.parametrize("text", ["no leader can be elected because quorum.epoch reached max_leader_epoch = 2",
                                  "B.hw = 1", "its remote_leo is 0", "the quorum leader A is down"])
def test_the_scan_finds_an_internal_name(text):
    assert INTERNAL.search(text)


def test_explore_a_model_walks_its_lasso_as_one():
    from toy import Ring

    from kmc.app.render.explorer import Explorer
    from kmc.app.render.explorer_views import GenericView

    model = Ring()
    explorer = Explorer(model, model.properties(), view=GenericView(model))
    engine = make_engine(model, model.properties(), Options(keep_going=True))

    def run(progress):
        engine.progress = progress
        return engine.run()

    explorer.start_search(run, engine.cancel)
    explorer._thread.join(60)
    walk = explorer.search_doc()["verdicts"]["OneLeadsToFinish"]["walk"]
    assert walk == [0, 0, 0, 0, 0]  # Next four times: x = 0, 1, 2, 0, 1 (state 5 is state 2 again)
    doc = explorer.state_doc(walk[0], walk[1:])
    assert doc["lasso"]["at_end"] and doc["lasso"]["back"] == [0, 0]
    assert [s["mark"] for s in doc["steps"]] == [
        "", "the cycle starts here", "", "", "back to state 2: the cycle repeats for ever"]
    assert {p["name"]: p["status"] for p in doc["properties"]}["OneLeadsToFinish"] == "violated"
    assert doc["state_html"].startswith('<p class="state-line">x=1, y=0</p>')


def test_explore_a_model_loads_its_lasso_from_a_trace_file(tmp_path):
    from kmc.app.commands.explore import load_traces, trace_lasso
    from kmc.app.user_model import load_model_spec

    out = tmp_path / "ring.json"
    assert main(["check", "--model", f"{TOY}:Ring", "--keep-going", "--no-progress", "--json", str(out)]) == 1
    spec = load_model_spec(f"{TOY}:Ring", {})
    model = spec.model()
    from kmc.checker.core.trace import replay_choices

    traces = load_traces([str(out)], model, spec.identity())
    full = with_defaults(model)
    found = [trace_lasso(name, t, replay_choices(full, t.init, t.choices), full, model.properties())
             for name, t in traces.items()]
    (lasso,) = [v for v in found if v is not None]  # ReturnsToZero holds: one lasso
    assert lasso.property == "OneLeadsToFinish" and lasso.loop == 1 and len(lasso.path) == 5
