"""The recipes of docs/architecture.md, followed from this file alone: a new engine, a new
store and a new truncation rule are each one object plus its registration, and ``kmc check``
runs a spec that names them, with the numbers of the built-in ones they wrap."""

from __future__ import annotations

import json

import pytest
from kmc.app.cli import main
from kmc.checker.base.errors import UsageError
from kmc.checker.engines import ENGINES, EngineRequest, local_engine, register_engine
from kmc.checker.stores.registry import STORES, register_store
from kmc.checker.stores.seen import CompactSeenSet
from kmc.model.config import LEADER_EPOCH_KIP279, Config
from kmc.model.truncation import RULES, TruncationRule, batch_unsupported, truncate_kip279

SPEC = """
[model]
replicas = 2
truncation = "{rule}"
max_messages = 2
max_crashes = 1
max_leader_epoch = 2
unflushed_loss = true
[check]
keep_going = true
engine = "{engine}"
store = "{store}"
"""


# -- an engine: a factory of an EngineRequest, registered by name ---------------------------
MADE: list[EngineRequest] = []


def wrapped_engine(request: EngineRequest):
    """The local engine, noting what it was asked for."""
    MADE.append(request)
    return local_engine(request)


# -- a store: a class with the Store interface, and a factory registered by name ------------
class TallyStore(CompactSeenSet):
    """The memory store under a name of its own, keeping a list of the stores made."""

    kind = "tally"


TALLIES: list[TallyStore] = []


def tally_store(store_dir, checkpoint_dir):
    TALLIES.append(TallyStore())
    return TALLIES[-1]


# -- a truncation rule: one object, here with a per-state form only ---------------------------
PREFIX = TruncationRule("common-prefix", "cp", truncate_kip279, batch=None)


# -- a graph client (checker.graph) goes here: a client registered from this file --------------


@pytest.fixture
def registered(monkeypatch):
    """The fake engine, store and rule registered for one test, and removed after it."""
    monkeypatch.setitem(ENGINES, "wrapped", wrapped_engine)
    monkeypatch.setitem(STORES, "tally", tally_store)
    RULES.register(PREFIX)
    MADE.clear()
    TALLIES.clear()
    yield
    RULES.unregister(PREFIX.name)


def check(capsys, tmp_path, rule, engine="local", store="memory", *flags):
    """``kmc check`` of the spec naming ``rule``, ``engine`` and ``store``: (exit code, distinct
    states, stderr)."""
    spec, out = tmp_path / f"{rule}-{engine}-{store}.toml", tmp_path / "r.json"
    spec.write_text(SPEC.format(rule=rule, engine=engine, store=store))
    code = main(["check", str(spec), "--no-progress", "--no-trace", "--json", str(out), *flags])
    err = capsys.readouterr().err
    distinct = json.loads(out.read_text())["stats"]["distinct_states"] if out.exists() else None
    return code, distinct, err


def test_a_registered_engine_and_store_run_as_the_ones_they_wrap(registered, capsys, tmp_path):
    code, distinct, err = check(capsys, tmp_path, LEADER_EPOCH_KIP279)
    assert distinct == 1270  # the built-in local engine and memory store, on the batch path
    assert check(capsys, tmp_path, LEADER_EPOCH_KIP279, "wrapped", "tally") == (code, distinct, err)
    assert len(MADE) == 1 and MADE[0].kernel is not None  # the batch path
    assert len(TALLIES) == 1 and len(TALLIES[0]) == distinct  # every state in the registered store


def test_a_rule_without_a_batch_form_runs_on_the_per_state_path(registered, capsys, tmp_path):
    code, distinct, _ = check(capsys, tmp_path, LEADER_EPOCH_KIP279, "local", "memory", "--per-state")
    assert distinct == 1270
    assert check(capsys, tmp_path, PREFIX.name, "local", "memory", "--per-state")[:2] == (code, distinct)
    assert check(capsys, tmp_path, PREFIX.name, "wrapped", "tally", "--per-state")[:2] == (code, distinct)
    assert MADE[-1].kernel is None and len(TALLIES) == 1 and len(TALLIES[0]) == distinct


def test_a_rule_without_a_batch_form_is_refused_on_the_batch_path(registered):
    from kmc.model.kafka import KafkaModel

    with pytest.raises(UsageError) as refused:
        KafkaModel(Config(truncation=PREFIX.name)).batch_kernel()
    assert str(refused.value) == "truncation rule 'common-prefix' has no batch form: check it with --per-state"
    assert batch_unsupported(PREFIX.name) == "the truncation rule 'common-prefix' has no batch form"
    assert batch_unsupported(LEADER_EPOCH_KIP279) is None


def test_a_name_is_registered_once(registered):
    with pytest.raises(UsageError, match="'wrapped' is registered already"):
        register_engine("wrapped", wrapped_engine)
    with pytest.raises(UsageError, match="'tally' is registered already"):
        register_store("tally", tally_store)
    with pytest.raises(UsageError, match="the name 'kip279' is taken"):
        RULES.register(TruncationRule("again", "kip279", truncate_kip279))
    assert RULES.aliases()["cp"] == PREFIX.name


def test_the_spec_reader_lists_the_registered_names(registered, capsys, tmp_path):
    code, _, err = check(capsys, tmp_path, "no-such-rule")
    assert code == 2 and "common-prefix" in err and "leader-epoch-2.1" in err
    code, _, err = check(capsys, tmp_path, LEADER_EPOCH_KIP279, "nowhere")
    assert code == 2 and "'wrapped'" in err and "'spark'" in err
    code, _, err = check(capsys, tmp_path, LEADER_EPOCH_KIP279, "local", "nowhere")
    assert code == 2 and "'tally'" in err and "'disk'" in err
