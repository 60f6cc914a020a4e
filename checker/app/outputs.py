"""Output paths a user owns: what kmc may write over, checked before a long run starts.

kmc writes results (``--json``) and graphs (``graph --out``) over an existing file only
when that file is one kmc wrote before (a result, a graph) or the user said ``--force``.
It never writes over the files of the run itself (the spec being checked, a checkpoint),
whatever the options, and it refuses a destination that is not a regular file (a named
pipe with no reader would hang the write; a device is not a result), because a rename
over it would replace the device and a write to it would lose the result.
"""

from __future__ import annotations

import os
import re
import stat

from kmc.checker.errors import UsageError

# The first bytes of every JSON document kmc writes (``schema_version`` is its first key).
_KMC_JSON = re.compile(rb'\A\{\s*"schema_version":\s*\d{1,9}\s*,')
# Every graph kmc writes names its generator (``checker.graph.GENERATOR``).
GRAPH_MARKER = b"kmc state graph"
# Every counterexample diagram kmc writes (HTML, SVG, Mermaid) holds this text near its top.
DIAGRAM_MARKER = b"kmc counterexample diagram"
CHECKPOINT_MAGIC = b"KMC-CHECKPOINT\n"
_SNIFF = 1 << 16


def _kind_of(mode) -> str:
    if stat.S_ISFIFO(mode):
        return "a named pipe"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISDIR(mode):
        return "a directory"
    return "not a regular file"


def check_regular_input(what, path) -> None:
    """Refuse an input that is not a regular file (a named pipe would block the read).

    Raises:
        UsageError: naming ``what`` (an option or a file) and the kind of file.
    """
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return  # the reader reports a missing or unreadable file in its own words
    if not stat.S_ISREG(mode):
        raise UsageError(f"{what}: {path} is {_kind_of(mode)}, not a regular file")


def is_kmc_output(path, kind: str = "json") -> bool:
    """True when the regular file ``path`` is empty or was written by kmc (a JSON document
    that starts with ``schema_version``, or a graph that names kmc as its generator)."""
    try:
        with open(path, "rb") as f:
            head = f.read(_SNIFF)
    except OSError:
        return False
    if not head.strip():
        return True
    if kind == "json":
        return bool(_KMC_JSON.match(head))
    if kind == "diagram":
        return DIAGRAM_MARKER in head[:4096]
    return GRAPH_MARKER in head


def check_output_path(option, path, *, protected=(), force=False, kind="json") -> None:
    """Refuse, before a long run starts, an output file that could not or must not be written.

    Args:
        option: the option that names the file (``--json``), for messages.
        path: the file (``None``: nothing to check).
        protected: paths of the run's own inputs (the spec, a checkpoint directory's
            files); the output may never be one of them.
        force: allow writing over an existing regular file kmc did not write.
        kind: ``"json"``, ``"graph"`` or ``"diagram"``: what a file kmc wrote looks like.

    Raises:
        UsageError: a one-line message naming the option and the path.
    """
    if not path:
        return
    folder = os.path.dirname(os.path.abspath(path))
    try:
        st = os.stat(path)
    except FileNotFoundError:
        st = None
    except OSError as e:
        raise UsageError(f"{option}: cannot use {path} ({e.strerror or e})") from None
    if st is not None and stat.S_ISDIR(st.st_mode):
        raise UsageError(f"{option}: {path} is a directory")
    if st is not None and not stat.S_ISREG(st.st_mode):
        raise UsageError(f"{option}: {path} is {_kind_of(st.st_mode)}, not a regular file; "
                         "kmc writes its output to regular files only")
    if not os.path.isdir(folder):
        raise UsageError(f"{option}: the folder {folder} does not exist")
    if not os.access(folder, os.W_OK):
        raise UsageError(f"{option}: the folder {folder} is not writable")
    if st is None:
        return
    for other in protected:
        if other and _same_file(path, other):
            raise UsageError(f"{option}: {path} is an input of this run ({other}); "
                             "choose another file")
    if _starts_with(path, CHECKPOINT_MAGIC):
        raise UsageError(f"{option}: {path} is a kmc checkpoint; choose another file")
    if not force and not is_kmc_output(path, kind):
        raise UsageError(f"{option}: {path} exists and is not a kmc {'result' if kind == 'json' else kind}; "
                         "choose another file, or pass --force to replace it")


def _same_file(a, b) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.realpath(a) == os.path.realpath(b)


def _starts_with(path, prefix: bytes) -> bool:
    try:
        with open(path, "rb") as f:
            return f.read(len(prefix)) == prefix
    except OSError:
        return False
