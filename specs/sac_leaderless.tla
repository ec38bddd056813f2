-------------------------- MODULE sac_leaderless --------------------------
(***************************************************************************)
(* RabbitMQ Single Active Consumer with leaderless release, restated for   *)
(* the rebalancing project from Jack Vanlightly's rabbit_leaderless_       *)
(* rebalancing (a GitHub gist, gist.github.com/Vanlightly/                 *)
(* df76c1b661989f32629264414e1590c2, 2020).                                *)
(*                                                                         *)
(* Every app subscribes to every queue. Per queue the broker keeps one     *)
(* active consumer and a FIFO of waiting subscribers. An app holding more  *)
(* active queues than its ideal number releases one (cancel, then          *)
(* subscribe again at the back of the FIFO); the broker makes the head of  *)
(* the FIFO active. The variables are exactly the seed's.                  *)
(*                                                                         *)
(* Variant selects Position:                                               *)
(*   "spec": as the seed writes it. Its first disjunct, a1_active >=       *)
(*           a_active, already counts every tied app as ahead, so the id   *)
(*           tie-break of the second disjunct never applies: tied apps all *)
(*           see the same, larger Position.                                *)
(*   "id":   the first disjunct made strict (>), so that ties are broken   *)
(*           by the second: among equal counts the app with the larger id  *)
(*           is ahead. Positions are then distinct, as the seed's comment  *)
(*           ("in reverse order, then by id") intends.                     *)
(***************************************************************************)
EXTENDS Integers, Sequences, FiniteSets  \* Integers for the -1 of Position

CONSTANTS Q,        \* the queues
          A,        \* the apps
          Variant   \* "spec" or "id"

ASSUME Variant \in {"spec", "id"}

VARIABLES subscriber_queue,  \* per queue, the FIFO of waiting subscribers
          active,            \* per queue, its active app, or 0 for none
          app,               \* per app, the id it got at Start, or 0 while stopped
          id                 \* the next id to hand out

vars == << subscriber_queue, active, app, id >>

Init == /\ subscriber_queue = [q \in Q |-> << >>]
        /\ active = [q \in Q |-> 0]
        /\ app = [a \in A |-> 0]
        /\ id = 1

StartedApps == { a \in A : app[a] # 0 }

Waits(a, q) == \E i \in DOMAIN subscriber_queue[q] : subscriber_queue[q][i] = a

AppActiveCount(a) == Cardinality({ q \in Q : active[q] = a })

Ahead(a1, a) ==   \* a1 counts as ahead of a
  LET mine   == AppActiveCount(a)
      theirs == AppActiveCount(a1)
  IN  \/ IF Variant = "spec" THEN theirs >= mine ELSE theirs > mine
      \/ theirs = mine /\ app[a] < app[a1]

Position(a) ==
  IF AppActiveCount(a) = 0 THEN -1
  ELSE Cardinality({ a1 \in StartedApps : a1 # a /\ AppActiveCount(a1) > 0 /\ Ahead(a1, a) })

IdealNumber(a) ==
  LET ideal     == Cardinality(Q) \div Cardinality(StartedApps)
      remainder == Cardinality(Q) % Cardinality(StartedApps)
  IN  IF remainder = 0 THEN ideal
      ELSE IF remainder >= Position(a) + 1 THEN ideal + 1 ELSE ideal

Start(a) ==
  /\ app[a] = 0
  /\ app' = [app EXCEPT ![a] = id]
  /\ id' = id + 1
  /\ UNCHANGED << subscriber_queue, active >>

Subscribe(a, q) ==
  /\ a \in StartedApps
  /\ ~Waits(a, q)
  /\ active[q] # a
  /\ subscriber_queue' = [subscriber_queue EXCEPT ![q] = Append(@, a)]
  /\ UNCHANGED << active, app, id >>

Release(a, q) ==
  /\ a \in StartedApps
  /\ active[q] = a
  /\ AppActiveCount(a) > IdealNumber(a)
  /\ subscriber_queue' = [subscriber_queue EXCEPT ![q] = SelectSeq(@, LAMBDA a1 : a1 # a)]
  /\ active' = [active EXCEPT ![q] = 0]
  /\ UNCHANGED << app, id >>

MakeActive(q) ==
  /\ subscriber_queue[q] # << >>
  /\ active[q] = 0
  /\ active' = [active EXCEPT ![q] = Head(subscriber_queue[q])]
  /\ subscriber_queue' = [subscriber_queue EXCEPT ![q] = Tail(@)]
  /\ UNCHANGED << app, id >>

(* The seed's Next, without its PrintStats stuttering step. *)
Next == \/ \E a \in A : Start(a)
        \/ \E a \in A, q \in Q : Subscribe(a, q) \/ Release(a, q)
        \/ \E q \in Q : MakeActive(q)

Spec == Init /\ [][Next]_vars

(* An app leaves, gracefully or by a crash the broker detects: it leaves every FIFO, its   *)
(* queues lose their active consumer, and it is stopped again (a later Start is a new app *)
(* joining under the same name). Not part of Next: the explorer checks the seed's model.  *)
Leave(a) ==
  /\ a \in StartedApps
  /\ subscriber_queue' = [q \in Q |-> SelectSeq(subscriber_queue[q], LAMBDA a1 : a1 # a)]
  /\ active' = [q \in Q |-> IF active[q] = a THEN 0 ELSE active[q]]
  /\ app' = [app EXCEPT ![a] = 0]
  /\ UNCHANGED id

NextWithDepartures == Next \/ \E a \in A : Leave(a)

-----------------------------------------------------------------------------
(* Invariants of every reachable state. *)

TypeOK == /\ subscriber_queue \in [Q -> Seq(A)]
          /\ active \in [Q -> A \cup {0}]
          /\ app \in [A -> Nat]
          /\ id \in Nat \ {0}

NotActiveAndWaiting == \A q \in Q : active[q] # 0 => ~Waits(active[q], q)

NoDuplicateWaiter ==
  \A q \in Q : \A i, j \in DOMAIN subscriber_queue[q] :
    i # j => subscriber_queue[q][i] # subscriber_queue[q][j]

(* Invariants of terminal states, where no action of Next is enabled. Such a     *)
(* state is where the protocol is meant to end, so TLC must not stop there as at *)
(* a deadlock: the .cfg files say CHECK_DEADLOCK FALSE (with a TLC older than    *)
(* April 2020, pass -deadlock instead).                                          *)

Terminal == ~ENABLED Next

AllStarted == Terminal => StartedApps = A

AllQueuesActive == Terminal => \A q \in Q : active[q] # 0

Balanced == Terminal => \A a1, a2 \in A : AppActiveCount(a1) <= AppActiveCount(a2) + 1

(* Liveness the explorer checks as "all_can_terminate": from every reachable state a      *)
(* terminal state stays reachable. (Under weak fairness alone this does not guarantee      *)
(* termination: release / re-subscribe / re-activate cycles exist.)                         *)
=============================================================================
