"""A property's array form, read the one way every search reads it.

A property may carry its array form itself (``Property.mask``, a function of the kernel
and the rows); a kernel may also answer ``invariant_mask``/``step_mask``/``goal_mask``
by name. The property's own form comes first: it sits beside the per-state check, where
a reviewer reads one against the other. ``None`` means no array form: the search asks
the property state by state. Rows of Python states (``checker.core.states_kernel``) have no
array form at all.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .protocol import ALWAYS, STEP_COVER, Expander, Property


def state_mask(kernel: Expander, prop: Property, rows: Any) -> np.ndarray | None:
    """Per row: true where the ``"always"`` property ``prop`` is violated, or where the
    ``"possibly"`` property ``prop``'s goal holds; ``None`` when there is no array form."""
    if not kernel.arrays:
        return None
    if prop.mask is not None:
        return np.asarray(prop.mask(kernel, rows), dtype=bool)
    if prop.kind == ALWAYS:
        mask = kernel.invariant_mask(prop.name, rows)
    else:
        mask = kernel.goal_mask(prop.name, rows)
    return None if mask is None else np.asarray(mask, dtype=bool)


def step_mask(
    kernel: Expander, prop: Property, rows: Any, parents: np.ndarray, after: Any, codes: np.ndarray | None = None
) -> np.ndarray | None:
    """Per transition ``rows[parents[i]] -> after[i]`` (of action code ``codes[i]``): true
    where the step property ``prop`` is violated, or where the step cover ``prop``'s
    predicate holds; ``None`` when there is no array form."""
    if not kernel.arrays:
        return None
    if prop.kind == STEP_COVER:
        if prop.mask is None or codes is None:
            return None
        return np.asarray(prop.mask(kernel, rows, parents, codes, after), dtype=bool)
    if prop.mask is not None:
        return np.asarray(prop.mask(kernel, rows, parents, after), dtype=bool)
    mask = kernel.step_mask(prop.name, rows, parents, after)
    return None if mask is None else np.asarray(mask, dtype=bool)
