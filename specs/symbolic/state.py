"""A symbolic state: the controller's view as the concrete model's own records (specs/state.py)
holding z3 terms, plus the broker-side abstraction and ghost variables.

The controller rules (specs/pipeline.py, specs/controller.py) read and `_replace` the same
`Controller` and `Partition` records whatever their values are, so the z3 encoding hands
them records of z3 terms. Fields z3 does not keep hold constants: epochs are 0, every
replica is registered, no reassignment is under way. The leader recovery state is kept, as
the Bool `recovering` (the partition record holds it as a 1-bit vector, RECOVERING = 1).
"""
from __future__ import annotations

from typing import NamedTuple

import z3

from specs.state import RECOVERING, Controller, Partition
from specs.symbolic.algebra import COUNT_BITS

# The set-valued fields of a symbolic state, each an N-bit vector, in the order z3 names them.
SET_FIELDS = ("isr", "elr", "cleared_elr", "last_known_elr", "last_known_leader", "leader", "fenced",
              "shutting_down", "alive", "clean_file", "complete", "fetched", "stale", "lossy")
ACTION_BITS = 5


class Sym(NamedTuple):
    """One symbolic state. `leader` and `last_known_leader` are one-hot (0 = none)."""
    ctrl: Controller              # the controller's view, as z3 terms
    alive: z3.BitVecRef           # the process is running
    clean_file: z3.BitVecRef      # wrote a clean-shutdown file with its current broker epoch
    complete: z3.BitVecRef        # ghost: holds every committed record
    fetched: z3.BitVecRef         # the leader has seen a Fetch from it in this leader epoch
    stale: z3.BitVecRef           # ... but from its previous incarnation (KIP-903's window)
    lost: z3.BoolRef              # ghost: an unclean election happened (logs may diverge from here on)
    operator_unclean: z3.BoolRef  # ghost: ... one an operator chose (the only one that excuses a loss)
    unclean_shutdowns: z3.BitVecRef   # ghost: registrations judged unclean (saturating count)
    lossy_crashes: z3.BitVecRef   # ghost: lossy crashes of replicas (saturating count)
    recovering: z3.BoolRef        # leader_recovery_state is RECOVERING (an unclean leader's log is not settled)
    committed: z3.BoolRef         # ghost: a record was committed (an HWM advance)
    promised_min_isr: z3.BitVecRef    # ghost: the least min ISR since the first commit (History.promised_min_isr)
    least_min_isr: z3.BitVecRef   # ghost: the least min ISR of the run (History.least_min_isr)
    lossy: z3.BitVecRef           # stopped by a crash that may have lost what the leader saw it fetch

    # The controller's fields under the names the invariants use.
    isr = property(lambda s: s.ctrl.partition.isr)
    elr = property(lambda s: s.ctrl.partition.elr)
    cleared_elr = property(lambda s: s.ctrl.partition.cleared_elr)   # brokers with an ELR index entry a ClearElrRecord left
    last_known_elr = property(lambda s: s.ctrl.partition.last_known_elr)
    last_known_leader = property(lambda s: s.ctrl.partition.last_known_leader)
    leader = property(lambda s: s.ctrl.partition.leader)
    fenced = property(lambda s: s.ctrl.fenced)
    shutting_down = property(lambda s: s.ctrl.shutting_down)
    min_isr = property(lambda s: s.ctrl.min_isr)          # effective: 1..N
    unclean_leader_election = property(lambda s: s.ctrl.unclean_leader_election)

    def variables(self) -> list:
        """Every term z3 keeps for this state, in a fixed order."""
        return [getattr(self, f) for f in SET_FIELDS] + [self.min_isr, self.unclean_leader_election, self.lost,
                                                        self.operator_unclean, self.unclean_shutdowns,
                                                        self.lossy_crashes, self.recovering, self.committed,
                                                        self.promised_min_isr, self.least_min_isr]


class Params(NamedTuple):
    """The choices of one step: which action, on which broker, with which sets."""
    action: z3.BitVecRef          # index into the encoding's ACTIONS
    broker: z3.BitVecRef          # one-hot
    members: z3.BitVecRef         # AlterPartition's proposed ISR / HWM survivors / fetchers
    pending: z3.BitVecRef         # the leader's pending ISR additions (maximal ISR)
    value: z3.BitVecRef           # set_min_isr's new value
    flag: z3.BoolRef              # crash: loses the unflushed suffix; set_unclean: the value
    pick: z3.BitVecRef            # any_candidate_elections: the candidate chosen
    unclean: z3.BoolRef           # out: this step elected uncleanly


def make_sym(n: int, isr, elr, cleared_elr, last_known_elr, last_known_leader, leader, fenced, shutting_down, alive,
             clean_file, complete, fetched, stale, min_isr, unclean_leader_election, lost,
             unclean_shutdowns, lossy_crashes, recovering, operator_unclean=False, committed=False,
             promised_min_isr=None, least_min_isr=None, lossy=None) -> Sym:
    """A symbolic state from its fields; the min ISR ghosts default to min_isr (nothing kept),
    `lossy` to nobody."""
    everyone = z3.BitVecVal((1 << n) - 1, n)
    recovering = z3.BoolVal(recovering) if isinstance(recovering, bool) else recovering
    operator_unclean = z3.BoolVal(operator_unclean) if isinstance(operator_unclean, bool) else operator_unclean
    committed = z3.BoolVal(committed) if isinstance(committed, bool) else committed
    promised_min_isr = min_isr if promised_min_isr is None else promised_min_isr
    least_min_isr = min_isr if least_min_isr is None else least_min_isr
    lossy = z3.BitVecVal(0, n) if lossy is None else lossy
    p = Partition(replicas=everyone, isr=isr, elr=elr, cleared_elr=cleared_elr, last_known_elr=last_known_elr, leader=leader,
                  leader_epoch=0, partition_epoch=0, leader_recovery_state=z3.If(recovering, RECOVERY_ON, RECOVERY_OFF),
                  adding_replicas=(), removing_replicas=(), last_known_leader=last_known_leader)
    ctrl = Controller(partition=p, registered=everyone, broker_epochs=(), fenced=fenced,
                      shutting_down=shutting_down, min_isr=min_isr, unclean_leader_election=unclean_leader_election)
    return Sym(ctrl, alive, clean_file, complete, fetched, stale, lost, operator_unclean, unclean_shutdowns,
               lossy_crashes, recovering, committed, promised_min_isr, least_min_isr, lossy)


RECOVERY_ON, RECOVERY_OFF = z3.BitVecVal(RECOVERING, 1), z3.BitVecVal(1 - RECOVERING, 1)


def is_recovering(state) -> z3.BoolRef:
    """A leader_recovery_state the rules computed (a 1-bit vector, or a Python constant) as a Bool."""
    out = state == RECOVERING
    return z3.BoolVal(out) if isinstance(out, bool) else out


def sym_state(n: int, tag: str) -> Sym:
    sets = {name: z3.BitVec(f"{name}_{tag}", n) for name in SET_FIELDS}
    return make_sym(n, **sets, min_isr=z3.BitVec(f"min_isr_{tag}", COUNT_BITS),
                    unclean_leader_election=z3.Bool(f"unclean_leader_election_{tag}"), lost=z3.Bool(f"lost_{tag}"),
                    unclean_shutdowns=z3.BitVec(f"unclean_shutdowns_{tag}", COUNT_BITS),
                    lossy_crashes=z3.BitVec(f"lossy_crashes_{tag}", COUNT_BITS),
                    recovering=z3.Bool(f"recovering_{tag}"), operator_unclean=z3.Bool(f"operator_unclean_{tag}"),
                    committed=z3.Bool(f"committed_{tag}"),
                    promised_min_isr=z3.BitVec(f"promised_min_isr_{tag}", COUNT_BITS),
                    least_min_isr=z3.BitVec(f"least_min_isr_{tag}", COUNT_BITS))


def sym_params(n: int, tag: str) -> Params:
    return Params(z3.BitVec(f"action_{tag}", ACTION_BITS), z3.BitVec(f"broker_{tag}", n),
                  z3.BitVec(f"members_{tag}", n), z3.BitVec(f"pending_{tag}", n),
                  z3.BitVec(f"value_{tag}", COUNT_BITS), z3.Bool(f"flag_{tag}"), z3.BitVec(f"pick_{tag}", n),
                  z3.Bool(f"unclean_{tag}"))
