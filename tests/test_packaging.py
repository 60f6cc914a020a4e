"""The installed project: every package of the source tree is in the wheel, under the one
``kmc`` namespace, and nothing is installed as a generic top-level package."""

import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
FOLDERS = ("model", "checker", "invariants", "reports")


def _setuptools():
    return tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]


def test_every_source_package_is_installed_under_kmc():
    config = _setuptools()
    packages = {
        ".".join(p.parent.relative_to(REPO).parts)
        for root in FOLDERS
        for p in (REPO / root).rglob("__init__.py")
    }
    assert "checker.commands" in packages
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
    import kmc.checker.cli
    import kmc.model

    assert Path(kmc.model.__file__).name == "__init__.py"
    assert hasattr(kmc.checker.cli, "main")
