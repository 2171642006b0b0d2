"""--checkpoint-dir on S3: Hadoop's own S3A connector (spark/s3.py fetches hadoop-aws and the
AWS SDK modules it uses) against moto's S3 server, a real HTTP server that speaks S3's REST
API in this test's process. A missing bucket is one line and exit 2; a bucket that exists
holds a run equal to check's, resumable like any other store."""
from __future__ import annotations

import json
import socket

import pytest

from tests.conftest import run_cli

pytestmark = pytest.mark.xdist_group("s3")        # one S3 server, on one test worker

ARGS = ["--preset", "pre-kip-966", "--brokers", "2", "--bound", "lossy_crashes=1", "--bound", "isr_shrinks=1",
        "--max-depth", "5"]          # LeaderCandidateCompleteness is violated at step 5


@pytest.fixture(scope="module")
def s3(tmp_path_factory):
    from moto.server import ThreadedMotoServer

    from spark import s3 as connector
    from spark.cluster import ClusterError
    try:
        jars = connector.jars()
    except ClusterError as exc:            # never a skip
        pytest.fail(f"cannot get the S3A connector: {exc}", pytrace=False)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    endpoint = f"http://127.0.0.1:{port}"
    conf = tmp_path_factory.mktemp("spark-conf")
    (conf / "spark-defaults.conf").write_text("\n".join([
        f"spark.jars {','.join(jars)}",
        f"spark.hadoop.fs.s3a.endpoint {endpoint}",
        "spark.hadoop.fs.s3a.endpoint.region us-east-1",
        "spark.hadoop.fs.s3a.path.style.access true",
        "spark.hadoop.fs.s3a.connection.ssl.enabled false",
        "spark.hadoop.fs.s3a.access.key testing",
        "spark.hadoop.fs.s3a.secret.key testing",
        "spark.hadoop.fs.s3a.aws.credentials.provider org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider",
        f"spark.hadoop.hadoop.tmp.dir {conf / 'hadoop-tmp'}",     # S3A's buffers: not /tmp/hadoop-USER
        ""]))
    import boto3
    boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1", aws_access_key_id="testing",
                 aws_secret_access_key="testing").create_bucket(Bucket="kraft-verify")
    yield {"SPARK_CONF_DIR": str(conf)}
    server.stop()


def test_a_missing_bucket_is_one_line_and_exit_2(s3, tmp_path):
    out = run_cli("spark-check", *ARGS, "--master", "local[2]", "--checkpoint-dir", "s3a://no-such-bucket/ck",
                  "--out", str(tmp_path / "out"), env=s3)
    assert out.returncode == 2, out.stderr[-2000:]
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and "s3a://no-such-bucket/ck" in lines[0] and "no-such-bucket" in lines[0], out.stderr
    assert "level   1" not in out.stdout


def test_a_run_on_s3_is_checks_run_and_resumes(s3, tmp_path):
    url = "s3a://kraft-verify/ck"
    first = run_cli("spark-check", *ARGS[:-1], "3", "--master", "local[2]", "--driver-levels", "0",
                    "--checkpoint-dir", url, "-q", "--out", str(tmp_path / "a"), env=s3)
    assert first.returncode == 3, first.stderr[-2000:]          # stopped at depth 3
    resumed = run_cli("spark-check", *ARGS, "--master", "local[2]", "--driver-levels", "0",
                      "--checkpoint-dir", url, "--resume", "-q", "--out", str(tmp_path / "b"), env=s3)
    want = run_cli("check", *ARGS, "-q", "--out", str(tmp_path / "c"))
    got = json.loads(next((tmp_path / "b").glob("*/summary.json")).read_text())
    expected = json.loads(next((tmp_path / "c").glob("*/summary.json")).read_text())
    assert resumed.returncode == want.returncode == 1, resumed.stderr[-2000:]
    assert "(resuming)" in resumed.stdout
    for key in ("distinct_states", "transitions", "states_per_level", "terminal_states"):
        assert got["counts"][key] == expected["counts"][key], key
    assert {n: c["length"] for n, c in got["counterexamples"].items()} == \
           {n: c["length"] for n, c in expected["counterexamples"].items()}
