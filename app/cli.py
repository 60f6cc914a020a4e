"""The ``kmc`` command line.

Each subcommand lives in its own module under ``app/commands`` with two functions:
``register(subparsers)`` adds its parser, and ``run(args, out, err) -> int`` runs it
with two rich consoles (results on standard output, progress and errors on standard
error) and returns the exit code.

Exit codes: 0 everything holds, 1 a property is violated, 2 bad input (a one-line
message naming the file and the key, never a traceback), 3 (with ``--check-expect``)
the result contradicts the spec's ``[expect]`` table, 4 stopped at ``--max-memory`` before
any violation was found, 130 interrupted by SIGINT, 143 stopped by SIGTERM.
"""

from __future__ import annotations

if __name__ == "__main__":  # python -m kmc.app.cli: the program starts here, before its imports
    from kmc.app.program import protect_start_up

    protect_start_up()

import argparse
import signal
import sys
import threading
from collections.abc import Callable, Iterable
from types import FrameType, ModuleType
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar, overload

from kmc.checker import __version__  # cheap: the package imports its engines on first use
from kmc.checker.base.errors import KmcError
from kmc.checker.base.exitcodes import (  # noqa: F401  (re-exported: tests and scripts import them from here)
    EXIT_BAD_INPUT,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_RESOURCE_LIMIT,
    EXIT_TERMINATED,
    EXIT_UNEXPECTED,
    EXIT_VIOLATION,
    SUMMARY,
)
from kmc.checker.base.memory import reuse_freed_memory

if TYPE_CHECKING:  # for the annotations only: rich is imported on first use
    from collections.abc import Sequence
    from typing import TextIO

    from rich.console import Console

_N = TypeVar("_N")  # a namespace given to parse_args


# Every subcommand: its name, the module under ``app/commands`` that defines it, and its line in
# ``kmc --help``. A run imports only the module of the subcommand it runs (``kmc check`` never
# imports the explorer's server or the matrix); ``kmc --help`` imports none.
COMMANDS: dict[str, tuple[str, str]] = {
    "check": ("check", "explore every behaviour of a spec and check its invariants"),
    "bench": ("bench", "measure states/second and bytes per stored state on a spec"),
    "invariants": ("invariants", "list the properties kmc can check"),
    "matrix": (
        "matrix",
        "check a grid of configurations (or a directory of specs) and write a results table",
    ),
    "replay": ("replay", "re-execute a saved counterexample and show it (rich, TLC-style text, or JSON)"),
    "simulate": ("simulate", "random walks through a spec, checking its invariants at every step"),
    "graph": ("graph", "export the reachable state graph (.dot, .graphml or .gexf)"),
    "explore": ("explore", "walk a model in the browser: choose each step, see the state and the properties"),
    "why-not": (
        "why_not",
        "why an action is not enabled in a state of a saved trace: its guard's conditions, the failing ones marked",
    ),
}


def _command_module(name: str) -> ModuleType:
    import importlib

    return importlib.import_module(f"kmc.app.commands.{COMMANDS[name][0]}")


def _chosen(argv: Iterable[str] | None) -> str | None:
    """The subcommand ``argv`` names (its first word that is not an option), or ``None``."""
    words = sys.argv[1:] if argv is None else list(argv)
    return next((w for w in words if not w.startswith("-")), None)


class _Parser(argparse.ArgumentParser):
    """argparse, but usage errors are one line and exit with code 2, and an unknown option
    of a subcommand is reported by that subcommand (pointing to its ``--help``, with the
    closest option name it knows)."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_BAD_INPUT, f"{self.prog}: error: {message} (see '{self.prog} --help')\n")

    @overload
    def parse_args(self, args: Iterable[str] | None = None, namespace: None = None) -> argparse.Namespace: ...
    @overload
    def parse_args(self, args: Iterable[str] | None, namespace: _N) -> _N: ...
    @overload
    def parse_args(self, *, namespace: _N) -> _N: ...
    def parse_args(  # the overloads above: what argparse's give
        self, args: Iterable[str] | None = None, namespace: Any = None
    ) -> Any:
        parsed, extras = self.parse_known_args(args, namespace)
        if extras:
            command = self._subcommand(parsed.command)
            (command or self).error(unknown_options_message(command or self, extras))
        return parsed

    def _subcommand(self, name: str) -> argparse.ArgumentParser | None:
        for action in self._actions:
            if isinstance(action, argparse._SubParsersAction) and name in action.choices:
                parser: argparse.ArgumentParser = action.choices[name]
                return parser
        return None


def unknown_options_message(parser: argparse.ArgumentParser, extras: Sequence[str]) -> str:
    """``unrecognized arguments: --kep-going (did you mean --keep-going?)``."""
    import difflib

    known = [o for a in parser._actions for o in a.option_strings if o.startswith("--")]
    hints: list[tuple[str, str]] = []
    for word in extras:
        if word.startswith("-"):
            close = difflib.get_close_matches(word.split("=", 1)[0], known, n=1, cutoff=0.6)
            if close:
                hints.append((word, close[0]))
    text = f"unrecognized arguments: {' '.join(extras)}"
    if len(hints) == 1:
        return f"{text} (did you mean {hints[0][1]}?)"
    return text + (" (" + "; ".join(f"{w}: did you mean {o}?" for w, o in hints) + ")" if hints else "")


# Every option a function shared by several subcommands reads (``commands/common.py``, the
# diagram files, the error paths of ``main``), with its value for a subcommand that does not
# offer it: set on the top parser, so that every subcommand's namespace has each of them by
# construction and each subcommand's own default replaces it. ``argv`` is the command line
# as the user typed it (``main`` sets it; a namespace parsed another way has none).
SHARED_OPTIONS: dict[str, object] = {
    "argv": None,
    "model": None,
    "model_params": None,
    "param": None,
    "kafka": None,
    "metadata": None,
    "engine": None,
    "master": None,
    "partitions": None,
    "driver_level_limit": None,
    "spark_store": None,
    "store": None,
    "store_dir": None,
    "workers": None,
    "max_depth": None,
    "max_states": None,
    "max_memory": None,
    "json": None,
    "deadlock": False,
    "keep_going": False,
    "symmetry": False,
    "per_state": False,
    "verbose": False,
    "verify_kernel": False,
    "force": False,
    "atlas": False,
    "liveness": False,
}


def build_parser(argv: Iterable[str] | None = None, every: bool = True) -> argparse.ArgumentParser:
    """The parser of ``kmc``. Every subcommand's options are added when ``every``; otherwise only
    those of the subcommand ``argv`` names (the others are listed by name and help alone)."""
    parser = _Parser(
        prog="kmc",
        description="An explicit-state model checker for Apache Kafka's replication protocol. "
        "Give it a spec file (replicas, messages, crashes, truncation rule); it explores every "
        "interleaving and either proves the invariants or prints a shortest counterexample. "
        "The model is described in docs/model.md.",
        epilog=SUMMARY,
    )
    parser.add_argument("--version", action="version", version=f"kmc {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True
    chosen = None if every else _chosen(argv)
    for name, (_, help) in COMMANDS.items():
        p = sub.add_parser(name, help=help)
        if every or name == chosen:
            _command_module(name).register(p)
    parser.set_defaults(**SHARED_OPTIONS)
    return parser


def consoles() -> tuple[Console, Console]:
    """The (standard output, standard error) rich consoles. Written to a file or a pipe
    (not a terminal), their lines carry no trailing spaces (rich pads table cells and
    paragraphs to the width). Emoji codes are never rendered: a user's text (a file name,
    a model's action) that holds ``:x:`` is shown as it is."""
    from rich.console import Console

    def stream(f: TextIO) -> Any:  # ``f``, or ``f`` wrapped: a text stream either way
        return f if _isatty(f) else StripTrailingSpaces(f)

    return (
        Console(file=stream(sys.stdout), highlight=False, emoji=False),
        Console(file=stream(sys.stderr), stderr=True, highlight=False, emoji=False),
    )


def _isatty(f: TextIO) -> bool:
    try:
        return f.isatty()
    except (AttributeError, ValueError, OSError):
        return False


class StripTrailingSpaces:
    """A text stream that writes every complete line to ``target`` without its trailing
    spaces; a line not yet ended waits for its end (or ``flush``)."""

    def __init__(self, target: TextIO) -> None:
        self.target = target
        self._tail = ""

    def write(self, text: str) -> int:
        text = self._tail + text
        head, sep, self._tail = text.rpartition("\n")
        if sep:
            self.target.write("\n".join(line.rstrip(" ") for line in head.split("\n")) + "\n")
        return len(text)

    def flush(self) -> None:
        if self._tail:
            self.target.write(self._tail)
            self._tail = ""
        self.target.flush()

    def isatty(self) -> bool:
        return False

    def fileno(self) -> int:
        return self.target.fileno()

    @property
    def encoding(self) -> str:
        encoding: str = getattr(self.target, "encoding", "utf-8")
        return encoding


class Terminated(BaseException):
    """SIGTERM arrived before (or after) a run installed its own handlers."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


# The signals whose exception Python dropped, in order: it drops an exception raised where it
# cannot propagate (a weakref callback of the import machinery, a finalizer) and hands it to
# ``sys.unraisablehook``; such a signal is still reported when ``_main`` returns.
_dropped: list[int] = []


def _terminate(signum: int, frame: FrameType | None) -> NoReturn:
    raise Terminated(signum)


def _interrupt(signum: int, frame: FrameType | None) -> NoReturn:
    raise KeyboardInterrupt


def _unraisable(hook: Callable[[Any], object]) -> Callable[[Any], object]:
    """``sys.unraisablehook`` that notes a signal's exception in ``_dropped`` (``main``
    reports it in its own line) and passes anything else to ``hook``."""

    def unraisable(info: Any) -> object:
        if isinstance(info.exc_value, KeyboardInterrupt):
            _dropped.append(int(signal.SIGINT))
            return None
        if isinstance(info.exc_value, Terminated):
            _dropped.append(info.exc_value.signum)
            return None
        return hook(info)

    return unraisable


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``kmc`` with ``argv`` and return its exit code.

    SIGINT and SIGTERM are handled from the first line on, before rich, pyspark or an
    engine is imported: an interrupt at any moment of start-up ends in one line and exit
    130 or 143, never a traceback. (Before this function runs, the program's imports are
    covered by ``kmc.app.program.protect_start_up``; after it has returned,
    ``run`` ignores both signals so that the verdict's exit code stands. A run replaces
    these handlers with its own, which stop it at a safe point: see
    ``checker.base.signals.StopOnSignals``.) The handlers are set and put back inside the
    ``try`` that reports a signal: Python runs a handler as the call that set it returns,
    and a pending one as the call that puts the old one back begins, so a signal at either
    edge is reported like any other, never escaping as a ``KeyboardInterrupt`` (a
    traceback, and the process killed by the signal itself: exit -2).
    """
    # what signal.signal returns: a handler, SIG_DFL/SIG_IGN, or None (not set from Python)
    old: dict[signal.Signals, Callable[[int, FrameType | None], Any] | int | None] = {}
    _dropped.clear()
    hook = sys.unraisablehook
    sys.unraisablehook = _unraisable(hook)
    try:
        try:  # (installed inside the try: a signal right after SIGINT's handler is set is caught)
            for s, handler in ((signal.SIGINT, _interrupt), (signal.SIGTERM, _terminate)):
                if threading.current_thread() is not threading.main_thread():
                    break  # Python delivers signals to the main thread only, and sets handlers there
                old[s] = signal.getsignal(s)  # (recorded first: a signal may end the next call)
                signal.signal(s, handler)
            code = _main(argv)
            if _dropped:  # a signal's exception was dropped on the way: the signal still ends the run
                raise KeyboardInterrupt if _dropped[0] == signal.SIGINT else Terminated(_dropped[0])
            return code
        finally:
            # A signal still pending runs its handler (this function's) as the first restore
            # begins: it raises here, inside the try, and ends in one line like any other.
            _restore(old)
    except KeyboardInterrupt:
        _say("kmc: interrupted")
        return EXIT_INTERRUPTED
    except MemoryError:
        # Anywhere (importing a library, loading a spec): one line, the resource code.
        _say("kmc: stopped: out of memory (the process could not allocate: MemoryError)")
        return EXIT_RESOURCE_LIMIT
    except Terminated as t:
        _say("kmc: stopped (SIGTERM)")
        return 128 + t.signum
    except Exception as e:
        # Python wraps what a few hooks raise (``__set_name__`` in a class body of a module
        # being imported, as rich's are on the first output): a signal's exception arrives
        # as the context of another. It is still that signal.
        signum = _signal_behind(e)
        if signum is None:
            raise
        _say("kmc: interrupted" if signum == signal.SIGINT else "kmc: stopped (SIGTERM)")
        return 128 + signum
    finally:
        _restore(old, quiet=True)  # again: a signal interrupted the first restore
        sys.unraisablehook = hook


def _signal_behind(error: BaseException) -> int | None:
    """The signal whose exception ``error`` wraps (as its cause or context, at any depth),
    or ``None``."""
    seen: set[int] = set()
    e: BaseException | None = error
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        if isinstance(e, KeyboardInterrupt):
            return int(signal.SIGINT)
        if isinstance(e, Terminated):
            return e.signum
        e = e.__cause__ or e.__context__
    return None


def _restore(
    old: dict[signal.Signals, Callable[[int, FrameType | None], Any] | int | None], quiet: bool = False
) -> None:
    """Put back the handlers ``old`` holds. ``quiet``: a signal that arrives meanwhile
    (a second one, the run's outcome already decided) does not change it."""
    for s, previous in old.items():
        for _ in range(3):
            try:
                signal.signal(s, previous)
                break
            except (KeyboardInterrupt, Terminated):  # its pending signal has run; try again
                if not quiet:
                    raise


def _say(line: str) -> None:
    try:
        sys.stderr.write(line + "\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass


def _main(argv: Sequence[str] | None) -> int:
    args = build_parser(argv, every=False).parse_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)  # the command line, as the user typed it
    out, err = consoles()
    reuse_freed_memory()  # the allocator's settings for a run of large arrays
    try:
        try:
            code: int = args.run(args, out, err)
            return code
        except SystemExit as e:
            raise _exited(args, e) from None
    except KmcError as e:
        from kmc.checker.base.text import safe_text  # messages quote files and values: never raw escapes

        err.print(f"kmc: error: {safe_text(e)}", markup=False, highlight=False, soft_wrap=True)
        return e.exit_code
    except BrokenPipeError:
        return EXIT_OK


def _exited(args: argparse.Namespace, e: SystemExit) -> KmcError:
    """A ``SystemExit`` out of a command (kmc's commands return their code, never exit):
    a model's code called ``sys.exit`` or ``exit()``, an exception of the model like any
    other, one line and exit 2, never kmc's exit status."""
    from kmc.checker.base.errors import ModelError
    from kmc.checker.contract.model_errors import blame

    model = args.model
    return ModelError(f"--model {model}: {blame(e)}" if model else blame(e))


def run() -> NoReturn:  # console-script entry point
    code = main()
    # The verdict is printed and its exit code decided: a signal from now on (while the
    # interpreter frees the run's memory) must neither kill the process silently nor
    # change its code. Flush, then ignore SIGINT and SIGTERM (an ignored signal stays
    # ignored while the interpreter shuts down, in every thread).
    try:
        sys.stdout.flush()
    except (OSError, ValueError):
        pass
    for s in (signal.SIGINT, signal.SIGTERM):
        try:
            signal.signal(s, signal.SIG_IGN)
        except ValueError:  # not the main thread
            break
    _forget_handled_interrupt()
    sys.exit(code)


def _forget_handled_interrupt() -> None:
    """Clear CPython's note of a KeyboardInterrupt that left code it ran through its
    ``PyRun_*`` entry points (an import that executes source that way). kmc caught that
    interrupt, said so and chose its exit code; left set, the note makes the interpreter end
    the process with SIGINT itself as it exits (exit -2 instead of 130, after "kmc:
    interrupted" was printed). Other Python implementations have no such note."""
    try:
        import ctypes

        ctypes.c_int.in_dll(ctypes.pythonapi, "_Py_UnhandledKeyboardInterrupt").value = 0
    except (ImportError, AttributeError, ValueError, OSError):
        pass


if __name__ == "__main__":
    run()
