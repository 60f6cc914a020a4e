"""The Kafka replication model: one partition, its replicas, the controller and a producer.

The transition system of docs/model.md, action for action. ``KafkaModel`` follows
``checker.contract.protocol.Model`` (its optional members' defaults from ``ModelBase``); the engines
know nothing else about it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import attrs
from kmc.checker.contract.protocol import ModelBase
from kmc.invariants import default_properties

from .actions import (
    ACTION_NAMES,
    ALTER_PARTITION,
    APPLY_MIN_ISR,
    BECOME_FOLLOWER,
    CHANGE_MIN_ISR,
    CRASH,
    DISK_FAILURE,
    ELECT_LEADER,
    EXPAND_ISR,
    FETCH_REQUEST,
    FETCH_RESPONSE,
    PRODUCE,
    RESTART,
    SHRINK_ISR,
    Action,
    action_names,
)
from .config import ACKS_ALL, ACKS_ONE, HIGH_WATERMARK, KAFKA_13916, LEADER_EPOCH_21, Config
from .fairness import fair_instance, fair_instances, instance_codes
from .kafka_actions import KafkaEffects
from .state import EXPAND, SHRINK, Quorum, Replica, State, encode, leader_of, leso
from .truncation import batch_unsupported

if TYPE_CHECKING:  # for the annotations only: imported on first use
    from kmc.checker.contract.protocol import BatchKernel, CoverageNames, Guard, Model, Property

    from .batch import KafkaBatchKernel

__all__ = ["ACTION_NAMES", "Action", "KafkaModel"]  # the action names live in model.actions


@attrs.frozen
class KafkaModel(ModelBase):
    """The model for one ``Config``.

    Args:
        config: the model constants.
    """

    config: Config = Config()
    # the actions' effects (model.effects) for this configuration, made on first use (a
    # search on the batch kernel asks them only of the states it compares with the kernel)
    _effects: KafkaEffects | None = attrs.field(init=False, default=None, repr=False, eq=False)
    # Does ExpandIsr also ask for the leader's epoch start offset (KAFKA-7128)?
    _v21: bool = attrs.field(init=False, repr=False, eq=False)
    # May a replica in controlled shutdown re-join the ISR (KAFKA-13916)?
    _shutting_joins: bool = attrs.field(init=False, repr=False, eq=False)
    # the weakly fair instances (model.fairness), and the code of each fair action's first,
    # made on first use (only a liveness property asks them)
    _fairness: tuple[tuple[str, ...], dict[str, int]] | None = attrs.field(
        init=False, default=None, repr=False, eq=False
    )
    # Can an operator's action (docs/model.md, "Operator actions") be enabled at all?
    _operators: bool = attrs.field(init=False, repr=False, eq=False)

    def __attrs_post_init__(self) -> None:
        object.__setattr__(self, "_v21", self.config.truncation == LEADER_EPOCH_21)
        object.__setattr__(self, "_shutting_joins", self.config.has_bug(KAFKA_13916))
        cfg = self.config
        operators = cfg.max_controlled_shutdowns or cfg.min_isr_changes or cfg.max_disk_failures or cfg.min_isr_lag
        object.__setattr__(self, "_operators", bool(operators))

    @property
    def _fx(self) -> KafkaEffects:
        if self._effects is None:
            object.__setattr__(self, "_effects", KafkaEffects(self.config))
        assert self._effects is not None
        return self._effects

    def _fair(self) -> tuple[tuple[str, ...], dict[str, int]]:
        if self._fairness is None:
            object.__setattr__(self, "_fairness", (fair_instances(self.config), instance_codes(self.config)))
        assert self._fairness is not None
        return self._fairness

    # -- protocol -----------------------------------------------------------------

    def init_states(self) -> tuple[State, ...]:
        """The initial state with the first replica leading; with ``initial_leader =
        "any"``, one per replica, in replica order, each with that replica leading."""
        n = self.config.n
        zeros = (0,) * n
        leaders = range(n) if self.config.initial_leader == "any" else (0,)
        out: list[State] = []
        for l in leaders:
            rep = Replica(alive=True, log=(), hw=0, epoch=0, leader=l, remote_leo=zeros)
            out.append(State(replicas=(rep,) * n, quorum=Quorum(l, 0, tuple(range(n)))))
        return tuple(out)

    def encode(self, state: State) -> bytes:
        return encode(state)

    def action_names(self) -> tuple[str, ...]:
        """Every action name this configuration can fire, in order (AlterPartition only
        with ``alter_partition``)."""
        return action_names(self.config)

    def batch_kernel(self) -> KafkaBatchKernel:
        """The batch form of this model (``model.batch.KafkaBatchKernel``): the fast path
        of the local and Spark engines."""
        from .batch import KafkaBatchKernel

        return KafkaBatchKernel(self.config)

    def batch_unsupported(self) -> str | None:
        """Why the batch kernel cannot run this configuration (the engines then take the
        per-state path), or ``None``: the configuration's truncation rule has a batch form."""
        return batch_unsupported(self.config.truncation)

    def coverage_names(self) -> CoverageNames:
        """The kinds of the actions and the variables coverage counts (``model.coverage_names``)."""
        from .coverage_names import kafka_coverage

        return kafka_coverage(self)

    def kind_of(self, before: State, action: Action, after: State) -> str | None:
        """The kind of the step ``before`` -> ``after`` by ``action`` (``ELR`` for an ElectLeader
        of an eligible leader replica...: ``coverage_names.kind_of``), or ``None``."""
        from .coverage_kinds import kind_of

        return kind_of(self, before, action, after)

    def symmetries(self) -> list[tuple[int, ...]]:
        """The replica permutations symmetry reduction may apply: every permutation with
        ``initial_leader = any``, else those that fix the first replica."""
        from .symmetry import symmetries

        return symmetries(self.config)

    def permute(self, state: State, perm: tuple[int, ...]) -> State:
        """``state`` with replica ``r`` renamed ``perm[r]`` (``model.symmetry.permute``)."""
        from .symmetry import permute

        return permute(state, perm)

    def properties(self) -> tuple[Property, ...]:
        """The properties checked by default: see ``invariants.default_properties``."""
        return default_properties(self.config)

    def fair_instances(self) -> tuple[str, ...]:
        """The weakly fair action instances of docs/model.md's "Liveness under fairness",
        in code order (``model.fairness``): FetchRequest, FetchResponse, Restart, Failover,
        BecomeFollower and ExpandIsr of every replica, then AlterPartition."""
        return self._fair()[0]

    def fair_instance(self, state: State, action: Action) -> str | None:
        """The fair instance the step ``state --action-->`` is one of, or None (Produce,
        Crash, ShrinkIsr, and an ElectLeader while the quorum leader leads)."""
        return fair_instance(*self._fair(), state, action)

    def actions(self, state: State) -> list[Action]:
        return [a for a, _ in self.successors(state)]

    def next_state(self, state: State, action: Action) -> State:
        for a, nxt in self.successors(state):
            if a == action:
                return nxt
        raise ValueError(f"{self.format_action(action)} is not enabled")

    def successors(self, state: State) -> list[tuple[Action, State]]:
        """Every enabled action with its successor, in docs/model.md's order (actions 1–9,
        then AlterPartition, ControlledShutdown, ShutdownComplete; within an action replica
        order, then cut point or candidate)."""
        cfg = self.config
        fx = self._fx
        reps = state.replicas
        q = state.quorum
        n = len(reps)
        lead = leader_of(state)
        out: list[tuple[Action, State]] = []
        # 1. Produce
        if cfg.acks == ACKS_ONE:
            out.extend(fx.produce_acks_one(state))
        elif lead is not None and state.produced < cfg.max_messages and len(q.isr) >= fx.leader_min_isr(state):
            out.append((Action(PRODUCE, lead), fx.produce(state, lead)))
        # 2. FetchRequest
        if lead is not None:
            le = reps[lead].epoch
            for f in range(n):
                rep = reps[f]
                if f != lead and rep.alive and rep.leader == lead and rep.epoch == le and rep.inflight is None:
                    out.append((Action(FETCH_REQUEST, f), fx.fetch_request(state, f, lead)))
        # 3. FetchResponse
        for f in range(n):
            if reps[f].inflight is not None:
                out.append((Action(FETCH_RESPONSE, f), fx.fetch_response(state, f)))
        # 4. Crash
        if state.crashes < cfg.max_crashes:
            for r in range(n):
                if reps[r].alive:
                    if cfg.unflushed_loss:
                        for cut in range(len(reps[r].log) + 1):
                            out.append((Action(CRASH, r, cut), fx.crash(state, r, cut)))
                    else:
                        out.append((Action(CRASH, r), fx.crash(state, r, None)))
        # 5. Restart
        for r in range(n):
            if not reps[r].alive:
                out.append((Action(RESTART, r), fx.restart(state, r)))
        # 6. ElectLeader
        if q.epoch < cfg.max_leader_epoch:
            for cand in fx.electable(state):
                out.append((Action(ELECT_LEADER, cand), fx.elect(state, cand)))
        # 7. BecomeFollower (asks the leader, which must lead, except under high-watermark
        # and in the fetch path, where the follower truncates nothing yet)
        ql = q.leader
        if ql is not None and (cfg.truncation == HIGH_WATERMARK or cfg.truncate_on_fetch or lead == ql):
            for r in range(n):
                if r != ql and reps[r].alive and reps[r].epoch < q.epoch:
                    out.append((Action(BECOME_FOLLOWER, r), fx.become_follower(state, r, ql)))
        # 8. ShrinkIsr, 9. ExpandIsr (with alter_partition only a request, one at a time)
        if lead is not None and not (cfg.alter_partition and q.alter is not None):
            self._isr_successors(state, lead, out)
        # 10. AlterPartition: the controller answers the request in flight
        if q.alter is not None:
            out.append((Action(ALTER_PARTITION, q.alter[2]), fx.alter_partition(state)))
        # 11.-15. the operator's actions, each only with its option
        if self._operators:
            self._operator_successors(state, out)
        if cfg.acks == ACKS_ALL:
            out = [(a, fx.acknowledge(state, t)) for a, t in out]
        return out

    def _isr_successors(self, state: State, lead: int, out: list[tuple[Action, State]]) -> None:
        """8. ShrinkIsr and 9. ExpandIsr by the leader ``lead`` (with ``alter_partition``, its
        request), appended to ``out`` in replica order."""
        fx = self._fx
        reps = state.replicas
        q = state.quorum
        ask = self.config.alter_partition
        l = reps[lead]
        for r in q.isr:
            if r != lead and (not reps[r].alive or l.remote_leo[r] < len(l.log)):
                nxt = fx.ask(state, lead, SHRINK, r) if ask else fx.shrink(state, r, lead)
                out.append((Action(SHRINK_ISR, r), nxt))
        # KAFKA-7128 (2.1): a follower re-joins only once it has fetched up to the
        # leader's epoch start offset; before, only up to the (possibly lagging) HW.
        floor = leso(state, lead) if self._v21 else 0
        for r in range(len(reps)):
            f = reps[r]
            if (
                r not in q.isr
                and f.alive
                and (not f.shutting or self._shutting_joins)  # KIP-841
                and f.leader == lead
                and f.epoch == q.epoch
                and l.remote_leo[r] >= l.hw
                and l.remote_leo[r] >= floor
            ):
                nxt = fx.ask(state, lead, EXPAND, r) if ask else fx.expand(state, r, lead)
                out.append((Action(EXPAND_ISR, r), nxt))

    def _operator_successors(self, state: State, out: list[tuple[Action, State]]) -> None:
        """11.-15. the operator's actions (docs/model.md, "Operator actions"), appended to
        ``out``."""
        cfg = self.config
        fx = self._fx
        reps = state.replicas
        q = state.quorum
        n = len(reps)
        # 11. ControlledShutdown, 12. ShutdownComplete (the operator's rolling restart)
        if state.controlled_shutdowns < cfg.max_controlled_shutdowns:
            for r in range(n):
                if reps[r].alive and not reps[r].shutting:
                    out.extend(fx.controlled_shutdown(state, r))
        if cfg.max_controlled_shutdowns:
            for r in range(n):
                if reps[r].alive and reps[r].shutting:
                    out.append(fx.shutdown_complete(state, r))
        # 13. ChangeMinIsr: the operator's next change of min.insync.replicas
        if q.min_isr_step < len(cfg.min_isr_changes):
            out.append((Action(CHANGE_MIN_ISR, 0), fx.change_min_isr(state)))
        # 14. DiskFailure: a live replica's log directory fails
        if state.disk_failures < cfg.max_disk_failures:
            for r in range(n):
                if reps[r].alive:
                    out.append((Action(DISK_FAILURE, r), fx.disk_failure(state, r)))
        # 15. ApplyMinIsr (min_isr_lag): the leader's broker applies the controller's change
        if cfg.min_isr_lag and state.leader_min_isr_step < q.min_isr_step:
            out.append((Action(APPLY_MIN_ISR, 0), fx.apply_min_isr(state)))

    def guards(self, state: State) -> list[Guard]:
        """Every action, enabled in ``state`` or not, with its guard's conditions in words
        (``model.guards``: what ``kmc why-not`` and the explorer show)."""
        from .guards import kafka_guards

        return kafka_guards(self, state)

    def electable(self, state: State) -> list[int]:
        """The replicas ElectLeader may elect in ``state``, in replica order, whatever the
        controller's epoch: the election guard without ``quorum.epoch < max_leader_epoch``
        (what ``Available`` asks)."""
        return self._fx.electable(state)

    # -- naming -------------------------------------------------------------------

    def name(self, r: int | None) -> str:
        """The spec's name of replica number ``r`` (``"none"`` for None)."""
        return "none" if r is None else self.config.replicas[r]

    def format_action(self, action: Action) -> str:
        """``Crash(B, keeps 1)``-style text for an action (``ControlledShutdown(A, to B)``
        for the one that elects B in A's place)."""
        if action.name in (CHANGE_MIN_ISR, APPLY_MIN_ISR):  # no replica: a config change
            return action.name
        who = self.name(action.replica)
        if action.to is not None:
            return f"{action.name}({who}, to {self.name(action.to)})"
        if action.cut is not None:
            return f"{action.name}({who}, keeps {action.cut})"
        return f"{action.name}({who})"

    def describe_step(self, before: State, action: Action, after: State) -> str:
        """What ``action`` did between two states, in one sentence (``model.describe``)."""
        from .describe import acks_note, describe_step

        return describe_step(self, before, action, after) + acks_note(self, before, action, after)

    def format_record(self, record: tuple[int, int]) -> str:
        epoch, rid = record
        return f"record {rid} (epoch {epoch})"


if TYPE_CHECKING:  # for mypy: the model and its kernel follow the protocols they claim

    def _follows_the_protocols(model: KafkaModel) -> tuple[Model, BatchKernel]:
        kernel = model.batch_kernel()
        return model, kernel
