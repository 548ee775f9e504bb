"""Reading the per-family fixture files (``tests/fixtures/families/*.sql``), sqlglot-style:
entries separated by blank lines; each entry is ``-- key: value`` lines, the input query,
and optionally ``-- rewritten:`` followed by the SQL the runtime must produce."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "families"


@dataclass
class Entry:
    file: str
    name: str
    sql: str
    # ("candidate", fam, kind) | ("near_miss", fam, reason)
    mining: list[tuple[str, ...]] = field(default_factory=list)
    synthesis: str = "skip"
    runtime: str = "unchanged"
    rewritten: str = ""

    @property
    def id(self) -> str:
        return f"{self.file}:{self.name}"


def _entry(file: str, block: str) -> Entry:
    meta: dict[str, list[str]] = {}
    sql_lines: list[str] = []
    rewritten: list[str] = []
    target = sql_lines
    for line in block.splitlines():
        s = line.strip()
        if s.startswith("#"):
            continue
        if s.startswith("-- rewritten:"):
            target = rewritten
            continue
        if s.startswith("--") and target is sql_lines and not sql_lines:
            key, _, value = s[2:].partition(":")
            meta.setdefault(key.strip(), []).append(value.split("#")[0].strip())
            continue
        target.append(line)
    e = Entry(file, meta["name"][0], "\n".join(sql_lines).strip().rstrip(";"))
    for m in meta.get("mining", []):
        if m != "none":
            e.mining.append(tuple(m.split()))
    e.synthesis = meta.get("synthesis", ["skip"])[0]
    e.runtime = meta.get("runtime", ["unchanged"])[0]
    e.rewritten = "\n".join(rewritten).strip().rstrip(";")
    return e


def load(path: Path) -> list[Entry]:
    blocks = [b for b in path.read_text().split("\n\n") if b.strip()]
    return [_entry(path.stem, b) for b in blocks
            if not all(line.startswith("#") for line in b.strip().splitlines())]


def all_entries() -> list[Entry]:
    return [e for p in sorted(FIXTURES.glob("*.sql")) for e in load(p)]
