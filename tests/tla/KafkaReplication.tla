--------------------------- MODULE KafkaReplication ---------------------------
(***************************************************************************)
(* One Kafka partition replicated on a fixed set of replicas, one          *)
(* controller (the quorum) and one acks=all producer: the base model of    *)
(* docs/model.md, with the truncation rules high-watermark (before 0.11),  *)
(* leader-epoch (KIP-101, 0.11) and leader-epoch-kip279 (2.0).             *)
(*                                                                         *)
(* Written from the text of the model's definition, independently of       *)
(* kmc's Python code, so that TLC's counts (distinct states, states        *)
(* generated, depth) and verdicts can be compared with kmc's.              *)
(*                                                                         *)
(* Offsets are 0-based as in the model's text: the record at offset o of   *)
(* a log lg is lg[o + 1].  A record is <<epoch, id>>.                      *)
(***************************************************************************)
EXTENDS Naturals, Integers, Sequences, FiniteSets

CONSTANTS
    Replicas,           \* the replica ids (model values)
    InitialLeaders,     \* {first replica}, or Replicas for initial_leader = any
    MaxMessages,        \* max_messages
    MaxCrashes,         \* max_crashes
    MaxLeaderEpoch,     \* max_leader_epoch
    MinInsyncReplicas,  \* min_insync_replicas
    UncleanElection,    \* unclean_leader_election
    UnflushedLoss,      \* unflushed_loss
    PreferredElection,  \* preferred_election
    Truncation,         \* "high-watermark", "leader-epoch" or "leader-epoch-kip279"
    None                \* a model value: no leader, no response in flight

ASSUME InitialLeaders \subseteq Replicas /\ InitialLeaders # {}
ASSUME Truncation \in {"high-watermark", "leader-epoch", "leader-epoch-kip279"}
ASSUME None \notin Replicas

VARIABLES
    alive,       \* alive[r]: is r up
    log,         \* log[r]: a sequence of records <<epoch, id>>
    hw,          \* hw[r]: r's high watermark (durable)
    epoch,       \* epoch[r]: the last leader epoch r accepted; -1 after a restart
    leader,      \* leader[r]: who r believes leads, or None
    remote_leo,  \* remote_leo[r][f]: r's view, as leader, of f's log end
    inflight,    \* inflight[r]: a fetch response on its way to r, or None
    qleader,     \* the controller's leader, or None
    qepoch,      \* the controller's leader epoch
    isr,         \* the controller's in-sync replicas
    produced,    \* history: records written so far
    crashes,     \* history: crashes so far
    committed    \* history: every <<offset, record>> ever below a leader's hw

vars == <<alive, log, hw, epoch, leader, remote_leo, inflight,
          qleader, qepoch, isr, produced, crashes, committed>>

-----------------------------------------------------------------------------
(* Helpers                                                                 *)

Min(a, b) == IF a <= b THEN a ELSE b
Max(a, b) == IF a >= b THEN a ELSE b
SetMin(S) == CHOOSE x \in S : \A y \in S : x <= y

LEO(r) == Len(log[r])

\* The first n records of a log (all of it when n is past its end).
Prefix(lg, n) == SubSeq(lg, 1, Min(n, Len(lg)))

\* The records of a log from offset o on.
Suffix(lg, o) == SubSeq(lg, o + 1, Len(lg))

\* r leads: alive, named by the controller, believes it leads, on the controller's epoch.
Leads(r) == /\ alive[r]
            /\ qleader = r
            /\ leader[r] = r
            /\ epoch[r] = qepoch

\* HW(l) on a leader whose log, remote_leo row and ISR are lg, rl and is, and whose
\* hw is h: the new hw (never lower), and the records it newly commits.
NewHW(l, lg, rl, is, h) ==
    Max(h, SetMin({Len(lg)} \cup {rl[f] : f \in is \ {l}}))

Commits(lg, old, new) == {<<o, lg[o + 1]>> : o \in old .. (new - 1)}

ZeroRow == [f \in Replicas |-> 0]

\* TLC turns every disjunction met while it computes an action's successors into
\* branches, each giving its own successor: a guard "A \/ B" with A and B both true
\* would be counted twice in "states generated". A guard that is a disjunction is
\* therefore written Holds(A \/ B), which TLC evaluates to one Boolean.
Holds(b) == IF b THEN TRUE ELSE FALSE

-----------------------------------------------------------------------------
(* Truncation rules: the offset t a new follower r of leader l cuts its log to. *)

LastEpoch(lg) == lg[Len(lg)][1]

\* The first offset whose record has an epoch above e, or the log end.
EndOffset(lg, e) ==
    IF \E i \in 1 .. Len(lg) : lg[i][1] > e
    THEN (CHOOSE i \in 1 .. Len(lg) : lg[i][1] > e /\ \A j \in 1 .. (i - 1) : lg[j][1] <= e) - 1
    ELSE Len(lg)

\* The length of the longest common prefix of two logs.
CommonPrefix(a, b) ==
    CHOOSE k \in 0 .. Min(Len(a), Len(b)) :
        /\ \A i \in 1 .. k : a[i] = b[i]
        /\ k = Min(Len(a), Len(b)) \/ a[k + 1] # b[k + 1]

\* KIP-101's OffsetsForLeaderEpoch answer of l for epoch e; -1 stands for undefined.
Undefined == -1
EpochAnswer(l, e) ==
    LET lg == log[l] IN
    IF Len(lg) = 0 THEN Undefined
    ELSE IF LastEpoch(lg) = e THEN Len(lg)
    ELSE IF e < lg[1][1] \/ ~(\E i \in 1 .. Len(lg) : lg[i][1] > e) THEN Undefined
    ELSE EndOffset(lg, e)

TruncateTo(r, l) ==
    CASE Truncation = "high-watermark" -> hw[r]
      [] Truncation = "leader-epoch" ->
            IF Len(log[r]) = 0 THEN 0
            ELSE LET a == EpochAnswer(l, LastEpoch(log[r])) IN
                 IF a = Undefined THEN hw[r] ELSE Min(a, Len(log[r]))
      [] Truncation = "leader-epoch-kip279" -> CommonPrefix(log[r], log[l])

-----------------------------------------------------------------------------
(* Initial states                                                          *)

Init ==
    \E i \in InitialLeaders :
        /\ alive = [r \in Replicas |-> TRUE]
        /\ log = [r \in Replicas |-> <<>>]
        /\ hw = [r \in Replicas |-> 0]
        /\ epoch = [r \in Replicas |-> 0]
        /\ leader = [r \in Replicas |-> i]
        /\ remote_leo = [r \in Replicas |-> ZeroRow]
        /\ inflight = [r \in Replicas |-> None]
        /\ qleader = i
        /\ qepoch = 0
        /\ isr = Replicas
        /\ produced = 0
        /\ crashes = 0
        /\ committed = {}

-----------------------------------------------------------------------------
(* Actions 1-9                                                             *)

\* 1. The leader appends the producer's next record, then HW(l).
Produce(l) ==
    /\ Leads(l)
    /\ produced < MaxMessages
    /\ Cardinality(isr) >= MinInsyncReplicas
    /\ LET lg == Append(log[l], <<epoch[l], produced>>)
           h  == NewHW(l, lg, remote_leo[l], isr, hw[l])
       IN /\ log' = [log EXCEPT ![l] = lg]
          /\ hw' = [hw EXCEPT ![l] = h]
          /\ committed' = committed \cup Commits(lg, hw[l], h)
    /\ produced' = produced + 1
    /\ UNCHANGED <<alive, epoch, leader, remote_leo, inflight,
                   qleader, qepoch, isr, crashes>>

\* 2. The follower f fetches; its leader l answers at once: it records f's
\*    position, runs HW(l), and puts a response on the wire.
FetchRequest(f) ==
    /\ alive[f]
    /\ leader[f] # None
    /\ leader[f] # f
    /\ Leads(leader[f])
    /\ epoch[f] = epoch[leader[f]]
    /\ inflight[f] = None
    /\ LET l  == leader[f]
           o  == Min(LEO(f), LEO(l))
           rl == [remote_leo[l] EXCEPT ![f] = o]
           h  == NewHW(l, log[l], rl, isr, hw[l])
       IN /\ remote_leo' = [remote_leo EXCEPT ![l] = rl]
          /\ hw' = [hw EXCEPT ![l] = h]
          /\ committed' = committed \cup Commits(log[l], hw[l], h)
          /\ inflight' = [inflight EXCEPT ![f] =
                [sender |-> l, epoch |-> epoch[l], start |-> o,
                 records |-> Suffix(log[l], o), hw |-> h]]
    /\ UNCHANGED <<alive, log, epoch, leader, qleader, qepoch, isr,
                   produced, crashes>>

\* 3. The response arrives: applied if f still follows its sender in its epoch,
\*    dropped otherwise.
FetchResponse(f) ==
    /\ inflight[f] # None
    /\ LET m == inflight[f] IN
       IF alive[f] /\ leader[f] = m.sender /\ epoch[f] = m.epoch
       THEN LET lg == Prefix(log[f], m.start) \o m.records IN
            /\ log' = [log EXCEPT ![f] = lg]
            /\ hw' = [hw EXCEPT ![f] = Min(m.hw, Len(lg))]
       ELSE UNCHANGED <<log, hw>>
    /\ inflight' = [inflight EXCEPT ![f] = None]
    /\ UNCHANGED <<alive, epoch, leader, remote_leo, qleader, qepoch, isr,
                   produced, crashes, committed>>

\* 4. r goes down; with unflushed loss, one successor per cut point n.
Crash(r) ==
    /\ alive[r]
    /\ crashes < MaxCrashes
    /\ alive' = [alive EXCEPT ![r] = FALSE]
    /\ inflight' = [inflight EXCEPT ![r] = None]
    /\ crashes' = crashes + 1
    /\ IF UnflushedLoss
       THEN \E n \in 0 .. LEO(r) :
               /\ log' = [log EXCEPT ![r] = Prefix(log[r], n)]
               /\ hw' = [hw EXCEPT ![r] = Min(hw[r], n)]
       ELSE UNCHANGED <<log, hw>>
    /\ UNCHANGED <<epoch, leader, remote_leo, qleader, qepoch, isr,
                   produced, committed>>

\* 5. r comes back with its log and hw from disk.
Restart(r) ==
    /\ ~alive[r]
    /\ alive' = [alive EXCEPT ![r] = TRUE]
    /\ epoch' = [epoch EXCEPT ![r] = -1]
    /\ leader' = [leader EXCEPT ![r] = None]
    /\ remote_leo' = [remote_leo EXCEPT ![r] = ZeroRow]
    /\ inflight' = [inflight EXCEPT ![r] = None]
    /\ UNCHANGED <<log, hw, qleader, qepoch, isr, produced, crashes, committed>>

\* 6. The controller elects n: when its leader is gone (none, dead, or restarted
\*    since its election; n may be that leader), or, with preferred elections,
\*    away from a leader that leads. Clean from the ISR, or unclean when no ISR
\*    member is alive.
LeaderGone ==
    \/ qleader = None
    \/ ~alive[qleader]
    \/ epoch[qleader] # qepoch

ElectLeader(n) ==
    /\ qepoch < MaxLeaderEpoch
    /\ alive[n]
    /\ Holds(\/ LeaderGone
             \/ PreferredElection /\ Leads(qleader) /\ n # qleader)
    /\ Holds(\/ n \in isr
             \/ /\ UncleanElection
                /\ \A r \in isr : ~alive[r]
                /\ n \notin isr)
    /\ LET newisr == IF n \in isr THEN {r \in isr : alive[r]} ELSE {n}
           h      == NewHW(n, log[n], ZeroRow, newisr, hw[n])
       IN /\ isr' = newisr
          /\ hw' = [hw EXCEPT ![n] = h]
          /\ committed' = committed \cup Commits(log[n], hw[n], h)
    /\ qleader' = n
    /\ qepoch' = qepoch + 1
    /\ leader' = [leader EXCEPT ![n] = n]
    /\ epoch' = [epoch EXCEPT ![n] = qepoch + 1]
    /\ remote_leo' = [remote_leo EXCEPT ![n] = ZeroRow]
    /\ inflight' = [inflight EXCEPT ![n] = None]
    /\ UNCHANGED <<alive, log, produced, crashes>>

\* 7. r learns the controller's epoch and follows its leader l, first cutting its
\*    log by the truncation rule. Under the leader-epoch rules l must lead (it
\*    answers OffsetsForLeaderEpoch).
BecomeFollower(r) ==
    /\ alive[r]
    /\ qleader # None
    /\ qleader # r
    /\ epoch[r] < qepoch
    /\ Holds(Truncation = "high-watermark" \/ Leads(qleader))
    /\ LET t == TruncateTo(r, qleader) IN
       /\ log' = [log EXCEPT ![r] = Prefix(log[r], t)]
       /\ hw' = [hw EXCEPT ![r] = Min(hw[r], t)]
    /\ leader' = [leader EXCEPT ![r] = qleader]
    /\ epoch' = [epoch EXCEPT ![r] = qepoch]
    /\ inflight' = [inflight EXCEPT ![r] = None]
    /\ UNCHANGED <<alive, remote_leo, qleader, qepoch, isr, produced, crashes,
                   committed>>

\* 8. The leader drops r, dead or lagging, from the ISR, then HW(l).
ShrinkIsr(r) ==
    \E l \in Replicas :
        /\ Leads(l)
        /\ r \in isr \ {l}
        /\ Holds(~alive[r] \/ remote_leo[l][r] < LEO(l))
        /\ isr' = isr \ {r}
        /\ LET h == NewHW(l, log[l], remote_leo[l], isr \ {r}, hw[l]) IN
           /\ hw' = [hw EXCEPT ![l] = h]
           /\ committed' = committed \cup Commits(log[l], hw[l], h)
        /\ UNCHANGED <<alive, log, epoch, leader, remote_leo, inflight,
                       qleader, qepoch, produced, crashes>>

\* 9. The leader takes back into the ISR a follower that has caught up to its hw.
ExpandIsr(r) ==
    \E l \in Replicas :
        /\ Leads(l)
        /\ r \notin isr
        /\ alive[r]
        /\ leader[r] = l
        /\ epoch[r] = qepoch
        /\ remote_leo[l][r] >= hw[l]
        /\ isr' = isr \cup {r}
        /\ UNCHANGED <<alive, log, hw, epoch, leader, remote_leo, inflight,
                       qleader, qepoch, produced, crashes, committed>>

Next ==
    \E r \in Replicas :
        \/ Produce(r)
        \/ FetchRequest(r)
        \/ FetchResponse(r)
        \/ Crash(r)
        \/ Restart(r)
        \/ ElectLeader(r)
        \/ BecomeFollower(r)
        \/ ShrinkIsr(r)
        \/ ExpandIsr(r)

Spec == Init /\ [][Next]_vars

-----------------------------------------------------------------------------
(* Invariants and the step property                                        *)

HighWatermarkBelowLogEnd == \A r \in Replicas : hw[r] <= LEO(r)

\* While some replica leads, it holds every committed record at its offset.
CommittedNeverLost ==
    \A l \in Replicas :
        Leads(l) =>
            \A c \in committed : c[1] < LEO(l) /\ log[l][c[1] + 1] = c[2]

\* Two live replicas on the controller's epoch agree below both high watermarks.
LogsNeverDiverge ==
    \A r, s \in Replicas :
        (alive[r] /\ alive[s] /\ epoch[r] = qepoch /\ epoch[s] = qepoch) =>
            \A o \in 0 .. (Min(Min(hw[r], hw[s]), Min(LEO(r), LEO(s))) - 1) :
                log[r][o + 1] = log[s][o + 1]

\* The controller's epoch never goes down; a live replica's epoch never goes
\* down, except to -1 on a restart.
LeaderEpochMonotonic ==
    [][/\ qepoch' >= qepoch
       /\ \A r \in Replicas : alive'[r] => (epoch'[r] >= epoch[r] \/ epoch'[r] = -1)]_vars

=============================================================================
