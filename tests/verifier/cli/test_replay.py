"""`kraft-verify replay`: exit 0 when every expectation holds, 1 with expected vs actual at
the first failing one, 2 with one line naming the file, the step and the problem."""
import glob
import json

from tests.conftest import ROOT

EXAMPLE = json.loads((ROOT / "specs/scenarios/format-example.json").read_text())


def test_all_shipped_scenarios_pass(cli):
    files = sorted(glob.glob(str(ROOT / "specs/scenarios/*.json")))
    assert len(files) >= 8
    r = cli("replay", *files)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.count("PASS ") == len(files)


def test_wrong_expectation_exits_1_with_expected_and_actual(cli, write_json):
    bad = json.loads(json.dumps(EXAMPLE))
    bad["steps"][3]["expect"]["elr"] = [3]
    r = cli("replay", write_json("bad.json", bad))
    assert r.returncode == 1
    assert "step 4" in r.stdout and "expectation does not hold" in r.stdout
    assert "[3]" in r.stdout and "[2]" in r.stdout      # expected vs actual


def test_wrong_error_expectation_exits_1(cli, write_json):
    bad = json.loads(json.dumps(EXAMPLE))
    bad["steps"][3]["expect"]["error"] = "INELIGIBLE_REPLICA"
    r = cli("replay", write_json("bad.json", bad))
    assert r.returncode == 1
    assert "INELIGIBLE_REPLICA" in r.stdout


def _malformed(cli, write_json, mutate, expect_in):
    data = json.loads(json.dumps(EXAMPLE))
    mutate(data)
    path = write_json("m.json", data)
    r = cli("replay", path)
    assert r.returncode == 2, r.stdout + r.stderr
    lines = [line for line in (r.stdout + r.stderr).splitlines() if line.strip()]
    assert len(lines) == 1, lines
    assert path in lines[0] and "Traceback" not in lines[0]
    for text in expect_in:
        assert text in lines[0]
    return lines[0]


def test_unknown_op_is_malformed(cli, write_json):
    _malformed(cli, write_json, lambda d: d["steps"].__setitem__(0, {"op": "explode", "broker": 3}),
               ["step 1", "unknown op"])


def test_missing_field_is_malformed(cli, write_json):
    _malformed(cli, write_json, lambda d: d["steps"][2].pop("isr"), ["step 3", "missing field 'isr'"])


def test_bad_type_is_malformed(cli, write_json):
    _malformed(cli, write_json, lambda d: d["steps"][0].__setitem__("broker", "three"), ["step 1", "wrong type"])


def test_bad_expect_type_is_malformed(cli, write_json):
    _malformed(cli, write_json, lambda d: d["steps"][1]["expect"].__setitem__("isr", "1,2"), ["step 2", "isr"])


def test_unknown_config_flag_is_malformed(cli, write_json):
    _malformed(cli, write_json, lambda d: d["config"].__setitem__("turbo", True), ["unknown config flag 'turbo'"])


def test_malformed_step_is_reported_before_any_step_runs(cli, write_json):
    line = _malformed(cli, write_json, lambda d: d["steps"].append({"op": "fence"}), ["step 5", "broker"])
    assert "PASS" not in line and "FAIL" not in line


def test_not_json_is_malformed(cli, write_json):
    path = write_json("x.json", "{not json")
    r = cli("replay", path)
    assert r.returncode == 2 and "not valid JSON" in r.stderr + r.stdout


def test_missing_file_exits_2(cli):
    r = cli("replay", "/nonexistent/scenario.json")
    assert r.returncode == 2 and "no such file" in r.stdout + r.stderr


def test_unknown_cli_option_exits_2_in_one_line(cli):
    r = cli("check", "--no-such-flag")
    assert r.returncode == 2
    assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr


def test_expect_violation_that_does_not_happen_fails(cli, write_json):
    data = json.loads(json.dumps(EXAMPLE))
    data["steps"].append({"expect_violation": ["LeaderCompleteness"]})
    r = cli("replay", write_json("v.json", data))
    assert r.returncode == 1 and "did not occur" in r.stdout


def test_data_plane_op_not_enabled_fails(cli, write_json):
    data = json.loads(json.dumps(EXAMPLE))
    data["steps"] = [{"op": "advance_hwm"}]     # nothing was produced: the HWM cannot move
    r = cli("replay", write_json("n.json", data))
    assert r.returncode == 1 and "not enabled" in r.stdout
