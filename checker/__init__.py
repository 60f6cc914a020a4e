"""The engine core of kmc: the model protocol, the kernel, the engines, fingerprints,
seen-sets, traces and checkpoints. It knows no model; the Kafka application (the ``kmc``
command line) lives in ``kmc.app``.

The public names are imported on first use (PEP 562), so that ``import kmc.checker`` is
cheap. Importing it changes nothing in the process (no signal handler: a run installs its
own, ``checker.base.signals``, and the ``kmc`` program its start-up ones, ``kmc.app.program``).
"""

from typing import Any

from .base.errors import EngineError, KmcError, SpecError, UsageError

# Names that are also submodules' names are bound now: importing the submodule later
# would otherwise leave the package attribute bound to the module, not the function.
from .base.fingerprint import fingerprint
from .local.simulate import SimulationResult, SimulationStats, simulate

__version__ = "0.1.0"

_LAZY = {
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
