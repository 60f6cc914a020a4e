"""A user's model that breaks the protocol is an error, never a verdict.

A model's function that raises, or returns what the protocol (``checker.contract.protocol``) does
not allow, ends the run with one line naming the function, its file and line, and what
went wrong (``ModelError``, exit code 2): never a traceback, and never exit 1, the code of
a violated property.

- ``blame(exception)`` finds, in an exception raised while a model ran, the deepest frame
  of the model's own code (not kmc's, not a library's) and says it in one line;
  ``blame_text(text)`` does the same from the text of a traceback (a Spark task's).
- ``probe(model, properties, kernel)`` calls the model before a search, on a bounded
  sample of the first states breadth-first: ``init_states`` gives a non-empty sequence of
  hashable states, ``actions`` a sequence, ``next_state`` a state, ``encode`` bytes, and
  the same state the same successors when asked twice (a model whose successors vary from
  call to call cannot be searched: its counts would not be its own); a batch kernel's
  ``init_rows`` gives a row a state and its ``expand`` four arrays.
"""

from __future__ import annotations

import inspect
import os
import re
import sys
import sysconfig
from collections.abc import Iterable, Sequence
from types import TracebackType
from typing import Any, NoReturn

import numpy as np

from ..base.errors import ModelError
from .protocol import ModelBase, action_name

# The states the probe expands, breadth-first from the initial ones (the nondeterminism
# check asks each of them twice).
PROBE_STATES = 64

_FRAME = re.compile(r'File "([^"]+)", line (\d+), in (\S+)')
_PYTHON_ERROR = re.compile(r"^([A-Za-z_][\w.]*(?:Error|Exception|Interrupt|Exit|Warning))(?:: (.*))?$")


def _library_roots() -> tuple[str, ...]:
    """The folders whose code is not the model's: kmc's packages, the standard library,
    the installed packages (numpy, pyspark)."""
    files = [getattr(m, "__file__", None) for name, m in list(sys.modules.items()) if name.startswith("kmc.")]
    roots = {os.path.dirname(os.path.abspath(f)) for f in files if isinstance(f, str)}
    paths = sysconfig.get_paths()
    roots.update(os.path.abspath(paths[k]) for k in ("stdlib", "platstdlib", "purelib", "platlib") if k in paths)
    return tuple(r.rstrip(os.sep) + os.sep for r in roots)


def _is_own(filename: str, roots: tuple[str, ...]) -> bool:
    if filename.startswith("<"):  # <frozen ...>, <string>
        return True
    path = os.path.abspath(filename)
    return path.startswith(roots) or "pyspark" + os.sep in path or "py4j" + os.sep in path


def shown_path(filename: str) -> str:
    """A file as a message names it: relative to the working folder when under it."""
    path = os.path.abspath(filename)
    try:
        rel = os.path.relpath(path)
    except ValueError:  # another drive
        return path
    return path if rel.startswith(os.pardir) else rel


def model_frame(frames: Iterable[tuple[str, int, str]]) -> tuple[str, int, str] | None:
    """The deepest ``(file, line, function)`` of ``frames`` (outermost first) that is the
    model's own code, or ``None``."""
    roots = _library_roots()
    mine = [f for f in frames if not _is_own(f[0], roots)]
    return mine[-1] if mine else None


def traceback_frames(tb: TracebackType | None) -> list[tuple[str, int, str]]:
    out = []
    while tb is not None:
        code = tb.tb_frame.f_code
        out.append((code.co_filename, tb.tb_lineno, getattr(code, "co_qualname", code.co_name)))
        tb = tb.tb_next
    return out


def _exception_text(kind: str, message: str) -> str:
    message = " ".join(str(message).split())
    if len(message) > 300:
        message = message[:297] + "..."
    return f"{kind}: {message}" if message else kind


def blame(e: BaseException) -> str:
    """One line for an exception raised while the model ran: ``Model.actions
    (m.py:12) raised KeyError: 'x'``; when no frame is the model's (a value it returned
    broke kmc's code), the exception and the place in kmc."""
    frames = traceback_frames(e.__traceback__)
    what = _exception_text(type(e).__name__, str(e))
    found = model_frame(frames)
    if found is not None:
        file, line, name = found
        return f"{name} ({shown_path(file)}:{line}) raised {what}"
    where = f" (in kmc's {os.path.basename(frames[-1][0])}:{frames[-1][1]})" if frames else ""
    return f"the model broke kmc's model protocol: {what}{where}"


def blame_text(text: str) -> str | None:
    """One line for a Python traceback's text (a failed Spark task's) whose deepest frame
    of the model's own code is named: that function, its file and line, and the exception's
    type and message; ``None`` when the text holds no Python exception or no frame of the
    model's code (an error of kmc or of Spark)."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    last = None
    for line in lines:
        m = _PYTHON_ERROR.match(line)
        if m and not m.group(1).startswith(("org.", "java.", "scala.", "py4j.")):
            last = m
    if last is None:
        return None
    kind = last.group(1).rpartition(".")[2]
    what = _exception_text(kind, last.group(2) or "")
    frames = [(f, int(n), name) for f, n, name in _FRAME.findall(text)]
    found = model_frame(frames)
    if found is None:
        return None
    return f"{found[2]} ({shown_path(found[0])}:{found[1]}) raised {what}"


def task_failure(e: BaseException, where: str) -> ModelError | None:
    """A ``ModelError`` for a failed Spark job whose task failed in the model's code
    (``blame_text``), ``None`` for any other failure."""
    texts = [str(e)]
    java = getattr(e, "java_exception", None)
    if java is not None:
        try:
            texts.append(str(java.toString()))
        except Exception:
            pass
    for text in texts:
        line = blame_text(text)
        if line is not None:
            return ModelError(f"{line} ({where})")
    return None


# -- the probe ------------------------------------------------------------------------------


def where_defined(fn: Any) -> str:
    """``Class.method (file:line)`` of a function, as far as Python knows it."""
    fn = getattr(fn, "__func__", fn)
    name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or repr(fn)
    try:
        file = inspect.getsourcefile(fn)
        line = fn.__code__.co_firstlineno
    except (TypeError, AttributeError):
        return name
    return f"{name} ({shown_path(file)}:{line})" if file else name


def _refuse(fn: Any, what: str) -> NoReturn:
    raise ModelError(f"{where_defined(fn)} {what}")


def _call(fn: Any, *args: Any) -> Any:
    try:
        return fn(*args)
    except ModelError:
        raise
    except Exception as e:
        raise ModelError(blame(e)) from None


def value_text(value: Any) -> str:
    """A value as a message names it: ``None``, or its type and its (short) repr."""
    if value is None:
        return "None"
    kind = type(value).__name__
    return f"{'an' if kind[0] in 'aeiouAEIOU' else 'a'} {kind} ({_short(value)})"


def _short(value: Any) -> str:
    text = " ".join(repr(value).split())
    return text if len(text) <= 60 else text[:57] + "..."


def _check_state(model: Any, state: Any, source: Any, what: str) -> bytes:
    try:
        hash(state)
    except TypeError:
        _refuse(
            source, f"returned an unhashable {what}, {value_text(state)}; a state must be hashable (a frozen class)"
        )
    if state is None:
        _refuse(source, f"returned None as a {what}")
    data = _call(model.encode, state)
    if not isinstance(data, bytes):
        _refuse(model.encode, f"returned {value_text(data)} for the state {_short(state)}; encode must return bytes")
    return data


def _sequence(value: Any) -> bool:
    return isinstance(value, Sequence) and not isinstance(value, (str, bytes, bytearray))


def probe(model: Any, kernel: Any = None, limit: int = PROBE_STATES) -> None:
    """Call the model (and its kernel) on its first ``limit`` states breadth-first, and
    refuse what breaks the protocol (see the module).

    Raises:
        ModelError: one line naming the function, its file and line.
    """
    inits = _call(model.init_states)
    if not _sequence(inits) and not isinstance(inits, (set, frozenset)):
        _refuse(model.init_states, f"returned {value_text(inits)}; it must return a sequence of initial states")
    if not _sequence(inits):
        _refuse(model.init_states, "returned a set, whose order changes between runs; return a tuple or a list")
    if not inits:
        _refuse(model.init_states, "returned no initial state: there is nothing to check")
    seen: dict[Any, bytes] = {}
    queue = []
    for state in inits:
        seen.setdefault(state, _check_state(model, state, model.init_states, "initial state"))
        queue.append(state)
    again = _call(model.init_states)
    if not _sequence(again) or list(again) != list(inits):
        _refuse(model.init_states, "returned other initial states when asked again; it must be deterministic")
    # the model's own successors(), or None when it takes ModelBase's (actions and next_state)
    method = model.successors
    custom = None if getattr(method, "__func__", None) is ModelBase.successors else method
    source = custom if custom is not None else model.next_state
    done = 0
    while queue and done < limit:
        state = queue.pop(0)
        done += 1
        if custom is None:
            enabled = _call(model.actions, state)
            if not _sequence(enabled):
                _refuse(model.actions, f"returned {value_text(enabled)} for {_short(state)}; it must return a sequence")
        first = _call(model.successors, state)
        if not isinstance(first, list) or not all(isinstance(p, tuple) and len(p) == 2 for p in first):
            _refuse(source, f"returned {value_text(first)} for {_short(state)}; it must return (action, state) pairs")
        encoded = [_check_state(model, after, source, "successor") for _action, after in first]
        # Asked again, the same state must give the same actions (by name, in order) and the
        # same successors (by their encoding, which is what the engines identify them by).
        second = _call(model.successors, state)
        names = [action_name(a) for a, _ in first]
        if not isinstance(second, list) or [action_name(a) for a, _ in second] != names:
            _refuse(
                source if custom is not None else model.actions,
                f"gave the same state {_short(state)} other actions when asked again "
                f"({_short(names)}, then {_short([action_name(a) for a, _ in second or ()])}); "
                "a model must be deterministic",
            )
        if [_call(model.encode, b) for _, b in second] != encoded:
            _refuse(
                source,
                f"gave the same state {_short(state)} other successors when asked again "
                f"({_short([b for _, b in first])}, then {_short([b for _, b in second])}); "
                "the successors must be deterministic",
            )
        for (_action, after), data in zip(first, encoded):
            if after not in seen:
                seen[after] = data
                queue.append(after)
    if kernel is not None:
        _probe_kernel(kernel, list(inits))


def _probe_kernel(kernel: Any, inits: list[Any]) -> None:
    rows = _call(kernel.init_rows, inits)
    if not isinstance(rows, np.ndarray) or rows.ndim != 2 or rows.dtype != np.uint8 or len(rows) != len(inits):
        _refuse(
            kernel.init_rows,
            f"returned {value_text(rows)}; it must return a two-dimensional uint8 array, one row an initial state",
        )
    out = _call(kernel.expand, rows)
    if not isinstance(out, tuple) or len(out) != 4:
        n = len(out) if isinstance(out, tuple) else None
        _refuse(
            kernel.expand,
            f"returned {n if n is not None else value_text(out)} values; it must return four arrays "
            "(parents, choices, codes, successors)",
        )
    parents, choices, codes, succ = out
    if not all(isinstance(a, np.ndarray) for a in out) or not len(parents) == len(choices) == len(codes) == len(succ):
        _refuse(
            kernel.expand,
            "returned arrays of different lengths or not arrays; parents, choices, codes and successors "
            "must be numpy arrays of one length",
        )
