"""The generic engines, fingerprints and the command line of kmc."""

from .errors import EngineError, KmcError, SpecError, UsageError
from .fingerprint import fingerprint
from .graph import GraphTooLarge, state_graph, write_graph
from .kernel import check_state, check_step, expand, split_properties
from .local import LocalEngine, Options, check
from .protocol import ALWAYS, STEP, Model, Property, successors
from .simulate import SimulationResult, SimulationStats, simulate
from .result import HOLDS, UNKNOWN, VIOLATED, CheckResult, Path, Stats, Step, Violation
from .trace import replay_choices, replay_fingerprints

__version__ = "0.1.0"

__all__ = [
    "ALWAYS", "CheckResult", "GraphTooLarge", "SimulationResult", "SimulationStats", "EngineError", "HOLDS", "KmcError", "LocalEngine", "Model",
    "Options", "Path", "Property", "STEP", "SpecError", "Stats", "Step", "UNKNOWN",
    "UsageError", "VIOLATED", "Violation", "check", "check_state", "check_step", "expand",
    "fingerprint", "simulate", "state_graph", "write_graph", "replay_choices", "replay_fingerprints", "split_properties", "successors",
]
