"""The layer order of docs/ARCHITECTURE.md ("Layers") holds in the code.

The import graph is built from every ``superop`` module's AST — imports at module level AND
inside functions — so that no cycle or upward import can hide in a function body. Checks:

* every import of a superop module goes to the importer's own layer or a lower one;
* no cycle between packages (a package = a first-level name under ``superop``);
* imports of superop modules sit at module level, except the few listed in
  :data:`LAZY` (each with why it must stay lazy).
"""
from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "superop"

# (importer, imported) -> why the import stays inside a function
LAZY = {
    ("superop.rules_out.catalog", "superop.rules_out.trust"):
        "loading re-checks certificates with z3 when no re-check is recorded; the runtime imports no z3",
    ("superop.runtime.session", "superop.rules_out.trust"):
        "an in-memory catalog is re-checked with z3 when no re-check is recorded; the runtime imports no z3",
    ("superop.rules_out.trust", "superop.verify.certify"):
        "the z3 re-check, only when z3 is installed; the runtime imports no z3",
}


def layers() -> list[list[str]]:
    """The layers, bottom first, as ARCHITECTURE's "Layers" block lists them (top first)."""
    text = (ROOT / "docs" / "ARCHITECTURE.md").read_text()
    section = text.split("\n## Layers", 1)[1]
    block = section.split("```", 2)[1]
    rows = []
    for line in block.strip().splitlines():
        names = re.findall(r"superop(?:\.[a-z_]+)?", line.split("#", 1)[0])
        if names:
            rows.append(names)
    return rows[::-1]


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


MODULES = {module_name(p): p for p in PKG.rglob("*.py")}


def resolve(name: str) -> str:
    while name not in MODULES and "." in name:
        name = name.rsplit(".", 1)[0]
    return name


def imports() -> list[tuple[str, str, bool, int]]:
    """(importer, imported module, inside a function, line) for every superop import."""
    out = []
    for mod, path in MODULES.items():
        tree = ast.parse(path.read_text())
        is_pkg = path.name == "__init__.py"

        def visit(node: ast.AST, in_func: bool, mod: str = mod, is_pkg: bool = is_pkg) -> None:
            for child in ast.iter_child_nodes(node):
                nested = in_func or isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
                if isinstance(child, ast.Import):
                    out.extend((mod, resolve(a.name), nested, child.lineno)
                               for a in child.names if a.name.split(".")[0] == "superop")
                elif isinstance(child, ast.ImportFrom):
                    base = child.module or ""
                    if child.level:
                        pkg = mod.split(".") if is_pkg else mod.split(".")[:-1]
                        pkg = pkg[:len(pkg) - (child.level - 1)]
                        base = ".".join(pkg + ([child.module] if child.module else []))
                    if base.split(".")[0] == "superop":
                        for a in child.names:
                            full = f"{base}.{a.name}"
                            out.append((mod, resolve(full if full in MODULES else base), nested, child.lineno))
                visit(child, nested, mod, is_pkg)

        visit(tree, False)
    return out


def layer_of(mod: str, rows: list[list[str]]) -> int:
    best, at = -1, -1
    for i, row in enumerate(rows):
        for name in row:
            if (mod == name or mod.startswith(name + ".")) and len(name) > best:
                best, at = len(name), i
    return at


def package(mod: str) -> str:
    return ".".join(mod.split(".")[:2])


def test_every_module_has_a_layer():
    rows = layers()
    assert [m for m in MODULES if m != "superop" and layer_of(m, rows) < 0] == []


def test_no_import_runs_up_the_layers():
    rows = layers()
    up = [f"{a}:{line} -> {b}" for a, b, _, line in imports()
          if b != "superop" and layer_of(b, rows) > layer_of(a, rows)]
    assert up == []


def test_no_cycle_between_packages():
    graph: dict[str, set[str]] = {}
    for a, b, _, _ in imports():
        if package(a) != package(b) and b != "superop":
            graph.setdefault(package(a), set()).add(package(b))
    # Tarjan's strongly connected components
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles: list[list[str]] = []

    def strong(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph.get(v, ()):
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                cycles.append(sorted(comp))

    for v in list(graph):
        if v not in index:
            strong(v)
    assert cycles == []


def test_superop_imports_sit_at_module_level():
    lazy = sorted({f"{a}:{line} -> {b}" for a, b, nested, line in imports() if nested and (a, b) not in LAZY})
    assert lazy == []


def test_the_lazy_list_names_only_lazy_imports():
    """An entry of LAZY whose import moved to module level (or went away) must go."""
    nested = {(a, b) for a, b, n, _ in imports() if n}
    assert sorted(set(LAZY) - nested) == []
