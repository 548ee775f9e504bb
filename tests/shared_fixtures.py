"""Session fixtures computed once per test run, also when pytest-xdist runs the suite on
several workers: the first worker to ask computes the value (or writes the files, or starts
the child process that writes them), the others read it."""
from __future__ import annotations

import fcntl
import json
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any, Callable, Optional


def run_dir(tmp_path_factory) -> Path:
    """The run's base directory, shared by its workers (each worker's own is below it)."""
    root = tmp_path_factory.getbasetemp()
    return root.parent if os.environ.get("PYTEST_XDIST_WORKER") else root


def computed_once(tmp_path_factory, name: str, make: Callable[[], Any]) -> Any:
    """``make()``'s JSON value, computed by one worker of the run (the others wait on a lock
    and read the file it wrote). Every worker gets the value as JSON reads it back."""
    root = run_dir(tmp_path_factory)
    path = root / f"{name}.json"
    with open(root / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not path.exists():
            tmp = root / f"{name}.json.part"
            tmp.write_text(json.dumps(make()))
            tmp.replace(path)
        return json.loads(path.read_text())


# a child's exit status, written next to its output when it exits
_EXIT = '"$@"; echo $? > "$0.part" && mv "$0.part" "$0"'


def started_once(tmp_path_factory, name: str, argv: list[str]) -> tuple[Path, Optional[subprocess.Popen]]:
    """``argv + [OUT]`` started in the background by one worker of the run (the first to
    ask); the others get the same directory and no process. The directory holds ``out``
    (the child's output directory), ``stderr.txt`` and, once the child exited, ``rc`` (its
    exit status): :func:`wait_started` waits for it in any worker."""
    root = run_dir(tmp_path_factory)
    d = root / name
    with open(root / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if d.exists():
            return d, None
        (d / "out").mkdir(parents=True)
        with open(d / "stderr.txt", "w") as err:
            proc = subprocess.Popen(["/bin/sh", "-c", _EXIT, str(d / "rc"), *argv, str(d / "out")],
                                    stdout=subprocess.DEVNULL, stderr=err, start_new_session=True)
        return d, proc


def wait_started(d: Path, timeout: float) -> Path:
    """The output directory of the child :func:`started_once` started in ``d``, once it
    exited; fails with its stderr's end when it did not exit 0 within ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not (d / "rc").exists():
        assert time.monotonic() < deadline, f"{d.name}: not done after {timeout:.0f} s"
        time.sleep(0.5)
    rc = (d / "rc").read_text().strip()
    assert rc == "0", f"{d.name} exited {rc}: " + (d / "stderr.txt").read_text()[-3000:]
    return d / "out"


def stop_started(proc: Optional[subprocess.Popen], timeout: float = 900) -> None:
    """At the end of the session of the worker that started it: the other worker may still
    read what the child writes, so it is waited for (killed only after ``timeout``)."""
    if proc is None:
        return
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)     # its own process group: the child and its JVM
        proc.wait()
