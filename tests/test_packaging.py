"""The installed project: every package of the source tree is in the wheel, under the one
``kmc`` namespace, and nothing is installed as a generic top-level package."""

import os
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
FOLDERS = ("model", "checker", "app", "invariants")


def _setuptools():
    return tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]


def test_every_source_package_is_installed_under_kmc():
    config = _setuptools()
    packages = {
        ".".join(p.parent.relative_to(REPO).parts)
        for root in FOLDERS
        for p in (REPO / root).rglob("__init__.py")
    }
    assert {"app", "app.commands"} <= packages
    assert set(config["packages"]) == {f"kmc.{p}" for p in packages}
    assert config["package-dir"] == {f"kmc.{p}": p.replace(".", "/") for p in packages}


def test_no_generic_top_level_package_and_no_old_import():
    assert all(p.startswith("kmc.") for p in _setuptools()["packages"])
    for path in REPO.rglob("*.py"):
        if ".git" in path.parts:
            continue
        for line in path.read_text().splitlines():
            words = line.split()
            if len(words) >= 2 and words[0] in ("from", "import") and words[1].split(".")[0] in FOLDERS:
                raise AssertionError(f"{path.relative_to(REPO)}: {line.strip()} (import kmc.{words[1]})")


def test_the_kmc_namespace_imports():
    import kmc.app.cli
    import kmc.model

    assert Path(kmc.model.__file__).name == "__init__.py"
    assert hasattr(kmc.app.cli, "main")


def test_every_package_ships_a_py_typed_marker():
    """PEP 561: an installed package with a ``py.typed`` marker is type-checked by its users'
    type checkers, so that a user's own model is checked against kmc's protocols. Every
    package has the marker in its folder and package-data names it for every package."""
    config = _setuptools()
    assert "py.typed" in config["package-data"]["*"]
    missing = [p for p in config["packages"] if not (REPO / config["package-dir"][p] / "py.typed").is_file()]
    assert missing == []


def test_a_model_of_one_s_own_is_type_checked_against_the_names_kmc_checker_exports(tmp_path):
    """``kmc.checker`` imports its names on first use; the type checker still sees each one
    as what it is (not ``Any``), so that a user's model that misuses them is told so."""
    from mypy import api

    mine = tmp_path / "mine.py"
    mine.write_text(
        "from kmc.checker import Model, Options\n"
        "options = Options(max_depth='deep')\n"
        "model: Model = object()\n"
    )
    out, err, code = api.run([str(mine), "--no-incremental", "--cache-dir", os.devnull, "--no-error-summary"])
    assert code == 1, out + err
    assert 'Argument "max_depth" to "Options" has incompatible type "str"' in out, out
    assert 'Incompatible types in assignment (expression has type "object", variable has type "Model")' in out, out


def test_kmc_checker_s_lazy_names_are_the_names_the_type_checker_sees():
    """Each name ``kmc.checker`` imports on first use (``_LAZY``) is imported from the same
    module in its ``TYPE_CHECKING`` block, and resolves at run time to that module's object."""
    import ast
    import importlib

    import kmc.checker as checker

    tree = ast.parse((REPO / "checker" / "__init__.py").read_text(encoding="utf-8"))
    block = next(n for n in tree.body if isinstance(n, ast.If) and getattr(n.test, "id", "") == "TYPE_CHECKING")
    typed = {a.name: "." * i.level + (i.module or "") for i in block.body if isinstance(i, ast.ImportFrom)
             for a in i.names}
    assert typed == checker._LAZY
    for name, module in checker._LAZY.items():
        assert getattr(checker, name) is getattr(importlib.import_module(module, "kmc.checker"), name)
        assert name in checker.__all__


def test_the_built_packages_carry_their_markers_and_data(tmp_path):
    """What setuptools puts in a wheel: every package with its ``py.typed``, and the Spark
    sessions' log4j2 file (built from a copy, so that the tree gets no build files)."""
    import shutil
    import subprocess
    import sys

    source = tmp_path / "src"
    for folder in FOLDERS:
        shutil.copytree(REPO / folder, source / folder, ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, source / name)
    build = tmp_path / "build"
    setup = "from setuptools import setup; setup()"
    subprocess.run([sys.executable, "-c", setup, "-q", "build_py", "--build-lib", str(build)], cwd=source,
                   check=True, capture_output=True)
    markers = {".".join(p.parent.relative_to(build).parts) for p in build.rglob("py.typed")}
    assert markers == set(_setuptools()["packages"])
    assert (build / "kmc" / "checker" / "spark" / "log4j2.properties").is_file()


# -- the engine core knows no application --------------------------------------------------

# What the engine core (kmc.checker outside kmc.app) must never import: the Kafka
# model's own modules, its properties, its reports, and the application built on them.
_APPLICATION = ("kmc.model.kafka", "kmc.model.state", "kmc.invariants", "kmc.app.render", "kmc.app")


def _imported_modules(source, package):
    """Every module ``source`` imports, at any level (module, function, class), as absolute
    names, with each imported name also as ``module.name`` (it may be a submodule); a
    relative import is resolved against ``package`` (e.g. ``"kmc.checker"``)."""
    import ast

    package = package.split(".")
    names = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package[:len(package) - node.level + 1] if node.level else []
            module = ".".join([*base, *([node.module] if node.module else [])])
            names.add(module)
            names.update(f"{module}.{alias.name}" for alias in node.names)
    return names


def _core_modules():
    return [p for p in sorted((REPO / "checker").rglob("*.py")) if "app" not in p.relative_to(REPO / "checker").parts]


def test_the_engine_core_imports_no_application_module():
    core = _core_modules()
    assert any(p.name == "kernel.py" for p in core) and not any("app" in p.parts for p in core)
    bad = []
    for path in core:
        package = ".".join(["kmc", *path.parent.relative_to(REPO).parts])
        for name in sorted(_imported_modules(path.read_text(), package)):
            if any(name == a or name.startswith(a + ".") for a in _APPLICATION):
                bad.append(f"{path.relative_to(REPO)} imports {name}")
    assert not bad, "\n".join(bad)


def test_the_boundary_check_sees_every_kind_of_import():
    # The check above is only as good as the import parser: it must see imports inside
    # functions and classes, and relative imports that reach the application.
    source = ("import os\n"
              "def f():\n    from kmc.model.kafka import KafkaModel\n"
              "class C:\n    def g(self):\n        from ..app import cli\n"
              "from . import kernel\n")
    names = _imported_modules(source, "kmc.checker")
    assert {"kmc.model.kafka", "kmc.app.cli", "kmc.checker.kernel", "os"} <= names


# -- the model's modules import one another without a circle ---------------------------------


def _run_time_source(source):
    """``source`` without its ``if TYPE_CHECKING:`` blocks: imports for the annotations only,
    which never run (a module may name a higher one's class in its annotations)."""
    import ast

    tree = ast.parse(source)
    for node in ast.walk(tree):
        for field in ("body", "orelse"):
            body = getattr(node, field, None)
            if isinstance(body, list):
                kept = [n for n in body if not (isinstance(n, ast.If) and ast.unparse(n.test) == "TYPE_CHECKING")]
                setattr(node, field, kept or [ast.Pass()])
    return ast.unparse(tree)


def _import_graph(folder, package):
    """``{module: modules of the same package it imports}`` for the modules of ``folder``
    (imports at any level that run, as ``_imported_modules`` sees them)."""
    modules = {f"{package}.{p.stem}": p for p in sorted((REPO / folder).glob("*.py")) if p.stem != "__init__"}
    graph = {}
    for name, path in modules.items():
        imported = _imported_modules(_run_time_source(path.read_text()), package)
        graph[name] = sorted(m for m in modules if m != name and m in imported)
    return graph


def _cycle(graph):
    """One import circle of ``graph`` as a list of modules, or ``None``."""
    state = {}

    def visit(node, path):
        state[node] = "open"
        for nxt in graph[node]:
            if state.get(nxt) == "open":
                return path[path.index(nxt):] + [nxt]
            if nxt not in state:
                found = visit(nxt, path + [nxt])
                if found:
                    return found
        state[node] = "done"
        return None

    for node in graph:
        if node not in state:
            found = visit(node, [node])
            if found:
                return found
    return None


def test_the_model_has_no_import_cycle():
    graph = _import_graph("model", "kmc.model")
    assert {"kmc.model.actions", "kmc.model.kafka", "kmc.model.batch", "kmc.model.describe"} <= set(graph)
    assert graph["kmc.model.actions"] == []  # the leaf every other module reads the actions from
    assert _cycle(graph) is None, " -> ".join(_cycle(graph))


def test_the_cycle_check_skips_only_the_imports_for_annotations():
    source = "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .kafka import KafkaModel\nfrom .state import State\n"
    names = _imported_modules(_run_time_source(source), "kmc.model")
    assert "kmc.model.state" in names and "kmc.model.kafka" not in names


def test_the_cycle_check_finds_a_circle():
    assert _cycle({"a": ["b"], "b": ["c"], "c": ["a"], "d": []}) == ["a", "b", "c", "a"]
    assert _cycle({"a": ["b"], "b": [], "c": ["a"]}) is None
