"""The Python package's layout, the twin of the Scala suite ``PackageDependenciesSuite``: every
module of ``python/skewagg`` sits in one tier of :data:`TIERS` and imports only from the tiers
that tier may use; no module imports the package root (the face only re-exports); no import
cycle, counting imports inside functions; and the offline advisor imports neither pyspark nor
py4j, so ``python -m skewagg advise`` runs where neither is installed."""

from __future__ import annotations

import ast
import fnmatch
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Set, Tuple

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "python" / "skewagg"
EVENT_LOGS = Path(__file__).resolve().parent / "eventlogs"

# (tier, its modules, the tiers it may import from). Lower tiers first.
TIERS: List[Tuple[str, List[str], List[str]]] = [
    ("base", ["skewagg.version", "skewagg.errors", "skewagg.rendering"], ["base"]),
    # The offline advisor: event logs, the skew rule, makespans, advise(). No JVM.
    ("advisor", ["skewagg.advisor", "skewagg.advisor.*"], ["base", "advisor"]),
    # The door to the JVM (py4j), the extension's SQL functions, the bundled jars.
    ("jvm", ["skewagg._bridge", "skewagg._sql", "skewagg._jars"], ["base", "jvm"]),
    ("session", ["skewagg.session"], ["base", "advisor", "jvm"]),
    ("features", ["skewagg.explain", "skewagg.skew_report", "skewagg.stage_report"],
     ["base", "advisor", "jvm", "session"]),
    # The face (re-exports only), the CLI and the demo application.
    ("face", ["skewagg", "skewagg.__main__", "skewagg.demo"],
     ["base", "advisor", "jvm", "session", "features", "face"]),
]

# Tiers that must not reach a JVM, and the modules that would.
NO_JVM_TIERS = {"base", "advisor"}
JVM_MODULES = ("pyspark", "py4j")


def module_name(path: Path, root: Path = PACKAGE) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules(root: Path = PACKAGE) -> Dict[str, Path]:
    return {module_name(p, root): p for p in sorted(root.rglob("*.py"))}


def imports(path: Path, name: str, known: Set[str]) -> List[Tuple[str, int]]:
    """Every module ``path`` imports (at any depth: in functions too), with its line: a
    ``from skewagg import x`` names ``skewagg.x`` where x is a module, else the root."""
    found: List[Tuple[str, int]] = []
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [(alias.name, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package.split(".")[:len(package.split(".")) - node.level + 1]
                                + ([base] if base else []))
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                found.append((sub if sub in known else base, node.lineno))
    return found


def tier_of(name: str, tiers: Sequence[Tuple[str, List[str], List[str]]] = TIERS) -> Optional[str]:
    matches = [t for t, patterns, _ in tiers if any(fnmatch.fnmatchcase(name, p) for p in patterns)]
    return matches[0] if len(matches) == 1 else None


def graph(root: Path = PACKAGE) -> Dict[str, List[Tuple[str, int]]]:
    """Each module's imports: of the package's modules, and of pyspark / py4j."""
    mods = modules(root)
    known = set(mods)
    out: Dict[str, List[Tuple[str, int]]] = {}
    for name, path in mods.items():
        out[name] = [(m, line) for m, line in imports(path, name, known)
                     if m in known or m.split(".")[0] in JVM_MODULES]
    return out


def violations(edges: Dict[str, List[Tuple[str, int]]],
               tiers: Sequence[Tuple[str, List[str], List[str]]] = TIERS) -> List[str]:
    """What breaks the layout: a module in no tier (or two), an import of a tier not allowed,
    of the package root, or of pyspark / py4j from a tier that must not reach a JVM."""
    allowed = {t: set(may) for t, _, may in tiers}
    problems = []
    for name, targets in edges.items():
        tier = tier_of(name, tiers)
        if tier is None:
            problems.append(f"{name} is in no tier, or in several, of TIERS")
            continue
        for target, line in targets:
            where = f"{name} (line {line}) imports {target}"
            if target.split(".")[0] in JVM_MODULES:
                if tier in NO_JVM_TIERS:
                    problems.append(f"{where}: the {tier} tier runs without a JVM")
                continue
            if target == "skewagg":
                problems.append(f"{where}, the package root: import the module that defines it")
                continue
            target_tier = tier_of(target, tiers)
            if target_tier is not None and target_tier not in allowed[tier]:
                problems.append(f"{where}: the {tier} tier may import only from "
                                f"{', '.join(sorted(allowed[tier]))}, not {target_tier}")
    return problems


def cycles(edges: Dict[str, List[Tuple[str, int]]]) -> List[List[str]]:
    """The import cycles among the package's modules (each once, from its smallest name)."""
    found: List[List[str]] = []
    graph_ = {m: sorted({t for t, _ in ts if t in edges and t != m}) for m, ts in edges.items()}

    def visit(start: str, node: str, path: List[str]) -> None:
        for nxt in graph_[node]:
            if nxt == start:
                found.append(path + [start])
            elif nxt > start and nxt not in path:
                visit(start, nxt, path + [nxt])

    for start in sorted(graph_):
        visit(start, start, [start])
    return found


def test_every_module_is_in_one_tier_and_imports_only_what_its_tier_may() -> None:
    edges = graph()
    assert "skewagg.advisor.advice" in edges and "skewagg.session" in edges
    assert violations(edges) == []


def test_the_package_has_no_import_cycle() -> None:
    assert cycles(graph()) == []


def test_the_checks_find_what_they_look_for(tmp_path: Path) -> None:
    """A package that breaks each rule once: the checks name each break."""
    root = tmp_path / "skewagg"
    (root / "advisor").mkdir(parents=True)
    files = {
        "__init__.py": "from skewagg.session import configure\n",
        "errors.py": "",
        "session.py": "from skewagg import configure\nfrom skewagg.explain import explain\n",
        "explain.py": "def f():\n    from skewagg.session import configure\n",
        "advisor/__init__.py": "",
        "advisor/advice.py": "import py4j\nfrom ._helper import x\n",
        "advisor/_helper.py": "from ..session import configure\n",
        "stray.py": "",
    }
    for name, text in files.items():
        (root / name).write_text(text)
    edges = graph(root)
    assert ("skewagg.session", 1) in edges["skewagg.advisor._helper"]
    problems = "\n".join(violations(edges))
    assert "skewagg.stray is in no tier" in problems
    assert "skewagg.session (line 1) imports skewagg, the package root" in problems
    assert "skewagg.session (line 2) imports skewagg.explain: the session tier" in problems
    assert "skewagg.advisor.advice (line 1) imports py4j: the advisor tier runs" in problems
    assert "skewagg.advisor._helper (line 1) imports skewagg.session: the advisor" in problems
    assert ["skewagg.explain", "skewagg.session", "skewagg.explain"] in cycles(edges)


BLOCK_JVM = """
import runpy, sys
class Blocked:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("pyspark", "py4j"):
            raise ImportError(f"{name} is not installed here (blocked by the test)")
sys.meta_path.insert(0, Blocked())
sys.argv = ["skewagg"] + sys.argv[1:]
runpy.run_module("skewagg", run_name="__main__")
"""


@pytest.mark.parametrize("line", ["spark-3.5", "spark-4.3"])
def test_the_advisor_runs_with_neither_pyspark_nor_py4j(line: str) -> None:
    proc = subprocess.run([sys.executable, "-c", BLOCK_JVM, "advise", str(EVENT_LOGS / line)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("skewagg advisor: 1 application(s)"), proc.stdout
    assert "blocked" not in proc.stderr
