"""The z3 encoding of the model, for any cluster size N: the seam of the z3 engine.

- algebra.py: the z3 meaning of the algebra the controller rules are written in;
- state.py: symbolic states and step choices;
- encoding.py: the transition relation (controller rules shared with the concrete model);
- brokers.py: the broker side, abstracted by hand;
- abstraction.py: concrete state <-> abstract value;
- selfcheck.py: the relation against the concrete model, before any verdict;
- witness.py: z3's counterexamples as runs of the concrete model;
- display.py: steps and states in words;
The properties it checks are not here: each concrete invariant carries its z3 twin
(invariants/twins.py), and the caller hands them to the z3 engine.
"""
from specs.symbolic.abstraction import Abstract, abstract, describe, equals, evaluate, members, sized
from specs.symbolic.algebra import COUNT_BITS, lowest, meets, one_hot, one_hot_or_zero, popcount
from specs.symbolic.display import state_changes, step_text
from specs.symbolic.encoding import ACTION_ID, ACTIONS, Encoding, StepFormula, encoding
from specs.symbolic.state import SET_FIELDS, Params, Sym, make_sym, sym_params, sym_state
from specs.symbolic import selfcheck  # noqa: E402  (after the encoding it checks)
from specs.symbolic.witness import concrete_violations, cti_trace, witness_trace  # noqa: E402

__all__ = ["Abstract", "abstract", "describe", "equals", "evaluate", "members", "sized", "COUNT_BITS", "lowest",
           "meets", "one_hot", "one_hot_or_zero", "popcount", "state_changes", "step_text", "ACTION_ID", "ACTIONS",
           "Encoding", "StepFormula", "encoding", "SET_FIELDS", "Params", "Sym", "make_sym", "sym_params", "sym_state",
           "selfcheck", "concrete_violations", "cti_trace", "witness_trace"]
