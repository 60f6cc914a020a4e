"""The sizes a maintainer can read: no source file over 500 lines, no function over 80.

Counted over every module of the installed packages (checker/, model/, invariants/, app/), by
their own lines; a file or a function that grows past them is split by concept, not cut.
"""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCES = sorted(p for folder in ("checker", "model", "invariants", "app") for p in (ROOT / folder).rglob("*.py"))
MAX_FILE_LINES = 500
MAX_FUNCTION_LINES = 80


def test_the_scan_sees_the_packages():
    names = {p.relative_to(ROOT).as_posix() for p in SOURCES}
    assert {"checker/core/driver.py", "model/kafka.py", "app/cli.py", "invariants/kafka.py"} <= names


def _too_long(path, root=ROOT):
    text = path.read_text(encoding="utf-8")
    out = [f"{path.relative_to(root)}: {len(text.splitlines())} lines"] if len(text.splitlines()) > MAX_FILE_LINES else []
    out += [
        f"{path.relative_to(root)}: {node.name} ({node.end_lineno - node.lineno + 1} lines)"
        for node in ast.walk(ast.parse(text))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and node.end_lineno - node.lineno + 1 > MAX_FUNCTION_LINES
    ]
    return out


def test_every_source_file_is_at_most_500_lines_and_every_function_at_most_80():
    assert [line for path in SOURCES for line in _too_long(path)] == []


def test_the_limits_catch_a_long_file_and_a_long_function(tmp_path):
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_FUNCTION_LINES))
    path = tmp_path / "long.py"
    path.write_text(f"def f():\n{body}\n" + "\n" * MAX_FILE_LINES, encoding="utf-8")
    assert [line.split(": ", 1)[1] for line in _too_long(path, tmp_path)] == [f"{MAX_FILE_LINES + 81} lines", "f (81 lines)"]
