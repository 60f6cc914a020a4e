"""Step covers ("this step can happen", ``checker.contract.protocol``'s ``"step-cover"`` kind): a
predicate of a transition (the state before, the action, the state after), answered with a
shortest behaviour whose last step is a witness, or "never reached" (exit 1); the Kafka
model's (``invariants.covers``: an ELR election, an unclean election, a refused
AlterPartition, a follower's truncation, and the operators' steps), each pinned on a small
configuration and checked against the naive oracle's breadth-first search."""

from __future__ import annotations

import json
import pickle
import re
from collections import deque

import attrs
import numpy as np
import oracle
import pytest
from counter_kernels import XIntoCorner, XPastN, YAfterTwoX, step_covered
from kmc.app.cli import main
from kmc.checker.engines import make_engine
from kmc.checker.base.exitcodes import EXIT_BAD_INPUT, EXIT_OK, EXIT_VIOLATION
from kmc.checker.contract.kernel_check import KernelMismatchError
from kmc.checker.core.level import step_failures
from kmc.checker.core.options import Options
from kmc.checker.contract.protocol import STEP_COVER
from kmc.invariants.covers import COVERS_BY_NAME, NEEDS, STEP_COVERS
from kmc.model import Config
from kmc.model.kafka import KafkaModel
from toy import Counters, Inc, NeverDown

# -- the toy counters (tests/counter_kernels.py) ----------------------------------------------

ENGINES = {
    "per-state": (dict(per_state=True), Options()),
    "batch": ({}, Options()),
    "workers": ({}, Options(workers=2)),
    "disk": ({}, Options(store="disk")),
}


def _run(model, props, engine, **options):
    kw, base = ENGINES[engine]
    return make_engine(model, props, attrs.evolve(base, **options), **kw).run()


@pytest.mark.parametrize("engine", ENGINES)
def test_a_step_cover_is_answered_with_a_shortest_witness_ending_with_the_step(engine):
    # n = 3. YAfterTwoX: IncY from a state where x = 2; (2, 0) is the only such state two
    # steps from (0, 0), so the witness is IncX, IncX, IncY: 4 states, choices 0, 0, 1 (IncY
    # is the second action enabled). XIntoCorner: IncX into (3, 3), from (2, 3), five steps
    # away: 7 states. XPastN: IncX is never enabled at x = 3.
    model = step_covered(n=3, beyond=True)
    result = _run(model, [YAfterTwoX, XIntoCorner, XPastN], engine)
    assert result.covers == ["YAfterTwoX", "XIntoCorner", "XPastN"] and result.checked == []
    assert result.violations == {} and result.complete and result.stats.distinct == 16
    witness = result.witnesses["YAfterTwoX"]
    assert witness.states == (Counters(0, 0), Counters(1, 0), Counters(2, 0), Counters(2, 1))
    assert witness.choices == (0, 0, 1) and witness.actions[-1] == Inc("IncY")
    corner = result.witnesses["XIntoCorner"]
    assert len(corner) == 7 and corner.states[-2:] == (Counters(2, 3), Counters(3, 3))
    assert corner.actions[-1] == Inc("IncX")
    assert [result.cover_verdict(n) for n in result.covers] == ["reached", "reached", "never reached"]
    assert result.never_reached == ["XPastN"]


@pytest.mark.parametrize("engine", ["per-state", "batch"])
def test_a_step_witness_stops_nothing_and_a_violation_leaves_step_covers_unknown(engine):
    # max_depth 4 (states of depth 4 are not expanded): YAfterTwoX (a witness of 4 states, its
    # last step from depth 3) is reached; XIntoCorner (7) is unknown, not "never reached".
    result = _run(step_covered(n=3), [YAfterTwoX, XIntoCorner], engine, max_depth=4)
    assert [result.cover_verdict(n) for n in result.covers] == ["reached", "unknown"]
    assert result.never_reached == [] and not result.complete


def test_the_witness_is_the_same_through_a_checkpoint_resumed_at_every_level():
    model, props = step_covered(n=4), [YAfterTwoX, XIntoCorner]
    for per_state in (True, False):
        snaps = []
        engine = make_engine(model, props, Options(), per_state=per_state)
        engine.on_level = lambda e, snaps=snaps: snaps.append(pickle.dumps(e.snapshot()))
        whole = engine.run()
        want = {n: (p.init_index, p.choices) for n, p in whole.witnesses.items()}
        assert [len(whole.witnesses[n]) for n in ("YAfterTwoX", "XIntoCorner")] == [4, 9]
        assert len(snaps) >= 8
        for blob in snaps:
            resumed = make_engine(model, props, Options(), per_state=per_state)
            resumed.restore(pickle.loads(blob))
            got = resumed.run()
            assert {n: (p.init_index, p.choices) for n, p in got.witnesses.items()} == want


def _never_mask(kernel, rows, parents, codes, after):
    return np.zeros(len(parents), dtype=bool)


def test_a_step_cover_s_wrong_array_form_is_a_kernel_mismatch():
    # An array form that never fires would answer "never reached": the kernel's comparison
    # with its model catches it at the witness's parent (2, 0).
    wrong = attrs.evolve(YAfterTwoX, mask=_never_mask)
    with pytest.raises(KernelMismatchError, match=r"state Counters\(x=2, y=0\).*YAfterTwoX mask: kernel False, model True"):
        make_engine(step_covered(n=3), [wrong], Options(verify_kernel=True)).run()


def test_a_model_s_step_covers_from_the_command_line(capsys, tmp_path):
    ref = "tests/counter_kernels.py:step_covered"
    out = tmp_path / "r.json"
    assert main(["check", "--model", ref, "--no-progress", "--json", str(out)]) == EXIT_OK
    text = capsys.readouterr().out
    assert "✓ YAfterTwoX reached: a shortest witness has 4 states" in text
    assert "Witness: XIntoCorner (7 states)" in text
    assert "YAfterTwoX: reached by the last step, State 3 → State 4" in text
    doc = json.loads(out.read_text())
    assert [(c["name"], c["kind"], c["verdict"], len(c["trace"]["steps"])) for c in doc["covers"]] == [
        ("YAfterTwoX", "step-cover", "reached", 4), ("XIntoCorner", "step-cover", "reached", 7)]
    assert doc["covers"][0]["trace"]["choices"] == [0, 0, 1]
    assert main(["check", "--model", ref, "--param", "beyond=true", "--no-progress", "--json", str(out),
                 "--force"]) == EXIT_VIOLATION
    text = capsys.readouterr().out
    assert "✗ XPastN NEVER REACHED in 16 distinct states" in text
    assert json.loads(out.read_text())["covers"][2] == {"name": "XPastN", "kind": "step-cover", "verdict": "never reached"}


def test_the_explorer_says_where_a_cover_is_reached():
    # A walk's last state is a state cover's witness or not; its last step a step cover's.
    from counter_kernels import XTwoYOne
    from kmc.app.render.explorer import Explorer
    from kmc.app.render.explorer_views import GenericView

    model = step_covered(n=3)
    explorer = Explorer(model, [XTwoYOne, YAfterTwoX, XIntoCorner], view=GenericView(model))

    def reached(choices):
        doc = explorer.state_doc(0, choices)
        return sorted(p["name"] for p in doc["properties"] if p["status"] == "reached")

    assert reached([]) == reached([0, 0]) == []  # (0, 0); (2, 0)
    assert reached([0, 0, 1]) == ["XTwoYOne", "YAfterTwoX"]  # IncY from (2, 0) to (2, 1)
    assert reached([0, 1, 0]) == ["XTwoYOne"]  # IncX from (1, 1) to (2, 1)
    assert reached([1, 1, 1, 0, 0, 0]) == ["XIntoCorner"]  # up to (0, 3), then IncX to (3, 3)
    assert {p["status"] for p in explorer.state_doc(0, [])["properties"]} == {"not here"}


def test_a_step_witness_is_no_step_property_s_failure():
    # The helpers that list a transition's failed step properties (simulation, graphs) skip
    # step covers, as they skip state covers.
    model = step_covered(n=3)
    assert step_failures(model, Counters(2, 0), Inc("IncY"), Counters(2, 1), [YAfterTwoX, NeverDown]) == []
    assert step_failures(model, Counters(2, 1), Inc("IncY"), Counters(2, 0), [YAfterTwoX, NeverDown]) == [
        ("NeverDown", "IncY decreased a counter")]


# -- the Kafka model's step covers -----------------------------------------------------------

# Each scenario written again on the oracle's states and step labels ((action, replica,
# elected)), for a breadth-first search over tests/oracle.py's successors.
SCENARIOS = {
    "ElrElection": lambda cfg, s, label, t: label[0] == "ElectLeader" and label[1] in s.quorum.elr
    and label[1] not in s.quorum.isr,
    "UncleanElection": lambda cfg, s, label, t: label[0] == "ElectLeader" and label[1] not in s.quorum.isr
    and label[1] not in s.quorum.elr,
    "AlterPartitionRefused": lambda cfg, s, label, t: label[0] == "AlterPartition" and t.quorum.isr == s.quorum.isr,
    "FollowerTruncates": lambda cfg, s, label, t: label[0] in ("BecomeFollower", "FetchResponse")
    and t.replicas[label[1]].log[: len(s.replicas[label[1]].log)] != s.replicas[label[1]].log,
    "ControlledShutdownMovesLeader": lambda cfg, s, label, t: label[0] == "ControlledShutdown"
    and s.quorum.leader == label[1] and label[2] is not None,
    "MinIsrChangeApplied": lambda cfg, s, label, t: label[0] == "ApplyMinIsr"
    or (label[0] == "ChangeMinIsr" and not cfg.min_isr_lag),
    "LogDirectoryFailed": lambda cfg, s, label, t: label[0] == "DiskFailure",
}


def oracle_shortest_step(cfg, goal) -> int | None:
    """The number of states on a shortest behaviour whose last step satisfies ``goal`` (a
    plain BFS over the oracle's states), or None."""
    seen: dict = {}
    queue: deque = deque()
    for s in oracle.initial_states(cfg):
        if s not in seen:
            seen[s] = 1
            queue.append(s)
    while queue:
        s = queue.popleft()
        for label, t in oracle.successors(cfg, s):
            if goal(cfg, s, label, t):
                return seen[s] + 1
            if t not in seen:
                seen[t] = seen[s] + 1
                queue.append(t)
    return None


# Two replicas, leader-epoch-2.1, leader epochs <= 2, 1 record, 1 crash, min ISR 1, plus the
# scenario's option.
BASE = dict(truncation="leader-epoch-2.1", max_leader_epoch=2, max_messages=1, replicas=("A", "B"),
            min_insync_replicas=1, max_crashes=1)
# cover -> (its options, its witness's length in states, the steps, worked by hand where short)
PINNED = {
    # Produce(A); ShrinkIsr(B): the ISR {A} is below min ISR 2, B enters the ELR; Crash(A);
    # ElectLeader(B), from the ELR.
    "ElrElection": (dict(min_insync_replicas=2, hw_requires_min_isr=True, eligible_leader_replicas=True), 5,
                    ["Produce", "ShrinkIsr", "Crash", "ElectLeader"]),
    # Produce(A); ShrinkIsr(B); Crash(A): no ISR member alive; ElectLeader(B), unclean.
    "UncleanElection": (dict(unclean_leader_election=True), 5, ["Produce", "ShrinkIsr", "Crash", "ElectLeader"]),
    "AlterPartitionRefused": (dict(alter_partition=True, broker_epochs=True), 10, None),
    # Produce(A); Crash(A) (its log kept); Restart(A); ElectLeader(B); BecomeFollower(A): A's
    # record is not in B's empty log, A cuts it.
    "FollowerTruncates": ({}, 6, ["Produce", "Crash", "Restart", "ElectLeader", "BecomeFollower"]),
    # ControlledShutdown(A) of the leader: the controller elects B at once.
    "ControlledShutdownMovesLeader": (dict(max_controlled_shutdowns=1), 2, ["ControlledShutdown"]),
    # ChangeMinIsr, then ApplyMinIsr by the leader's broker.
    "MinIsrChangeApplied": (dict(min_isr_changes=(2,), min_isr_lag=True), 3, ["ChangeMinIsr", "ApplyMinIsr"]),
    # DiskFailure(A) from the initial state.
    "LogDirectoryFailed": (dict(max_disk_failures=1), 2, ["DiskFailure"]),
}


def test_every_kafka_step_cover_is_pinned_and_needs_its_option():
    assert {c.name for c in STEP_COVERS} == set(PINNED) == set(SCENARIOS)
    assert all(c.kind == STEP_COVER and c.symmetric and COVERS_BY_NAME[c.name] is c for c in STEP_COVERS)
    assert set(PINNED) - set(NEEDS) == {"FollowerTruncates"}  # every configuration can truncate


def test_docs_model_md_lists_every_step_cover_with_its_pinned_witness():
    from pathlib import Path

    text = (Path(__file__).resolve().parent.parent / "docs" / "model.md").read_text()
    rows = {m.group(1): m.group(2) for m in re.finditer(r"^\| `(\w+)` \|.*\| (\d+)[^|]*\|$", text, flags=re.M)}
    assert {name: int(rows[name]) for name in PINNED} == {name: pin[1] for name, pin in PINNED.items()}


@pytest.mark.parametrize("name", PINNED)
def test_each_kafka_step_cover_is_reached_at_the_oracle_s_length(name):
    options, length, steps = PINNED[name]
    cfg = Config(**{**BASE, **options})
    assert oracle_shortest_step(cfg, SCENARIOS[name]) == length
    prop = COVERS_BY_NAME[name]
    answers = {}
    for per_state in (True, False):
        engine = make_engine(KafkaModel(cfg), [prop], Options(), per_state=per_state)
        result = engine.run()
        path = result.witnesses[name]
        assert len(path) == length and result.complete
        if steps is not None:
            assert [a.name for a in path.actions] == steps
        # the last step is a witness and no earlier one is
        labels = list(zip(path.states, path.actions, path.states[1:]))
        assert prop.check(engine.model, *labels[-1]) and not any(prop.check(engine.model, *x) for x in labels[:-1])
        answers[engine.path] = (path.init_index, path.choices)
    assert len(set(answers.values())) == 1  # the per-state and the batch paths (or twice per-state)


@pytest.mark.parametrize("name", ["ElrElection", "UncleanElection", "AlterPartitionRefused"])
def test_the_kafka_step_covers_array_forms_agree_with_their_checks_on_every_state(name):
    # verify_kernel: the kernel's comparison with its model on every state expanded, the
    # array form (the kinds coverage counts) against the check on every transition.
    prop = COVERS_BY_NAME[name]
    assert prop.mask is not None
    engine = make_engine(KafkaModel(Config(**{**BASE, **PINNED[name][0]})), [prop], Options(verify_kernel=True))
    result = engine.run()
    assert engine.path == "batch" and len(result.witnesses[name]) == PINNED[name][1]


def test_a_diverging_answer_s_truncation_on_the_fetch_path():
    # With truncate_on_fetch BecomeFollower keeps the log; the truncation comes with the
    # FetchResponse of a diverging answer: Produce(A); Crash(A); Restart(A); ElectLeader(B);
    # BecomeFollower(A); FetchRequest(A): B answers with a diverging epoch; FetchResponse(A).
    cfg = Config(**{**BASE, "truncate_on_fetch": True})
    assert oracle_shortest_step(cfg, SCENARIOS["FollowerTruncates"]) == 8
    engine = make_engine(KafkaModel(cfg), [COVERS_BY_NAME["FollowerTruncates"]], Options())
    path = engine.run().witnesses["FollowerTruncates"]
    assert engine.path == "batch" and len(path) == 8
    assert [a.name for a in path.actions][-3:] == ["BecomeFollower", "FetchRequest", "FetchResponse"]


def test_the_terminal_shows_a_kafka_step_witness_ending_with_its_step(capsys, tmp_path):
    options, length, _steps = PINNED["ElrElection"]
    spec = tmp_path / "elr.toml"
    spec.write_text(_spec_text(options, ["ElrElection", "EligibleLeaderReplica"]))
    assert main(["check", str(spec), "--no-progress"]) == EXIT_OK
    text = capsys.readouterr().out
    assert f"✓ ElrElection reached: a shortest witness has {length} states" in text
    assert f"Witness: ElrElection ({length} states)" in text
    assert re.search(r"✓ ElrElection is reached by the last step, State 4 → State 5\W+\(ElectLeader\(B\)\)", text)
    assert "✓ EligibleLeaderReplica is reached in State 3" in text  # a state cover's: its last state


def test_an_elr_election_is_never_reached_under_min_isr_one(capsys, tmp_path):
    # Under min ISR 1 the ELR never holds a replica (tests/test_covers.py): no ELR election.
    # The oracle finds none either.
    options = dict(hw_requires_min_isr=True, eligible_leader_replicas=True, max_crashes=2, unflushed_loss=True)
    assert oracle_shortest_step(Config(**{**BASE, **options}), SCENARIOS["ElrElection"]) is None
    spec = tmp_path / "elr.toml"
    spec.write_text(_spec_text(options, ["ElrElection"]))
    out = tmp_path / "r.json"
    assert main(["check", str(spec), "--no-progress", "--json", str(out)]) == EXIT_VIOLATION
    text = capsys.readouterr().out
    assert "✗ ElrElection NEVER REACHED in " in text and "Never reached: ElrElection" in text
    assert json.loads(out.read_text())["covers"] == [{"name": "ElrElection", "kind": "step-cover", "verdict": "never reached"}]


def _spec_text(options: dict, covers: list[str]) -> str:
    def toml(v):
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, (tuple, list)):
            return "[" + ", ".join(toml(x) for x in v) + "]"
        return json.dumps(v)

    model = {**BASE, **options}
    lines = ['title = "step covers"', "", "[model]"]
    lines += [f"{k} = {toml(len(v) if k == 'replicas' else v)}" for k, v in model.items()]
    lines += ["", "[check]", 'invariants = ["LeaderEpochMonotonic"]', f"covers = {toml(covers)}"]
    return "\n".join(lines) + "\n"


# The engines a spec's step covers run on: the same witnesses on each (the JSON's traces).
CLI_ENGINES = {
    "per-state": ["--per-state"],
    "batch": ["--workers", "1"],
    "workers": ["--workers", "2"],
    "disk": ["--store", "disk", "--workers", "1"],
    "symmetry": ["--symmetry", "--workers", "1"],
    "symmetry per-state": ["--symmetry", "--per-state"],
}


def test_every_engine_gives_the_same_step_witnesses(capsys, tmp_path, monkeypatch):
    # Three replicas (B and C symmetric), min ISR 2 with the ELR: an ELR election, a
    # follower's truncation. Then a run stopped early, resumed from its checkpoint. Chunks of
    # 128 states: --workers takes the wider levels.
    import kmc.checker.local.rows
    import kmc.checker.local.workers
    from kmc.checker.stores.disk import DiskStore

    monkeypatch.setattr(kmc.checker.local.rows, "CHUNK_ROWS", 128)
    monkeypatch.setattr(DiskStore, "chunk_factor", 1)
    sent = []
    send = kmc.checker.local.workers.ExpandPool.send

    def counted(self, task):
        sent.append(len(task[0]))
        return send(self, task)

    monkeypatch.setattr(kmc.checker.local.workers.ExpandPool, "send", counted)
    options = dict(replicas=("A", "B", "C"), min_insync_replicas=2, hw_requires_min_isr=True,
                   eligible_leader_replicas=True)
    spec = tmp_path / "s.toml"
    spec.write_text(_spec_text(options, ["ElrElection", "FollowerTruncates"]))
    answers = {}
    for name, flags in CLI_ENGINES.items():
        out = tmp_path / f"{name}.json"
        assert main(["check", str(spec), "--no-progress", "--json", str(out), *flags]) == EXIT_OK, name
        doc = json.loads(out.read_text())
        answers[name] = [(c["name"], c["trace"]["init_index"], c["trace"]["choices"]) for c in doc["covers"]]
        assert bool(sent) == (name == "workers"), name
        sent.clear()
    ck = tmp_path / "ck"  # a run stopped at 206 states (max_states 100), before either witness
    out = tmp_path / "stopped.json"
    assert main(["check", str(spec), "--no-progress", "--checkpoint", str(ck), "--checkpoint-every", "0",
                 "--max-states", "100", "--workers", "1", "--json", str(out)]) == EXIT_OK
    doc = json.loads(out.read_text())
    assert [c["verdict"] for c in doc["covers"]] == ["unknown", "unknown"] and doc["stopped"] == "max-states"
    out = tmp_path / "resumed.json"
    assert main(["check", "--resume", str(ck), "--no-progress", "--json", str(out)]) == EXIT_OK
    doc = json.loads(out.read_text())
    answers["resumed"] = [(c["name"], c["trace"]["init_index"], c["trace"]["choices"]) for c in doc["covers"]]
    capsys.readouterr()
    assert all(a == answers["batch"] for a in answers.values()), answers
    lengths = [len(c) for _n, _i, c in answers["batch"]]
    assert lengths == [5, 5]  # 6 states each (choices: one fewer)
    cfg = Config(**{**BASE, **options})
    assert [oracle_shortest_step(cfg, SCENARIOS[n]) for n in ("ElrElection", "FollowerTruncates")] == [6, 6]


@pytest.mark.spark
def test_spark_gives_the_local_engine_s_witnesses(spark_sc, capsys, tmp_path):
    # Both Spark paths (rows over two partitions, every level in tasks; per-state), a state
    # cover beside the step covers (two with an array form).
    options = dict(unclean_leader_election=True, alter_partition=True, broker_epochs=True)
    spec = tmp_path / "s.toml"
    spec.write_text(_spec_text(options, ["UncleanElection", "AlterPartitionRefused", "FollowerTruncates",
                                         "AlterPartitionInFlight"]))
    answers = {}
    for name, flags in {
        "local": ["--workers", "1"],
        "spark rows": ["--engine", "spark", "--partitions", "2", "--driver-level-limit", "0"],
        "spark per-state": ["--engine", "spark", "--per-state", "--partitions", "1", "--driver-level-limit", "0"],
    }.items():
        out = tmp_path / f"{name}.json"
        assert main(["check", str(spec), "--no-progress", "--json", str(out), *flags]) == EXIT_OK, name
        doc = json.loads(out.read_text())
        assert doc["engine"] == name.split()[0], name
        answers[name] = [(c["name"], c["verdict"], c["trace"]["choices"]) for c in doc["covers"]]
    assert answers["spark rows"] == answers["spark per-state"] == answers["local"]
    assert [len(choices) + 1 for _n, _v, choices in answers["local"]] == [6, 10, 6, 3]


@pytest.mark.parametrize("name", sorted(set(PINNED) - {"FollowerTruncates"}))
def test_a_step_cover_without_its_option_is_refused(capsys, tmp_path, name):
    spec = tmp_path / "s.toml"
    spec.write_text(_spec_text({}, [name]))
    assert main(["check", str(spec), "--no-progress"]) == EXIT_BAD_INPUT
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "check.covers" in err[0] and f"{name} needs {NEEDS[name][0]}" in err[0], err


def test_kmc_invariants_lists_the_step_covers(capsys):
    assert main(["invariants"]) == EXIT_OK
    text = capsys.readouterr().out
    assert all(c.name in text for c in STEP_COVERS) and "step-cover" in text
