"""Imports point down (docs/architecture.md): no cycle among the units of the code (each subpackage of
engine/, each top-level module of engine/, and cluster as one), engine never imports cluster, and the
bottom package engine.core imports none of the layers above it. Every import counts, also one inside a
function (a lazy import is still a dependency); only imports under ``if TYPE_CHECKING:`` do not.
The same rules as ../shared/tools/layers.py, kept here so that the default suite holds them."""
from __future__ import annotations

import ast
import functools
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# what engine.core may import: the leaves below it (and kernels, numpy, pyarrow ...)
CORE_MAY_IMPORT = {"engine.errors", "engine.types", "engine.collation"}


def _unit(module: str):
    parts = module.split(".")
    if parts[0] == "cluster":
        return "cluster"
    if parts[0] != "engine" or len(parts) == 1:
        return None
    return "engine." + parts[1]


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _type_checking_lines(tree) -> set[int]:
    lines = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for sub in node.body:
                lines.update(range(sub.lineno, (sub.end_lineno or sub.lineno) + 1))
    return lines


def _exists(module: str) -> bool:
    path = ROOT / module.replace(".", "/")
    return path.with_suffix(".py").exists() or path.is_dir()


@functools.cache
def unit_edges() -> dict[tuple[str, str], str]:
    """(importing unit, imported unit) -> one place the import is written (file:line)."""
    edges: dict[tuple[str, str], str] = {}
    for path in sorted([*ROOT.glob("engine/**/*.py"), *ROOT.glob("cluster/**/*.py")]):
        module = _module_name(path)
        source = _unit(module)
        tree = ast.parse(path.read_text(), str(path))
        skip = _type_checking_lines(tree)
        package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
        for node in ast.walk(tree):
            if getattr(node, "lineno", None) in skip:
                continue
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join(up + ([base] if base else []))
                targets = [base] + [f"{base}.{a.name}" for a in node.names]
            else:
                continue
            for target in targets:
                target_unit = _unit(target)
                if source and target_unit and target_unit != source and _exists(target):
                    edges.setdefault((source, target_unit), f"{path.relative_to(ROOT)}:{node.lineno}")
    return edges


def cycles(edges) -> list[list[str]]:
    """The strongly connected components of more than one unit (Tarjan)."""
    graph = defaultdict(set)
    for a, b in edges:
        graph[a].add(b)
    index, low, stack, on, found = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in list(graph):
        if v not in index:
            visit(v)
    return found


def test_no_cycle_among_engine_packages_and_cluster():
    edges = unit_edges()
    problems = []
    for component in cycles(edges):
        inner = [f"{a} -> {b} ({where})" for (a, b), where in sorted(edges.items())
                 if a in component and b in component]
        problems.append(f"cycle among {', '.join(component)}: " + "; ".join(inner))
    assert not problems, "\n".join(problems)


def test_engine_never_imports_cluster():
    edges = unit_edges()
    wrong = [f"{a} ({where})" for (a, b), where in sorted(edges.items()) if b == "cluster" and a != "cluster"]
    assert not wrong, "engine imports cluster (a runner registers itself instead): " + ", ".join(wrong)


def test_core_is_the_bottom():
    edges = unit_edges()
    wrong = [f"{b} ({where})" for (a, b), where in sorted(edges.items())
             if a == "engine.core" and b not in CORE_MAY_IMPORT]
    assert not wrong, "engine.core imports above itself: " + ", ".join(wrong)


def test_the_check_sees_a_cycle():
    """The check can fail: a made-up back edge closes a cycle it reports."""
    edges = dict(unit_edges())
    assert ("engine.exec", "engine.core") in edges
    edges[("engine.core", "engine.exec")] = "made up"
    assert any({"engine.core", "engine.exec"} <= set(c) for c in cycles(edges))
