"""Runs are reproducible: the same counts, the same seen-set and the same trace in every
process, whatever ``PYTHONHASHSEED`` says (STYLE.md, "Identity and determinism")."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SEEDS = ("0", "12345")

# Prints, as JSON, the counts of a local run, the choices and state fingerprints of each
# violation's trace, and a digest of the whole seen-set (every fingerprint, sorted).
_PROBE = r"""
import hashlib, json, sys
from kmc.app.specs import load_spec
from kmc.checker.local.states import LocalEngine, Options
from kmc.checker.base.fingerprint import fingerprint
spec = load_spec(sys.argv[1])
model = spec.model()
engine = LocalEngine(model, spec.properties(), Options(keep_going=spec.keep_going))
result = engine.run()
h = hashlib.sha256()
for fp in sorted(engine.seen.fingerprints().tolist()):
    h.update(fp.to_bytes(8, "big"))
print(json.dumps({
    "distinct": result.stats.distinct, "generated": result.stats.generated,
    "depth": result.stats.depth, "levels": result.stats.levels,
    "seen": h.hexdigest(), "hash_of_str": hash("kmc"),
    "violations": {p: {"choices": list(v.path.choices),
                       "fps": [fingerprint(model, s) for s in v.path.states],
                       "actions": [model.format_action(a) for a in v.path.actions],
                       "explanation": v.explanation}
                   for p, v in result.violations.items()},
}))
"""


def _env(seed):
    env = dict(os.environ)
    env["PYTHONHASHSEED"] = seed
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    return env


def _probe(spec, seed):
    proc = subprocess.run([sys.executable, "-c", _PROBE, str(REPO / "specs" / spec)],
                          cwd=REPO, env=_env(seed), capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


@pytest.mark.parametrize("spec", ["hw-data-loss.toml", "le-unflushed.toml"])
def test_same_run_under_different_hash_seeds(spec):
    a, b = (_probe(spec, seed) for seed in SEEDS)
    # The seeds really differ (else this test proves nothing).
    assert a.pop("hash_of_str") != b.pop("hash_of_str")
    assert a == b
    assert a["violations"]


def test_hw_data_loss_probe_numbers():
    """The subprocess sees the pinned numbers (tests/pins.py)."""
    from pins import PINS

    pin = PINS["hw-data-loss"]
    got = _probe("hw-data-loss.toml", "0")
    assert (got["distinct"], got["generated"], got["depth"]) == (pin.distinct, pin.generated, pin.depth)
    assert len(got["violations"]["CommittedNeverLost"]["fps"]) == pin.traces["CommittedNeverLost"]


def _kmc_json(tmp_path, seed):
    out = tmp_path / f"result-{seed}.json"
    proc = subprocess.run(
        [sys.executable, "-m", "kmc.app.cli", "check", "specs/hw-data-loss.toml", "--json", str(out),
         "--no-progress"],
        cwd=REPO, env=_env(seed), capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1, proc.stderr          # a violation
    assert "Traceback" not in proc.stderr
    return json.loads(out.read_text(encoding="utf-8"))


def test_kmc_check_json_identical_across_hash_seeds(tmp_path):
    a, b = (_kmc_json(tmp_path, seed) for seed in SEEDS)
    for doc in (a, b):
        doc["stats"].pop("seconds", None)
        doc["stats"].pop("states_per_second", None)
    assert a["stats"] == b["stats"]
    assert a["violations"] == b["violations"]
    assert a["verdicts"] == b["verdicts"] == {"CommittedNeverLost": "violated"}
    stats = a["stats"]
    assert (stats["distinct_states"], stats["states_generated"], stats["depth"]) == (1834, 3455, 10)
    (v,) = a["violations"]
    assert v["property"] == "CommittedNeverLost"
    assert v["trace"]["length"] == 10
    assert [s["action"]["text"] for s in v["trace"]["steps"][1:]] == [
        "Produce(A)", "FetchRequest(B)", "FetchResponse(B)", "FetchRequest(B)",
        "Crash(A)", "Crash(B)", "Restart(B)", "BecomeFollower(B)", "ElectLeader(B)"]


def test_two_runs_in_one_process_agree(build):
    from kmc.checker.local.states import check

    model = build.model(max_crashes=2, truncation="leader-epoch", unflushed_loss=True)
    r1, r2 = check(model), check(model)
    assert (r1.stats.distinct, r1.stats.generated, r1.stats.depth) == (
        r2.stats.distinct, r2.stats.generated, r2.stats.depth)
    assert {p: v.path for p, v in r1.violations.items()} == {p: v.path for p, v in r2.violations.items()}
