"""The z3 engine: kafka's structural ELR invariants are proved and its leader-candidate
completeness is refuted by the last-known-leader election (F6), every mutant that breaks an
ELR rule and the pre-KIP variants are refuted by a run the concrete model reproduces (one kafka
lacks within the same bound), and counterexamples to induction are real steps of the concrete
model from unreachable states."""
from __future__ import annotations

import functools
import io
import json
from pathlib import Path

import pytest

from invariants.symbolic import BY_NAME, INVARIANTS, LEMMAS, MORE_INVARIANTS
from specs.config import make_config, mutant_config
from verifier.engines.prove import PROVED, REFUTED
from tests.verifier.engines.fresh import check_size, cti_trace, in_fresh_process, witness_trace
from verifier.engines.prove import check_size as check_size_here
from verifier.engines.prove.gate import GATE_DEPTH, baseline, refute_beyond
from tests.bind import run_scenario
from specs.symbolic import concrete_violations

ALL = list(INVARIANTS) + list(MORE_INVARIANTS)
DEFAULT = list(INVARIANTS) + list(MORE_INVARIANTS[:2])

# Mutants whose broken rule the encoding states; the other two break broker-side rules
# (log truncation, leader epochs) the symbolic model abstracts away.
ELR_RULE_MUTANTS = {
    "hwm-maximal-isr": "LeaderCandidateCompleteness", "hwm-ignores-min-isr": "LeaderCandidateCompleteness",
    "hwm-uses-leader-leo": "LeaderCandidateCompleteness", "elr-not-cleared": "ElrOnlyBelowMinIsr",
    "elr-includes-target-isr": "IsrElrDisjoint",
    "fenced-not-into-elr": "UncleanElectionOnlyAfterMinIsrUncleanShutdowns",
    "unclean-shutdown-kept-in-elr": "LeaderCandidateCompleteness",
    "unclean-registration-treated-clean": "LeaderCandidateCompleteness",
    "register-keeps-isr": "LeaderCandidateCompleteness", "fenced-elr-elected": "LeaderInIsr",
    "elr-leader-not-added-to-isr": "LeaderInIsr", "unclean-election-marked-clean": "ElectedLeaderWasCandidate",
    "no-broker-epoch-check": "LeaderCandidateCompleteness", "expand-without-catch-up": "LeaderCandidateCompleteness",
    "unfence-adds-to-isr": "ElectedLeaderWasCandidate",
    # a recovery round's rule (the mutant composes the recovery profile): its run needs a
    # commit before the lossy crash, 7 symbolic steps, the gate's depth
    "recovery-shortest-log": "RecoveryElectsAReplicaWithEveryAnsweredRecord",
}


def _replays(trace, tmp_path: Path, name: str) -> None:
    scenario = trace.model.scenario(trace, name, "test")
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(scenario))
    result = run_scenario(json.loads(path.read_text()), str(path))
    assert result.ok, result.failure
    assert trace.violated and set(trace.violated) <= set(result.trace.violated)


STRUCTURAL = [i for i in DEFAULT if i.name != "LeaderCandidateCompleteness"]


def _every_min_isr(n, **kw):
    """check_size at min ISR 1..n one after another in this interpreter: called in a fresh one,
    the first check starts from the state fresh.py promises and each later one from the same
    state every time, for the cost of one interpreter instead of n (half a second each)."""
    return [check_size_here(make_config("kafka"), n, m, lemmas=LEMMAS, **kw) for m in range(1, n + 1)]


@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_kafka_structural_elr_invariants_are_inductive_with_a_named_strengthening(n):
    results = in_fresh_process(_every_min_isr, n, depth=3 if n < 4 else 2, invariants=STRUCTURAL)
    for m, r in enumerate(results, 1):
        assert r.verdict == PROVED, (n, m, r.dropped, r.violation)
        if m == 1 and n >= 2:
            # plain Inv is not inductive: the CTI's state breaks a lemma that is inductive
            assert not r.inductive_alone and r.strengthening and r.cti_breaks
            assert set(r.cti_breaks) <= set(r.strengthening)


@pytest.mark.parametrize("n", [2, 3])
def test_kafka_breaks_leader_candidate_completeness_by_its_last_known_leader_election(n, tmp_path):
    """FINDINGS.md F6: with fixed topic config, two unclean shutdowns of which one lost data
    (min ISR 2) empty ISR and ELR, and the controller elects its last known leader, the replica
    that lost the data. No operator chose it, so it is no excuse (specs/facts.py). A third
    replica takes one step more to leave the ISR (z3 keeps a crash that kept its log apart from a
    lossy one, so no shorter run stands for it)."""
    r = check_size(make_config("kafka"), n, 2, depth=4 + n, invariants=DEFAULT, config_changes=False,
                   realize=witness_trace)
    assert r.verdict == REFUTED and r.violation == ["LeaderCandidateCompleteness"]
    assert r.witness is not None, "no concrete run matched the BMC counterexample"
    labels = [label[0] for label, _ in r.witness.steps]
    assert "crash_lossy" in labels and labels[-1] == "unfence"
    final = r.witness.final
    assert final.hist.unclean_elections == 1 and final.hist.operator_unclean_elections == 0
    from specs.findings import recognize
    assert recognize(r.witness).id == "F6"
    _replays(r.witness, tmp_path, f"f6-n{n}")


def test_a_cti_is_a_real_step_of_the_concrete_model_and_replays(tmp_path):
    r = check_size(make_config("kafka"), 3, 1, depth=1, invariants=STRUCTURAL)
    assert r.cti is not None and r.verdict == PROVED
    trace = cti_trace(r.cfg, r.cti)
    assert trace is not None
    assert concrete_violations(trace) == r.cti.violated
    _replays(trace, tmp_path, "cti")


@functools.cache
def _gate_baseline(m, depth=GATE_DEPTH):
    """Kafka's own violation depths, found once per process (read, never changed): they are the
    same for every mutant (the gate finds them once too), and each costs 4 s of BMC at depth 7."""
    return baseline(make_config("kafka"), 3, m, depth, ALL, LEMMAS)


# The mutants and the baseline test share _gate_baseline's cache on one test worker.
GATE = pytest.mark.xdist_group("prove-gate")


@GATE
@pytest.mark.parametrize("mutant", [pytest.param(m, marks=pytest.mark.slow) if m == "register-keeps-isr" else m
                                    for m in sorted(ELR_RULE_MUTANTS)])
def test_every_mutant_breaking_an_elr_rule_is_refuted_and_the_run_replays(mutant, tmp_path):
    """A kill is a violation kafka does not have within the same bound, at min ISR 2 or, for
    what survives it, 3 (the z3 gate's rule, verifier/engines/prove/gate.py)."""
    cfg = mutant_config(make_config("kafka"), mutant)      # as the gate makes it (a recovery mutant gets rounds)
    for m in (2, 3):
        r = refute_beyond(cfg, 3, m, GATE_DEPTH, ALL, LEMMAS, _gate_baseline(m), witness_trace)
        if r.verdict == REFUTED and r.witness is not None:
            break
    assert r.verdict == REFUTED
    run = r.refutation_of(ELR_RULE_MUTANTS[mutant])
    assert run is not None, [x.names for x in r.refutations]
    assert run.witness is not None, "no concrete run matched the BMC counterexample"
    _replays(run.witness, tmp_path, mutant)


@GATE
def test_kafka_under_the_mutant_gate_settings_breaks_only_leader_candidate_completeness():
    """Kafka breaks one invariant, LeaderCandidateCompleteness (F6), at depth 7 on 3 brokers at
    min ISR 2 (the gate's depth; none within 6), and one unclean shutdown more puts it deeper
    at min ISR 3: the gate checks mutants on it one step short of kafka's own depth, on every
    other invariant to the full depth."""
    assert GATE_DEPTH == 7 and _gate_baseline(2, depth=6) == {}
    two = _gate_baseline(2)
    assert two == {"LeaderCandidateCompleteness": 7}
    three = _gate_baseline(3, depth=9)
    assert set(three) == {"LeaderCandidateCompleteness"} and three["LeaderCandidateCompleteness"] > two[
        "LeaderCandidateCompleteness"]


@pytest.mark.parametrize("preset", ["pre-kip-966", "pre-kip-903"])
def test_old_protocols_are_refuted_on_leader_candidate_completeness(preset, tmp_path):
    r = check_size(make_config(preset), 3, 2, depth=6, invariants=DEFAULT, realize=witness_trace)
    assert r.verdict == REFUTED and r.violation == ["LeaderCandidateCompleteness"]
    assert not r.inductive_alone and r.dropped == [] or "LeaderCandidateCompleteness" in r.dropped
    _replays(r.witness, tmp_path, preset)


def test_kip_966_text_min_isr_rule_breaks_elr_only_below_min_isr(tmp_path):
    """A finding: with the KIP's rule (a min ISR change keeps ELR unless the new min ISR is
    met) lowering min ISR to 1 and electing from ELR leaves ELR beside a full ISR."""
    r = check_size(make_config("kip-966"), 3, 2, depth=6, invariants=STRUCTURAL, realize=witness_trace)
    assert r.verdict == REFUTED and r.violation == ["ElrOnlyBelowMinIsr"]
    _replays(r.witness, tmp_path, "kip-966")


@pytest.mark.slow
def test_same_command_same_results(cli, tmp_path):
    """Run after run, the same verdicts, strengthening and counterexample (z3 is deterministic
    for the same sequence of queries in a fresh process, which is what a command is)."""
    outs = []
    for i in range(2):
        out = cli("prove", "--mutant", "register-keeps-isr", "--max-brokers", "3", "--min-isr", "2",
                  "--depth", "4", "--out", str(tmp_path / str(i)))
        assert out.returncode == 1
        summary = json.loads(next((tmp_path / str(i)).glob("prove-*/summary.json")).read_text())
        for r in summary["details"]["results"]:
            for key in ("seconds", "induction_seconds", "bmc_seconds"):
                r.pop(key)
        outs.append(summary["details"]["results"])
    assert outs[0] == outs[1]
    # a lossy crash loses a committed record only once one was committed: the HWM advance first
    assert outs[0][-1]["counterexample"]["length"] == 3


def test_every_symbolic_invariant_is_named_after_a_concrete_one():
    import invariants as I
    for name, inv in BY_NAME.items():
        if inv in INVARIANTS or inv in MORE_INVARIANTS:
            assert name in I.BY_NAME


def test_prove_cli_exit_codes_and_reports(cli, tmp_path):
    run_cli = cli
    # kafka breaks LeaderCandidateCompleteness (F6); the recovery profile, whose rounds replace
    # the last-known-leader election, proves every invariant
    ok = run_cli("prove", "--preset", "recovery", "--max-brokers", "2", "--depth", "2", "--out", str(tmp_path),
                 "--junit", str(tmp_path / "j.xml"))
    assert ok.returncode == 0, ok.stderr
    assert "N=2 min_isr=2: inductive with" in ok.stdout
    summary = json.loads(next(tmp_path.glob("prove-recovery-*/summary.json")).read_text())
    assert summary["exit_code"] == 0 and len(summary["details"]["results"]) == 3
    assert all(r["verdict"] == "proved" for r in summary["details"]["results"])
    assert all(row["status"] == "holds" for row in summary["invariants"])
    assert summary["self_check"]["passed"] and summary["self_check"]["states"] == 200
    assert "self-check passed" in ok.stdout and "200 random controller states" in ok.stdout
    assert 'failures="0"' in (tmp_path / "j.xml").read_text() and 'errors="0"' in (tmp_path / "j.xml").read_text()

    bad = run_cli("prove", "--preset", "pre-kip-966", "--max-brokers", "2", "--min-isr", "2", "--out", str(tmp_path))
    assert bad.returncode == 1
    assert "VIOLATED: LeaderCandidateCompleteness" in bad.stdout
    scenario = next(tmp_path.glob("prove-pre-kip-966-*/counterexample-N2-m2.json"))
    replay = run_cli("replay", str(scenario))
    assert replay.returncode == 0 and "reproduces LeaderCandidateCompleteness" in replay.stdout
    # the page says what each property got, per size, and what prove covered (not search bounds)
    report = next(tmp_path.glob("prove-pre-kip-966-*/report.md")).read_text()
    assert "| 2 | 2 | " in report.split("## Per cluster size")[1].split("##")[0]
    assert "refuted at N=2, min ISR 2 by a concrete run of" in report
    assert "topic config changes: on" in report and "config_changes=" not in report
    assert "No action coverage: z3 enumerates no states" in report
    summary = json.loads(next(tmp_path.glob("prove-pre-kip-966-*/summary.json")).read_text())
    row = next(r for r in summary["invariants"] if r["name"] == "LeaderCandidateCompleteness")
    assert row["status"] == "violated" and row["assumes"].startswith("assumes fewer lossy crashes")
    assert summary["details"]["results"][-1]["properties"]["LeaderCandidateCompleteness"] == "refuted"


@pytest.mark.parametrize("args,needle", [
    (["--max-brokers", "0"], "--max-brokers"),
    (["--min-isr", "9"], "--min-isr 9"),
    (["--invariant", "Nope"], "unknown symbolic invariant 'Nope'"),
    (["--preset", "nope"], "unknown preset"),
    (["--mutant", "nope"], "unknown mutant"),
    (["--depth", "-1"], "--depth"),
    (["--mutant", "follower-no-truncate"], "prove cannot check this config: rule follower_truncates=False"),
    (["--flag", "leader_epoch_bump_on_isr_shrink=true"], "rule leader_epoch_bump_on_isr_shrink=True"),
])
def test_prove_cli_bad_input_is_one_line_and_exit_2(cli, args, needle, capsys):
    """The first case as a real command; the rest through the same entry point in this
    process (as tests/hostile/test_corpus.py does), which saves a 0.8 s interpreter each."""
    if args[0] == "--max-brokers":
        out = cli("prove", *args)
        code, err = out.returncode, out.stderr
    else:
        from verifier.cli import main
        code = main(["prove", *args])
        err = capsys.readouterr().err
    assert code == 2
    assert needle in err and len(err.strip().splitlines()) == 1


def test_prove_cli_time_budget_stops_with_exit_3(cli, tmp_path):
    """The budget counts from the start: spent in the self-check, no verdict at all; spent
    among the sizes, the sizes proved so far and exit 3."""
    early = cli("prove", "--max-brokers", "8", "--time-budget", "0.5", "--out", str(tmp_path))
    assert early.returncode == 3
    assert "time budget spent during the self-check (before any verdict)" in early.stdout
    late = cli("prove", "--preset", "recovery", "--max-brokers", "8", "--self-check-samples", "10",
               "--time-budget", "4", "--out", str(tmp_path))
    assert late.returncode == 3, late.stdout + late.stderr
    assert "stopped by the time budget (4s)" in late.stdout and "proved up to N=" in late.stdout


def test_prove_refuses_to_give_a_verdict_when_its_relation_disagrees_with_the_model(monkeypatch):
    """The self-check runs before any verdict: an encoding that got one operation wrong is a
    one-line usage error (exit 2), not a proof."""
    from rich.console import Console
    from specs.symbolic.algebra import Symbolic
    from verifier.cli.common import UsageError
    from verifier.cli.prove import footing
    monkeypatch.setattr(Symbolic, "minus", lambda self, a, b: a)
    with pytest.raises(UsageError, match="self-check failed"):
        footing(make_config("kafka"), 3, 100, True, Console(file=io.StringIO()))


def test_a_flag_z3_does_not_encode_is_refused_not_proved_without_it(cli, tmp_path):
    """Issue 37: `prove --flag reassignment_requires_min_isr=true` ran the proof of the config
    without the rule (the encoding has no reassignment) and reported its verdict as this one's."""
    r = cli("prove", "--flag", "reassignment_requires_min_isr=true", "--max-brokers", "2", "--out", str(tmp_path))
    assert r.returncode == 2, r.stdout + r.stderr
    (line,) = r.stderr.strip().splitlines()
    assert "prove cannot encode --flag reassignment_requires_min_isr" in line and "no reassignment" in line
    assert not list(tmp_path.iterdir())
