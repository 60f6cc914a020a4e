"""The Kafka model's action families stay whole: every action the model can take has its
describer in ``model.describe.DESCRIBERS``, its guard in ``model.guards`` and its effect on
``model.kafka_actions.KafkaEffects``, whichever module of its family holds them."""

from __future__ import annotations

from kmc.model import Config
from kmc.model.actions import action_names
from kmc.model.describe import DESCRIBERS, describe_step
from kmc.model.guards import kafka_guards
from kmc.model.kafka import KafkaModel
from kmc.model.kafka_actions import KafkaEffects

EVERYTHING = Config(
    replicas=("A", "B", "C"),
    truncation="leader-epoch-2.1",
    alter_partition=True,
    eligible_leader_replicas=True,
    max_controlled_shutdowns=1,
    min_isr_changes=(1, 2),
    min_isr_lag=True,
    max_disk_failures=1,
)


def test_every_action_has_a_describer():
    assert set(action_names(EVERYTHING)) <= set(DESCRIBERS)


def test_every_action_has_a_guard():
    model = KafkaModel(EVERYTHING)
    (state,) = model.init_states()
    guarded = {g.action.name for g in kafka_guards(model, state)}
    assert set(action_names(EVERYTHING)) == guarded


def test_an_unknown_action_is_described_by_nothing():
    model = KafkaModel(EVERYTHING)
    (state,) = model.init_states()
    action, after = model.successors(state)[0]
    assert describe_step(model, state, action, after)
    assert describe_step(model, state, type(action)("NoSuchAction", 0), after) == ""


def test_the_effects_join_every_family():
    effects = KafkaEffects(EVERYTHING)
    for name in ("produce", "fetch_request", "crash", "restart", "elect", "shrink", "expand", "alter_partition"):
        assert callable(getattr(effects, name))
    for name in ("controlled_shutdown", "shutdown_complete", "change_min_isr", "apply_min_isr", "disk_failure"):
        assert callable(getattr(effects, name))
    assert not hasattr(effects, "__dict__")  # slotted, as each family is
