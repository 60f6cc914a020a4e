"""The path a newcomer follows: how many of kmc's files ``kmc check SPEC`` passes through before
the kernel's first ``expand``, and the subcommands' modules a run imports.

The files are counted as a maintainer tracing the run would meet them: every kmc source file in
which a function is called on the way (a call made while a module is being imported is not on
the run's path), until the batch kernel's ``expand`` is first called. Counted in a fresh
interpreter, so that nothing an earlier test imported or cached changes the count.
"""

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MAX_FILES = 40  # the path's files at the last count (59 before the subcommands were imported lazily)

_TRACE = r"""
import json, os, sys
import kmc
HOME = kmc.__path__[0]
PACKAGES = {os.path.realpath(os.path.join(HOME, f)) + os.sep: f for f in ("app", "checker", "invariants", "model")}
packages = tuple(PACKAGES)
files, done = set(), []

def inside(filename):
    return os.path.realpath(filename).startswith(packages)

def profile(frame, event, arg):
    if event != "call" or done or frame.f_code.co_name == "<module>" or not inside(frame.f_code.co_filename):
        return
    up = frame.f_back
    while up is not None:  # a call made while a module of kmc is imported is not on the path
        if up.f_code.co_name == "<module>" and inside(up.f_code.co_filename):
            return
        up = up.f_back
    name = os.path.realpath(frame.f_code.co_filename)
    files.add(name)
    if frame.f_code.co_name == "expand" and name.endswith(os.path.join("model", "batch.py")):
        done.append(True)

from kmc.app.cli import main
sys.setprofile(profile)
try:
    main(["check", sys.argv[1], "--no-progress", "--no-trace"])
finally:
    sys.setprofile(None)
def short(name):
    prefix = next(p for p in PACKAGES if name.startswith(p))
    return PACKAGES[prefix] + "/" + name[len(prefix):]

print(json.dumps({"reached": bool(done), "files": sorted(short(f) for f in files)}))
"""


def _python(*args):
    return subprocess.run([sys.executable, *args], cwd=ROOT, capture_output=True, text=True, timeout=120)


def test_kmc_check_reaches_the_kernel_s_first_expand_through_at_most_40_files():
    proc = _python("-c", _TRACE, "specs/hw-data-loss.toml")
    trace = json.loads(proc.stdout.strip().splitlines()[-1])
    assert trace["reached"], proc.stderr
    files = trace["files"]
    # the path a reader follows: the command, the engine, the driver, the rows search, the kernel
    assert {
        "app/commands/check.py",
        "checker/engines.py",
        "checker/core/driver.py",
        "checker/local/rows.py",
        "model/batch.py",
    } <= set(files)
    assert len(files) <= MAX_FILES, files


_IMPORTED = r"""
import sys
from kmc.app.cli import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
print(" ".join(sorted(m.rpartition(".")[2] for m in sys.modules if m.startswith("kmc.app.commands."))))
"""


def test_a_run_imports_only_the_module_of_its_subcommand():
    help_only = _python("-c", _IMPORTED, "--help").stdout.splitlines()[-1].split()
    assert help_only == []  # the top help lists every subcommand by name and help line alone
    check = _python("-c", _IMPORTED, "check", "specs/hw-data-loss.toml", "--no-progress", "--no-trace")
    imported = set(check.stdout.splitlines()[-1].split())
    assert "check" in imported
    assert not imported & {"bench", "explore", "graph", "invariants", "matrix", "replay", "simulate", "why_not"}


def test_the_top_help_lists_every_subcommand_with_its_line():
    from kmc.app.cli import COMMANDS, build_parser

    text = build_parser([], every=False).format_help()
    for name, (_, line) in COMMANDS.items():
        assert name in text and line.split()[0] in text
