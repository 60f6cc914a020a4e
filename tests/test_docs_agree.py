"""What the README and the docs promise, held to what the code does: the spec table lists
every shipped spec, help texts list what the parsers accept, documented limits hold
(sizes up to 1P, a memory floor above kmc's own start-up, the masters kmc refuses), and
docs/model.md has one definition of a committed record.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from kmc.app.cli import build_parser, main

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
MODEL_MD = (ROOT / "docs" / "model.md").read_text(encoding="utf-8")
SPARK_MD = (ROOT / "docs" / "spark.md").read_text(encoding="utf-8")


def _help(command) -> str:
    parser = build_parser()
    sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    return " ".join(sub.choices[command].format_help().split())


def test_the_readme_lists_every_shipped_spec():
    table = README.split("## Shipped specs", 1)[1].split("\n\n", 2)[1]
    listed = set(re.findall(r"`([a-z0-9][a-z0-9.-]*)`", "\n".join(line.split("|")[1] for line in
                                                                  table.splitlines() if line.startswith("| `"))))
    shipped = {p.stem for p in (ROOT / "specs").glob("*.toml")}
    assert shipped - listed == set(), "specs missing from the README's table"
    assert listed - shipped == set(), "rows of the README's table without a spec"


def test_matrix_help_lists_every_rule_the_parser_accepts(monkeypatch):
    from kmc.app.matrix_grids import RULE_ALIASES

    monkeypatch.setenv("COLUMNS", "1000")  # no line breaks inside a name

    text = _help("matrix")
    for name in RULE_ALIASES:
        assert re.search(rf"(?<![\w.-]){re.escape(name)}(?![\w-])", text), name
    from kmc.app.matrix_grids import VERSION_CONFIGS, VERSIONS

    for name in list(VERSION_CONFIGS) + list(VERSIONS):
        assert name in text, name


@pytest.mark.parametrize("size", ["1P", "1024T", "128M"])
def test_every_documented_size_is_accepted(size):
    from kmc.app.specs import parse_spec

    text = (ROOT / "specs" / "hw-data-loss.toml").read_text().replace("[check]", f'[check]\nmax_memory = "{size}"')
    assert parse_spec(text.encode()).max_memory > 0
    assert "bytes 128M–1P" in README


@pytest.mark.parametrize("size", ["10P", "127M", "16M"])
def test_sizes_outside_the_documented_range_are_one_line(size, capsys):
    from kmc.checker.base.errors import SpecError
    from kmc.app.specs import parse_spec

    text = (ROOT / "specs" / "hw-data-loss.toml").read_text().replace("[check]", f'[check]\nmax_memory = "{size}"')
    with pytest.raises(SpecError, match=rf"check.max_memory: must be at (least 128M|most 1P).*, got '{size}'"):
        parse_spec(text.encode())
    try:
        code = main(["check", str(ROOT / "specs" / "hw-data-loss.toml"), "--max-memory", size])
    except SystemExit as e:
        code = e.code
    assert code == 2 and "--max-memory: must be at" in capsys.readouterr().err


def test_the_memory_floor_is_above_kmc_s_own_start_up():
    from kmc.checker.base.memory import MIN_CEILING

    # VmHWM, the peak of this process's own memory (ru_maxrss would keep the forking parent's)
    code = ("from kmc.app.cli import main; "
            "main(['check', 'specs/le-data-loss.toml', '--no-progress', '--no-trace']); "
            "print(next(int(l.split()[1]) * 1024 for l in open('/proc/self/status') if l.startswith('VmHWM')))")
    peak = int(subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                              check=True).stdout.split()[-1])
    assert peak < MIN_CEILING / 1.5  # a margin: the floor is well above a small run's whole peak


@pytest.mark.parametrize("master", ["spark://", "local[1000000]", "mesos://x", "local[0]"])
def test_the_masters_kmc_refuses_are_the_readme_s(master):
    from kmc.checker.base.errors import EngineError
    from kmc.checker.spark.master import validate_master

    with pytest.raises(EngineError):
        validate_master(master)
    row = next(line for line in README.splitlines() if line.startswith("| `[spark] master`"))
    refused = row.split("anything else is refused", 1)[1]
    assert f'`"{master}"`' in refused


def test_the_readme_says_what_a_2_1_spec_checks_by_default():
    from kmc.invariants import ALL, default_properties
    from kmc.app.specs import load_spec

    spec = load_spec(str(ROOT / "specs" / "v21-data-loss.toml"))
    # AcknowledgedNeverLost and UncommittedNeverExposed need an option (acks, truncate_on_fetch)
    gated = {"AcknowledgedNeverLost", "UncommittedNeverExposed"}
    unchecked = {p.name for p in ALL} - {p.name for p in default_properties(spec.config)} - gated
    assert unchecked == {"PartitionRecoverable"}
    assert "every property of `kmc invariants` but `PartitionRecoverable`" in README


def test_model_md_defines_committed_once():
    assert "acknowledged to the producer and visible to" not in MODEL_MD
    assert "One producer writes with `acks=all`" not in " ".join(MODEL_MD.split())
    assert "**Committed is not acknowledged below min ISR.**" in MODEL_MD


def test_edge_bytes_agree():
    from kmc.checker.graph.possibly import _NARROW

    edge = _NARROW().itemsize + 8
    assert f"{edge} bytes an edge" in MODEL_MD and "16 bytes an edge" not in MODEL_MD
    for text in (README, MODEL_MD):
        assert "21 bytes a stored edge" in " ".join(text.split())


def test_spark_md_names_the_installed_modules():
    assert "`kmc.checker`, `kmc.model` and `kmc.invariants`" in SPARK_MD
    import importlib

    for name in ("kmc.checker", "kmc.model", "kmc.invariants"):
        importlib.import_module(name)


def test_pyspark_is_listed_once_under_dependencies():
    deps = README.split("## Dependencies", 1)[1].split("\n## ", 1)[0] if "## Dependencies" in README else README
    assert deps.count("- **pyspark**") == 1


def test_writing_a_model_gives_the_signature_of_every_optional_text_method():
    # The page lists each method as the protocol declares it (its parameters, in order).
    import inspect

    from kmc.checker.contract import protocol

    page = (ROOT / "docs" / "writing-a-model.md").read_text(encoding="utf-8")
    for name in ("format_action", "describe_step", "format_state"):
        params = ", ".join(inspect.signature(getattr(protocol.ModelBase, name)).parameters)
        assert f"`{name}({params}) -> str`" in page, name


def test_the_atlas_figures_of_the_docs_are_the_published_atlas():
    import json

    results_md = (ROOT / "docs" / "results.md").read_text(encoding="utf-8")
    doc = json.loads((ROOT / "reports" / "atlas.json").read_text(encoding="utf-8"))
    found = re.search(r"The whole page,\s+(\d[\d,]*) cells,.*?the published one took (\d+) s", results_md, re.S)
    assert found, "docs/results.md no longer gives the atlas's cell count and time"
    assert int(found.group(1).replace(",", "")) == len(doc["cells"])
    assert int(found.group(2)) == round(doc["total_seconds"])
    atlas_md = (ROOT / "reports" / "ATLAS.md").read_text(encoding="utf-8")
    assert f"in {doc['total_seconds']:.0f} s." in atlas_md and f"Of the {len(doc['cells'])} cells" in atlas_md


def test_the_readme_counts_the_tests_there_are(request):
    found = re.search(r"The whole suite \(([\d,]+) tests as `python -m pytest --collect-only -q` counts them", README)
    assert found, "the README no longer gives the suite's size"
    said = int(found.group(1).replace(",", ""))
    items = request.session.items
    everything = sorted(p.name for p in (ROOT / "tests").glob("test_*.py"))
    option = request.config.option
    if sorted({Path(str(i.fspath)).name for i in items}) == everything and not option.keyword and not option.markexpr:
        count = len(items)  # this session collected the whole suite: its count is the one
    else:
        proc = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-n", "0", str(ROOT / "tests")],
                              cwd=ROOT, capture_output=True, text=True, timeout=600)
        counted = re.search(r"^(\d+) tests? collected", proc.stdout, re.M)
        assert counted, proc.stdout[-2000:] + proc.stderr[-2000:]
        count = int(counted.group(1))
    assert said == count, f"the README says {said:,} tests; there are {count:,}"
