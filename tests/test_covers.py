"""Cover properties ("this can happen", ``checker.contract.protocol``'s ``"cover"`` kind): each must
be reached, answered with a shortest witness, or "never reached", which fails the run (exit
1); a spec's ``[check] covers`` names the Kafka model's (``invariants.covers``)."""

from __future__ import annotations

import json

import oracle
import pytest
from counter_kernels import Beyond, Corner, CoveredCounters, XTwoYOne, covered
from kmc.app.cli import main
from kmc.checker.engines import make_engine
from kmc.checker.base.exitcodes import EXIT_BAD_INPUT, EXIT_OK, EXIT_VIOLATION
from kmc.checker.core.options import Options
from kmc.invariants.covers import COVERS, COVERS_BY_NAME
from kmc.model.spec import load_spec
from toy import Counters, SumBelow

ENGINES = {"per-state": dict(per_state=True), "batch": {}, "disk": dict(options=Options(store="disk"))}


def _run(model, props, engine, **options):
    kw = dict(ENGINES[engine])
    base = kw.pop("options", Options())
    import attrs

    return make_engine(model, props, attrs.evolve(base, **options), **kw).run()


@pytest.mark.parametrize("engine", ENGINES)
def test_a_cover_is_answered_with_a_shortest_witness_or_never_reached(engine):
    # n = 3: (2, 1) is 3 steps from (0, 0): a witness of 4 states, the least in the
    # breadth-first order IncX, IncX, IncY; (3, 3) is 6 steps away: 7 states; x never passes 3.
    model = CoveredCounters(n=3, limit=10**6, beyond=True)
    result = _run(model, [XTwoYOne, Corner, Beyond], engine)
    assert result.covers == ["XTwoYOne", "Corner", "Beyond"] and result.checked == [] and result.violations == {}
    assert result.witnesses["XTwoYOne"].states == (Counters(0, 0), Counters(1, 0), Counters(2, 0), Counters(2, 1))
    assert len(result.witnesses["Corner"]) == 7 and result.witnesses["Corner"].states[-1] == Counters(3, 3)
    assert [result.cover_verdict(n) for n in result.covers] == ["reached", "reached", "never reached"]
    assert result.never_reached == ["Beyond"] and result.complete and result.stats.distinct == 16


@pytest.mark.parametrize("engine", ENGINES)
def test_a_witness_does_not_stop_the_run_and_a_violation_leaves_covers_unknown(engine):
    # SumBelow (x + y < 5) fails at depth 6, keep_going off: the run stops at that level;
    # XTwoYOne (depth 4) was reached on the way, Corner (depth 7) and Beyond are unknown.
    model = CoveredCounters(n=3, limit=5, beyond=True)
    result = _run(model, [SumBelow, XTwoYOne, Corner, Beyond], engine)
    assert result.stopped == "violation" and list(result.violations) == ["SumBelow"]
    assert len(result.violations["SumBelow"].path) == 6
    assert [result.cover_verdict(n) for n in result.covers] == ["reached", "unknown", "unknown"]
    assert result.never_reached == []


def test_the_engines_give_the_same_witnesses():
    model = CoveredCounters(n=9, limit=10**6)
    answers = [{n: p.choices for n, p in _run(model, [XTwoYOne, Corner], e).witnesses.items()} for e in ENGINES]
    assert answers[0] == answers[1] == answers[2] and len(answers[0]) == 2


def test_a_model_s_covers_from_the_command_line(capsys, tmp_path):
    ref = "tests/counter_kernels.py:covered"
    out = tmp_path / "r.json"
    assert main(["check", "--model", ref, "--no-progress", "--json", str(out)]) == EXIT_OK
    text = capsys.readouterr().out
    assert "✓ Corner reached: a shortest witness has 7 states" in text and "Witness: XTwoYOne (4 states)" in text
    doc = json.loads(out.read_text())
    assert [(c["name"], c["verdict"], len(c["trace"]["steps"])) for c in doc["covers"]] == [
        ("Corner", "reached", 7), ("XTwoYOne", "reached", 4)]
    assert main(["check", "--model", ref, "--param", "beyond=true", "--no-progress", "--json", str(out),
                 "--force"]) == EXIT_VIOLATION
    text = capsys.readouterr().out
    assert "✗ Beyond NEVER REACHED in 16 distinct states" in text
    assert json.loads(out.read_text())["covers"][2] == {"name": "Beyond", "kind": "cover", "verdict": "never reached"}


# The shipped specs' covers, each witness's length found by the naive oracle with the
# scenario written again here on the oracle's states.
SCENARIOS = {
    "RecordCommitted": lambda s: bool(s.committed),
    "RecordAcknowledged": lambda s: bool(s.acked),
    "IsrShrunk": lambda s: len(s.quorum.isr) < len(s.replicas),
    "NewLeaderElected": lambda s: s.quorum.epoch >= 1 and s.quorum.leader is not None and oracle.leads(
        s, s.quorum.leader),
    "LossyCrash": lambda s: any(r.lossy for r in s.replicas),
    "EligibleLeaderReplica": lambda s: len(s.quorum.elr) > 0,
    "AlterPartitionInFlight": lambda s: s.quorum.alter is not None,
    "DivergingFetchAnswer": lambda s: any(r.inflight is not None and r.inflight.diverging is not None
                                          for r in s.replicas),
    "HighWatermarkBeforeTruncation": lambda s: any(r.inflight is not None and r.inflight.applied
                                                   for r in s.replicas),
}
SHIPPED = {
    "kafka-14704-exposure": {"RecordCommitted": 3, "IsrShrunk": 3, "NewLeaderElected": 2,
                             "DivergingFetchAnswer": 5, "HighWatermarkBeforeTruncation": 6},
    "fetch-c2-elr-ap-be": {"LossyCrash": 3, "AlterPartitionInFlight": 3, "DivergingFetchAnswer": 7},
    "acks-all-two-replicas-min-isr": {"RecordAcknowledged": 5},
    "avail-c2m2-elr": {"EligibleLeaderReplica": 3, "LossyCrash": 3},
}


def test_every_kafka_cover_is_shipped_in_a_spec():
    # (the step covers, also in COVERS_BY_NAME, are tests/test_step_covers.py's)
    assert set(SCENARIOS) == {c.name for c in COVERS} == {n for pins in SHIPPED.values() for n in pins}
    assert all(c.kind == "cover" and c.symmetric for c in COVERS)


@pytest.mark.parametrize("name", SHIPPED)
def test_the_shipped_covers_are_reached_at_the_oracle_s_length(name):
    spec = load_spec(f"specs/{name}.toml")
    assert list(spec.covers) == list(SHIPPED[name])
    for cover, length in SHIPPED[name].items():
        assert oracle.shortest_path_length(spec.config, SCENARIOS[cover]) == length, cover
    props = [COVERS_BY_NAME[c] for c in spec.covers]
    batch = make_engine(spec.model(), props, Options()).run()
    per_state = make_engine(spec.model(), props, Options(), per_state=True).run()
    assert {c: len(p) for c, p in batch.witnesses.items()} == SHIPPED[name]
    assert {c: p.choices for c, p in batch.witnesses.items()} == {c: p.choices for c, p in per_state.witnesses.items()}
    for cover, path in batch.witnesses.items():  # the witness's last state is one, and no earlier state is
        assert SCENARIOS[cover](path.states[-1]) and not any(SCENARIOS[cover](s) for s in path.states[:-1])


def test_a_spec_s_cover_never_reached_fails_the_run(capsys, tmp_path):
    # Under min ISR 1 the ELR never holds a replica: it fills only when the ISR drops below
    # min ISR, i.e. empties, and the replica that empties it (an unclean restart) leaves the
    # ELR too. The oracle finds no such state either.
    spec = tmp_path / "elr.toml"
    spec.write_text(open("specs/fetch-c2-elr-ap-be.toml").read().replace(
        'covers = ["LossyCrash"', 'covers = ["EligibleLeaderReplica", "LossyCrash"'))
    assert oracle.shortest_path_length(load_spec(spec).config, SCENARIOS["EligibleLeaderReplica"]) is None
    out = tmp_path / "r.json"
    assert main(["check", str(spec), "--no-progress", "--json", str(out)]) == EXIT_VIOLATION
    text = capsys.readouterr().out
    assert "✗ EligibleLeaderReplica NEVER REACHED in 12,182 distinct states" in text
    assert "Never reached: EligibleLeaderReplica" in text
    assert json.loads(out.read_text())["covers"][0] == {"name": "EligibleLeaderReplica", "kind": "cover",
                                                       "verdict": "never reached"}


@pytest.mark.parametrize("value, says", [
    ('"RecordCommitted"', "must be a list of cover names"),
    ('["Nope"]', "unknown cover 'Nope'"),
    ('["RecordAcknowledged"]', "RecordAcknowledged needs model.acks"),
    ('["RecordCommitted", "RecordCommitted"]', "names a cover twice"),
])
def test_a_bad_covers_key_is_one_line(capsys, tmp_path, value, says):
    spec = tmp_path / "bad.toml"
    spec.write_text(open("specs/ap-c1.toml").read().replace("keep_going = true", f"keep_going = true\ncovers = {value}"))
    assert main(["check", str(spec), "--no-progress"]) == EXIT_BAD_INPUT
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "check.covers" in err[0] and says in err[0], err


def test_kmc_invariants_lists_the_covers(capsys):
    assert main(["invariants"]) == EXIT_OK
    text = capsys.readouterr().out
    assert "Covers:" in text and all(c.name in text for c in COVERS)


def test_a_witness_is_no_invariant_s_failure():
    # The helpers that list a state's failed invariants (simulation, graphs, traces) skip covers.
    from kmc.checker.core.level import state_failures

    model = CoveredCounters(n=3, limit=5)
    assert state_failures(model, Counters(3, 3), [Corner, SumBelow]) == [("SumBelow", "x + y = 6 reached 5")]
