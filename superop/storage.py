"""Paths Spark can read and write: plain local paths and Hadoop filesystem URIs
(``file:``, ``hdfs:``, ``s3a:``, ``abfss:``, ``gs:`` ...).

* :func:`filesystem` — one small interface over both: a plain path is served by Python's
  ``os`` (no JVM), a URI by the Hadoop ``FileSystem`` of the Spark session's JVM (so a
  ``file:`` URI exercises exactly the code an ``s3a:`` or ``hdfs:`` path runs).
* :class:`OutputSet` — the files of one job run appear in the output directory together or
  not at all: they are written into a hidden staging directory beside them and moved into
  place only when the whole run succeeded (see its doc for the crash guarantees).

Files are created readable by the group/others as the umask allows (0644 under the usual
022), never with a temporary file's 0600.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
import threading
import uuid
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Iterable, Iterator, Optional

from .errors import SuperopError

_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*):")


def scheme(path: str) -> str:
    """The URI scheme of ``path`` ('' for a plain path; a Windows drive letter is not one)."""
    m = _SCHEME.match(str(path))
    return m.group(1).lower() if m and len(m.group(1)) > 1 else ""


def local_path(path: str) -> Optional[str]:
    """The local filesystem path of a plain path or a ``file:`` URI; None for other schemes."""
    s = str(path)
    sch = scheme(s)
    if sch == "":
        return s
    if sch == "file":
        from urllib.parse import unquote, urlparse
        u = urlparse(s)
        return unquote(u.path) if u.netloc in ("", "localhost") else None
    return None


def join(base: str, *names: str) -> str:
    return "/".join([str(base).rstrip("/")] + [n.strip("/") for n in names])


def basename(path: str) -> str:
    return str(path).rstrip("/").rsplit("/", 1)[-1]


_umask_lock = threading.Lock()


def umask() -> int:
    with _umask_lock:
        old = os.umask(0o022)
        os.umask(old)
    return old


def file_mode() -> int:
    """The mode a newly created regular file gets under the process umask (0644 under 022)."""
    return 0o666 & ~umask()


def atomic_write_text(path: str | os.PathLike, text: str) -> None:
    """Write via a temp file in the same directory + rename: readers never see a
    partial file and a failed write leaves the old file in place."""
    atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_json(path, obj) -> None:
    atomic_write_text(path, json.dumps(obj, indent=2, sort_keys=False, default=str) + "\n")


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> None:
    """Atomic like :func:`atomic_write_text`; the file gets the mode a plain ``open`` would
    give it under the umask (0644 under 022), not the temporary file's 0600."""
    with atomic_writer(path) as f:
        f.write(data)


@contextmanager
def atomic_writer(path: str | os.PathLike) -> Iterator[BinaryIO]:
    """A binary file to stream into (e.g. a large generated log): written as a temp file in
    the same directory, renamed to ``path`` only when the block ends without an error (a
    failure leaves the old file in place), with the umask's mode (0644 under 022)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, file_mode())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


@dataclass(frozen=True)
class FileInfo:
    path: str          # as the filesystem names it (a URI for Hadoop filesystems)
    name: str
    size: int


class LocalFS:
    """Plain local paths."""

    def __init__(self, root: str):
        self.root = root

    def exists(self, path: str) -> bool:
        return os.path.exists(path)

    def is_dir(self, path: str) -> bool:
        return os.path.isdir(path)

    def list_files(self, path: str) -> list[FileInfo]:
        """Every data file under ``path`` (recursive), hidden (``.``/``_``) names skipped, as
        Spark's file sources skip them (``_SUCCESS``, ``.crc`` ...)."""
        p = Path(path)
        if p.is_file():
            return [FileInfo(str(p), p.name, p.stat().st_size)]
        out = []
        for root, dirs, files in os.walk(p):
            dirs[:] = sorted(d for d in dirs if not d.startswith((".", "_")))
            for f in sorted(files):
                if not f.startswith((".", "_")):
                    full = os.path.join(root, f)
                    out.append(FileInfo(full, f, os.path.getsize(full)))
        return out

    def head(self, path: str, n: int = 4096) -> bytes:
        with open(path, "rb") as f:
            return f.read(n)

    def read_bytes(self, path: str) -> bytes:
        with open(path, "rb") as f:
            return f.read()

    def write_bytes(self, path: str, data: bytes) -> None:
        atomic_write_bytes(path, data)

    def mkdirs(self, path: str) -> None:
        os.makedirs(path, exist_ok=True)

    def replace(self, src: str, dst: str) -> None:
        """Move ``src`` over ``dst`` (atomic for files on one filesystem)."""
        os.replace(src, dst)

    def delete(self, path: str) -> None:
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path, ignore_errors=True)
        elif os.path.lexists(path):
            os.unlink(path)

    def list_dir(self, path: str) -> list[str]:
        try:
            return sorted(os.listdir(path))
        except FileNotFoundError:
            return []

    def mtime(self, path: str) -> float:
        return os.path.getmtime(path)


class HadoopFS:
    """A Hadoop filesystem through the Spark session's JVM (py4j)."""

    def __init__(self, spark, root: str):
        if spark is None:
            raise SuperopError(f"{root}: a Hadoop filesystem path needs a Spark session")
        try:
            jvm = spark._jvm
            conf = spark._jsc.hadoopConfiguration()
            self.gateway = spark.sparkContext._gateway
        except AttributeError:
            raise SuperopError(f"{root}: Hadoop filesystem paths need a classic Spark session "
                               "(not Spark Connect)") from None
        self.jvm, self.conf = jvm, conf
        self.root = root
        try:
            self.fs = self._path(root).getFileSystem(conf)
        except Exception as e:
            raise SuperopError(f"{root}: no Hadoop filesystem for this path "
                               f"({_java_message(e)})") from None
        # no .crc sidecar files beside ours on checksumming filesystems (file:)
        self.fs.setWriteChecksum(False)

    def _path(self, path: str):
        return self.jvm.org.apache.hadoop.fs.Path(str(path))

    def exists(self, path: str) -> bool:
        return bool(self.fs.exists(self._path(path)))

    def is_dir(self, path: str) -> bool:
        return self.exists(path) and bool(self.fs.getFileStatus(self._path(path)).isDirectory())

    def list_files(self, path: str) -> list[FileInfo]:
        st = self.fs.getFileStatus(self._path(path))
        if st.isFile():
            return [FileInfo(str(st.getPath().toString()), st.getPath().getName(), int(st.getLen()))]
        out = []
        todo = [self._path(path)]
        while todo:
            for s in self.fs.listStatus(todo.pop()):
                name = s.getPath().getName()
                if name.startswith((".", "_")):
                    continue
                if s.isDirectory():
                    todo.append(s.getPath())
                else:
                    out.append(FileInfo(str(s.getPath().toString()), name, int(s.getLen())))
        return sorted(out, key=lambda f: f.path)

    def head(self, path: str, n: int = 4096) -> bytes:
        stream = self.fs.open(self._path(path))
        try:
            buf = self.gateway.new_array(self.jvm.byte, n)
            got = 0
            while got < n:
                k = stream.read(buf, got, n - got)
                if k < 0:
                    break
                got += k
            return bytes(self.jvm.java.util.Arrays.copyOf(buf, got))
        finally:
            stream.close()

    def read_bytes(self, path: str) -> bytes:
        stream = self.fs.open(self._path(path))
        try:
            buf = self.jvm.java.io.ByteArrayOutputStream()
            self.jvm.org.apache.hadoop.io.IOUtils.copyBytes(stream, buf, 1 << 16, False)
            return bytes(buf.toByteArray())
        finally:
            stream.close()

    def write_bytes(self, path: str, data: bytes) -> None:
        """Create (or overwrite) ``path`` with ``data``; files get the filesystem's default
        permission under ``fs.permissions.umask-mode`` (022 -> 0644)."""
        out = self.fs.create(self._path(path), True)
        try:
            out.write(bytearray(data))
        finally:
            out.close()

    def mkdirs(self, path: str) -> None:
        self.fs.mkdirs(self._path(path))

    def replace(self, src: str, dst: str) -> None:
        # rename() refuses an existing destination on most Hadoop filesystems: delete first
        # (this runs only inside OutputSet.commit, whose journal finishes an interrupted move)
        d = self._path(dst)
        if self.fs.exists(d):
            self.fs.delete(d, True)
        if not self.fs.rename(self._path(src), d):
            raise SuperopError(f"cannot move {src} to {dst}")

    def delete(self, path: str) -> None:
        self.fs.delete(self._path(path), True)

    def list_dir(self, path: str) -> list[str]:
        p = self._path(path)
        if not self.fs.exists(p):
            return []
        return sorted(s.getPath().getName() for s in self.fs.listStatus(p))

    def mtime(self, path: str) -> float:
        return self.fs.getFileStatus(self._path(path)).getModificationTime() / 1000.0


def filesystem(path: str, spark=None):
    """LocalFS for a plain path, HadoopFS (through ``spark``) for any URI."""
    return LocalFS(str(path)) if scheme(str(path)) == "" else HadoopFS(spark, str(path))


def _java_message(e: Exception) -> str:
    s = str(e)
    for line in s.splitlines():
        if "Exception" in line and ":" in line:
            return line.strip()[:300]
    return (s.splitlines()[0] if s else type(e).__name__)[:300]


class OutputSet:
    """The outputs of one run, swapped into ``out_dir`` as a whole.

    Files are written into ``out_dir/.staging-<id>/``. :meth:`commit` first writes a
    ``_COMMITTING`` marker into the staging directory, then moves every staged file over
    its namesake in ``out_dir`` and removes the staging directory. Until the marker exists
    nothing in ``out_dir`` has changed: a failed or killed run leaves the previous outputs
    as they were (its staging directory is removed by :meth:`discard`; a killed run's hidden
    staging directory is removed by a later run once it is a day old — a younger one may
    belong to a run still going).
    A run killed *during* the moves (a few renames) leaves a staging directory with the
    marker, which the next run (:func:`recover`) finishes moving before it starts: the
    previous set is never mixed with a new one for longer than that window.
    """

    MARKER = "_COMMITTING"

    def __init__(self, out_dir: str, spark=None, fs=None):
        self.out_dir = str(out_dir)
        self.fs = fs or filesystem(self.out_dir, spark)
        self.fs.mkdirs(self.out_dir)
        recover(self.fs, self.out_dir)
        self.staging = join(self.out_dir, f".staging-{uuid.uuid4().hex[:12]}")
        self.fs.mkdirs(self.staging)
        self.names: list[str] = []
        self.committed = False
        self._mirror: Optional[Path] = None

    def path(self, name: str) -> str:
        """Where to write ``name`` (inside the staging directory)."""
        if name not in self.names:
            self.names.append(name)
        return join(self.staging, name)

    def write_bytes(self, name: str, data: bytes) -> None:
        self.fs.write_bytes(self.path(name), data)
        if self._mirror is not None:
            (self._mirror / name).write_bytes(data)

    def staged_dir(self) -> Path:
        """A local directory holding the staged files (for MLflow, which logs local files):
        the staging directory itself on a local filesystem, else a local copy."""
        if isinstance(self.fs, LocalFS):
            return Path(self.staging)
        if self._mirror is None:
            import tempfile
            self._mirror = Path(tempfile.mkdtemp(prefix="superop-staged-"))
            for n in self.names:
                (self._mirror / n).write_bytes(self.fs.read_bytes(join(self.staging, n)))
        return self._mirror

    def write_text(self, name: str, text: str) -> None:
        self.write_bytes(name, text.encode("utf-8"))

    def write_json(self, name: str, obj) -> None:
        import json
        self.write_text(name, json.dumps(obj, indent=2, default=str) + "\n")

    def final(self, name: str) -> str:
        return join(self.out_dir, name)

    def commit(self, last: Iterable[str] = ()) -> None:
        """Move the staged files into place; names in ``last`` move last (e.g. the catalog,
        so a reader that sees the new catalog also sees the rest of its set)."""
        self.fs.write_bytes(join(self.staging, self.MARKER), b"")
        _move_all(self.fs, self.staging, self.out_dir, list(last))
        self.committed = True

    def discard(self) -> None:
        """Drop what a failed run staged (no-op after :meth:`commit`)."""
        if not self.committed:
            self.fs.delete(self.staging)
        if self._mirror is not None:
            shutil.rmtree(self._mirror, ignore_errors=True)
            self._mirror = None


def _move_all(fs, staging: str, out_dir: str, last: list[str]) -> None:
    names = [n for n in fs.list_dir(staging) if n != OutputSet.MARKER]
    names.sort(key=lambda n: (n in last, last.index(n) if n in last else 0, n))
    for n in names:
        fs.replace(join(staging, n), join(out_dir, n))
    fs.delete(staging)


STALE_S = 24 * 3600


def recover(fs, out_dir: str) -> None:
    """Finish a commit a killed run began; drop day-old staging directories of killed runs."""
    import time
    for n in fs.list_dir(out_dir):
        if not n.startswith(".staging-"):
            continue
        st = join(out_dir, n)
        if OutputSet.MARKER in fs.list_dir(st):
            _move_all(fs, st, out_dir, ["catalog.json"])
        elif time.time() - fs.mtime(st) > STALE_S:
            fs.delete(st)
