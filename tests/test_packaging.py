"""The installed project has every package of the source tree (a wheel that misses a
subpackage installs fine and then fails at the first import)."""

import fnmatch
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_every_source_package_is_installed():
    config = tomllib.loads((REPO / "pyproject.toml").read_text())
    include = config["tool"]["setuptools"]["packages"]["find"]["include"]
    packages = {
        ".".join(p.parent.relative_to(REPO).parts)
        for root in ("model", "checker", "invariants", "reports")
        for p in (REPO / root).rglob("__init__.py")
    }
    assert "checker.commands" in packages
    missing = [p for p in sorted(packages) if not any(fnmatch.fnmatchcase(p, pat) for pat in include)]
    assert not missing, f"packages left out of the wheel: {missing}"
