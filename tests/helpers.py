"""Helpers shared by several test modules: plain breadth-first exploration over whole
states, random walks, the differential check of the batch kernel against the model, and
running each shipped spec at most once per module."""

from __future__ import annotations

import collections

import numpy as np

from kmc.model.batch import KafkaBatchKernel
from kmc.app.specs import load_spec


def reachable(model, limit):
    """The first ``limit`` states of a plain breadth-first search over whole states."""
    init = list(model.init_states())
    seen = set(init)
    queue = collections.deque(init)
    out = list(init)
    while queue and len(out) < limit:
        for _, nxt in model.successors(queue.popleft()):
            if nxt not in seen:
                seen.add(nxt)
                queue.append(nxt)
                out.append(nxt)
    return out


def random_walk(model, state, picks):
    """The states of a walk from ``state``: at each step the successor ``pick`` (modulo
    their number) for each of ``picks``, until a state has no successor."""
    states = [state]
    for pick in picks:
        succ = model.successors(state)
        if not succ:
            break
        state = succ[pick % len(succ)][1]
        states.append(state)
    return states


def assert_same_successors(model, states):
    """The kernel's successors of ``states`` are the model's, in the model's order."""
    kernel = KafkaBatchKernel(model.config)
    rows = np.stack([kernel.encode(s) for s in states])
    parents, choices, codes, succ = kernel.expand(rows)
    order = np.lexsort((choices, parents))
    parents, choices, codes, succ = parents[order], choices[order], codes[order], succ[order]
    j = 0
    for i, state in enumerate(states):
        for choice, (action, nxt) in enumerate(model.successors(state)):
            assert j < len(parents) and parents[j] == i and choices[j] == choice, (state, action)
            assert kernel.action_names[codes[j]] == action.name
            assert kernel.decode(succ[j]) == nxt, (state, action)
            j += 1
    assert j == len(parents), "the kernel has successors the model does not"


def spec_runs(specs, engine_of, options_of):
    """``get(name) -> (spec, model, result)``: the spec ``specs/<name>.toml`` run once by
    ``engine_of(name)`` (an engine class) with ``options_of(spec)``, then remembered."""
    done = {}

    def get(name):
        if name not in done:
            spec = load_spec(specs / f"{name}.toml")
            model = spec.model()
            result = engine_of(name)(model, spec.properties(), options_of(spec)).run()
            done[name] = (spec, model, result)
        return done[name]

    return get


def assert_traces_replay(model, result):
    """Every counterexample of ``result`` replays from its choices, its last state is the
    first of its path its property's check rejects, with the reported explanation."""
    from kmc.checker.core.trace import replay_choices
    from kmc.invariants import BY_NAME

    for prop, v in result.violations.items():
        path = v.path
        assert replay_choices(model, path.init_index, path.choices) == path
        p = BY_NAME[prop]
        assert p.check(model, path.states[-1]) == v.explanation
        assert all(p.check(model, s) is None for s in path.states[:-1])


# -- hand-built states of the Kafka model (tests/test_model*.py) ---------------------------

def texts(model, state):
    """The enabled actions, as text, in the model's order."""
    return [model.format_action(a) for a, _ in model.successors(state)]


def step(model, state, text):
    """The successor by the action written ``text``; fails if it is not enabled."""
    found = [s for a, s in model.successors(state) if model.format_action(a) == text]
    assert found, f"{text} is not enabled; enabled: {texts(model, state)}"
    assert len(found) == 1
    return found[0]


def leader_a(build, n=2, log=(), hw=0, remote=None, epoch=0, isr=None, **kw):
    """A state where A leads at ``epoch`` and the others follow it, all caught up to
    nothing (empty logs unless given)."""
    reps = [build.replica(n, log=log, hw=hw, epoch=epoch, leader=0, remote=remote)]
    reps += [build.replica(n, epoch=epoch, leader=0) for _ in range(n - 1)]
    return build.state(reps, leader=0, epoch=epoch, isr=isr, **kw)
