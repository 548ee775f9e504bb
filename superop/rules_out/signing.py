"""Signed catalogs: an Ed25519 signature over the whole catalog, bound to the superop build
that checked it.

A catalog is signed where its certificates are checked — the nightly job's export (fresh
proofs), ``superop verify --catalog X --record`` (a Z3 re-check) and ``superop catalog
promote`` — and the runtime accepts a catalog only if

1. it carries a ``"signature"`` block whose Ed25519 signature holds over the canonical JSON
   of every other field of the catalog (rules, certificates, support, version, source...)
   together with the block's own fields — one changed byte anywhere is refused;
2. the signing key is trusted here (:func:`trusted_keys`); and
3. it was signed by this **build**: the block records :func:`build_fingerprint`, a hash of
   the code that decides what a rule rewrites into (``superop/ir``, ``dsl``, ``families``,
   ``rewrite``) and of the catalog format (``rules_out/catalog.py`` and its JSON Schema).
   A certificate is about the program that code builds; after an upgrade
   that changes it, an old catalog is refused ("re-check and re-sign") instead of trusting
   certificates about other programs.

Verifying costs a hash of the catalog and one signature check (milliseconds); Z3 is never
on the load path (``superop verify`` re-checks certificates with it).

Keys
  * signing (private): ``$SUPEROP_SIGNING_KEY`` (a PEM file), else the local key store's
    ``signing-key.pem``, generated on first use (with its public key trusted locally).
  * trusted (public): ``spark.superop.trustedKeys`` (given by the runtime) or
    ``$SUPEROP_TRUSTED_KEYS`` — comma-separated entries, each ``ed25519:<base64>`` (what
    ``superop catalog key`` prints), a PEM public-key file, or a directory of them; when
    neither is set, the keys in the local store's ``trusted/`` directory.
  * the local store: ``$SUPEROP_KEY_DIR``, else ``$XDG_STATE_HOME/superop/keys``
    (``~/.local/state/superop/keys``).
"""
from __future__ import annotations

import base64
import datetime as _dt
import hashlib
import os
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Optional

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from .. import __version__
from ..errors import CatalogError, SuperopError
from .canonical import canonical_json

SIGNATURE = "signature"            # the catalog's field holding the block
ALGORITHM = "ed25519"
# the packages whose code decides what a matched rule turns into (see the module doc), and
# what a valid catalog is (the runtime skips the JSON Schema of a catalog signed by this build)
FINGERPRINTED = ("ir", "dsl", "families", "rewrite")
FINGERPRINTED_FILES = ("rules_out/catalog.py", "rules_out/catalog.schema.json")
_ROOT = Path(__file__).resolve().parents[1]
_BLOCK_FIELDS = ("algorithm", "key_id", "public_key", "build", "superop_version", "signed_at",
                 "signed_by", "value")


class SignatureError(CatalogError):
    """A catalog whose signature is missing, not trusted, broken, or for another build."""


class KeyFileError(SuperopError):
    """A key that cannot be read."""


# ---------------------------------------------------------------------------
# the build
# ---------------------------------------------------------------------------
@lru_cache(maxsize=1)
def build_fingerprint() -> str:
    """sha256 over the source of the packages in :data:`FINGERPRINTED` (relative path and
    bytes of every ``.py`` file, path order): equal iff that code is equal."""
    h = hashlib.sha256()
    files = [f for pkg in FINGERPRINTED for f in sorted((_ROOT / pkg).rglob("*.py"))]
    for f in files + [_ROOT / name for name in FINGERPRINTED_FILES]:
        h.update(f.relative_to(_ROOT).as_posix().encode() + b"\0")
        h.update(f.read_bytes())
        h.update(b"\0")
    return h.hexdigest()


# ---------------------------------------------------------------------------
# keys
# ---------------------------------------------------------------------------
def key_dir() -> Path:
    d = os.environ.get("SUPEROP_KEY_DIR")
    if d:
        return Path(d)
    state = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(state) / "superop" / "keys"


def _raw(pub: Ed25519PublicKey) -> bytes:
    return pub.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)


def key_id(pub: Ed25519PublicKey) -> str:
    """A short name of a public key: the first 16 hex digits of sha256 of its raw bytes."""
    return hashlib.sha256(_raw(pub)).hexdigest()[:16]


def public_spec(pub: Ed25519PublicKey) -> str:
    """``ed25519:<base64>``: the public key as a trusted-keys entry."""
    return f"{ALGORITHM}:" + base64.b64encode(_raw(pub)).decode()


@dataclass(frozen=True)
class Signer:
    """A private signing key and where it came from."""
    private: Ed25519PrivateKey
    source: str

    @property
    def public(self) -> Ed25519PublicKey:
        return self.private.public_key()

    @property
    def key_id(self) -> str:
        return key_id(self.public)


def _write_private(path: Path, key: Ed25519PrivateKey) -> None:
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                            serialization.NoEncryption())
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)   # never readable by others
    with os.fdopen(fd, "wb") as f:
        f.write(pem)


def trust_locally(pub: Ed25519PublicKey) -> Path:
    """Add a public key to the local store's trusted keys."""
    d = key_dir() / "trusted"
    d.mkdir(parents=True, exist_ok=True)
    p = d / f"{key_id(pub)}.pub"
    p.write_bytes(pub.public_bytes(serialization.Encoding.PEM,
                                   serialization.PublicFormat.SubjectPublicKeyInfo))
    return p


def signing_key(path: Optional[str] = None, create: bool = True) -> Signer:
    """The signing key: ``path``, else ``$SUPEROP_SIGNING_KEY``, else the local store's key
    (generated and trusted locally on first use when ``create``)."""
    given = path or os.environ.get("SUPEROP_SIGNING_KEY")
    p = Path(given) if given else key_dir() / "signing-key.pem"
    if not p.is_file():
        if given or not create:
            raise KeyFileError(f"signing key not found: {p}" + ("" if path else
                            " ($SUPEROP_SIGNING_KEY)" if given else ""))
        key = Ed25519PrivateKey.generate()
        try:
            _write_private(p, key)
        except FileExistsError:           # another process generated it first
            return signing_key(str(p), create=False)
        trust_locally(key.public_key())
        return Signer(key, str(p))
    try:
        key = serialization.load_pem_private_key(p.read_bytes(), password=None)
    except (ValueError, TypeError) as e:
        raise KeyFileError(f"signing key {p} is not an unencrypted PEM private key: {e}") from None
    if not isinstance(key, Ed25519PrivateKey):
        raise KeyFileError(f"signing key {p} is not an Ed25519 key")
    return Signer(key, str(p))


def _inline_key(spec: str) -> Ed25519PublicKey:
    """The key of an ``ed25519:<base64>`` entry (ValueError if it is none)."""
    if not spec.startswith(f"{ALGORITHM}:"):
        raise ValueError(f"not an {ALGORITHM}:<base64> public key")
    return Ed25519PublicKey.from_public_bytes(base64.b64decode(spec[len(ALGORITHM) + 1:], validate=True))


def _public_from(entry: str) -> list[tuple[Ed25519PublicKey, str]]:
    e = entry.strip()
    if e.startswith(f"{ALGORITHM}:"):
        try:
            return [(_inline_key(e), "inline")]
        except ValueError as err:
            raise KeyFileError(f"trusted key {e[:24]}...: not an Ed25519 public key ({err})") from None
    p = Path(e)
    if p.is_dir():
        return [k for f in sorted(p.iterdir()) if f.suffix in (".pub", ".pem") for k in _public_from(str(f))]
    if not p.is_file():
        raise KeyFileError(f"trusted key file not found: {p}")
    try:
        pub = serialization.load_pem_public_key(p.read_bytes())
    except ValueError as err:
        raise KeyFileError(f"trusted key {p}: not a PEM public key ({err})") from None
    if not isinstance(pub, Ed25519PublicKey):
        raise KeyFileError(f"trusted key {p} is not an Ed25519 key")
    return [(pub, str(p))]


@dataclass(frozen=True)
class TrustedKeys:
    keys: dict          # key id -> raw public key bytes
    where: str          # where they came from, for messages


def trusted_keys(spec: Optional[str] = None) -> TrustedKeys:
    """The public keys trusted here: ``spec`` (e.g. ``spark.superop.trustedKeys``), else
    ``$SUPEROP_TRUSTED_KEYS``, else the local store's ``trusted/`` directory."""
    env = os.environ.get("SUPEROP_TRUSTED_KEYS")
    if spec:
        entries, where = spec, "spark.superop.trustedKeys"
    elif env:
        entries, where = env, "$SUPEROP_TRUSTED_KEYS"
    else:
        d = key_dir() / "trusted"
        entries, where = (str(d) if d.is_dir() else ""), f"the local key store {d}"
    keys = {key_id(pub): _raw(pub) for e in entries.split(",") if e.strip() for pub, _ in _public_from(e)}
    return TrustedKeys(keys, where)


# ---------------------------------------------------------------------------
# signing and checking
# ---------------------------------------------------------------------------
def _message(catalog: dict, block: dict) -> bytes:
    body = {k: v for k, v in catalog.items() if k != SIGNATURE}
    meta = {k: v for k, v in block.items() if k != "value"}
    return canonical_json({"catalog": body, "signature": meta}).encode("utf-8")


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0).isoformat().replace("+00:00", "Z")


def sign_catalog(catalog: dict, signer: Signer, signed_by: str) -> dict:
    """A copy of ``catalog`` with a signature block by ``signer`` for this build
    (``signed_by``: the step that checked it, e.g. ``superop verify --record``)."""
    block = {"algorithm": ALGORITHM, "key_id": signer.key_id, "public_key": public_spec(signer.public),
             "build": build_fingerprint(), "superop_version": __version__, "signed_at": _now(),
             "signed_by": signed_by}
    body = {k: v for k, v in catalog.items() if k != SIGNATURE}
    block["value"] = base64.b64encode(signer.private.sign(_message(body, block))).decode()
    return {**body, SIGNATURE: block}


@dataclass(frozen=True)
class Signature:
    """A signature that holds: who signed, when, by which step."""
    key_id: str
    signed_at: str
    signed_by: str

    def describe(self) -> str:
        return f"signed by key {self.key_id} ({self.signed_by}, {self.signed_at})"


def _recheck_hint(origin: str, verb: str = "re-sign") -> str:
    target = origin if origin and not origin.startswith("(") else "FILE"
    return f"re-check and {verb} it: superop verify --catalog {target} --record"


def check_signature(catalog: dict, origin: str = "catalog", trusted: Optional[TrustedKeys] = None) -> Signature:
    """The catalog's signature if it holds, is by a trusted key and is for this build;
    else :class:`SignatureError` with a one-line reason."""
    where = f"catalog {origin}"
    block = catalog.get(SIGNATURE)
    if block is None:
        raise SignatureError(f"{where} refused: it is not signed ({_recheck_hint(origin, 'sign')})")
    if not isinstance(block, dict) or any(not isinstance(block.get(f), str) for f in _BLOCK_FIELDS):
        raise SignatureError(f"{where} refused: malformed signature block (needs {', '.join(_BLOCK_FIELDS)})")
    if block["algorithm"] != ALGORITHM:
        raise SignatureError(f"{where} refused: signature algorithm {block['algorithm']!r} is not {ALGORITHM}")
    try:
        pub = _inline_key(block["public_key"])
        if key_id(pub) != block["key_id"]:
            raise ValueError("its public key does not match its key id")
        pub.verify(base64.b64decode(block["value"], validate=True), _message(catalog, block))
    except (InvalidSignature, ValueError) as e:
        why = str(e) or "the signature does not match the content"
        raise SignatureError(f"{where} refused: altered after it was signed by key {block['key_id']} "
                             f"({why})") from None
    trusted = trusted if trusted is not None else trusted_keys()
    if trusted.keys.get(block["key_id"]) != _raw(pub):
        known = ", ".join(sorted(trusted.keys)) or "none"
        raise SignatureError(f"{where} refused: signed by key {block['key_id']}, which is not trusted "
                             f"here (trusted keys from {trusted.where}: {known})")
    if block["build"] != build_fingerprint():
        raise SignatureError(f"{where} refused: checked and signed by another build of superop "
                             f"(build {block['build'][:12]}, superop {block['superop_version']}; this is "
                             f"build {build_fingerprint()[:12]}, superop {__version__}): {_recheck_hint(origin)}")
    return Signature(block["key_id"], block["signed_at"], block["signed_by"])


def signed_here(catalog: dict, signer: Signer) -> bool:
    """Is the catalog's signature by ``signer``, for this build, and intact?"""
    block = catalog.get(SIGNATURE)
    if not isinstance(block, dict) or block.get("key_id") != signer.key_id:
        return False
    try:
        check_signature(catalog, trusted=TrustedKeys({signer.key_id: _raw(signer.public)}, "signer"))
    except SignatureError:
        return False
    return True
