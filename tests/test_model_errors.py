"""A model's error is never a verdict, and a result file never runs code.

Every broken model of ``tests/broken_models.py`` ends ``kmc check --model`` in one line
naming the model's function, its file and line, and what went wrong, with exit code 2 (the
code of bad input, never 1, the code of a violated property), on every engine. A result of
a model replays only with the model the user names, checked against what the file records
of it: the file's reference is never imported."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

REPO = Path(__file__).resolve().parent.parent
BROKEN = REPO / "tests" / "broken_models.py"
TWO_PHASE = REPO / "specs" / "models" / "two_phase.py"
SPARK = ["--engine", "spark", "--partitions", "2", "--driver-level-limit", "0"]

KMC_SLOW_ONLY = pytest.mark.skipif(os.environ.get("KMC_SLOW") != "1", reason="about 30 s of Spark task retries: set KMC_SLOW=1")


def kmc(*args, cwd=REPO, timeout=300):
    env = dict(os.environ, COLUMNS="200")
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    return subprocess.run([sys.executable, "-m", "kmc.app.cli", *map(str, args)], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=timeout)


def kmc_here(capsys, *args):
    from kmc.app.cli import main

    try:
        code = main([str(a) for a in args])
    except SystemExit as e:
        code = e.code
    cap = capsys.readouterr()
    return SimpleNamespace(returncode=code, stdout=cap.out, stderr=cap.err)


def one_line(proc) -> str:
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in proc.stderr + proc.stdout, proc.stderr
    return lines[0]


def line_of(marker, at_def=False) -> int:
    """The line of ``# broken: marker`` in broken_models.py; with ``at_def``, the line of
    the ``def`` it is in (what kmc names for a value a function returned)."""
    lines = BROKEN.read_text().splitlines()
    (n,) = [i for i, text in enumerate(lines) if text.rstrip().split("# broken: ")[-1].split(" ")[0] == marker
            and "# broken: " in text]
    if at_def:
        while not lines[n].lstrip().startswith("def "):
            n -= 1
    return n + 1


# (factory, extra arguments, the function named, its line: the marker's (raised) or its def's
# (returned), what the line says)
BROKEN_CASES = [
    ("factory_raises", (), "factory_raises", ("factory_raises", False), "raised ValueError: n must be at least 2"),
    ("returns_none", (), "returns_none", ("returns_none", True), "returned None"),
    ("returns_int", (), "returns_int", ("returns_int", True), "returned an int (42)"),
    ("returns_class", (), "returns_class", ("returns_class", True), "returned the class Good, not an instance"),
    ("returns_dict", (), "returns_dict", ("returns_dict", True), "returned a dict"),
    ("InitRaises", (), "InitRaises.init_states", ("init_raises", False), "raised RuntimeError: no initial state"),
    ("InitNone", (), "InitNone.init_states", ("init_none", True), "returned None; it must return a sequence"),
    ("InitEmpty", (), "InitEmpty.init_states", ("init_empty", True), "returned no initial state"),
    ("ActionsRaise", (), "ActionsRaise.actions", ("actions_raise", False), "raised KeyError: 'x'"),
    ("ActionsNone", (), "ActionsNone.actions", ("actions_none", True), "returned None for Counter(x=0)"),
    ("NextRaises", (), "NextRaises.next_state", ("next_raises", False), "raised ZeroDivisionError"),
    ("NextNone", (), "NextNone.next_state", ("next_none", True), "returned None as a successor"),
    ("EncodeStr", (), "EncodeStr.encode", ("encode_str", True), "returned a str ('x=0')"),
    ("PropertiesStrings", (), "PropertiesStrings.properties", ("properties_strings", True),
     "returned a str ('Below') among its properties"),
    ("TwoOfOneName", (), "TwoOfOneName.properties", ("two_of_one_name", True),
     "returned two properties named 'Below'; each property needs a name of its own"),
    ("CheckRaises", (), "check_raises", ("check_raises", False), "raised IndexError: list index out of range"),
    ("StepRaises", (), "step_raises", ("step_raises", False), "raised TypeError: bad step"),
    ("Unhashable", (), "Unhashable.init_states", ("unhashable", True), "returned an unhashable initial state"),
    ("Nondeterministic", (), "Nondeterministic.next_state", ("nondeterministic", True),
     "gave the same state Counter(x=0) other successors when asked again"),
    ("ActionsVary", (), "ActionsVary.actions", ("actions_vary", True),
     "gave the same state Counter(x=0) other actions when asked again"),
    ("n_is_number", ("--param", "n=abc"), "Good.actions", ("n_is_number", False),
     "raised TypeError: '<' not supported between instances of 'int' and 'str'"),
    ("deep_actions_raise", (), "DeepActionsRaise.actions", ("deep_actions_raise", False), "raised KeyError: 'x'"),
    # sys.exit in a model's code is an exception of the model like any other, never kmc's exit status
    ("NextExits", (), "NextExits.next_state", ("next_exits", False), "raised SystemExit"),
    ("factory_exits", (), "factory_exits", ("factory_exits", False), "raised SystemExit: 3"),
]
KERNEL_CASES = [
    ("KernelRaises", (), "KernelRaises.batch_kernel", ("kernel_raises", False),
     "raised NotImplementedError: the kernel is not written yet"),
    ("ExpandTwoValues", (), "TwoValues.expand", ("two_values", True), "returned 2 values; it must return four arrays"),
    ("KernelExpandRaises", (), "ExpandRaises.expand", ("expand_raises", False), "raised OverflowError"),
    ("deep_expand_raises", (), "DeepExpandRaises.expand", ("deep_expand_raises", False), "raised OverflowError"),
]


def _expect_one_line(proc, factory, function, where, says):
    line = one_line(proc)
    assert proc.returncode == 2, (proc.returncode, line)
    assert "No violation" not in proc.stdout and "violated" not in proc.stdout
    ref = f"{BROKEN}:{factory}"
    assert line.startswith(f"kmc: error: --model {ref}: "), line
    assert f"{function} (" in line and f"broken_models.py:{line_of(*where)})" in line, line
    assert says in line, line


@pytest.mark.parametrize(("factory", "extra", "function", "where", "says"), BROKEN_CASES,
                         ids=[c[0] for c in BROKEN_CASES])
@pytest.mark.parametrize("path", [[], ["--per-state"]], ids=["local", "per-state"])
def test_a_broken_model_is_one_line_and_exit_2(capsys, path, factory, extra, function, where, says):
    proc = kmc_here(capsys, "check", "--model", f"{BROKEN}:{factory}", *extra, *path, "--no-progress")
    _expect_one_line(proc, factory, function, where, says)


@pytest.mark.parametrize(("factory", "extra", "function", "where", "says"), KERNEL_CASES,
                         ids=[c[0] for c in KERNEL_CASES])
def test_a_broken_kernel_is_one_line_and_exit_2(capsys, factory, extra, function, where, says):
    proc = kmc_here(capsys, "check", "--model", f"{BROKEN}:{factory}", *extra, "--no-progress")
    _expect_one_line(proc, factory, function, where, says)
    # The per-state path does not use the kernel: its verdict is the model's own.
    per_state = kmc_here(capsys, "check", "--model", f"{BROKEN}:{factory}", "--per-state", "--no-progress")
    assert per_state.returncode == 0 and "✓ No violation in" in per_state.stdout, per_state.stderr


def test_the_issue_s_model_that_raises_in_its_factory(tmp_path):
    (tmp_path / "m.py").write_text('def f(n=1):\n    raise ValueError("n must be at least 2")\n')
    proc = kmc("check", "--model", "m.py:f", cwd=tmp_path)
    assert one_line(proc) == "kmc: error: --model m.py:f: f (m.py:2) raised ValueError: n must be at least 2"
    assert proc.returncode == 2


@pytest.mark.spark
@pytest.mark.parametrize(("factory", "function", "where", "says"), [
    ("CheckRaises", "check_raises", ("check_raises", False), "raised IndexError: list index out of range"),
    # (a failure deep in the search waits for Spark's task retries: half a minute each)
    pytest.param("deep_actions_raise", "actions", ("deep_actions_raise", False), "raised KeyError: 'x'",
                 marks=KMC_SLOW_ONLY),
    pytest.param("deep_expand_raises", "expand", ("deep_expand_raises", False),
                 "raised OverflowError: a column overflowed", marks=KMC_SLOW_ONLY),
    ("InitEmpty", "InitEmpty.init_states", ("init_empty", True), "returned no initial state"),
])
def test_a_broken_model_is_the_same_line_in_a_spark_task(factory, function, where, says):
    proc = kmc("check", "--model", f"{BROKEN}:{factory}", "--no-progress", *SPARK)
    _expect_one_line(proc, factory, function, where, says)
    if factory != "InitEmpty":  # (refused before the search)
        assert "(in a Spark task at depth " in proc.stderr


@pytest.mark.spark
@pytest.mark.skipif(__import__("os").environ.get("KMC_SLOW") != "1", reason="another Spark run of its own (the suite's time): set KMC_SLOW=1")
def test_a_model_module_that_runs_spark_at_import_names_its_line(tmp_path):
    """docs/writing-a-model.md's blocks saved as one file, the block that runs the Spark
    engine at import included: a task that imports the module to unpickle the model fails,
    and the line says where and why, not only the JVM's wrapper."""
    doc = (REPO / "docs" / "writing-a-model.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", doc, flags=re.S)
    text = "\n".join(blocks)
    (tmp_path / "counters.py").write_text(text)
    loop = text.index("for per_state in (False, True):")
    spark_line = text[: text.index("assert summary(engine.run())", loop)].count("\n") + 1  # the engine's run
    proc = kmc("check", "--model", "counters.py:FastCounters", "--engine", "spark", "--no-progress", cwd=tmp_path)
    errors = [line for line in proc.stderr.splitlines() if line.startswith("kmc: ")]
    assert proc.returncode == 2 and len(errors) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert f"<module> (counters.py:{spark_line}) raised EngineError: a Spark engine cannot start inside a " \
           "Spark task" in errors[0], errors[0]
    assert "SparkException" not in errors[0]


# -- a result file is data ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def two_phase_result(tmp_path_factory):
    folder = tmp_path_factory.mktemp("result")
    saved = folder / "r.json"
    proc = kmc("check", "--model", TWO_PHASE.relative_to(REPO).as_posix() + ":two_phase", "--param", "eager=true",
               "--no-progress", "--json", saved)
    assert proc.returncode == 1, proc.stderr
    return saved


def test_a_result_file_never_imports_what_it_names(tmp_path, two_phase_result):
    doc = json.loads(two_phase_result.read_text())
    doc["model"] = {"ref": "subprocess:run", "params": {"args": "touch pwned", "shell": True}}
    evil = tmp_path / "r.json"
    evil.write_text(json.dumps(doc))
    proc = kmc("replay", evil, cwd=tmp_path)
    assert proc.returncode == 2 and not (tmp_path / "pwned").exists()
    line = one_line(proc)
    assert "the result of a model of your own, not of a spec: replay it with --model naming that model" in line
    assert "subprocess" not in line  # the file's reference is never offered as a command
    # named on the command line, the user's own model is checked against the file's record
    proc = kmc("replay", evil, "--model", f"{TWO_PHASE}:two_phase", cwd=tmp_path)
    assert proc.returncode == 2 and not (tmp_path / "pwned").exists()
    line = one_line(proc)
    assert "the result belongs to another model" in line and "subprocess" not in line
    # the explorer's --trace never takes a model's result
    proc = kmc("explore", REPO / "specs" / "hw-data-loss.toml", "--trace", evil, "--no-search", "--port", "0",
               cwd=tmp_path, timeout=60)
    assert proc.returncode == 2 and "the result of a model of your own: explore it with --model" in one_line(proc)


def test_a_model_s_result_replays_only_with_the_model_it_was_found_on(tmp_path, two_phase_result):
    ref = f"{TWO_PHASE}:two_phase"
    shown = kmc("replay", two_phase_result, "--model", ref)
    assert shown.returncode == 0 and "RMRcvCommitMsg(0)" in shown.stdout, shown.stderr
    assert kmc("replay", two_phase_result, "--model", ref, "--param", "eager=true").returncode == 0
    proc = kmc("replay", two_phase_result, "--model", ref, "--param", "eager=false")
    assert proc.returncode == 2
    assert "--param: the result was found with the parameters eager=True, this run gives eager=False" in one_line(proc)
    edited = tmp_path / "two_phase.py"
    edited.write_text(TWO_PHASE.read_text() + "\n# edited\n")
    proc = kmc("replay", two_phase_result, "--model", f"{edited}:two_phase")
    assert proc.returncode == 2 and "its source differs from the one the result was found on" in one_line(proc)
    proc = kmc("replay", two_phase_result, "--model", f"{TWO_PHASE}:TwoPhase")
    assert proc.returncode == 2 and "the result belongs to another model" in proc.stderr
    proc = kmc("replay", REPO / "reports" / "specs" / "ap-be-c2.json", "--model", ref)
    assert proc.returncode == 2 and "the result of a spec, not of a model of your own" in one_line(proc)


# -- a run stopped at --max-memory is not a verdict ------------------------------------------


def test_a_model_s_run_stopped_at_the_memory_ceiling_claims_nothing():
    from rich.console import Console

    from kmc.app.user_model import load_model_spec
    from kmc.checker.engines import make_engine
    from kmc.checker.core.options import Options
    from kmc.app.render import generic

    spec = load_model_spec(f"{BROKEN}:good", {"n": 5000})
    model = spec.model()
    result = make_engine(model, options=Options(max_memory=1), per_state=True).run()  # (below any process)
    assert result.stopped == "max-memory" and not result.complete
    console = Console(width=200, record=True, file=open(os.devnull, "w"))
    console.print(generic.result_view(spec, model, result))
    text = console.export_text()
    assert "✓" not in text and "No violation" not in text.replace(
        f"No violation in {result.stats.distinct:,} distinct states, but the search is incomplete (max-memory): "
        "1 property unknown.", "")
