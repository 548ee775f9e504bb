"""The canonical JSON form of a catalog (what its checksum and its signature are over)."""
from __future__ import annotations

import hashlib
import json
from typing import Any, Sequence


def canonical_json(obj: Any) -> str:
    """Deterministic JSON: sorted keys, no whitespace, UTF-8 kept as is."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                      allow_nan=False)


def checksum(rules: Sequence[dict]) -> str:
    """``sha256:<hex>`` over the canonical JSON of the rule list."""
    return "sha256:" + hashlib.sha256(canonical_json(list(rules)).encode("utf-8")).hexdigest()
