"""The one list of known bugs (``[model] bugs``, with ``fetch_bugs`` its synonym for the fetch
path's ids) and the operators' options of the spec: every id needs its option, each error is one
line naming the key, and a spec without them reads exactly as before."""

from __future__ import annotations

import pytest

from kmc.checker.base.errors import SpecError
from kmc.model import Config
from kmc.model.spec import parse_spec

_SPEC = '[model]\nreplicas = {n}\ntruncation = "leader-epoch-2.1"\n{extra}'


def _parse(extra, n=2):
    return parse_spec(_SPEC.format(n=n, extra=extra).encode(), "x.toml")


def _error(extra, n=2) -> SpecError:
    with pytest.raises(SpecError) as e:
        _parse(extra, n)
    assert "\n" not in str(e.value) and "x.toml" in str(e.value)
    return e.value


@pytest.mark.parametrize(("extra", "key", "words"), [
    ('bugs = ["KAFKA-13916"]', "model.bugs", "KAFKA-13916 needs model.max_controlled_shutdowns > 0"),
    ('bugs = ["KAFKA-15221"]', "model.bugs", "KAFKA-15221 needs model.broker_epochs = true"),
    ('bugs = ["KAFKA-16540"]', "model.bugs", "KAFKA-16540 needs model.eligible_leader_replicas = true"),
    ('bugs = ["KAFKA-16234"]', "model.bugs", "KAFKA-16234 needs model.max_disk_failures > 0"),
    ('bugs = ["KAFKA-14704"]', "model.bugs", "KAFKA-14704 needs model.truncate_on_fetch = true"),
    ('bugs = ["KAFKA-1"]', "model.bugs", 'unknown bug \'KAFKA-1\' (allowed: "KAFKA-13141", "KAFKA-14704", '
     '"KAFKA-13916", "KAFKA-15221", "KAFKA-16540", "KAFKA-16234")'),
    ('truncate_on_fetch = true\nfetch_bugs = ["KAFKA-15221"]', "model.fetch_bugs", "unknown bug 'KAFKA-15221'"),
    ('bugs = "KAFKA-16234"', "model.bugs", "must be a list of bug ids"),
    ("min_isr_changes = [3]", "model.min_isr_changes", "each value must be a min ISR between 1 and 2, got 3"),
    ("min_isr_changes = [0]", "model.min_isr_changes", "between 1 and 2, got 0"),
    ("min_isr_changes = [true]", "model.min_isr_changes", "got True"),
    ("min_isr_changes = 2", "model.min_isr_changes", "must be a list of min ISR values"),
    ("min_isr_lag = true", "model.min_isr_lag", "needs a non-empty model.min_isr_changes"),
    ("min_isr_lag = true\nmin_isr_changes = []", "model.min_isr_lag", "needs a non-empty"),
    ("max_controlled_shutdowns = 17", "model.max_controlled_shutdowns", "between 0 and 16"),
    ("max_disk_failures = -1", "model.max_disk_failures", "between 0 and 16"),
])
def test_each_bug_needs_its_option_and_each_error_names_the_key(extra, key, words):
    e = _error(extra)
    assert e.key == key and words in str(e), str(e)


def test_the_options_and_the_bugs_are_read_into_the_config():
    spec = _parse(
        "hw_requires_min_isr = true\neligible_leader_replicas = true\nalter_partition = true\n"
        "broker_epochs = true\nmax_controlled_shutdowns = 1\nmin_isr_changes = [2, 1]\nmin_isr_lag = true\n"
        "max_disk_failures = 1\ntruncate_on_fetch = true\nfetch_bugs = [\"KAFKA-14704\"]\n"
        'bugs = ["KAFKA-16234", "KAFKA-13141", "KAFKA-16540", "KAFKA-15221", "KAFKA-13916", "KAFKA-16234"]'
    )
    c = spec.config
    assert (c.max_controlled_shutdowns, c.min_isr_changes, c.min_isr_lag, c.max_disk_failures) == (1, (2, 1), True, 1)
    # fetch_bugs joins bugs; each id once, in one order, the fetch path's apart
    assert c.fetch_bugs == ("KAFKA-13141", "KAFKA-14704")
    assert c.bugs == ("KAFKA-13916", "KAFKA-15221", "KAFKA-16540", "KAFKA-16234")
    assert c.all_bugs == ("KAFKA-13141", "KAFKA-14704", "KAFKA-13916", "KAFKA-15221", "KAFKA-16540", "KAFKA-16234")
    assert all(c.has_bug(b) for b in c.all_bugs)
    assert [c.min_isr_at(k) for k in range(3)] == [1, 2, 1]
    d = c.as_dict()
    assert d["min_isr_changes"] == [2, 1] and d["bugs"] == list(c.bugs) and d["fetch_bugs"] == list(c.fetch_bugs)


def test_the_fetch_path_s_ids_may_be_written_in_either_list():
    a = _parse('truncate_on_fetch = true\nfetch_bugs = ["KAFKA-14704"]').config
    b = _parse('truncate_on_fetch = true\nbugs = ["KAFKA-14704"]').config
    assert a == b and a.fetch_bugs == ("KAFKA-14704",) and a.bugs == ()


def test_without_the_new_keys_a_config_and_its_dict_are_as_before():
    c = _parse("bugs = []\nmin_isr_changes = []\nmax_controlled_shutdowns = 0\nmax_disk_failures = 0").config
    assert c == Config(replicas=("A", "B"), truncation="leader-epoch-2.1")
    for key in ("bugs", "min_isr_changes", "min_isr_lag", "max_controlled_shutdowns", "max_disk_failures"):
        assert key not in c.as_dict()


@pytest.mark.parametrize(("extra", "words"), [
    ("max_controled_shutdowns = 1", "unknown key (did you mean max_controlled_shutdowns?)"),
    ("zzz = 1", "unknown key (the README's table lists the keys)"),
])
def test_an_unknown_key_of_the_model_table_names_the_nearest(extra, words):
    assert words in str(_error(extra))
