"""What the packages may know of each other, and how the core asks a model what it can do."""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np

from kmc.checker.engines import make_engine
from kmc.checker.protocol import BatchKernel, GoalMasks, HasBatchKernel, KernelBase, OwnFingerprints, capable

ROOT = Path(__file__).resolve().parent.parent


def _probes(path):
    """The ``hasattr``/``getattr`` calls of a module whose object is a model, a kernel or an
    engine (by its name)."""
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("hasattr", "getattr"):
            target = ast.unparse(node.args[0]) if node.args else ""
            if any(word in target for word in ("model", "kernel", "engine", "search", "seen")):
                out.append(f"{path.name}:{node.lineno}: {ast.unparse(node)}")
    return out


def test_the_core_declares_capabilities_instead_of_probing_them():
    found = [probe for path in sorted((ROOT / "checker").rglob("*.py")) for probe in _probes(path)]
    assert found == []


def test_the_batch_kernel_protocol_declares_goal_masks_and_fingerprints():
    assert {"goal_mask", "fingerprints"} <= set(dir(BatchKernel))


def test_kernel_base_gives_the_optional_members_their_defaults():
    class Bare(KernelBase):
        width = 8
        action_names = ()

    kernel = Bare()
    rows = np.zeros((2, 8), dtype=np.uint8)
    assert capable(kernel, GoalMasks) and capable(kernel, OwnFingerprints)
    assert kernel.goal_mask("G", rows) is None and kernel.invariant_mask("I", rows) is None
    assert len(set(kernel.fingerprints(rows).tolist())) == 1


def test_a_model_without_a_kernel_runs_per_state():
    from toy import TwoCounters

    assert not capable(TwoCounters(), HasBatchKernel)
    assert make_engine(TwoCounters()).path == "per-state"
