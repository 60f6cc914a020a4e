"""An independent liveness oracle: ``[]<>P`` and ``P ~> Q`` under weak fairness, decided
on the naive oracle's whole state graph (tests/oracle.py) with networkx.

Written from docs/model.md's "Liveness under fairness" alone: it shares nothing with the
engines' graph visitor or their component code. The state graph is the naive oracle's
(its ``successors``, plain BFS over whole states); networkx computes the strongly connected
components. The fair action instances are docs/model.md's:

- FetchRequest(f), FetchResponse(f), BecomeFollower(r), Restart(r), ExpandIsr(r) per replica;
- Failover(n): an ElectLeader(n) step taken while the quorum leader does not lead;
- AlterPartition (one instance);
- ShutdownComplete(r) per replica (a shutdown under way completes), and ApplyMinIsr (one
  instance: the leader's broker applies a change of min ISR) — docs/model.md's operator actions.

Produce, Crash, ShrinkIsr and preferred elections are not fair; nor are the operator's
ControlledShutdown, ChangeMinIsr and DiskFailure (perturbations).

Weak fairness on a finite graph: a behaviour ends, from some point on, either in a cycle
or stuttering in one state. A set of states ``C`` that a behaviour visits for ever (all of
them infinitely often, and no other) is *fair* when every fair instance enabled in every
state of ``C`` is taken on some step inside ``C``. For a maximal strongly connected
component of the states that may be visited for ever (e.g. the ``¬P`` states), the
component is fair exactly when some fair cycle inside it exists: a cycle through all of
its states and edges takes every instance taken inside it, and leaves out none of its
states where an instance is disabled; a smaller cycle can only take fewer instances and
keep more of them enabled throughout. A single state with no edge into itself is visited
for ever only by stuttering, which is fair when no fair instance is enabled there.

``check_lasso`` decides, with the naive successor function alone, whether a given lasso
(a path, then a cycle back to one of its states, or a final stuttering state) is a real
behaviour of the model that is fair and violates the property: it shares no code with
the component search either.
"""

from __future__ import annotations

from collections import deque

import networkx as nx
import oracle
from oracle import initial_states, leads, successors

FAIR_PARAMETRIC = ("FetchRequest", "FetchResponse", "BecomeFollower", "Restart", "ExpandIsr", "ShutdownComplete")
FAIR_SINGLE = ("AlterPartition", "ApplyMinIsr")
EL = "EventuallyLeader"
CER = "CommittedEventuallyReplicated"


# -- fairness ---------------------------------------------------------------------------------


def fair_instance(state, label):
    """The fair instance a step ``label`` (the oracle's ``(action, replica, cut)``) from
    ``state`` is a step of, or None when it is not fair."""
    name, r, _ = label
    if name in FAIR_PARAMETRIC:
        return (name, r)
    if name == "ElectLeader":
        ql = state.quorum.leader
        return None if ql is not None and leads(state, ql) else ("Failover", r)
    if name in FAIR_SINGLE:
        return (name,)
    return None


def enabled_fair(state, succ):
    """The fair instances enabled in ``state``, given its ``successors``."""
    out = set()
    for label, _ in succ:
        inst = fair_instance(state, label)
        if inst is not None:
            out.add(inst)
    return frozenset(out)


def someone_leads(state) -> bool:
    return any(leads(state, r) for r in range(len(state.replicas)))


def holds_everywhere(state, record) -> bool:
    """Every replica's log holds ``record = (offset, epoch, id)`` at its offset."""
    o, e, i = record
    return all(o < len(rep.log) and rep.log[o] == (e, i) for rep in state.replicas)


def failover_blocked_by_bound(cfg, state) -> bool:
    """A Failover instance disabled only by ``quorum.epoch < max_leader_epoch``: the
    quorum leader does not lead, the epoch is at the bound, and ElectLeader(n) would be
    enabled for some ``n`` without that conjunct."""
    q = state.quorum
    if q.epoch < cfg.max_leader_epoch:
        return False
    if q.leader is not None and leads(state, q.leader):
        return False
    return any(oracle.election(cfg, state, n, bounded=False) for n in range(len(state.replicas)))


# -- the whole graph --------------------------------------------------------------------------


class Graph:
    """Every reachable state (``states[i]``, BFS order), its out-edges ``out[i]`` as
    ``(label, fair instance or None, j)``, its enabled fair instances and its BFS parent."""

    def __init__(self, cfg):
        self.cfg = cfg
        self.states = []
        self.index = {}
        self.out = []
        self.enabled = []
        self.parent = []  # (i, label) or None for an initial state
        queue = deque()
        for s in initial_states(cfg):
            if s not in self.index:
                self._add(s, None)
                queue.append(len(self.states) - 1)
        while queue:
            i = queue.popleft()
            s = self.states[i]
            succ = successors(cfg, s)
            edges = []
            for label, t in succ:
                assert t != s, f"a step that changes nothing: {label}"
                j = self.index.get(t)
                if j is None:
                    j = self._add(t, (i, label))
                    queue.append(j)
                edges.append((label, fair_instance(s, label), j))
            self.out[i] = edges
            self.enabled[i] = enabled_fair(s, succ)

    def _add(self, s, parent):
        self.index[s] = len(self.states)
        self.states.append(s)
        self.out.append(None)
        self.enabled.append(None)
        self.parent.append(parent)
        return len(self.states) - 1

    def path_to(self, i):
        """A shortest path from an initial state to ``states[i]``: ``(states, labels)``."""
        states, labels = [i], []
        while self.parent[states[-1]] is not None:
            p, label = self.parent[states[-1]]
            states.append(p)
            labels.append(label)
        return states[::-1], labels[::-1]

    # -- fair components of a set of states ---------------------------------------------------

    def fair_tails(self, keep):
        """The fair ways to stay for ever inside the states ``keep`` (a boolean per state):
        ``[(component, taken instances)]`` for every strongly connected component of the
        subgraph ``keep`` induces that is fair (a component with at least one edge), and
        ``[(state,), None]`` for every state of ``keep`` with no fair instance enabled (it
        may stutter for ever)."""
        g = nx.DiGraph()
        g.add_nodes_from(i for i, k in enumerate(keep) if k)
        for i in g.nodes:
            for _, _, j in self.out[i]:
                if keep[j]:
                    g.add_edge(i, j)
        tails = []
        for comp in nx.strongly_connected_components(g):
            if len(comp) == 1:
                (i,) = comp
                if not g.has_edge(i, i):
                    continue
            taken = {inst for i in comp for _, inst, j in self.out[i] if j in comp and inst is not None}
            always = frozenset.intersection(*(self.enabled[i] for i in comp))
            if always <= taken:
                tails.append((frozenset(comp), frozenset(taken)))
        for i, k in enumerate(keep):
            if k and not self.enabled[i]:
                tails.append((frozenset((i,)), None))
        return tails

    def violations(self, bad, start=None):
        """The fair tails inside the states ``bad`` (``¬Q``) that can be reached, through
        ``bad`` states only, from some state of ``start`` (``P ∧ ¬Q``; default every
        ``bad`` state: ``[]<>Q``)."""
        return self.fair_tails(self.afterwards(bad, start))

    def afterwards(self, bad, start=None):
        """The states a behaviour may be in after a ``start`` state if it stays in ``bad``
        states from then on (a boolean per state): ``bad`` itself when ``start`` is None,
        else the ``bad`` states reachable from a ``start`` one through ``bad`` states."""
        if start is None:
            return bad
        # forward from the start states, inside the bad states: only there can a
        # behaviour that violates ``P ~> Q`` stay for ever
        keep = [False] * len(self.states)
        queue = deque()
        for i, s in enumerate(start):
            if s and bad[i]:
                keep[i] = True
                queue.append(i)
        while queue:
            i = queue.popleft()
            for _, _, j in self.out[i]:
                if bad[j] and not keep[j]:
                    keep[j] = True
                    queue.append(j)
        return keep


# -- the two Kafka properties -------------------------------------------------------------------


def committed_records(graph):
    """Every ``(offset, epoch, id)`` committed in some reachable state, sorted."""
    return sorted({c for s in graph.states for c in s.committed})


def eventually_leader(graph):
    """The fair tails that violate ``[]<>(some replica leads)``."""
    return graph.violations([not someone_leads(s) for s in graph.states])


def record_violations(graph, record):
    """The fair tails that violate ``(record ∈ committed) ~> every replica holds it``,
    as a general leads-to: from a ``P ∧ ¬Q`` state, a fair tail of ``¬Q`` states
    reachable through ``¬Q`` states."""
    bad = [not holds_everywhere(s, record) for s in graph.states]
    start = [b and record in s.committed for b, s in zip(bad, graph.states)]
    return graph.violations(bad, start)


def committed_eventually_replicated(graph):
    """``{record: fair tails}`` for every committed record whose leads-to fails."""
    out = {}
    for record in committed_records(graph):
        tails = record_violations(graph, record)
        if tails:
            out[record] = tails
    return out


def at_the_bound(graph, bad, start=None) -> bool:
    """Does every violating fair behaviour (tails inside ``bad`` after a ``start`` state)
    have a Failover blocked only by the epoch bound on its cycle or in its stuttering
    state? That is: some violation exists, and without the states where one is blocked no
    fair tail is left (a tail's fairness is still judged by what the model enables; the
    path to the tail may pass anywhere)."""
    keep = graph.afterwards(bad, start)
    if not graph.fair_tails(keep):
        return False
    blocked = [failover_blocked_by_bound(graph.cfg, s) for s in graph.states]
    return not graph.fair_tails([k and not x for k, x in zip(keep, blocked)])


def verdicts(cfg):
    """``{EL: ..., CER: ...}``, each ``"holds"``, ``"violated"`` or ``"violated, at the
    bound"``, as docs/model.md's table writes them."""
    graph = Graph(cfg)
    el_bad = [not someone_leads(s) for s in graph.states]
    el = "holds"
    if graph.violations(el_bad):
        el = "violated, at the bound" if at_the_bound(graph, el_bad) else "violated"
    cer = "holds"
    failing = committed_eventually_replicated(graph)
    if failing:
        cer = "violated, at the bound"
        for record in failing:
            bad = [not holds_everywhere(s, record) for s in graph.states]
            start = [b and record in s.committed for b, s in zip(bad, graph.states)]
            if not at_the_bound(graph, bad, start):
                cer = "violated"
                break
    return {EL: el, CER: cer}, graph


# -- a lasso, built from a fair tail --------------------------------------------------------------


def _inner_path(graph, comp, src, goal):
    """A shortest path inside ``comp`` from ``src`` to a state where ``goal(i)`` holds:
    ``[(label, j), ...]``."""
    prev = {src: None}
    queue = deque([src])
    while queue:
        i = queue.popleft()
        if goal(i):
            steps = []
            while prev[i] is not None:
                p, label = prev[i]
                steps.append((label, i))
                i = p
            return steps[::-1]
        for label, _, j in graph.out[i]:
            if j in comp and j not in prev:
                prev[j] = (i, label)
                queue.append(j)
    raise AssertionError("the component is not strongly connected")


def lasso(graph, tail):
    """A lasso through the fair ``tail``: ``(states, labels, loop)`` — a shortest path to
    the tail's first state (least BFS index), then, for a component, a cycle inside it back
    to that state which takes every fair instance enabled in all of the cycle's states
    (``loop`` is the index of the state the cycle returns to); for a stuttering state,
    ``loop`` is None."""
    comp, _ = tail
    first = min(comp)
    path, labels = graph.path_to(first)
    states = [graph.states[i] for i in path]
    if tail[1] is None:
        return states, labels, None
    # Grow a walk from ``first``; close it with a shortest way back; while the closed cycle
    # owes an instance (enabled in all of its states, never taken), extend the walk to take
    # it, or to a state of the component where it is disabled. Each round settles one
    # instance for good (the walk only grows), so this ends.
    label, _, j = next(e for e in graph.out[first] if e[2] in comp)
    walk = [(label, j)]
    while True:
        at = walk[-1][1]
        closing = [] if at == first else _inner_path(graph, comp, at, lambda i: i == first)
        cycle = walk + closing
        sources = [first] + [j for _, j in cycle[:-1]]
        taken = {fair_instance(graph.states[i], lb) for i, (lb, _) in zip(sources, cycle)} - {None}
        owed = frozenset.intersection(*(graph.enabled[i] for i in sources)) - taken
        if not owed:
            break
        want = min(owed, key=repr)
        takers = {i for i in comp for _, inst, j in graph.out[i] if inst == want and j in comp}
        if takers:
            walk += _inner_path(graph, comp, at, takers.__contains__)
            label, _, j = next(e for e in graph.out[walk[-1][1]] if e[1] == want and e[2] in comp)
            walk.append((label, j))
        else:
            walk += _inner_path(graph, comp, at, lambda i, want=want: want not in graph.enabled[i])
    k = len(states) - 1
    for label, j in cycle:
        labels.append(label)
        states.append(graph.states[j])
    return states, labels, k


# -- checking a given lasso ----------------------------------------------------------------------


def check_lasso(cfg, states, labels, loop, prop, record=None):
    """Is ``(states, labels, loop)`` a fair behaviour of the model that violates ``prop``
    (``EL``, or ``CER`` for ``record``)? ``labels[i]`` is the step from ``states[i]`` to
    ``states[i + 1]``, as ``(action, replica, cut)``; ``loop`` is the index of the state
    the last step returns to (``states[-1] == states[loop]``), or None when the last state
    stutters for ever. Returns None when it is, else why not (one sentence).

    Uses only the naive oracle's successor function: no component search."""
    if not states:
        return "an empty lasso"
    if states[0] not in initial_states(cfg):
        return "the first state is not initial"
    if len(labels) != len(states) - 1:
        return "one label a step is needed"
    for i, label in enumerate(labels):
        succ = successors(cfg, states[i])
        if (tuple(label), states[i + 1]) not in [(tuple(lb), t) for lb, t in succ]:
            return f"step {i + 1} ({label}) is not a step of the model"
    last = len(states) - 1
    if loop is None:
        tail = [last]
        if enabled_fair(states[last], successors(cfg, states[last])):
            return "the final state stutters with a fair instance enabled"
    else:
        if not 0 <= loop < last or states[loop] != states[last]:
            return "the cycle does not come back to the state it names"
        tail = list(range(loop, last))
        enabled = [enabled_fair(states[i], successors(cfg, states[i])) for i in tail]
        taken = {fair_instance(states[i], labels[i]) for i in tail} - {None}
        owed = frozenset.intersection(*enabled) - taken
        if owed:
            return f"the cycle is unfair to {sorted(owed)}"
    if prop == EL:
        if any(someone_leads(states[i]) for i in tail):
            return "some replica leads on the cycle"
        return None
    assert prop == CER, prop
    start = loop if loop is not None else last
    if record not in states[start].committed:
        return "the record is not committed when the cycle starts"
    if any(holds_everywhere(states[i], record) for i in tail):
        return "every replica holds the record in some state of the cycle"
    return None
