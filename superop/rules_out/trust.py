"""Trust on load: a catalog reaches the runtime only if its certificates were re-checked.

A catalog's checksum is anyone's to recompute, so it proves nothing about the
certificates. :func:`ensure_trusted` (called by ``load_catalog`` and by ``SuperOpSession``
for an in-memory catalog) accepts a catalog only when

1. every certificate passes the structural check without Z3
   (``superop.verify.certificate.structural_check``: it was produced by superop.verify,
   its inputs hash, it is about the program the runtime builds *now* — same template
   program hash — and it covers what its pattern / instance covers), and every rule
   passes the one per-rule check, ``superop.rules_out.coverage.coverage_problems`` (it
   has certificates and admits exactly what they cover; ``superop verify`` runs the
   same); a forged certificate (``{"status": "verified", "method": "inductive"}``
   alone, a template certificate whose program is not the template's) is refused here,
   with or without Z3; and
2. either this process re-checked the catalog's certificates with Z3 (cached by
   checksum), or a re-check was *recorded* for exactly this checksum: in the local trust
   store (one file per checksum under ``$SUPEROP_TRUST_DIR``, default
   ``~/.local/state/superop/trust``), or — for ``models:/`` and ``runs:/`` URIs — as the
   tag ``superop.rechecked_checksum`` on the registered model version / run. When Z3 is
   importable and nothing is recorded, the catalog is re-checked on the spot; without
   Z3 an unrecorded catalog is refused.

Records are written only by a re-check: ``superop verify --catalog X --record`` and
``superop catalog promote`` (which re-checks and tags the version it promotes).

Limits: a record is a claim by whoever can write the trust store or set MLflow tags;
it is as trustworthy as those permissions (no signatures). The structural check still
runs on every load, so a record cannot make a forged certificate pass, but a recorded
catalog whose certificates were honestly produced and then *semantically* invalidated
(e.g. a verifier bug fixed later) is accepted until re-checked.

This module imports neither Z3 nor MLflow at import time (the runtime must stay free of
both); MLflow is used lazily for ``models:/`` / ``runs:/`` records.
"""
from __future__ import annotations

import datetime as _dt
import importlib.util
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from ..storage import atomic_write_json
from ..verify.certificate import produced_by, structural_check
from .catalog import CatalogError, checksum, is_mlflow_uri, validate
from .coverage import coverage_problems

TAG = "superop.rechecked_checksum"


class UntrustedCatalog(CatalogError):
    """The catalog's certificates were not (or could not be) re-checked, or do not hold."""


@dataclass
class Verdict:
    ok: bool
    how: str                                   # re-checked | recorded | refused
    checksum: str
    problems: list = field(default_factory=list)
    certificates: int = 0

    def line(self, where: str) -> str:
        if self.ok:
            return f"{where}: {self.certificates} certificates {self.how} (checksum {self.checksum})"
        more = f" (+{len(self.problems) - 1} more)" if len(self.problems) > 1 else ""
        return f"{where} refused: {self.problems[0]}{more}"


_RECHECKED: dict[str, Verdict] = {}         # checksum -> verdict of a re-check in this process


def z3_available() -> bool:
    return importlib.util.find_spec("z3") is not None


def trust_dir() -> Path:
    d = os.environ.get("SUPEROP_TRUST_DIR")
    if d:
        return Path(d)
    state = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(state) / "superop" / "trust"


def _certs(catalog: dict):
    for r in catalog.get("rules", []):
        for i, c in enumerate(r.get("certificates") or []):
            yield r, i, c


def _rule_problems(rule: dict) -> list[str]:
    """The per-rule check (``superop.rules_out.coverage.coverage_problems``: it has
    certificates and admits exactly what they cover), each prefixed with the rule."""
    return [f"rule {rule.get('id')}: {p}" for p in coverage_problems(rule)]


def structural_problems(catalog: dict) -> list[str]:
    """Everything wrong that can be seen without Z3."""
    out = []
    for r, i, c in _certs(catalog):
        ok, why = structural_check(c, require_runtime=True)
        if not ok:
            out.append(f"rule {r.get('id')} certificate #{i}: {why}")
    for r in catalog.get("rules", []):
        out += _rule_problems(r)
    return out


def recheck(catalog: dict) -> Verdict:
    """Re-check every certificate with Z3 (the structural check first). Cached by checksum."""
    cs = catalog.get("checksum") or checksum(catalog.get("rules", []))
    if cs in _RECHECKED:
        return _RECHECKED[cs]
    from ..verify.certify import recheck_detail
    problems = []
    n = 0
    for r, i, c in _certs(catalog):
        n += 1
        ok, why = recheck_detail(c, require_runtime=True)
        if not ok:
            problems.append(f"rule {r.get('id')} certificate #{i}: {why}")
    problems += [p for r in catalog.get("rules", []) for p in _rule_problems(r)]
    v = Verdict(not problems, "re-checked" if not problems else "refused", cs, problems, n)
    _RECHECKED[cs] = v
    return v


# ---------------------------------------------------------------------------
# records
# ---------------------------------------------------------------------------
def _record_path(cs: str) -> Path:
    return trust_dir() / (cs.replace("sha256:", "") + ".json")


def recorded(cs: str, origin: Optional[str] = None) -> Optional[str]:
    """Where a re-check of checksum ``cs`` was recorded (None if nowhere)."""
    p = _record_path(cs)
    if p.is_file():
        try:
            if json.loads(p.read_text()).get("checksum") == cs:
                return f"trust store {p}"
        except (OSError, ValueError):
            pass
    if origin and is_mlflow_uri(origin):
        try:
            if _mlflow_tag(origin) == cs:
                return f"MLflow tag {TAG} of {origin}"
        except Exception:  # no MLflow / no such version: not recorded there
            return None
    return None


def record(verdict: Verdict, origin: Optional[str] = None) -> list[str]:
    """Record a successful re-check: the local trust store, and the MLflow model version /
    run of ``origin``. Returns where it was recorded."""
    if not verdict.ok or verdict.how != "re-checked":
        raise UntrustedCatalog("only a successful re-check can be recorded")
    at = _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0).isoformat().replace("+00:00", "Z")
    p = _record_path(verdict.checksum)
    atomic_write_json(p, {"checksum": verdict.checksum, "rechecked_at": at, "by": produced_by(),
                          "certificates": verdict.certificates, "source": origin})
    where = [f"trust store {p}"]
    if origin and is_mlflow_uri(origin):
        _set_mlflow_tag(origin, verdict.checksum)
        where.append(f"MLflow tag {TAG} of {origin}")
    return where


def _mlflow_target(uri: str) -> tuple:
    """("model", name, version) for models:/name/version | models:/name@alias,
    ("run", run_id) for runs:/id/..."""
    from mlflow import MlflowClient
    if uri.startswith("models:/"):
        rest = uri[len("models:/"):].strip("/")
        if "@" in rest:
            name, alias = rest.split("@", 1)
            mv = MlflowClient().get_model_version_by_alias(name, alias)
            return "model", name, str(mv.version)
        name, version = rest.split("/", 1)
        return "model", name, version.split("/")[0]
    if uri.startswith("runs:/"):
        return "run", uri[len("runs:/"):].strip("/").split("/")[0]
    raise CatalogError(f"no MLflow record for {uri}")


def _mlflow_tag(uri: str) -> Optional[str]:
    from mlflow import MlflowClient
    t = _mlflow_target(uri)
    c = MlflowClient()
    tags = c.get_model_version(t[1], t[2]).tags if t[0] == "model" else c.get_run(t[1]).data.tags
    return (tags or {}).get(TAG)


def _set_mlflow_tag(uri: str, cs: str) -> None:
    from mlflow import MlflowClient
    t = _mlflow_target(uri)
    c = MlflowClient()
    if t[0] == "model":
        c.set_model_version_tag(t[1], t[2], TAG, cs)
    else:
        c.set_tag(t[1], TAG, cs)


# ---------------------------------------------------------------------------
# the hook
# ---------------------------------------------------------------------------
def ensure_trusted(catalog: dict, origin: str = "catalog") -> Verdict:
    """Accept the catalog (see the module doc) or raise :class:`UntrustedCatalog` with a
    one-line reason."""
    cs = catalog.get("checksum") or checksum(catalog.get("rules", []))
    where = f"catalog {origin}"
    problems = structural_problems(catalog)
    if problems:
        raise UntrustedCatalog(Verdict(False, "refused", cs, problems).line(where))
    if cs in _RECHECKED:
        v = _RECHECKED[cs]
        if not v.ok:
            raise UntrustedCatalog(v.line(where))
        return v
    rec = recorded(cs, origin)
    n = sum(1 for _ in _certs(catalog))
    if rec is not None:
        return Verdict(True, f"recorded as re-checked ({rec})", cs, [], n)
    if not z3_available():
        raise UntrustedCatalog(
            f"{where} refused: its certificates (checksum {cs}) were never re-checked and z3 is not "
            f"installed here; run `superop verify --catalog {origin} --record` where it is")
    v = recheck(catalog)
    if not v.ok:
        raise UntrustedCatalog(v.line(where))
    return v


def recheck_and_record(catalog: dict, origin: str) -> Verdict:
    """Validate as the runtime would, re-check every certificate with Z3 (always; a
    recorded verdict does not count), and record the verdict for ``origin``
    (``superop verify --catalog --record``, ``superop catalog promote``)."""
    validate(catalog, require_verified=True, where=f"catalog {origin}")
    if not z3_available():
        raise UntrustedCatalog(f"catalog {origin}: cannot re-check without z3")
    problems = structural_problems(catalog)
    cs = catalog.get("checksum") or checksum(catalog.get("rules", []))
    if problems:
        raise UntrustedCatalog(Verdict(False, "refused", cs, problems).line(f"catalog {origin}"))
    v = recheck(catalog)
    if not v.ok:
        raise UntrustedCatalog(v.line(f"catalog {origin}"))
    record(v, origin)
    return v
