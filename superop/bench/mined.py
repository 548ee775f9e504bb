"""The catalog the benchmarks time: the one the nightly job mines.

By default the bundled query log is mined once (the whole nightly job: mine → synthesize →
verify → generalize → catalog) and the catalog is cached under the bench data directory,
keyed by the log's content hash and the version of the code that produced it (a hash of
the sources of every stage the nightly job runs). A later bench with the same log and the
same code reuses it; a changed log or changed mining/synthesis/verification code mines
again.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from ..errors import SuperopError
from ..pipeline.nightly import content_hash, run_nightly
from ..workloads.bundled import LOG

PKG = Path(__file__).resolve().parents[1]          # superop/
# what does not change the mined catalog: the runtime and the benchmarks themselves
_NOT_CATALOG_CODE = ("runtime", "bench")


def catalog_code_version() -> str:
    """sha256 over the sources of every stage the nightly job runs (not the runtime/bench)."""
    h = hashlib.sha256()
    for p in sorted(PKG.rglob("*")):
        rel = p.relative_to(PKG)
        if not p.is_file() or p.suffix not in (".py", ".json") or "__pycache__" in rel.parts:
            continue
        if any(str(rel).startswith(x + os.sep) for x in _NOT_CATALOG_CODE):
            continue
        h.update(str(rel).encode())
        h.update(p.read_bytes())
    return h.hexdigest()


@dataclass
class MinedCatalog:
    path: Path
    log: str
    log_hash: str
    code_version: str
    cached: bool                 # reused from an earlier bench
    rules: int

    def describe(self) -> str:
        return (f"mined by the nightly job from {self.log} ({self.log_hash[:19]}…, code "
                f"{self.code_version[:12]}; {self.rules} rules; "
                f"{'cached' if self.cached else 'mined for this run'}) at {self.path}")


def mined_catalog(data_dir: str | os.PathLike, log: Optional[str | os.PathLike] = None, *, spark=None,
                  progress: bool = False, **nightly_kw) -> MinedCatalog:
    """The nightly job's catalog for ``log`` (default: the bundled log), mined once and cached
    under ``data_dir/mined-catalogs/<log hash>-<code version>/``. ``nightly_kw`` go to
    ``run_nightly`` (e.g. ``max_candidates`` for small test runs; they are part of the key)."""
    log = str(log or LOG)
    lh = content_hash(log)
    cv = catalog_code_version()
    extra = hashlib.sha256(json.dumps(nightly_kw, sort_keys=True, default=str).encode()).hexdigest()[:8] \
        if nightly_kw else "default"
    root = Path(data_dir) / "mined-catalogs"
    final = root / f"{lh.split(':')[-1][:16]}-{cv[:16]}-{extra}"
    cat = final / "catalog.json"
    if cat.is_file():
        return MinedCatalog(cat, log, lh, cv, True, len(json.loads(cat.read_text()).get("rules", [])))
    root.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".mining-", dir=root))
    try:
        nightly_kw.setdefault("share_window_s", None)   # the bench needs the rules, not the sharing report
        res = run_nightly(log, tmp, spark=spark, register=False, progress=progress, **nightly_kw)
        if res.catalog_path is None or not Path(res.catalog_path).is_file():
            raise SuperopError(f"the nightly job wrote no catalog for {log}")
        (tmp / "bench-key.json").write_text(json.dumps({"log": log, "log_hash": lh, "code_version": cv,
                                                        "nightly": nightly_kw}, indent=2, default=str))
        try:
            os.replace(tmp, final)        # the whole output set appears at once
        except OSError:                   # another bench got there first: use theirs
            shutil.rmtree(tmp, ignore_errors=True)
        return MinedCatalog(cat, log, lh, cv, False, len(json.loads(cat.read_text()).get("rules", [])))
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
