"""The identity of a program or any JSON value: sha256 of its canonical JSON (sorted keys,
no spaces). Certificates, proof caches and the runtime name programs by it."""
from __future__ import annotations

import hashlib
import json
from typing import Any

from .program import Program


def canonical(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def sha256_of(obj: Any) -> str:
    return "sha256:" + hashlib.sha256(canonical(obj).encode("utf-8")).hexdigest()


def program_sha256(program: Program) -> str:
    """The identity of a program: sha256 of its canonical JSON (``Program.to_json``)."""
    return sha256_of(program.to_json())
