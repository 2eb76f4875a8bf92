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


def _from_target(module: str, path: Path, node: ast.ImportFrom) -> str:
    """The absolute name of the module a ``from … import`` reads from (relative resolved)."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    if not node.level:
        return node.module or ""
    base = package.split(".")
    base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, node.module] if node.module else base)


def _imports_of_source(module: str, path: Path, source: str) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            target = _from_target(module, path, node)
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


# One spelling per concept (issue 30): a module's underscore names are its own. What another
# module needs (a streamed reader sharing its whole read's patterns and value readers) gets a
# public name where it is defined, so no module under runtime/ or architectures/ imports an
# underscore name of another reasonspan module (``from m import _x``) or reads one
# (``m._x``, ``alias._x``, ``reasonspan.pkg.m._x``). An exception would be listed, as
# "user -> module._name", in a list that can only shrink (none is left): a new reach fails,
# and a listed one made public fails until its line here is removed.
PRIVATE_SCOPE = ("reasonspan.runtime", "reasonspan.architectures")
PRIVATE_REACHES: set[str] = set()


def _is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _module_names(module: str, path: Path, tree: ast.AST) -> dict[str, str]:
    """Local name -> the reasonspan module it is bound to by an import anywhere in the file
    (``import a.b`` binds ``a`` to ``a``; attribute reads walk on from there)."""
    bound: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                local = a.asname or a.name.partition(".")[0]
                bound[local] = a.name if a.asname else local
        elif isinstance(node, ast.ImportFrom):
            target = _from_target(module, path, node)
            for a in node.names:
                if f"{target}.{a.name}" in MODULES:
                    bound[a.asname or a.name] = f"{target}.{a.name}"
    return bound


def _private_reaches(module: str, path: Path, source: str) -> set[str]:
    """``module._name`` for every underscore name of another reasonspan module this file
    imports or reads as an attribute of that module."""
    tree = ast.parse(source)
    bound = _module_names(module, path, tree)

    def resolved(expr: ast.expr) -> str | None:
        if isinstance(expr, ast.Name):
            return bound.get(expr.id)
        if isinstance(expr, ast.Attribute) and (base := resolved(expr.value)) is not None:
            name = f"{base}.{expr.attr}"
            return name if any(m == name or m.startswith(name + ".") for m in MODULES) else None
        return None

    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            target = _from_target(module, path, node)
            if target in MODULES and target != module:
                found |= {f"{target}.{a.name}" for a in node.names if _is_private(a.name)}
        elif isinstance(node, ast.Attribute) and _is_private(node.attr):
            owner = resolved(node.value)
            if owner in MODULES and owner != module:
                found.add(f"{owner}.{node.attr}")
    return found


def _all_private_reaches() -> set[str]:
    return {
        f"{module} -> {reach}"
        for module, path in MODULES.items()
        if module.startswith(PRIVATE_SCOPE)
        for reach in _private_reaches(module, path, path.read_text(encoding="utf-8"))
    }


def test_no_module_reaches_another_modules_private_names() -> None:
    found = _all_private_reaches()
    new = sorted(found - PRIVATE_REACHES)
    public = sorted(PRIVATE_REACHES - found)
    assert not new, f"give these a public name where they are defined: {new}"
    assert not public, f"no longer reached, remove from PRIVATE_REACHES: {public}"


def test_the_private_name_check_can_fail() -> None:
    """Each way of reaching a private name is seen; public, dunder and own names are not."""
    module = "reasonspan.runtime.toolcalls.partial_dsml"
    path = MODULES[module]
    reached = {
        "from reasonspan.runtime.toolcalls.dsml_calls import _T": "dsml_calls._T",
        "from .dsml_calls import INVOKE, _MORE": "dsml_calls._MORE",
        "def f():\n    from . import dsml_calls\n    return dsml_calls._T": "dsml_calls._T",
        "from reasonspan.runtime.toolcalls import dsml_calls as d\nd._invoke": "dsml_calls._invoke",
        "import reasonspan.runtime.toolcalls.dsml_calls\nreasonspan.runtime.toolcalls.dsml_calls._T": (
            "dsml_calls._T"
        ),
        "import reasonspan.runtime.toolcalls.dsml_calls as d\nd._T.pattern": "dsml_calls._T",
        "from ..core import ids\nids._x": "reasonspan.runtime.core.ids._x",
    }
    for source, name in reached.items():
        full = name if name.startswith("reasonspan.") else f"reasonspan.runtime.toolcalls.{name}"
        assert _private_reaches(module, path, source) == {full}, source
    unseen = [
        "from reasonspan.runtime.toolcalls import dsml_calls\ndsml_calls.INVOKE.match",
        "class A:\n    def f(self):\n        return self._x",
        "from reasonspan import __version__",
        "import re\nre._pattern_type",
        "from reasonspan.runtime.toolcalls.partial_dsml import _CALL",  # its own name
        "dsml_calls = object()\ndsml_calls._x",  # not bound by an import
    ]
    for source in unseen:
        assert _private_reaches(module, path, source) == set(), source


# An object's underscore attributes are its own too. Python has no friend classes and an
# ``ast`` check cannot tell an object's type, so the rule is read by name: ``x._a`` is
# allowed when ``x`` is ``self``, ``cls`` or ``super()``, or when ``x`` is a plain name (a
# local, a parameter) and the module itself defines an attribute ``_a`` (a class in it
# assigns ``self._a``, or names it in its body or ``__slots__``): a module's classes may read
# each other's fields, as ``__eq__`` reads ``other._a``. A chain (``self._runtime._cancel``)
# or a name the module never defines is a reach into another module's object; what it
# needs gets a public name there. Reads of other libraries' underscore names that have no
# public spelling are listed with why, in a list that can only shrink.
OTHER_LIBRARIES_PRIVATE = {
    # argparse has no public API for a parser's actions; the CLI reference in the docs is
    # generated from them (and test_docs checks it against `--help`).
    "reasonspan.cli_docs": {"_actions", "_mutually_exclusive_groups", "_group_actions"},
    # A namedtuple's field names (public API, spelled with an underscore so as not to clash
    # with a field).
    "reasonspan.runtime.batch.slots": {"_fields"},
}


def _defined_private_attributes(tree: ast.AST) -> set[str]:
    """The underscore attribute names a module defines: assigned on an object anywhere in
    it (``self._a = ...``), or named in a class body (methods, fields, ``__slots__``)."""
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            for stmt in node.body:
                if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    out.add(stmt.name)
                elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
                    out.add(stmt.target.id)
                elif isinstance(stmt, ast.Assign):
                    for t in stmt.targets:
                        if isinstance(t, ast.Name):
                            out.add(t.id)
                            if t.id == "__slots__":
                                out |= {
                                    e.value
                                    for e in ast.walk(stmt.value)
                                    if isinstance(e, ast.Constant) and isinstance(e.value, str)
                                }
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            out |= {
                e.attr
                for t in targets
                for e in ast.walk(t)
                if isinstance(e, ast.Attribute) and _is_private(e.attr)
            }
    return {name for name in out if _is_private(name)}


def _attribute_reaches(source: str) -> set[str]:
    """``x._a`` as written, for each read of another object's underscore attribute (the
    rule above); module attributes are the other check's."""
    tree = ast.parse(source)
    own = _defined_private_attributes(tree)
    modules = {  # names bound to a module by ``import m`` (``from`` may bind a class)
        a.asname or a.name.partition(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.Import)
        for a in node.names
    }
    found: set[str] = set()
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Attribute) and _is_private(node.attr)):
            continue
        value = node.value
        if isinstance(value, ast.Name) and value.id in ("self", "cls"):
            continue
        if isinstance(value, ast.Call) and ast.unparse(value.func) == "super":
            continue
        if isinstance(value, ast.Name) and (node.attr in own or value.id in modules):
            continue  # the module's own field, or a module's name (the check above's)
        found.add(ast.unparse(node))
    return found


def test_no_module_reads_another_objects_private_attributes() -> None:
    found = {
        (module, reach)
        for module, path in MODULES.items()
        for reach in _attribute_reaches(path.read_text(encoding="utf-8"))
    }
    new = sorted(
        f"{module}: {reach}"
        for module, reach in found
        if reach.rpartition(".")[2] not in OTHER_LIBRARIES_PRIVATE.get(module, ())
    )
    listed = {(module, name) for module, names in OTHER_LIBRARIES_PRIVATE.items() for name in names}
    stale = listed - {(module, reach.rpartition(".")[2]) for module, reach in found}
    assert not new, f"give these a public name on their class: {new}"
    assert not stale, f"no longer read, remove from OTHER_LIBRARIES_PRIVATE: {sorted(stale)}"


def test_the_attribute_check_can_fail() -> None:
    reached = {
        "class A:\n    def f(self):\n        return self._runtime._cancel(1)": (
            "self._runtime._cancel"
        ),
        "def f(feed):\n    return feed._grammars": "feed._grammars",
        "x = make()\nx._slots.slot_of": "x._slots",
        "def f():\n    return build()._actions": "build()._actions",
        "from m import Views\nViews._hidden": "Views._hidden",  # a class, not a module
    }
    for source, reach in reached.items():
        assert _attribute_reaches(source) == {reach}, source
    unseen = [
        "class A:\n    def f(self):\n        return self._x",
        "class A:\n    def __init__(self):\n        self._x = 1\n\n"
        "    def __eq__(self, other):\n        return self._x == other._x",
        "class B(A):\n    def f(self):\n        return super()._step()",
        "class A:\n    @classmethod\n    def f(cls):\n        return cls._x",
        "import re\nre._pattern_type",  # a module's name: test_no_module_reaches_...
        "import reasonspan.x as x\nx._y",
        "class A:\n    __slots__ = ('_n',)\n\n\ndef f(a):\n    return a._n",
    ]
    for source in unseen:
        assert _attribute_reaches(source) == set(), source
