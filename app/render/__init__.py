"""Rendering the results of kmc: the terminal (rich), JSON, TLA+-style text and progress output.

The engines return plain values (``checker.core.result``); this package turns them into what
people and programs read. It is the only package that imports rich.
"""

from .json_result import (
    SCHEMA_VERSION,
    action_to_dict,
    expectation,
    result_to_dict,
    state_from_dict,
    state_to_dict,
    trace_to_dict,
    verdicts,
    write_json,
)
from .progress import ProgressDisplay
from .result_view import ResultView
from .terminal import StateView, TraceView, diff_lines
from .tla import state_text, trace_text, violation_text

__all__ = [
    "ProgressDisplay",
    "ResultView",
    "SCHEMA_VERSION",
    "StateView",
    "TraceView",
    "action_to_dict",
    "diff_lines",
    "expectation",
    "result_to_dict",
    "state_from_dict",
    "state_text",
    "state_to_dict",
    "trace_text",
    "trace_to_dict",
    "violation_text",
    "verdicts",
    "write_json",
]
