"""The engine core of kmc: the model protocol, the kernel, the engines, fingerprints,
seen-sets, traces and checkpoints. It knows no model; the Kafka application (the ``kmc``
command line) lives in ``kmc.app``.

The public names are imported on first use (PEP 562), so that ``import kmc.checker`` is
cheap. Importing it changes nothing in the process (no signal handler: a run installs its
own, ``checker.base.signals``, and the ``kmc`` program its start-up ones, ``kmc.app.program``).
"""

from typing import TYPE_CHECKING, Any

from .base.errors import EngineError, KmcError, SpecError, UsageError

if TYPE_CHECKING:  # the names as the type checker (and a user's model) sees them
    from .base.fingerprint import fingerprint as fingerprint
    from .contract.batch_kernel import KernelBase as KernelBase
    from .contract.properties import (
        ALWAYS as ALWAYS,
        ALWAYS_EVENTUALLY as ALWAYS_EVENTUALLY,
        LEADS_TO as LEADS_TO,
        POSSIBLY as POSSIBLY,
        Property as Property,
        STEP as STEP,
    )
    from .contract.protocol import (
        Model as Model,
        ModelBase as ModelBase,
        action_name as action_name,
        with_defaults as with_defaults,
    )
    from .core.assembly import split_properties as split_properties
    from .core.kernel import expand as expand
    from .core.level import state_failures as state_failures, step_failures as step_failures
    from .core.options import Options as Options
    from .core.result import (
        CheckResult as CheckResult,
        HOLDS as HOLDS,
        Path as Path,
        Stats as Stats,
        Step as Step,
        UNKNOWN as UNKNOWN,
        VIOLATED as VIOLATED,
        Violation as Violation,
    )
    from .core.trace import replay_choices as replay_choices, replay_fingerprints as replay_fingerprints
    from .engines import make_engine as make_engine
    from .graph.export import GraphTooLarge as GraphTooLarge, write_graph as write_graph
    from .local.simulate import (
        SimulationResult as SimulationResult,
        SimulationStats as SimulationStats,
        simulate as simulate,
    )
    from .local.state_graph import state_graph as state_graph
    from .local.states import LocalEngine as LocalEngine, check as check

__version__ = "0.1.0"

_LAZY = {
    "fingerprint": ".base.fingerprint",
    "simulate": ".local.simulate",
    "SimulationResult": ".local.simulate",
    "SimulationStats": ".local.simulate",
    "GraphTooLarge": ".graph.export",
    "state_graph": ".local.state_graph",
    "write_graph": ".graph.export",
    "state_failures": ".core.level",
    "step_failures": ".core.level",
    "expand": ".core.kernel",
    "split_properties": ".core.assembly",
    "LocalEngine": ".local.states",
    "Options": ".core.options",
    "check": ".local.states",
    "make_engine": ".engines",
    "ALWAYS": ".contract.properties",
    "STEP": ".contract.properties",
    "POSSIBLY": ".contract.properties",
    "ALWAYS_EVENTUALLY": ".contract.properties",
    "LEADS_TO": ".contract.properties",
    "Model": ".contract.protocol",
    "ModelBase": ".contract.protocol",
    "KernelBase": ".contract.batch_kernel",
    "with_defaults": ".contract.protocol",
    "Property": ".contract.properties",
    "action_name": ".contract.protocol",
    "HOLDS": ".core.result",
    "UNKNOWN": ".core.result",
    "VIOLATED": ".core.result",
    "CheckResult": ".core.result",
    "Path": ".core.result",
    "Stats": ".core.result",
    "Step": ".core.result",
    "Violation": ".core.result",
    "replay_choices": ".core.trace",
    "replay_fingerprints": ".core.trace",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'checker' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


# Written out, not built from _LAZY: the type checker reads only a literal list for
# ``from kmc.checker import *`` (tests/test_packaging.py keeps the three lists in step).
__all__ = [
    "ALWAYS",
    "POSSIBLY",
    "ALWAYS_EVENTUALLY",
    "LEADS_TO",
    "CheckResult",
    "action_name",
    "GraphTooLarge",
    "SimulationResult",
    "SimulationStats",
    "EngineError",
    "HOLDS",
    "KmcError",
    "LocalEngine",
    "Model",
    "ModelBase",
    "KernelBase",
    "with_defaults",
    "Options",
    "Path",
    "Property",
    "STEP",
    "SpecError",
    "Stats",
    "Step",
    "UNKNOWN",
    "UsageError",
    "VIOLATED",
    "Violation",
    "check",
    "state_failures",
    "step_failures",
    "expand",
    "fingerprint",
    "make_engine",
    "simulate",
    "state_graph",
    "write_graph",
    "replay_choices",
    "replay_fingerprints",
    "split_properties",
]
