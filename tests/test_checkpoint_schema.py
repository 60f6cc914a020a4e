"""The schema of a checkpoint's snapshot (kmc.checker.checkpoints.schema): one tag per engine
and path, one check, one reader of the shapes older kmc versions wrote, and the path the
app resumes on."""

from __future__ import annotations

import copyreg
import pickle

import attrs
import numpy as np
import pytest
from kmc.checker.base.errors import EngineError
from kmc.checker.checkpoints.file import CheckpointError
from kmc.checker.checkpoints.schema import (
    FORMATS,
    OLD_STATES,
    ROWS_FORMAT,
    SNAPSHOT_FORMAT,
    STATES_FORMAT,
    STATES_ROWS_FORMAT,
    check_format,
    format_of,
    path_of,
    restore_snapshot,
    upgrade,
)


def test_every_engine_and_path_has_one_tag():
    assert len(set(FORMATS.values())) == len(FORMATS) == 4
    assert format_of("local", "batch") == ROWS_FORMAT and format_of("spark", "per-state") == STATES_FORMAT
    for (_engine, path), tag in FORMATS.items():
        assert path_of({"format": tag}) == path


def test_the_older_per_state_search_s_snapshot_is_tagged_and_resumes_on_that_path():
    old = {"engine": "local", "stats": {}, "found": {}, "frontier": [(1, "s")], "seen": {1: None}}
    new = upgrade(old)
    assert new["format"] == OLD_STATES and "format" not in old  # the snapshot read is left as it was
    assert path_of(old) == "per-state"
    check_format(new, STATES_ROWS_FORMAT)
    with pytest.raises(EngineError, match="resume it with --per-state"):
        check_format(new, ROWS_FORMAT)


def test_an_older_rows_frontier_becomes_the_memory_queue_s_part():
    rows = [np.arange(3), np.arange(3, 5)]
    new = restore_snapshot({"engine": "local", "format": ROWS_FORMAT, "frontier": rows, "seen": None}, ROWS_FORMAT)
    assert "frontier" not in new and new["queue"].kind == "memory"
    assert [list(b) for b in new["queue"].blocks()] == [[0, 1, 2], [3, 4]]
    same = {"format": ROWS_FORMAT, "queue": new["queue"]}
    assert upgrade(same) is same  # a snapshot of this kmc is read as it is


@attrs.frozen
class _Part:
    """A checkpoint part whose class gained three fields after an older kmc pickled it."""

    old: int
    added: str | None = None
    listed: list[int] = attrs.Factory(list)
    derived: int = attrs.Factory(lambda self: self.old + 1, takes_self=True)


def test_a_part_pickled_before_its_fields_were_added_gets_their_defaults():
    part = pickle.loads(pickle.dumps(PickledAs(_Part, {"old": 41})))  # the older class's one field
    assert type(part) is _Part and not hasattr(part, "added") and not hasattr(part, "listed")
    snapshot = {"format": ROWS_FORMAT, "seen": part, "stats": {"depth": 3}}
    assert upgrade(snapshot) is snapshot
    assert part == _Part(41, None, [], 42)
    kept = _Part(1, "x", [2], 7)
    upgrade({"format": ROWS_FORMAT, "queue": kept})
    assert kept == _Part(1, "x", [2], 7)  # a field the pickle holds is never replaced


class PickledAs:
    """Pickles as an instance of ``cls`` whose class then held only the fields of ``state``
    did: unpickled, it is a ``cls`` with the other fields unset, as attrs leaves them."""

    def __init__(self, cls, state):
        self.cls, self.state = cls, state

    def __reduce__(self):
        return copyreg._reconstructor, (self.cls, object, None), self.state  # object.__new__, then the state


@pytest.mark.parametrize(
    "tag, expected, error, words",
    [
        (ROWS_FORMAT, STATES_ROWS_FORMAT, EngineError, "resume it without --per-state"),
        (STATES_ROWS_FORMAT, ROWS_FORMAT, EngineError, "resume it with --per-state"),
        (STATES_FORMAT, SNAPSHOT_FORMAT, EngineError, "other path of the Spark engine; resume it --per-state"),
        (SNAPSHOT_FORMAT, STATES_FORMAT, EngineError, "resume it without --per-state"),
        (None, SNAPSHOT_FORMAT, CheckpointError, "retired per-state Spark engine"),
        ("rows-9", ROWS_FORMAT, CheckpointError, "not one this kmc reads"),
    ],
)
def test_one_check_says_how_to_resume(tag, expected, error, words):
    snapshot = {"engine": "spark" if expected in (SNAPSHOT_FORMAT, STATES_FORMAT) else "x", "format": tag}
    with pytest.raises(error, match=words) as e:
        check_format(snapshot, expected)
    assert "\n" not in str(e.value)


def test_the_per_state_path_counts_the_actions_of_a_model_that_names_none():
    """The per-state path is the rows search over the model's states: a model that declares
    no ``action_names()`` (and has no batch kernel) has its actions coded as they are met,
    with the counts of the model that declares them."""
    import attrs
    from toy import BareCounters

    from kmc.checker.local.states import LocalEngine, Options

    @attrs.frozen
    class Unnamed(BareCounters):
        def action_names(self):
            return None

    def counts(model):
        result = LocalEngine(model, options=Options(keep_going=True)).run()
        st = result.stats
        return st.distinct, st.generated, st.depth, dict(st.fired), dict(st.new), {
            k: v.path.choices for k, v in result.violations.items()}

    assert counts(Unnamed()) == counts(BareCounters())
