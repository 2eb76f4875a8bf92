"""The layering of ARCHITECTURE.md, checked on the source: each module imports only its own
layer or the layers below, and no two modules import each other (directly or round a
loop), counting imports inside functions and under TYPE_CHECKING too.

The imports are read with ``ast``, so a lazy import cannot hide an upward dependency.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# Source folder -> the package it is installed as (pyproject's package-dir mapping).
FOLDERS = {
    "tokenizer": "reasonspan.tokenizer",
    "runtime": "reasonspan.runtime",
    "architectures": "reasonspan.architectures",
    "reasonspan": "reasonspan",
}
# Lowest first; a module may import modules of its own rank or lower. The runtime's
# sub-packages are ranks of their own (ARCHITECTURE.md), so a lower one never imports a
# higher one; the runtime package itself (its __init__, the public re-exports) is their top.
LAYERS = (
    "reasonspan.tokenizer",
    "reasonspan.runtime.core",
    "reasonspan.runtime.toolcalls",
    "reasonspan.runtime.declared",
    "reasonspan.runtime.text",
    "reasonspan.runtime.wire",
    "reasonspan.runtime.parser",
    "reasonspan.runtime.batch",
    "reasonspan.runtime.stream",
    "reasonspan.runtime.shared",
    "reasonspan.runtime",
    "reasonspan.architectures",
    "reasonspan",
)


def _modules() -> dict[str, Path]:
    out: dict[str, Path] = {}
    for folder, package in FOLDERS.items():
        for path in sorted((ROOT / folder).rglob("*.py")):
            rel = path.relative_to(ROOT / folder).with_suffix("").parts
            parts = rel[:-1] if rel[-1] == "__init__" else rel
            out[".".join((package, *parts))] = path
    return out


MODULES = _modules()


def _layer(module: str) -> int:
    """The rank of the lower package a module is in; anything else in reasonspan.* is top."""
    for rank, pkg in enumerate(LAYERS[:-1]):
        if module == pkg or module.startswith(pkg + "."):
            return rank
    assert module == "reasonspan" or module.startswith("reasonspan."), module
    return len(LAYERS) - 1


def _imports(module: str, path: Path) -> set[str]:
    """Every reasonspan module this file imports, anywhere in it."""
    return _imports_of_source(module, path, path.read_text(encoding="utf-8"))


def _imports_of_source(module: str, path: Path, source: str) -> set[str]:
    is_package = path.name == "__init__.py"
    package = module if is_package else module.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                target = ".".join([*base, node.module] if node.module else base)
            else:
                target = node.module or ""
            # `from pkg import sub` imports the submodule pkg.sub when there is one
            subs = [f"{target}.{a.name}" for a in node.names if f"{target}.{a.name}" in MODULES]
            names = subs if subs and len(subs) == len(node.names) else [target, *subs]
        else:
            continue
        for name in names:
            while name and name not in MODULES:
                name = name.rpartition(".")[0]
            if name and name != module:
                found.add(name)
    return found


GRAPH = {m: _imports(m, p) for m, p in MODULES.items()}


def test_every_source_module_is_read() -> None:
    assert "reasonspan.runtime.parser.contract" in MODULES
    assert "reasonspan.tokenizer.loader" in MODULES
    assert GRAPH["reasonspan.runtime.parser.contract"], "the import reader found nothing"


@pytest.mark.parametrize("module", sorted(MODULES))
def test_no_import_from_a_higher_layer(module: str) -> None:
    mine = _layer(module)
    upward = sorted(t for t in GRAPH[module] if _layer(t) > mine)
    assert not upward, f"{module} ({LAYERS[mine]} layer) imports a layer above it: {upward}"


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp: list[str] = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_no_import_cycles() -> None:
    # Package __init__ files re-export their submodules; a submodule importing its own
    # package's __init__ would make a loop with it, so those edges count like any other.
    assert _cycles(GRAPH) == []


def test_the_checks_can_fail() -> None:
    """The layer and cycle checks see a planted violation."""
    lazy = "def f():\n    from ..runtime.parser.contract import ReasoningParser\n"
    fake = ROOT / "tokenizer" / "loader.py"
    tree_imports = _imports_of_source("reasonspan.tokenizer.loader", fake, lazy)
    assert "reasonspan.runtime.parser.contract" in tree_imports
    assert _layer("reasonspan.runtime.parser.contract") > _layer("reasonspan.tokenizer.loader")
    planted = {k: set(v) for k, v in GRAPH.items()}
    planted["reasonspan.runtime.core.labels"].add("reasonspan.runtime.parser.contract")
    assert any("reasonspan.runtime.core.labels" in c for c in _cycles(planted))
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


# Size limits (ARCHITECTURE.md): a module a newcomer reads in one sitting, a function that
# fits on a screen. What is over a limit today is listed with its size, so the list can
# only shrink: a new offender fails, a listed one that grows fails, and one that was split
# fails until its line here is removed.
MAX_MODULE_LINES = 500
MAX_FUNCTION_LINES = 80
OVERSIZE: dict[str, int] = {}


def _functions(tree: ast.AST, prefix: str = "") -> list[tuple[str, int]]:
    """(qualified name, lines) of every function, methods named Class.method."""
    out: list[tuple[str, int]] = []
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.ClassDef):
            out += _functions(node, f"{prefix}{node.name}.")
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            end = node.end_lineno or node.lineno
            out.append((prefix + node.name, end - node.lineno + 1))
            out += _functions(node, f"{prefix}{node.name}.")
    return out


def _sizes() -> dict[str, int]:
    """Everything over a limit: modules by name, functions as module:qualname."""
    over: dict[str, int] = {}
    for module, path in MODULES.items():
        source = path.read_text(encoding="utf-8")
        lines = len(source.splitlines())
        if lines > MAX_MODULE_LINES:
            over[module] = lines
        for name, length in _functions(ast.parse(source)):
            if length > MAX_FUNCTION_LINES:
                over[f"{module}:{name}"] = length
    return over


def test_modules_and_functions_stay_small() -> None:
    found = _sizes()
    new = {k: v for k, v in found.items() if k not in OVERSIZE}
    grown = {k: (OVERSIZE[k], v) for k, v in found.items() if k in OVERSIZE and v > OVERSIZE[k]}
    split = sorted(k for k in OVERSIZE if k not in found)
    assert not new, (
        f"over {MAX_MODULE_LINES} lines (module) or {MAX_FUNCTION_LINES} (function): {new}"
    )
    assert not grown, f"a listed oversize module or function grew (was, now): {grown}"
    assert not split, f"now within the limits, remove from OVERSIZE: {split}"


def test_the_size_check_can_fail() -> None:
    source = "class A:\n    def f(self):\n" + "        x = 1\n" * 90
    assert dict(_functions(ast.parse(source)))["A.f"] == 91


# A family's facts live in its own module: no family module imports another (what several
# families share is in the runtime, reasonspan.runtime.shared, or in one module that holds
# all the families built on it, as glm.py holds glm45 and glm47).
FAMILY_PACKAGE = "reasonspan.architectures"


def _cross_family(graph: dict[str, set[str]]) -> dict[str, list[str]]:
    """Family module -> the other family modules (or the package) it imports."""
    out: dict[str, list[str]] = {}
    for module, targets in graph.items():
        if not module.startswith(FAMILY_PACKAGE + "."):
            continue
        others = sorted(t for t in targets if t == FAMILY_PACKAGE or t.startswith(FAMILY_PACKAGE))
        if others:
            out[module] = others
    return out


def test_no_family_imports_another() -> None:
    assert _cross_family(GRAPH) == {}, "move what they share into reasonspan.runtime.shared"


def test_the_family_check_can_fail() -> None:
    planted = {k: set(v) for k, v in GRAPH.items()}
    lazy = "def f():\n    from .qwen3 import Qwen3Parser\n"
    path = ROOT / "architectures" / "glm.py"
    planted["reasonspan.architectures.glm"] |= _imports_of_source(
        "reasonspan.architectures.glm", path, lazy
    )
    assert _cross_family(planted) == {
        "reasonspan.architectures.glm": ["reasonspan.architectures.qwen3"]
    }
