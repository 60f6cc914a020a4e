"""The engine core of kmc: the model protocol, the kernel, the engines, fingerprints,
seen-sets, traces and checkpoints. It knows no model; the Kafka application (the ``kmc``
command line) lives in ``kmc.app``.

The public names are imported on first use (PEP 562), so that ``import kmc.checker`` is
cheap. Importing it changes nothing in the process (no signal handler: a run installs its
own, ``checker.signals``, and the ``kmc`` program its start-up ones, ``kmc.app.program``).
"""

from typing import Any

from .errors import EngineError, KmcError, SpecError, UsageError

# Names that are also submodules' names are bound now: importing the submodule later
# would otherwise leave the package attribute bound to the module, not the function.
from .fingerprint import fingerprint
from .simulate import SimulationResult, SimulationStats, simulate

__version__ = "0.1.0"

_LAZY = {
    "GraphTooLarge": ".graph",
    "state_graph": ".graph",
    "write_graph": ".graph",
    "state_failures": ".level",
    "step_failures": ".level",
    "expand": ".kernel",
    "split_properties": ".kernel",
    "LocalEngine": ".local",
    "Options": ".options",
    "check": ".local",
    "make_engine": ".engines",
    "ALWAYS": ".protocol",
    "STEP": ".protocol",
    "POSSIBLY": ".protocol",
    "ALWAYS_EVENTUALLY": ".protocol",
    "LEADS_TO": ".protocol",
    "Model": ".protocol",
    "ModelBase": ".protocol",
    "KernelBase": ".protocol",
    "with_defaults": ".protocol",
    "Property": ".protocol",
    "successors": ".protocol",
    "action_name": ".protocol",
    "format_action": ".protocol",
    "describe_step": ".protocol",
    "HOLDS": ".result",
    "UNKNOWN": ".result",
    "VIOLATED": ".result",
    "CheckResult": ".result",
    "Path": ".result",
    "Stats": ".result",
    "Step": ".result",
    "Violation": ".result",
    "replay_choices": ".trace",
    "replay_fingerprints": ".trace",
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
    "describe_step",
    "format_action",
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
    "successors",
]
