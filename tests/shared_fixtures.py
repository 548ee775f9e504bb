"""Session fixtures computed once per test run, also when pytest-xdist runs the suite on
several workers: the first worker to ask computes the value (or writes the files), the others
read it."""
from __future__ import annotations

import fcntl
import json
import os
from pathlib import Path
from typing import Any, Callable


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
