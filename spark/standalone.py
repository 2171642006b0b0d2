"""A Spark standalone cluster on this machine from the installed pyspark: one master and
one worker on 127.0.0.1, for trying `spark-check --master spark://127.0.0.1:7077` (and for
the test that does so in CI).

    .venv/bin/python -m spark.standalone start     # master on 127.0.0.1:7077, one worker
    .venv/bin/kraft-verify spark-check --master spark://127.0.0.1:7077
    .venv/bin/python -m spark.standalone stop
"""
from __future__ import annotations

import inspect
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

HOST = "127.0.0.1"
PORT = 7077
STATE = Path(os.environ.get("KRAFT_VERIFY_STANDALONE_DIR", "/tmp/kraft-verify-standalone"))


def spark_home() -> str:
    import pyspark
    return os.path.dirname(pyspark.__file__)


def listening(port: int) -> bool:
    try:
        with socket.create_connection((HOST, port), timeout=1):
            return True
    except OSError:
        return False


def _launch(name: str, args: list[str]) -> int:
    STATE.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, SPARK_HOME=spark_home(), PYSPARK_PYTHON=sys.executable,
               SPARK_LOCAL_IP=HOST, SPARK_NO_DAEMONIZE="1")
    log = open(STATE / f"{name}.log", "w")
    proc = subprocess.Popen([os.path.join(spark_home(), "bin", "spark-class"), *args], env=env, stdout=log,
                            stderr=subprocess.STDOUT, start_new_session=True)
    (STATE / f"{name}.pid").write_text(str(proc.pid))
    return proc.pid


def start(port: int = PORT, cores: int = 2, memory: str = "2g", timeout: float = 60.0) -> str:
    """Start master and worker; return the master URL once the worker has registered."""
    if listening(port):
        raise RuntimeError(f"something already listens on {HOST}:{port}")
    _launch("master", ["org.apache.spark.deploy.master.Master", "--host", HOST, "--port", str(port),
                       "--webui-port", "18080"])
    deadline = time.monotonic() + timeout
    _wait(lambda: listening(port), deadline, "the master did not start", "master")
    url = f"spark://{HOST}:{port}"
    _launch("worker", ["org.apache.spark.deploy.worker.Worker", url, "--host", HOST, "--cores", str(cores),
                       "--memory", memory, "--webui-port", "18081"])
    _wait(lambda: "Successfully registered with master" in _read(STATE / "worker.log"), deadline,
          "the worker did not register", "worker")
    return url


def _wait(ready, deadline: float, failure: str, log: str) -> None:
    """Poll `ready()` until the deadline; past it, stop everything and say which log tells why."""
    while not ready():
        if time.monotonic() > deadline:
            stop()
            raise RuntimeError(f"{failure} (see {STATE / (log + '.log')})")
        time.sleep(0.5)


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""


def stop() -> None:
    kill_from_pid_files([STATE / f"{name}.pid" for name in ("worker", "master")], signal.SIGTERM)


def kill_from_pid_files(pid_files, sig: int) -> None:
    """Signal the process group each pid file names (a process started in its own session),
    then drop the file; a process already gone is no error."""
    for pid_file in pid_files:
        if not pid_file.exists():
            continue
        try:
            os.killpg(int(pid_file.read_text()), sig)
        except (ProcessLookupError, ValueError, PermissionError):
            pass
        pid_file.unlink(missing_ok=True)


def command_line(prog: str, actions: dict, argv: list[str], errors: tuple = ()) -> int:
    """The entry point of a make target or a recipe, `python -m PROG ACTION [ARG...]`: the
    action's result (if any) on stdout and exit 0; an unknown action, or one of `errors`, is
    one line on stderr and exit 2."""
    action = actions.get(argv[0]) if argv else None
    try:
        inspect.signature(action).bind(*argv[1:])
    except (TypeError, ValueError):
        print(f"usage: python -m {prog} {'|'.join(actions)}"
              + (f" ({argv[0]} does not take {len(argv) - 1} arguments)" if action else ""), file=sys.stderr)
        return 2
    try:
        result = action(*argv[1:])
    except errors as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        return 2
    if result is not None:
        print(result)
    return 0


if __name__ == "__main__":
    sys.exit(command_line("spark.standalone", {"start": start, "stop": stop}, sys.argv[1:]))
