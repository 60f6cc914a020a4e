"""Two-phase commit, a model of your own with a batch kernel (docs/writing-a-model.md).

The transaction manager (TM) and ``rms`` resource managers (RMs) of Gray and Lamport's
two-phase commit, as in Lamport's TLA+ specification ``TwoPhase``: an RM prepares (or
chooses to abort on its own), tells the TM it is prepared, and the TM commits once every
RM is prepared (or aborts at any time before); the RMs follow the TM's decision. The
messages are a set that only grows (a message, once sent, may be received any number of
times).

The invariant ``Consistent``: no RM has committed while another has aborted. It holds;
with ``eager=True`` the TM commits as soon as *one* RM is prepared, and it does not.

With ``liveness=True`` two liveness properties are checked too, under weak fairness: an RM
always reads the TM's decision (``RMRcvCommitMsg(r)`` and ``RMRcvAbortMsg(r)`` are fair),
and, with ``fair_tm=True`` (the default), the TM does not stay silent for ever
(``TMRcvPrepared(r)``, ``TMCommit`` and ``TMAbort`` are fair). ``EveryoneDecides``
(``[]<>`` every RM committed or aborted) and ``PreparedDecides`` (for every RM ``r``:
``r`` prepared ``~>`` ``r`` committed or aborted) hold with a fair TM; without one the
TM may never answer, and both fail (an RM's own steps are not fair: it may stay working).

Check it from the command line, on any engine (``expect()`` says what a check must find,
``--check-expect`` compares)::

    kmc check --model specs/models/two_phase.py:two_phase --param rms=3
    kmc check --model specs/models/two_phase.py:two_phase --param rms=3 --param eager=true
    kmc check --model specs/models/two_phase.py:two_phase --param eager=true --keep-going --check-expect
    kmc check --model specs/models/two_phase.py:two_phase --param liveness=true
    kmc check --model specs/models/two_phase.py:two_phase --param liveness=true --param fair_tm=false
"""

from __future__ import annotations

import attrs
import numpy as np

from kmc.checker.contract.protocol import ALWAYS, ALWAYS_EVENTUALLY, LEADS_TO, STEP, Guard, KernelBase, Property

WORKING, PREPARED, COMMITTED, ABORTED = 0, 1, 2, 3  # an RM's state
INIT, TM_COMMITTED, TM_ABORTED = 0, 1, 2  # the TM's state
RM_NAMES = ("working", "prepared", "committed", "aborted")
TM_NAMES = ("init", "committed", "aborted")
# The actions, in the model's fixed order (each of the RM actions once per RM, in RM order).
ACTIONS = ("TMRcvPrepared", "TMCommit", "TMAbort", "RMPrepare", "RMChooseToAbort", "RMRcvCommitMsg", "RMRcvAbortMsg")
PER_RM = {"TMRcvPrepared", "RMPrepare", "RMChooseToAbort", "RMRcvCommitMsg", "RMRcvAbortMsg"}


@attrs.frozen
class State:
    rm: tuple[int, ...]  # each RM's state
    tm: int  # the TM's state
    tm_prepared: int  # the RMs the TM knows prepared (bit r = RM r)
    prepared_msgs: int  # the "Prepared" messages sent (bit r = RM r)
    commit_msg: bool  # the TM's "Commit" sent
    abort_msg: bool  # the TM's "Abort" sent


@attrs.frozen
class Step:
    name: str
    rm: int = -1  # the RM acting or acted upon; -1 for the TM's own


def consistent(model, state):
    if COMMITTED in state.rm and ABORTED in state.rm:
        c, a = state.rm.index(COMMITTED), state.rm.index(ABORTED)
        return f"RM {c} committed while RM {a} aborted"
    return None


def consistent_mask(kernel, rows):
    rm = rows[:, : kernel.rms]
    return (rm == COMMITTED).any(axis=1) & (rm == ABORTED).any(axis=1)


def decisions_final(model, before, action, after):
    for r, (a, b) in enumerate(zip(before.rm, after.rm)):
        if a in (COMMITTED, ABORTED) and b != a:
            return f"RM {r} left its decision ({RM_NAMES[a]} -> {RM_NAMES[b]}) by {action.name}"
    return None


def everyone_decided(model, state):
    waiting = [r for r, x in enumerate(state.rm) if x not in (COMMITTED, ABORTED)]
    return f"RM {waiting[0]} has not decided" if waiting else None


def everyone_decided_mask(kernel, rows):  # true where some RM has not decided
    rm = rows[:, : kernel.rms]
    return ((rm != COMMITTED) & (rm != ABORTED)).any(axis=1)


def prepared_decides(model, state):  # (RMs prepared, RMs decided): one obligation an RM
    return (
        [r for r, x in enumerate(state.rm) if x == PREPARED],
        [r for r, x in enumerate(state.rm) if x in (COMMITTED, ABORTED)],
    )


def prepared_decides_mask(kernel, rows):
    rm = rows[:, : kernel.rms]
    return rm == PREPARED, (rm == COMMITTED) | (rm == ABORTED)


def every_rm(model):
    return tuple(range(model.rms))


def rm_text(model, r):  # an obligation in words (the explorer and the explanations)
    return f"RM {r}"


Consistent = Property("Consistent", ALWAYS, consistent, "no RM commits while another aborts", mask=consistent_mask)
DecisionsFinal = Property("DecisionsFinal", STEP, decisions_final, "an RM's commit or abort is never undone")
EveryoneDecides = Property(
    "EveryoneDecides", ALWAYS_EVENTUALLY, everyone_decided, "every RM eventually commits or aborts",
    mask=everyone_decided_mask,
)
PreparedDecides = Property(
    "PreparedDecides", LEADS_TO, prepared_decides, "an RM that prepared eventually commits or aborts",
    mask=prepared_decides_mask, obligations=every_rm, obligation_text=rm_text,
)


@attrs.frozen
class TwoPhase:
    """Two-phase commit with ``rms`` resource managers; ``eager``: the TM's bug."""

    rms: int = 3
    eager: bool = False
    liveness: bool = False
    fair_tm: bool = True

    def init_states(self):
        return (State((WORKING,) * self.rms, INIT, 0, 0, False, False),)

    def actions(self, s):
        out = []
        everyone = (1 << self.rms) - 1
        out += [Step("TMRcvPrepared", r) for r in range(self.rms) if s.tm == INIT and s.prepared_msgs >> r & 1]
        if s.tm == INIT and (s.tm_prepared != 0 if self.eager else s.tm_prepared == everyone):
            out.append(Step("TMCommit"))
        if s.tm == INIT:
            out.append(Step("TMAbort"))
        out += [Step("RMPrepare", r) for r in range(self.rms) if s.rm[r] == WORKING]
        out += [Step("RMChooseToAbort", r) for r in range(self.rms) if s.rm[r] == WORKING]
        out += [Step("RMRcvCommitMsg", r) for r in range(self.rms) if s.commit_msg]
        out += [Step("RMRcvAbortMsg", r) for r in range(self.rms) if s.abort_msg]
        return out

    def next_state(self, s, a):
        rm = list(s.rm)
        if a.name == "TMRcvPrepared":
            return attrs.evolve(s, tm_prepared=s.tm_prepared | 1 << a.rm)
        if a.name == "TMCommit":
            return attrs.evolve(s, tm=TM_COMMITTED, commit_msg=True)
        if a.name == "TMAbort":
            return attrs.evolve(s, tm=TM_ABORTED, abort_msg=True)
        if a.name == "RMPrepare":
            rm[a.rm] = PREPARED
            return attrs.evolve(s, rm=tuple(rm), prepared_msgs=s.prepared_msgs | 1 << a.rm)
        rm[a.rm] = {"RMChooseToAbort": ABORTED, "RMRcvCommitMsg": COMMITTED, "RMRcvAbortMsg": ABORTED}[a.name]
        return attrs.evolve(s, rm=tuple(rm))

    def properties(self):
        return (Consistent, DecisionsFinal) + ((EveryoneDecides, PreparedDecides) if self.liveness else ())

    def fair_instances(self):
        """The weakly fair action instances (as ``format_action`` names them): an RM reads
        the TM's decision; with ``fair_tm``, every TM action."""
        rms = range(self.rms)
        tm = [f"TMRcvPrepared({r})" for r in rms] + ["TMCommit", "TMAbort"] if self.fair_tm else []
        return (*tm, *(f"RMRcvCommitMsg({r})" for r in rms), *(f"RMRcvAbortMsg({r})" for r in rms))

    def fair_instance(self, state, action):
        fair = action.name.startswith("RMRcv") or (self.fair_tm and action.name.startswith("TM"))
        return self.format_action(action) if fair else None

    def encode(self, s):
        return bytes(_row(self.rms, s))

    def action_names(self):
        return ACTIONS

    def format_action(self, a):
        return a.name if a.rm < 0 else f"{a.name}({a.rm})"

    def describe_step(self, before, a, after):
        if a.rm < 0:
            return f"the TM is {TM_NAMES[after.tm]}"
        return f"RM {a.rm} is {RM_NAMES[after.rm[a.rm]]}" if a.name.startswith("RM") else f"the TM knows RM {a.rm} prepared"

    def guards(self, s):
        """Every action, enabled or not, with its guard as named conditions (what ``kmc
        why-not`` and the explorer show): an action is enabled exactly when each holds."""
        everyone = (1 << self.rms) - 1
        tm_init = (f"the TM is still in init (it is {TM_NAMES[s.tm]})", s.tm == INIT)
        if self.eager:
            ready = ("the TM knows at least one RM prepared (the eager TM's bug)", s.tm_prepared != 0)
        else:
            ready = ("the TM knows every RM prepared", s.tm_prepared == everyone)
        out = [Guard(Step("TMRcvPrepared", r), (tm_init, (f"RM {r} sent Prepared", bool(s.prepared_msgs >> r & 1))))
               for r in range(self.rms)]
        out += [Guard(Step("TMCommit"), (tm_init, ready)), Guard(Step("TMAbort"), (tm_init,))]
        for name in ("RMPrepare", "RMChooseToAbort"):
            out += [Guard(Step(name, r), ((f"RM {r} is working (it is {RM_NAMES[s.rm[r]]})", s.rm[r] == WORKING),))
                    for r in range(self.rms)]
        out += [Guard(Step("RMRcvCommitMsg", r), (("the TM sent Commit", s.commit_msg),)) for r in range(self.rms)]
        out += [Guard(Step("RMRcvAbortMsg", r), (("the TM sent Abort", s.abort_msg),)) for r in range(self.rms)]
        return out

    def format_state(self, s):
        rms = " ".join(RM_NAMES[x] for x in s.rm)
        msgs = [f"Prepared({r})" for r in range(self.rms) if s.prepared_msgs >> r & 1]
        msgs += ["Commit"] * s.commit_msg + ["Abort"] * s.abort_msg
        return f"TM {TM_NAMES[s.tm]} · RMs {rms} · sent {', '.join(msgs) or 'nothing'}"

    def batch_kernel(self):
        return TwoPhaseKernel(self)

    def expect(self):
        """What ``kmc check --check-expect`` must find: with ``eager`` and two RMs or more
        both properties fail (with one RM, eager is no different: the TM's prepared set
        is empty or everyone); the counts of the whole search for one to three RMs."""
        bug = self.eager and self.rms >= 2
        verdict = "violated" if bug else "holds"
        out = {"Consistent": verdict, "DecisionsFinal": verdict}
        if self.liveness:  # a silent TM leaves the RMs undecided; a fair one decides
            live = "holds" if self.fair_tm else "violated"
            out.update(EveryoneDecides=live, PreparedDecides=live)
        if (self.rms, bug) in COUNTS:
            distinct, depth = COUNTS[self.rms, bug]
            out.update(distinct_states=distinct, depth=depth)
        return out


# Distinct states and depth of the whole search, by (RMs, eager with the bug). One RM, by
# hand: 4 states while the TM is undecided (the RM working, aborted, or prepared with the
# TM knowing it or not), 2 once it committed (the RM prepared or committed), 6 once it
# aborted (the RM working, prepared, or aborted with the TM having known it prepared, not,
# or never); levels 1, 3, 3, 3, 2. Three RMs: 288, as TLC counts Lamport's TwoPhase. Every
# entry: the naive search of tests/test_user_model_cli.py, a transcription of Lamport's
# TLA+ actions over sets.
COUNTS = {(1, False): (12, 5), (2, False): (56, 8), (2, True): (76, 8), (3, False): (288, 11), (3, True): (498, 11)}


# -- the batch kernel: a row is the RMs' states, then the TM's, its prepared set, the
# Prepared messages (bit masks), the Commit and Abort flags, padded to a multiple of 8.


def _row(rms, s):
    width = -(-(rms + 5) // 8) * 8
    row = np.zeros(width, dtype=np.uint8)
    row[:rms] = s.rm
    row[rms : rms + 5] = (s.tm, s.tm_prepared, s.prepared_msgs, s.commit_msg, s.abort_msg)
    return row


class TwoPhaseKernel(KernelBase):
    def __init__(self, model):
        if model.rms > 8:
            raise ValueError("the kernel keeps the RMs' bit masks in a byte: at most 8 RMs")
        self.rms, self.eager, self.model = model.rms, model.eager, model
        self.width = -(-(model.rms + 5) // 8) * 8
        self.action_names = ACTIONS
        n = model.rms
        self.TM, self.TMP, self.MSG, self.COMMIT, self.ABORT = n, n + 1, n + 2, n + 3, n + 4

    def encode(self, s):
        return _row(self.rms, s)

    def decode(self, row):
        n = self.rms
        v = row.tolist()
        return State(tuple(v[:n]), v[n], v[n + 1], v[n + 2], bool(v[n + 3]), bool(v[n + 4]))

    def init_rows(self, states):
        return np.stack([self.encode(s) for s in states])

    def _groups(self, rows):
        """Every action of the model's order: (code, rm, enabled per row)."""
        n, tm = self.rms, rows[:, self.TM]
        init = tm == INIT
        everyone = (1 << n) - 1
        tmp, msg = rows[:, self.TMP], rows[:, self.MSG]
        out = [(0, r, init & ((msg >> r) & 1 == 1)) for r in range(n)]
        out.append((1, -1, init & ((tmp != 0) if self.eager else (tmp == everyone))))
        out.append((2, -1, init))
        out += [(3, r, rows[:, r] == WORKING) for r in range(n)]
        out += [(4, r, rows[:, r] == WORKING) for r in range(n)]
        out += [(5, r, rows[:, self.COMMIT] == 1) for r in range(n)]
        out += [(6, r, rows[:, self.ABORT] == 1) for r in range(n)]
        return out

    def expand(self, rows):
        groups = self._groups(rows)
        enabled = np.stack([g[2] for g in groups], axis=1)
        choice = np.cumsum(enabled, axis=1) - 1  # a successor's position among its parent's actions
        parents, which = np.nonzero(enabled)  # by parent, then in the model's order
        codes = np.array([g[0] for g in groups], dtype=np.int64)[which]
        succ = rows[parents].copy()
        for k, (code, r, _) in enumerate(groups):
            at = which == k
            if not at.any():
                continue
            s = succ[at]
            if code == 0:
                s[:, self.TMP] |= np.uint8(1 << r)
            elif code == 1:
                s[:, self.TM], s[:, self.COMMIT] = TM_COMMITTED, 1
            elif code == 2:
                s[:, self.TM], s[:, self.ABORT] = TM_ABORTED, 1
            elif code == 3:
                s[:, r] = PREPARED
                s[:, self.MSG] |= np.uint8(1 << r)
            else:
                s[:, r] = {4: ABORTED, 5: COMMITTED, 6: ABORTED}[code]
            succ[at] = s
        return parents.astype(np.int64), choice[parents, which].astype(np.int64), codes, succ

    def fair_codes(self, rows, parents, choices, codes, succ):
        """The fair instance code of every successor (``TwoPhase.fair_instances``), -1 for
        a step that is not fair."""
        groups = self._groups(rows)
        enabled = np.stack([g[2] for g in groups], axis=1)
        position = np.cumsum(enabled, axis=1) - 1
        which = np.argmax((position[parents] == choices[:, None]) & enabled[parents], axis=1)
        names = [ACTIONS[code] if r < 0 else f"{ACTIONS[code]}({r})" for code, r, _ in groups]
        index = {name: i for i, name in enumerate(self.model.fair_instances())}
        return np.array([index.get(name, -1) for name in names], dtype=np.int64)[which]


def two_phase(rms=3, eager=False, liveness=False, fair_tm=True):
    """The factory ``kmc check --model specs/models/two_phase.py:two_phase`` calls."""
    return TwoPhase(int(rms), bool(eager), bool(liveness), bool(fair_tm))
