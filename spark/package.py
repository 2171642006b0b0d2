"""The project packed for `spark-submit`, as PySpark's documentation recommends for code with
dependencies ("Python Package Management": a packed virtual environment shipped with
`--archives`): a virtualenv holding the project's wheel and every dependency but pyspark
(each executor has Spark's own, on the PYTHONPATH its worker gives it), in one .tar.gz.

    .venv/bin/python -m spark.package build build/spark/kraft-verify-env.tar.gz
    PYSPARK_DRIVER_PYTHON=build/spark/env/bin/python PYSPARK_PYTHON=./environment/bin/python \\
      spark-submit --master spark://HOST:7077 --archives build/spark/kraft-verify-env.tar.gz#environment \\
      "$(build/spark/env/bin/python -c 'import verifier.cli.submit as m; print(m.__file__)')" \\
      spark-check --checkpoint-dir hdfs://NAMENODE/kraft-verify/ck

The environment's bin/python links to the interpreter it was made with (Python 3.11 at the
same path on every host, as venv-pack and conda-pack also require); it is packed with the
standard library's tarfile (the links kept as links), so no packing tool is needed.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tarfile
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SKIP = {"pyspark", "py4j", "pytest", "moto"}     # Spark has the first two on every host; the others are for tests


def dependencies() -> list[str]:
    """pyproject's dependencies but Spark's own."""
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    return [d for d in deps if re.split(r"[<>=!~ \[;]", d, maxsplit=1)[0].lower() not in SKIP]


def build(out: Path, work: Path = ROOT / "build" / "spark") -> Path:
    """Make work/env (the environment) and pack it as `out`; returns `out`."""
    env = work / "env"
    shutil.rmtree(env, ignore_errors=True)
    work.mkdir(parents=True, exist_ok=True)
    run = lambda *argv: subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)     # noqa: E731
    run(sys.executable, "-m", "venv", str(env))
    pip = [str(env / "bin" / "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    run(*pip, *dependencies())
    wheels = work / "wheels"
    shutil.rmtree(wheels, ignore_errors=True)
    run(sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(wheels), str(ROOT))
    run(*pip, "--no-deps", *map(str, wheels.glob("kraft_verify-*.whl")))
    tmp = out.with_name(out.name + ".tmp")
    out.parent.mkdir(parents=True, exist_ok=True)
    with tarfile.open(tmp, "w:gz", compresslevel=1) as tar:
        for item in sorted(env.iterdir()):
            tar.add(item, arcname=item.name, filter=lambda t: None if "__pycache__" in t.name else t)
    os.replace(tmp, out)
    return out


class BuildError(Exception):
    pass


def _build(out: str) -> Path:
    try:
        return build(Path(out).resolve())
    except subprocess.CalledProcessError as exc:
        raise BuildError(f"{' '.join(map(str, exc.cmd))[:200]} failed (exit {exc.returncode})") from None


if __name__ == "__main__":
    from spark.standalone import command_line
    sys.exit(command_line("spark.package", {"build": _build}, sys.argv[1:], (BuildError, TypeError)))
