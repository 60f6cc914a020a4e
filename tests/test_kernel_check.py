"""A wrong batch kernel stops the run with one line; it never gives a wrong count
(``checker.kernel_check``, ``checker.masks``)."""

from __future__ import annotations

import attrs
import numpy as np
import pytest
from counter_kernels import CountersKernel, KernelCounters, WrongMask, WrongSuccessor, widened, wrapping
from kmc.checker.engines import make_engine
from kmc.checker.kernel_check import KernelMismatchError
from kmc.checker.options import Options
from toy import SumBelow


def summary(result):
    s = result.stats
    return (
        s.distinct,
        s.generated,
        s.depth,
        s.levels,
        s.fired,
        s.new,
        {n: v.path.choices for n, v in result.violations.items()},
    )


def test_a_right_kernel_agrees_with_the_model_on_every_state():
    options = Options(keep_going=True, verify_kernel=True)
    batch = make_engine(KernelCounters(), options=options)
    assert batch.path == "batch"
    assert summary(batch.run()) == summary(make_engine(KernelCounters(), options=options, per_state=True).run())


def test_a_uint8_column_that_would_wrap_is_refused_by_default():
    """The n = 300 counters in uint8 columns: once reported 65,536 states at depth 511
    (the per-state path finds 90,601 at depth 601); now refused where x first wraps."""
    with pytest.raises(KernelMismatchError) as caught:
        make_engine(wrapping(300)).run()
    message = str(caught.value)
    assert "\n" not in message
    assert "state Counters(x=255, y=0), action IncX: successor x: kernel 0, model 256" in message


@pytest.mark.slow
def test_the_widened_kernel_counts_what_the_model_counts():
    result = make_engine(widened(300)).run()
    assert (result.stats.distinct, result.stats.depth) == (90_601, 601)


def test_a_mask_that_never_fires_is_caught():
    with pytest.raises(
        KernelMismatchError, match=r"state Counters\(x=\d, y=\d\): SumBelow mask: kernel False, model True"
    ):
        make_engine(KernelCounters(kernel=WrongMask), options=Options(verify_kernel=True)).run()


def test_a_mask_that_fires_where_the_property_holds_is_caught():
    class Eager(CountersKernel):
        def invariant_mask(self, name, rows):
            return np.ones(len(rows), dtype=bool)

    with pytest.raises(
        KernelMismatchError, match=r"state Counters\(x=0, y=0\): SumBelow mask: kernel True, model False"
    ):
        make_engine(KernelCounters(kernel=Eager)).run()


def test_a_wrong_successor_is_caught_with_one_line():
    with pytest.raises(KernelMismatchError) as caught:
        make_engine(KernelCounters(kernel=WrongSuccessor)).run()
    assert str(caught.value).startswith(
        "the batch kernel and the model disagree at state Counters(x=1, y=0), action IncY: "
        "successor y: kernel 2, model 1"
    )


def test_the_engine_reads_the_property_mask_itself():
    """``Property.mask`` answers before the kernel's own ``invariant_mask``: a property whose
    mask never fires is caught even when the kernel's method is right."""

    def never(kernel, rows):
        return np.zeros(len(rows), dtype=bool)

    model = KernelCounters()
    wrong = attrs.evolve(SumBelow, mask=never)
    with pytest.raises(KernelMismatchError, match="SumBelow mask: kernel False, model True"):
        make_engine(model, [wrong], Options(verify_kernel=True)).run()
    # and a right one is used: it is called
    calls = []

    def right(kernel, rows):
        calls.append(len(rows))
        cols = rows.view(np.uint16)
        return cols[:, 0].astype(np.int64) + cols[:, 1] >= kernel.limit

    result = make_engine(model, [attrs.evolve(SumBelow, mask=right)], Options()).run()
    assert (
        calls and result.violations["SumBelow"].path.states[-1].x + result.violations["SumBelow"].path.states[-1].y == 5
    )
