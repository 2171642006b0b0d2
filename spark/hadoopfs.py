"""A directory on a Hadoop-compatible file system (hdfs://, s3a://, gs://, abfs://, file://),
reached through the Spark driver's JVM: the same file system code, configuration and
credentials the executors use, so `--checkpoint-dir` takes whatever URL the cluster's Spark
takes. It has the shape of verifier/core/checkpoint.py's LocalFiles, so the checkpoint rules
(identity, the mark, never the user's files) are the same for every store.

Replacing a file whole: on HDFS and local disks (rename is atomic) the new text goes to a
temporary name and is renamed over the old one; on object stores (rename is a copy) it is
written under its final name, which a store shows whole or not at all once it is closed.

On a file:// location the driver uses Hadoop's raw local file system, not the checksummed one
Hadoop gives by default: that one keeps a hidden `.NAME.crc` beside every file and renames the
two one after the other, so a driver killed between the renames left a whole new manifest
beside its old checksum file, which every later read refused (ChecksumException). A rename is
then one rename(2); the manifest needs no side file (it is JSON checked field by field, and
every level it names is re-measured against its sha256s on resume).

Errors are one line naming the URL and the file system's reason (StoreError): an
unreachable NameNode, a missing bucket, a scheme with no file system on the classpath.
"""
from __future__ import annotations

import os
import re
from typing import Optional

from verifier.core.checkpoint import CheckpointError

# Schemes whose rename is atomic (a POSIX-like namespace): a file is replaced by renaming.
ATOMIC_RENAME = {"file", "hdfs", "viewfs", "webhdfs", "swebhdfs", "har", "o3fs", "ofs"}
MAX_READ = 64 << 20          # a manifest larger than this is not ours


class StoreError(CheckpointError):
    """The store cannot be used: the CLI exits 2 with this line."""


def as_url(location: str) -> str:
    """A URL for `location`: a plain path is this machine's file system (file://, absolute)."""
    if re.match(r"^[A-Za-z][A-Za-z0-9+.-]*://", location):
        return location.rstrip("/") or location
    return "file://" + os.path.abspath(location)


def scheme_of(url: str) -> str:
    return url.split("://", 1)[0].lower()


def reason(exc: BaseException) -> str:
    """The Java exception's class and message, on one line."""
    java = getattr(exc, "java_exception", None)
    if java is None:
        return str(exc).strip().splitlines()[0][:300] if str(exc).strip() else type(exc).__name__
    cause = java
    while cause.getCause() is not None and cause.getCause() != cause:
        cause = cause.getCause()
    name = cause.getClass().getSimpleName()
    message = cause.getMessage()
    text = " ".join(str(message).split()) if message is not None else ""
    if "No FileSystem for scheme" in text or name == "UnsupportedFileSystemException":
        return f"{text} (the Hadoop connector for it is not on Spark's classpath: add its jars with --jars " \
               f"or spark.jars.packages)"[:400]
    return f"{name}: {text}"[:400] if text else name


class HadoopFs:
    """`url`'s directory on its file system; names are relative to it."""

    def __init__(self, spark, location: str, fail_fast: bool = True):
        from py4j.protocol import Py4JError
        self.url = as_url(location)
        self.where = location
        self.scheme = scheme_of(self.url)
        jvm = spark.sparkContext._jvm
        self._jvm = jvm
        conf = jvm.org.apache.hadoop.conf.Configuration(spark.sparkContext._jsc.hadoopConfiguration())
        if fail_fast:
            # the driver's own operations give up in seconds when the NameNode is gone, rather
            # than retrying for a quarter of an hour (Hadoop's defaults); executors keep Spark's
            for key, value in (("ipc.client.connect.max.retries", "3"),
                               ("ipc.client.connect.max.retries.on.timeouts", "3"),
                               ("ipc.client.connect.timeout", "5000"),
                               ("fs.s3a.attempts.maximum", "2"),
                               ("fs.s3a.retry.limit", "2")):
                conf.set(key, value)
        self._conf = conf
        try:
            uri = jvm.java.net.URI(self.url)
            self._root = jvm.org.apache.hadoop.fs.Path(uri)
            self._fs = jvm.org.apache.hadoop.fs.FileSystem.newInstance(uri, conf)
            if self.scheme == "file":
                self._fs = self._fs.getRawFileSystem()      # see the module's docstring
        except Py4JError as exc:
            raise StoreError(f"--checkpoint-dir {location}: {reason(exc)}") from None

    # ------------------------------------------------------------ paths

    def path(self, name: str = ""):
        return self._jvm.org.apache.hadoop.fs.Path(self._root, name) if name else self._root

    def local_file(self, name: str) -> Optional[str]:
        """`name`'s path on this machine for a file:// location (read without the JVM, which
        may be gone: a manifest the JVM renamed into place as it died), else None."""
        if self.scheme != "file":
            return None
        from urllib.parse import unquote, urlparse
        return os.path.join(unquote(urlparse(self.url).path), name)

    def child_url(self, name: str) -> str:
        return self.path(name).toString()

    def _call(self, what: str, fn, *args):
        from py4j.protocol import Py4JError, Py4JNetworkError
        try:
            return fn(*args)
        except (Py4JNetworkError, ConnectionError) as exc:       # not the store's fault: the JVM is gone
            from spark.session import SparkGone, failure
            raise SparkGone(failure(exc)) from None
        except Py4JError as exc:
            from spark.session import SparkGone, failure, jvm_alive
            if not jvm_alive():
                raise SparkGone(failure(exc)) from None
            raise StoreError(f"--checkpoint-dir {self.where}: cannot {what} ({reason(exc)})") from None

    # ------------------------------------------------------------ the LocalFiles shape

    def prepare(self) -> None:
        """The directory exists, is a directory, and takes a file."""
        root = self.path()
        if self._call("look at it", self._fs.exists, root) and not self._call("look at it", self._fs.getFileStatus,
                                                                              root).isDirectory():
            raise StoreError(f"--checkpoint-dir {self.where}: not a directory")
        self._call("create it", self._fs.mkdirs, root)
        self.write(".write-test", b"ok", atomic=False)
        self.remove(".write-test")

    def exists(self, name: str) -> bool:
        return bool(self._call(f"look at {name}", self._fs.exists, self.path(name)))

    def is_file(self, name: str) -> bool:
        """A regular file: Hadoop's local file system calls a FIFO a file, and reading one hangs."""
        if not self._call(f"look at {name}", self._fs.getFileStatus, self.path(name)).isFile():
            return False
        if self.scheme == "file":
            import stat
            try:
                return stat.S_ISREG(os.stat(str(self.path(name).toUri().getPath())).st_mode)
            except OSError:
                return False
        return True

    def is_dir(self, name: str) -> bool:
        return self.exists(name) and bool(self._call(f"look at {name}", self._fs.getFileStatus,
                                                     self.path(name)).isDirectory())

    def size(self, name: str) -> int:
        return int(self._call(f"look at {name}", self._fs.getFileStatus, self.path(name)).getLen())

    def read(self, name: str) -> bytes:
        if self.size(name) > MAX_READ:
            raise OSError(f"{name} is larger than {MAX_READ >> 20} MiB")

        def whole(path):
            stream = self._fs.open(path)
            try:
                return bytes(stream.readAllBytes())
            finally:
                stream.close()
        return self._call(f"read {name}", whole, self.path(name))

    def write(self, name: str, data: bytes, atomic: bool = True) -> None:
        """`name` replaced whole by `data` (see the module's docstring)."""
        def put(path):
            out = self._fs.create(path, True)
            try:
                out.write(bytearray(data))
                out.hsync() if self.scheme in ("hdfs", "file") else out.flush()
            finally:
                out.close()
        if not atomic or self.scheme not in ATOMIC_RENAME:
            self._call(f"write {name}", put, self.path(name))
            return
        tmp = self.path(f".{name}.tmp")
        self._call(f"write {name}", put, tmp)
        if self.scheme == "file":
            if not self._call(f"replace {name}", self._fs.rename, tmp, self.path(name)):
                raise StoreError(f"--checkpoint-dir {self.where}: cannot replace {name} (rename refused)")
            return
        context = self._jvm.org.apache.hadoop.fs.FileContext.getFileContext(self._root.toUri(), self._conf)
        overwrite = self._jvm.org.apache.hadoop.fs.Options.Rename.OVERWRITE
        renames = self._jvm.java.lang.reflect.Array.newInstance(
            self._jvm.java.lang.Class.forName("org.apache.hadoop.fs.Options$Rename"), 1)
        renames[0] = overwrite
        self._call(f"replace {name}", context.rename, tmp, self.path(name), renames)

    def listdir(self, name: str = "") -> list[str]:
        if name and not self.exists(name):
            return []
        return sorted(str(st.getPath().getName())
                      for st in self._call("list it", self._fs.listStatus, self.path(name)))

    def remove(self, name: str) -> None:
        self._call(f"remove {name}", self._fs.delete, self.path(name), True)

    def put_local(self, local: str, name: str) -> None:
        """This machine's file `local` copied to `name` by the JVM's own streams: bytes that
        never cross py4j or a pickler (spark/seqfile.py says why). A plain stream copy, not
        FileSystem.copyFromLocalFile: S3A's takes a transfer manager whose HTTP client is not on
        Spark's classpath."""
        jvm = self._jvm

        def put(path):
            source = jvm.java.io.FileInputStream(os.path.abspath(local))
            try:
                out = self._fs.create(path, True)
            except BaseException:
                source.close()
                raise
            jvm.org.apache.hadoop.io.IOUtils.copyBytes(source, out, 4 << 20, True)     # closes both
        self._call(f"write {name}", put, self.path(name))

    def du(self, name: str = "") -> int:
        """Bytes the files under `name` hold (one copy: HDFS's replicas not counted)."""
        return int(self._call(f"measure {name or 'it'}", self._fs.getContentSummary, self.path(name)).getLength())

    def mkdirs(self, name: str) -> None:
        self._call(f"create {name}", self._fs.mkdirs, self.path(name))

    def close(self) -> None:
        try:
            self._fs.close()
        except Exception:       # the JVM is gone: nothing to close
            pass


def open_store(spark, location: str) -> HadoopFs:
    """The store at `location`, checked usable from the driver."""
    fs = HadoopFs(spark, location)
    fs.prepare()
    return fs


def is_local(location: Optional[str]) -> bool:
    return location is not None and scheme_of(as_url(location)) == "file"
