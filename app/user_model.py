"""A user's own model on the command line: ``--model pkg.mod:factory`` (or
``path/to/file.py:factory``) with ``--param NAME=VALUE`` arguments for the factory.

``ModelSpec`` stands where a Kafka spec file stands for the commands (``kmc check``,
``kmc bench``): it names the model, builds it, and selects its properties; it has no
options of its own (they come from the command line). What a spec's ``[expect]`` table
says, a model says with an optional ``expect()`` method (``DeclaresExpectations``), which
``kmc check --check-expect`` compares with the result.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import inspect
import os
import sys
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import attrs
from kmc.app.render.json_result import compare_expected
from kmc.checker.base.errors import KmcError, ModelError, UsageError
from kmc.checker.contract.model_errors import blame, value_text, where_defined
from kmc.checker.contract.protocol import Property, with_defaults

if TYPE_CHECKING:  # for the annotations only: imported on first use
    from collections.abc import Sequence

    from kmc.checker.contract.protocol import Model
    from kmc.checker.core.result import CheckResult


# What the factory's object must have (``checker.contract.protocol.Model``).
MODEL_FUNCTIONS = ("init_states", "actions", "next_state", "properties", "encode")


@attrs.frozen
class ModelSpec:
    """A model given by its factory (see the module)."""

    ref: str
    params: dict[str, Any]
    factory: Callable[..., Any] = attrs.field(repr=False)
    sha256: str = ""
    source: str | None = None  # the file the factory was loaded from, when given as a path
    # what a spec file would set: nothing, the command line decides
    title: str = ""
    description: str = ""
    expect: dict[str, Any] = attrs.field(factory=dict)
    engine: str = "local"
    store: str = "memory"
    workers: int | None = None
    max_depth: int | None = None
    max_states: int | None = None
    max_memory: int | None = None
    keep_going: bool = False
    symmetry: bool = False
    tables: dict[str, Any] = attrs.field(factory=dict)  # a spec file's application tables: none

    @property
    def path(self) -> str:
        return self.ref

    @property
    def name(self) -> str:
        return self.ref

    def model(self) -> Model:
        """The model the factory returns, checked to have the protocol's functions.

        Raises:
            UsageError: the factory does not take the ``--param`` names.
            ModelError: the factory raised, or returned something that is not a model.
        """
        try:
            inspect.signature(self.factory).bind(**self.params)
        except TypeError as e:
            raise UsageError(f"--model {self.ref}: --param: {e}") from None
        except ValueError:  # a callable without a signature: the call says it
            pass
        try:
            model = self.factory(**self.params)
        except Exception as e:  # the user's code: one line, never a traceback
            raise ModelError(f"--model {self.ref}: {blame(e)}") from None
        missing = [name for name in MODEL_FUNCTIONS if not callable(getattr(model, name, None))]
        if isinstance(model, type) or missing:
            what = f"the class {model.__name__}, not an instance" if isinstance(model, type) else f"{value_text(model)}"
            lacks = f" (it has no {', '.join(missing)})" if missing and not isinstance(model, type) else ""
            raise ModelError(
                f"--model {self.ref}: {where_defined(self.factory)} returned {what}{lacks}; a model's factory "
                f"returns an object with {', '.join(MODEL_FUNCTIONS)} (docs/writing-a-model.md)"
            )
        return with_defaults(model)  # the protocol's defaults, given once

    def properties(self, names: Sequence[str] | None = None) -> list[Property]:
        model = self.model()
        props = self._call(model.properties)
        if isinstance(props, (str, bytes)) or not isinstance(props, Iterable):
            raise ModelError(
                f"--model {self.ref}: {where_defined(model.properties)} returned {value_text(props)}; it must return "
                "a sequence of kmc.checker.contract.protocol.Property"
            )
        props = list(props)
        named: set[str] = set()
        for p in props:
            if not isinstance(p, Property):
                raise ModelError(
                    f"--model {self.ref}: {where_defined(model.properties)} returned {value_text(p)} among its "
                    "properties; each must be a kmc.checker.contract.protocol.Property"
                )
            if p.name in named:  # (a verdict, a counterexample and --invariant name one property each)
                raise ModelError(
                    f"--model {self.ref}: {where_defined(model.properties)} returned two properties named "
                    f"{p.name!r}; each property needs a name of its own"
                )
            named.add(p.name)
        if not names:
            return props
        by_name = {p.name: p for p in props}
        unknown = [n for n in names if n not in by_name]
        if unknown:
            raise UsageError(
                f"--invariant: {', '.join(unknown)} is not a property of {self.ref} "
                f"(it has {', '.join(by_name) or 'none'})"
            )
        return [by_name[n] for n in names]

    def _call(self, fn: Callable[..., Any], *args: Any) -> Any:
        try:
            return fn(*args)
        except (KmcError, MemoryError):
            raise
        except Exception as e:  # the user's code: one line, never a traceback
            raise ModelError(f"--model {self.ref}: {blame(e)}") from None

    def probe(self, model: Model, kernel: bool) -> None:
        """Call the model (and, when ``kernel``, its batch kernel) on a sample of its first
        states: a model that breaks the protocol is refused before the search
        (``checker.contract.model_errors.probe``).

        Raises:
            ModelError: one line naming the model, the function, its file and line.
        """
        from kmc.checker.contract.model_errors import probe
        from kmc.checker.contract.protocol import batch_path

        try:
            probe(model, batch_path(model)[0] if kernel else None)
        except ModelError as e:
            raise ModelError(f"--model {self.ref}: {e}") from None
        except (KmcError, MemoryError):
            raise
        except Exception as e:  # batch_kernel() raised
            raise failure(self.ref, e) from None

    @property
    def resolved_ref(self) -> str:
        """The reference that rebuilds the model from any folder: a file's absolute path
        and the factory, else the module reference as given."""
        if self.source is None:
            return self.ref
        return f"{self.source}:{self.ref.rpartition(':')[2]}"

    def checkpoint_identity(self) -> dict[str, Any]:
        """What a checkpoint's header records of the model, every key compared on resume:
        ``model_ref`` (``resolved_ref``, what ``kmc check --resume DIR`` rebuilds it
        from), ``model_params`` and ``model_sha256`` (the source's SHA-256, when found)."""
        doc: dict[str, Any] = {"model_ref": self.resolved_ref, "model_params": dict(self.params)}
        if self.sha256:
            doc["model_sha256"] = self.sha256
        return doc

    def identity(self) -> dict[str, Any]:
        """What a result document records to rebuild the model (``kmc replay``): the
        reference as given, a file's absolute path, the parameters, the source's SHA-256."""
        doc: dict[str, Any] = {"ref": self.ref, "params": dict(self.params), "sha256": self.sha256}
        if self.source is not None:
            doc["file"] = self.resolved_ref
        return doc


# -- expectations: the [expect] table of a model --------------------------------------------

COUNT_KEYS = ("distinct_states", "depth")
VERDICTS = ("holds", "violated")
EXPECT_HOW = (
    'give the model an expect() method returning its expectations, e.g. {"Consistent": "holds", '
    '"distinct_states": 288, "depth": 11} (docs/writing-a-model.md)'
)


@runtime_checkable
class DeclaresExpectations(Protocol):
    """An optional member of a user's model: what a check of it must find, as a Kafka
    spec's ``[expect]`` table says it (``kmc check --check-expect``).

    ``expect()`` returns a mapping: a property's name to ``"holds"`` or ``"violated"``,
    and optionally ``"distinct_states"`` and ``"depth"`` to the counts of a search that
    explores every reachable state (without symmetry reduction). Every key is optional;
    the values may depend on the model's parameters."""

    def expect(self) -> Mapping[str, object]: ...


def expectations(spec: ModelSpec, model: Model) -> dict[str, Any] | None:
    """The model's ``expect()`` mapping, checked; ``None`` when it declares none.

    Raises:
        UsageError: ``expect()`` fails, or returns a key that is neither a property of
            the model nor a count, or a value of the wrong kind (one line).
    """
    if not isinstance(model, DeclaresExpectations):
        return None
    where = f"--model {spec.ref}: expect()"
    try:
        table = model.expect()
    except Exception as e:  # the user's code: one line, never a traceback
        raise UsageError(f"{where} failed ({type(e).__name__}: {e})") from None
    if not isinstance(table, Mapping):
        raise UsageError(f"{where} must return a mapping, got {type(table).__name__}")
    names = [p.name for p in model.properties()]
    out: dict[str, Any] = {}
    for key, value in table.items():
        if key in COUNT_KEYS:
            if type(value) is not int or value < 1:
                raise UsageError(f"{where}: {key} must be a positive whole number, got {value!r}")
        elif key in names:
            if value not in VERDICTS:
                raise UsageError(f'{where}: {key} must be "holds" or "violated", got {value!r}')
        else:
            raise UsageError(
                f"{where}: {key!r} is neither a property of the model ({', '.join(names) or 'none'}) "
                f"nor one of {', '.join(COUNT_KEYS)}"
            )
        out[key] = value
    return out


def expectation(expected: dict[str, Any], result: CheckResult, symmetry: bool = False) -> dict[str, Any]:
    """Compare a run with a model's expectations, as ``render.expectation`` compares a
    spec's: ``{"expected", "got", "matched", "mismatches", "unchecked"}``. A verdict left
    unknown does not match; a property that was not checked, and a count when the search
    did not explore every reachable state (it stopped early, at a violation without
    ``--keep-going`` or at a bound, or counted orbits with ``--symmetry``), are
    ``unchecked``."""
    got: dict[str, Any] = {name: result.verdict(name) for name in result.checked}
    whole = result.stopped is None and not symmetry
    if whole:
        got.update(distinct_states=result.stats.distinct, depth=result.stats.depth)
    return compare_expected(expected, got)


def failure(ref: str, e: BaseException) -> ModelError:
    """The one-line error for an exception the model ``ref`` raised during a run."""
    return ModelError(f"--model {ref}: {blame(e)}")


def parse_params(items: Iterable[str] | None) -> dict[str, Any]:
    """``NAME=VALUE`` strings as keyword arguments: a value is an int, a float,
    ``true``/``false`` or else a string."""
    out: dict[str, Any] = {}
    for item in items or ():
        name, eq, text = item.partition("=")
        if not eq or not name.isidentifier():
            raise UsageError(f"--param: {item!r} is not NAME=VALUE")
        out[name] = _value(text)
    return out


def _value(text: str) -> int | float | bool | str:
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return {"true": True, "false": False}.get(text.lower(), text)


def load_model_spec(ref: str, params: dict[str, Any]) -> ModelSpec:
    """The model ``ref`` names: ``module:factory`` or ``file.py:factory``.

    Raises:
        UsageError: the reference is malformed, the module or file cannot be imported,
            or it has no such factory (one line naming ``--model`` and the reference).
    """
    where, colon, attr = ref.rpartition(":")
    if not colon or not where or not attr.isidentifier():
        raise UsageError(f"--model: {ref!r} is not MODULE:FACTORY or FILE.py:FACTORY")
    source = None
    try:
        if where.endswith(".py"):
            source = os.path.abspath(where)
            module = _import_file(source)
        else:
            module = importlib.import_module(where)
    except UsageError:
        raise
    except Exception as e:  # the user's module failed to import: say so in one line
        from kmc.checker.contract.model_errors import model_frame, traceback_frames

        if isinstance(e, KmcError):  # (a Spark task's error, when the module runs an engine)
            why = str(e)
        elif model_frame(traceback_frames(e.__traceback__)) is not None:
            why = blame(e)
        else:  # (a syntax error: no frame of the module ran)
            why = f"{type(e).__name__}: {e}"
        raise UsageError(f"--model {ref}: cannot import {where}: {why}") from None
    factory = vars(module).get(attr)
    if not callable(factory):
        raise UsageError(f"--model {ref}: {where} has no callable {attr}")
    file = source or vars(module).get("__file__")
    digest = hashlib.sha256(Path(file).read_bytes()).hexdigest() if file else ""
    return ModelSpec(ref, params, factory, digest, source)


def _import_file(path: str) -> ModuleType:
    """Import the Python file ``path`` as a module named after it, its folder on the
    import path (and on the Spark workers', through ``PYTHONPATH``), so that its classes
    pickle by reference."""
    if not os.path.isfile(path):
        raise UsageError(f"--model: {path}: no such file")
    folder, name = os.path.dirname(path), Path(path).stem
    if folder not in sys.path:
        sys.path.insert(0, folder)
        os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (folder, os.environ.get("PYTHONPATH")) if p)
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise UsageError(f"--model: {path}: not a Python module")
    module = sys.modules.get(name)
    if module is not None and os.path.abspath(vars(module).get("__file__") or "") == path:
        return module
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
