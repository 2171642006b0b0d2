import json
import os
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def run_cli(*args, cwd=ROOT, env=None):
    """Run `kraft-verify ARGS` in a subprocess (`env`: variables to add); returns CompletedProcess."""
    env = dict(os.environ, COLUMNS="200", **(env or {}))
    return subprocess.run([sys.executable, "-m", "verifier.cli", *args], cwd=cwd, capture_output=True,
                          text=True, env=env)


# The tests that need more than Python: a JVM (Spark, the conform engine's driver of Kafka's
# controller, real Kafka clusters), Maven, Hadoop, Chromium or root. `make test-fast` runs every
# other test (`-m 'not nightly and not deps'`); `make test` runs them all. A module or test is
# marked here by where it lives, by the Spark fixture it takes, or by its own `deps` mark.
DEPS_DIRS = ("tests/spark/", "tests/cluster/")
DEPS_MODULES = ("tests/verifier/engines/test_conform.py", "tests/verifier/engines/test_oracle_answers.py",
                "tests/verifier/engines/test_oracle_driver.py")


def pytest_collection_modifyitems(config, items):
    for item in items:
        where = Path(str(item.fspath)).resolve().relative_to(ROOT).as_posix()
        if where.startswith(DEPS_DIRS) or where in DEPS_MODULES or "spark_session" in item.fixturenames:
            item.add_marker(pytest.mark.deps)


@contextmanager
def tmpfs(where: Path, size: str):
    """A disk of its own at `where` (a tmpfs of `size`, mounted as root), unmounted after; a test
    that cannot mount one fails in one line."""
    where.mkdir()
    p = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)], capture_output=True, text=True)
    if p.returncode:
        pytest.fail(f"this test mounts a tmpfs (as root): {p.stderr.strip()}", pytrace=False)
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=True)


@pytest.fixture
def cli():
    return run_cli


@pytest.fixture
def write_json(tmp_path):
    def write(name, data):
        path = tmp_path / name
        path.write_text(json.dumps(data) if not isinstance(data, str) else data)
        return str(path)
    return write


@pytest.fixture(scope="session", autouse=True)
def spark_local_dirs(tmp_path_factory):
    """Spark's scratch (its blockmgr-* directories, the kernel path's exchange) and the driver
    JVM's temporary files (spark-* directories, lz4's native library) in a directory removed
    after the tests: a Spark a test kills (SIGKILL, SIGTERM) cannot remove its own, and they
    were left in /tmp. The killed drivers' exchange directories in /dev/shm go too
    (spark/exchange.py's FAST; a later run would sweep them, but none follows the last test)."""
    import shutil
    where = tmp_path_factory.mktemp("spark-local")
    before = {k: os.environ.get(k) for k in ("SPARK_LOCAL_DIRS", "SPARK_SUBMIT_OPTS")}
    os.environ["SPARK_LOCAL_DIRS"] = str(where)
    os.environ["SPARK_SUBMIT_OPTS"] = f"{before['SPARK_SUBMIT_OPTS'] or ''} -Djava.io.tmpdir={where}".strip()
    yield where
    for key, value in before.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value
    shutil.rmtree(where, ignore_errors=True)
    from spark.exchange import FAST, sweep
    sweep(FAST)


@pytest.fixture(scope="session")
def spark_session():
    """One local[2] Spark session for every Spark test (starting a JVM costs seconds)."""
    from spark.session import make_session
    spark = make_session("local[2]", partitions=2)
    yield spark
    spark.stop()


def kill_at_depth(args, ck, depth: int, wait: float = 120) -> dict:
    """Run `kraft-verify check *args --checkpoint-dir ck`, SIGKILL it once its manifest is of
    `depth` or deeper (or `wait` seconds passed), and return the manifest it left."""
    import json
    import os
    import signal
    import subprocess
    import sys
    import time
    proc = subprocess.Popen([sys.executable, "-m", "verifier.cli", "check", *args, "-q", "--checkpoint-dir", str(ck)],
                            cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        manifest = ck / "manifest.json"
        if manifest.exists() and json.loads(manifest.read_text()).get("depth", 0) >= depth:
            break
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    return json.loads((ck / "manifest.json").read_text())
