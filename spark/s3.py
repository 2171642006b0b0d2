"""The S3A connector for a Spark that has none (pyspark's own jars have no S3 file system):
Hadoop's `hadoop-aws` at the version of pyspark's Hadoop client, with the AWS SDK v2 modules
it uses, not the SDK's 686 MB `bundle` jar. They are fetched once with Maven into
~/.cache/kraft-verify/s3a. A cluster that already has S3A (EMR, Dataproc, an image with
hadoop-aws) needs none of this.

    .venv/bin/python -m spark.s3 jars     # prints a spark.jars value
"""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from spark.cluster import ClusterError, hadoop_version

CACHE = Path.home() / ".cache" / "kraft-verify" / "s3a"
SDK_MODULES = ["s3", "sts", "s3-transfer-manager", "apache-client"]
# jars pyspark ships in a version of its own: theirs are used
SPARK_HAS = re.compile(r"^(netty-|slf4j-|commons-logging-|commons-codec-|httpclient-|httpcore-)")


def _mvn(*args: str, cwd: Path) -> None:
    got = subprocess.run(["mvn", "-q", "-B", *args], cwd=cwd, capture_output=True, text=True)
    if got.returncode != 0:
        last = (got.stdout + got.stderr).strip().splitlines()[-1:] or ["no output"]
        raise ClusterError(f"cannot fetch the S3A connector with Maven ({last[0][:200]})")


def sdk_version(hadoop: str) -> str:
    """The AWS SDK v2 version that Hadoop release was built with (its hadoop-project pom)."""
    pom = Path.home() / ".m2/repository/org/apache/hadoop/hadoop-project" / hadoop / f"hadoop-project-{hadoop}.pom"
    if not pom.is_file():
        _mvn("dependency:get", "-Dtransitive=false", f"-Dartifact=org.apache.hadoop:hadoop-project:{hadoop}:pom",
             cwd=Path.home())
    found = re.search(r"<aws-java-sdk-v2.version>([^<]+)</aws-java-sdk-v2.version>", pom.read_text())
    if not found:
        raise ClusterError(f"hadoop-project {hadoop} names no AWS SDK v2 version")
    return found.group(1)


def jars() -> list[str]:
    """The connector's jars, fetched on first use."""
    hadoop = hadoop_version()
    where = CACHE / hadoop / "jars"
    if not (where / f"hadoop-aws-{hadoop}.jar").is_file():
        sdk = sdk_version(hadoop)
        modules = "".join(f"<dependency><groupId>software.amazon.awssdk</groupId><artifactId>{m}</artifactId>"
                          f"<version>{sdk}</version></dependency>" for m in SDK_MODULES)
        pom = (f'<project xmlns="http://maven.apache.org/POM/4.0.0"><modelVersion>4.0.0</modelVersion>'
               f"<groupId>kraft-verify</groupId><artifactId>s3a</artifactId><version>1</version><dependencies>"
               f"<dependency><groupId>org.apache.hadoop</groupId><artifactId>hadoop-aws</artifactId>"
               f"<version>{hadoop}</version><exclusions><exclusion><groupId>software.amazon.awssdk</groupId>"
               f"<artifactId>bundle</artifactId></exclusion></exclusions></dependency>{modules}"
               f"</dependencies></project>")
        work = CACHE / hadoop
        work.mkdir(parents=True, exist_ok=True)
        (work / "pom.xml").write_text(pom)
        _mvn("dependency:copy-dependencies", f"-DoutputDirectory={where}.tmp", "-DincludeScope=runtime", cwd=work)
        Path(f"{where}.tmp").rename(where)
    return sorted(str(j) for j in where.glob("*.jar") if not SPARK_HAS.match(j.name))


if __name__ == "__main__":
    from spark.standalone import command_line
    sys.exit(command_line("spark.s3", {"jars": lambda: ",".join(jars())}, sys.argv[1:], (ClusterError,)))
