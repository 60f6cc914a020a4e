"""A wrong batch kernel stops the run with one line; it never gives a wrong count
(``checker.contract.kernel_check``, ``checker.contract.properties``)."""

from __future__ import annotations

import re

import attrs
import numpy as np
import pytest
from counter_kernels import CountersKernel, KernelCounters, WrongMask, WrongSuccessor, widened, wrapping
from kmc.checker.engines import make_engine
from kmc.checker.contract.kernel_check import KernelMismatchError
from kmc.checker.core.options import Options
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


class DropsAtDepth120(CountersKernel):
    """Right at every depth but 120, where it drops the successors (IncX and IncY) of
    every state (x + y = 119)."""

    def expand(self, rows):
        parents, choices, codes, succ = super().expand(rows)
        cols = self._columns(rows)
        keep = cols[parents, 0].astype(np.int64) + cols[parents, 1] != 119
        return parents[keep], choices[keep], codes[keep], succ[keep]


def test_a_kernel_wrong_only_deep_in_the_search_is_caught():
    """Sampled on its first levels only, this kernel passed (no violation, the search ending
    at depth 120) where the model's own search finds x + y reach 150 at depth 151."""
    model = KernelCounters(n=100, limit=150, kernel=DropsAtDepth120)
    per_state = make_engine(model, per_state=True).run()
    assert len(per_state.violations["SumBelow"].path) == 151
    with pytest.raises(KernelMismatchError) as caught:
        make_engine(model).run()
    message = str(caught.value)
    assert "\n" not in message and "not enabled by the kernel): kernel '0 (choices [])', model '" in message
    x, y = map(int, re.search(r"state Counters\(x=(\d+), y=(\d+)\)", message).groups())
    assert x + y == 119


def test_the_result_says_how_many_states_were_cross_checked(monkeypatch):
    """n = 9: levels of 1, 2, ..., 10, ..., 2, 1 states (depth d: min(d, 20 - d) states).
    Four evenly spread parents of each of the first eight levels (the ranks divisible by
    max(1, size // 4)): 1 + ... + 7 and 4 of the 8 at depth 8; two of each deeper level
    (max(1, size // 2)): 3 of 9, 2 of 10, 3 of 9, 2 of 8, then 3, 2, 3, 2, 3, 2, 1 of the
    levels of 7 down to 1 state: 28 + 4 + 10 + 16."""
    from kmc.checker.contract.kernel_check import KernelCheck

    compared = []
    original = KernelCheck.compare

    def counting(self, chunk, parents, choices, codes, succ, which):
        compared.append(len(which))
        return original(self, chunk, parents, choices, codes, succ, which)

    monkeypatch.setattr(KernelCheck, "compare", counting)
    model = KernelCounters(n=9, limit=10**6, kernel=SampledKernel)
    result = make_engine(model).run()
    assert result.stats.distinct == 100 and result.stats.cross_checked == sum(compared) == 58
    compared.clear()
    full = make_engine(model, options=Options(verify_kernel=True)).run()
    assert full.stats.cross_checked == sum(compared) == 100
    assert make_engine(model, per_state=True).run().stats.cross_checked == 0
    # a kernel that does not say it may be sampled (a model's own) is compared on every state
    compared.clear()
    own = make_engine(KernelCounters(n=9, limit=10**6)).run()
    assert own.stats.cross_checked == sum(compared) == 100


class SampledKernel(CountersKernel):
    sampled_comparison = True


def test_a_kernel_wrong_on_one_state_of_a_wide_level_is_caught():
    """The 61 x 61 grid whose kernel never enables IncY at (20, 40) (the level of x + y = 60
    holds 61 states): sampled, the run passed with every one of the 3,721 states counted; the
    per-state path finds OneStep violated at depth 62."""
    from counter_kernels import OneStepCounters, NeverIncYAtOneState

    model = OneStepCounters(n=60, limit=10**6, kernel=NeverIncYAtOneState)
    going = Options(keep_going=True)
    per_state = make_engine(model, options=going, per_state=True).run()
    assert per_state.stats.distinct == 61 * 61 and len(per_state.violations["OneStep"].path) == 62
    sampled = make_engine(OneStepCounters(n=60, limit=10**6, kernel=type("S", (NeverIncYAtOneState,), {
        "sampled_comparison": True}))).run()  # what the sample alone decided: a wrong verdict
    assert (sampled.stats.distinct, sampled.violations) == (61 * 61, {})
    with pytest.raises(KernelMismatchError, match=r"state Counters\(x=20, y=40\): successors \(IncY not enabled"):
        make_engine(model).run()
    right = make_engine(OneStepCounters(n=60, limit=10**6), options=going).run()  # the right kernel: the model's verdict
    assert summary(right) == summary(per_state) and right.stats.cross_checked == 61 * 61
