"""Decisions persisted next to the catalog: a new process pays a lookup, not two plannings.

The first decision of a query template costs Spark planning (the original and every
candidate, ``EXPLAIN COST``); the in-memory cache (:mod:`superop.runtime.cache`) saves it
for later calls of the same process. This store saves it for every later process: a
decision is written once, under exactly the in-memory key — the template, the catalog
checksum (with the session's declared keys and excluded rules), the version of every
table the query reads and the plan settings — as one small JSON file in a directory beside
the catalog (``catalog.json`` -> ``catalog.decisions/``; ``SuperOpSession(decision_store=
PATH)`` or ``spark.superop.decisionStore`` elsewhere, e.g. for an MLflow URI). A table
replaced or analysed, another setting, another catalog: another key, so a miss, and the
decision is made (and stored) again.

A stored decision carries the rewritten SQL that will run, so it is signed like a catalog
(Ed25519, :mod:`superop.rules_out.signing`) over its full key and content, and read only if
the signature is by a trusted key and the key stored is the key looked up. A process writes
decisions only when it holds a signing key that is trusted here (``$SUPEROP_SIGNING_KEY``
or the local key store's key; the runtime never generates one); otherwise it only reads.
Files are written atomically; concurrent writers of one key write equal decisions.
"""
from __future__ import annotations

import base64
import hashlib
import json
import logging
from pathlib import Path
from typing import Optional

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from ..rules_out.canonical import canonical_json
from ..rules_out.signing import KeyFileError, Signer, TrustedKeys, signing_key
from ..storage import atomic_write_text
from .cache import Decision, Render

log = logging.getLogger("superop.runtime")

FORMAT = "superop-decision"


def default_location(catalog_source) -> Optional[Path]:
    """``DIR/NAME.decisions`` beside a local catalog file ``DIR/NAME.json``; None for an
    in-memory catalog or an MLflow URI."""
    if not isinstance(catalog_source, (str, Path)) or ":/" in str(catalog_source):
        return None
    p = Path(catalog_source)
    return p.with_name(p.stem + ".decisions")


def _to_json(d: Decision) -> dict:
    return {"changed": d.changed, "label": d.label, "applied": list(d.applied), "explanation": d.explanation,
            "render": None if d.render is None else {"pieces": list(d.render.pieces), "holes": list(d.render.holes)},
            "literal_sensitive": d.literal_sensitive, "literals": list(d.literals), "extra": d.extra}


def _from_json(j: dict) -> Decision:
    r = j.get("render")
    render = None if r is None else Render(tuple(r["pieces"]), tuple(int(h) for h in r["holes"]))
    return Decision(changed=bool(j["changed"]), label=str(j.get("label", "")), applied=tuple(j.get("applied", ())),
                    explanation=str(j.get("explanation", "")), render=render,
                    literal_sensitive=bool(j.get("literal_sensitive")), literals=tuple(j.get("literals", ())),
                    extra=dict(j.get("extra") or {}))


def _plain(key) -> object:
    """The key as JSON values (tuples as lists), for hashing and comparing."""
    return json.loads(json.dumps(key, default=str))


class DecisionStore:
    """One directory of signed decisions (see the module doc)."""

    def __init__(self, directory: Path, trusted: TrustedKeys, signer: Optional[Signer] = None):
        self.dir = Path(directory)
        self.trusted = trusted
        self.signer = signer if signer is not None and trusted.keys.get(signer.key_id) is not None else None
        self.hits = self.misses = self.refused = 0

    @classmethod
    def for_session(cls, catalog_source, where, conf_location: Optional[str],
                    trusted: TrustedKeys) -> Optional["DecisionStore"]:
        """A session's store: none when ``where`` is False; ``where`` None/True means the
        ``spark.superop.decisionStore`` setting, else beside a local catalog file."""
        if where is False:
            return None
        if where is None or where is True:
            where = conf_location or default_location(catalog_source)
        return cls.open(Path(str(where)), trusted) if where else None

    @classmethod
    def open(cls, directory: Path, trusted: TrustedKeys) -> "DecisionStore":
        """A store that writes with this process's signing key if it has one (never
        generating one) and the key is trusted here; else read-only."""
        try:
            signer: Optional[Signer] = signing_key(create=False)
        except KeyFileError:
            signer = None
        return cls(directory, trusted, signer)

    @property
    def writable(self) -> bool:
        return self.signer is not None

    def _path(self, key) -> Path:
        return self.dir / (hashlib.sha256(canonical_json(_plain(key)).encode()).hexdigest()[:40] + ".json")

    def get(self, key: tuple, literals: tuple) -> Optional[Decision]:
        d = self._read(key)
        if d is not None and d.literal_sensitive:
            d = self._read(key + (literals,))
        if d is None:
            self.misses += 1
        else:
            self.hits += 1
        return d

    def put(self, key: tuple, decision: Decision) -> None:
        if self.signer is None:
            return
        if decision.literal_sensitive:
            self._write(key, Decision(changed=False, literal_sensitive=True))      # the marker
            key = key + (decision.literals,)
        self._write(key, decision)

    def _write(self, key: tuple, d: Decision) -> None:
        assert self.signer is not None
        body = {"format": FORMAT, "key": _plain(key), "decision": _to_json(d), "key_id": self.signer.key_id}
        sig = self.signer.private.sign(canonical_json(body).encode("utf-8"))
        try:
            atomic_write_text(self._path(key), json.dumps(dict(body, signature=base64.b64encode(sig).decode())))
        except OSError as e:       # a read-only directory: the decision stays in memory
            log.info("superop: decision not persisted in %s: %s", self.dir, e)
            self.signer = None

    def _read(self, key: tuple) -> Optional[Decision]:
        p = self._path(key)
        try:
            doc = json.loads(p.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        try:
            sig = base64.b64decode(doc.pop("signature"), validate=True)
            raw = self.trusted.keys.get(doc.get("key_id"))
            if raw is None or doc.get("format") != FORMAT or doc.get("key") != _plain(key):
                raise ValueError("untrusted key, other format or other key")
            Ed25519PublicKey.from_public_bytes(raw).verify(sig, canonical_json(doc).encode("utf-8"))
            return _from_json(doc["decision"])
        except (InvalidSignature, ValueError, KeyError, TypeError) as e:
            self.refused += 1
            log.warning("superop: stored decision %s refused (%s); deciding again", p.name,
                        str(e) or type(e).__name__)
            return None
