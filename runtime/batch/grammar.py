"""The grammar engine behind the structured-output gate: llguidance, optional (extra
``grammar``), imported only when a request asks for a grammar.

The batch decides *when* a request is constrained (``grammar_active``: outside reasoning)
and *which* generated tokens were sampled under the grammar (``grammar_mask``). This module
owns *what* the constraint is: it turns a request's ``response_format`` into an llguidance
grammar, compiles a matcher per request, feeds it the tokens the batch gates through, and
fills next-token bitmasks for many requests at once with llguidance's parallel executor.

``response_format`` (OpenAI's, plus two extensions), as a mapping or any msgspec Struct:

- ``{"type": "json_schema", "json_schema": {"name": ..., "schema": {...}}}``
  (``json_schema`` may also be the schema itself);
- ``{"type": "json_object"}``: any JSON object;
- ``{"type": "regex", "regex": "..."}`` and ``{"type": "grammar", "grammar": "<lark>"}``
  (llguidance's Lark dialect): the extensions;
- ``{"type": "text"}`` or None: no grammar.

Per tokenizer, the llguidance tokenizer (about 1.5-3.5 s to build from ``tokenizer.json``) is
built once and kept in ``LoadedTokenizer.cache``, beside the compiled marker tables. Its
build holds the GIL throughout (llguidance parses the JSON and computes its token slices
without releasing it), so on a worker thread it stalls the event loop as much as on the
loop itself: a server builds it at model load (:func:`prepare_tokenizer`), not on the
first request that asks for a grammar. Compiling a grammar does release the GIL.

Compiling is bounded and cached. A format is refused (:class:`InvalidOptionError`) when it
nests more than :data:`~reasonspan.runtime.core.nesting.MAX_NESTING` containers, and
(:class:`GrammarError`) when its grammar text is over :data:`MAX_GRAMMAR_BYTES` (llguidance's
Lark front end grows faster than linearly: 50,000 alternatives took 11 s) or it breaks
llguidance's resource limits (:data:`LIMITS`). Compiled matchers are kept per (tokenizer,
format), the :data:`CACHE_SIZE` most recent, and each request gets a copy: a server
compiles on a worker thread first (:func:`compile_grammar` there, or
:func:`prepare_grammar`), and the batch's own compile on the event loop is then a copy.

It must not know the batch's slots or how tokens are routed: the batch hands it tokens and
rows, and reads back whether a grammar rejected a token or is complete.
"""

from __future__ import annotations

import importlib
import json
import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import msgspec
import numpy as np

from reasonspan.runtime.core.errors import InvalidOptionError, ReasonspanError
from reasonspan.runtime.core.nesting import MAX_NESTING, nested_deeper_than
from reasonspan.tokenizer.loader import LoadedTokenizer

if TYPE_CHECKING:
    import numpy.typing as npt

# llguidance objects are typed Any here: the package is optional, and type checking an
# install without it must not depend on its stubs.

__all__ = [
    "Grammar",
    "GrammarError",
    "GrammarUnavailableError",
    "bitmask_width",
    "compile_grammar",
    "consume_each",
    "fill_bitmasks",
    "prepare_grammar",
    "prepare_tokenizer",
]

FORMAT_TYPES = ("text", "json_object", "json_schema", "regex", "grammar")
_CACHE_KEY = "llguidance.LLTokenizer"
_lock = threading.Lock()

MAX_GRAMMAR_BYTES = 256 * 1024
"""The longest grammar text compiled (llguidance's grammar, from a schema, regex or Lark):
compile time grows faster than linearly in it, so this bounds one compile to about 1 s."""

LIMITS: dict[str, int] = {"max_grammar_size": 200_000, "initial_lexer_fuel": 1_000_000}
"""llguidance ``LLParserLimits`` for every compile (symbols in the grammar; regex work
while building the lexer); a grammar over them does not compile (:class:`GrammarError`)."""

CACHE_SIZE = 128
"""Compiled matchers kept per tokenizer (the most recently used), each request getting a
copy. They are kept on the tokenizer (its ``cache``), so they go with it: a server that
unloads a model does not keep its matchers, nor the llguidance tokenizer they hold."""

_COMPILED_KEY = "reasonspan.grammar_compiled"
"""``tok.cache`` key of ``(kind, format text) -> matcher``, most recently used last."""


class GrammarUnavailableError(ReasonspanError, ImportError):
    """A request asked for a grammar and llguidance is not installed."""

    def __init__(self) -> None:
        super().__init__(
            "response_format needs the grammar engine llguidance: "
            "pip install -e '.[grammar]' in the clone"
        )


class GrammarError(ReasonspanError, ValueError):
    """A ``response_format`` that does not compile (bad schema, regex or grammar), or a token
    that the request's grammar rejected (then it is the cause of the request's failure)."""


def _llguidance(module: str = "llguidance") -> Any:
    """The optional package (or one of its modules), imported on first use; by name, so
    type checking an install without it needs no stubs."""
    try:
        return importlib.import_module(module)
    except ImportError:
        raise GrammarUnavailableError() from None


def _lltokenizer(tok: LoadedTokenizer) -> Any:
    """The llguidance tokenizer of ``tok``, built once per loaded tokenizer (1.5-3.5 s with
    the GIL held: see :func:`prepare_tokenizer`)."""
    got = tok.cache.get(_CACHE_KEY)
    if got is None:
        llg = _llguidance()
        with _lock:
            got = tok.cache.get(_CACHE_KEY)
            if got is None:
                got = llg.LLTokenizer(tok.raw_json, n_vocab=tok.vocab_size)
                tok.cache[_CACHE_KEY] = got
    return got


def _compiled_of(tok: LoadedTokenizer) -> OrderedDict[tuple[str, str], Any]:
    """The tokenizer's compiled matchers (:data:`_COMPILED_KEY`); call it under ``_lock``."""
    got = tok.cache.get(_COMPILED_KEY)
    if not isinstance(got, OrderedDict):
        got = tok.cache[_COMPILED_KEY] = OrderedDict()
    return got


def _too_deep(fmt: object) -> InvalidOptionError:
    return InvalidOptionError(
        "response_format",
        "<a value nested too deeply>",
        f"a format nested at most {MAX_NESTING} objects/arrays deep",
    )


def _as_mapping(fmt: object) -> dict[str, Any]:
    if nested_deeper_than(fmt):  # before anything recurses over it
        raise _too_deep(fmt)
    if isinstance(fmt, msgspec.Struct):
        try:
            fmt = msgspec.to_builtins(fmt)
        except RecursionError:
            raise _too_deep(fmt) from None
        if nested_deeper_than(fmt):
            raise _too_deep(fmt)
    if not isinstance(fmt, Mapping):
        raise InvalidOptionError(
            "response_format", fmt, "a mapping like {'type': 'json_schema', ...} or None"
        )
    return {str(k): v for k, v in fmt.items() if v is not None}


def _check_size(kind: str, text: str) -> None:
    if len(text) > MAX_GRAMMAR_BYTES:
        raise GrammarError(
            f"response_format ({kind}) is too large to compile: {len(text):,} characters of "
            f"grammar, over the limit of {MAX_GRAMMAR_BYTES:,}"
        )


def grammar_source(fmt: object) -> str | None:
    """The llguidance grammar text of a ``response_format`` (None: no grammar); checks its
    shape, not whether it compiles (:func:`compile_grammar` does)."""
    if fmt is None:
        return None
    d = _as_mapping(fmt)
    kind = d.get("type")
    if kind not in FORMAT_TYPES:
        raise InvalidOptionError(
            "response_format.type", kind, f"one of {', '.join(repr(t) for t in FORMAT_TYPES)}"
        )
    if kind == "text":
        return None
    llg = _llguidance()
    matcher = llg.LLMatcher
    if kind == "json_object":
        return str(matcher.grammar_from_json_schema({"type": "object"}))
    if kind == "json_schema":
        spec = _schema_of(d.get("json_schema"))
        text = json.dumps(spec)
        _check_size(kind, text)
        try:
            source = str(matcher.grammar_from_json_schema(text))
        except (TypeError, ValueError) as exc:
            raise GrammarError(f"response_format.json_schema: {exc}") from None
        return _checked(kind, source)
    given = d.get(kind)
    if not isinstance(given, str) or not given:
        raise InvalidOptionError(f"response_format.{kind}", given, "a non-empty str")
    _check_size(kind, given)
    if kind == "regex":
        return _checked(kind, str(matcher.grammar_from_regex(given)))
    return _checked(kind, str(matcher.grammar_from_lark(given)))


def _checked(kind: str, source: str) -> str:
    _check_size(kind, source)
    return source


def _schema_of(spec: object) -> Mapping[str, Any]:
    """The JSON Schema of a ``json_schema`` format: its ``schema`` (OpenAI's shape), or the
    mapping itself when it has no ``schema`` key. A ``schema`` that is not an object is an
    error, not a schema that constrains nothing."""
    if isinstance(spec, Mapping) and "schema" in spec:
        schema = spec["schema"]
        if not isinstance(schema, Mapping):
            raise InvalidOptionError(
                "response_format.json_schema.schema", schema, "a JSON Schema object"
            )
        return schema
    if not isinstance(spec, Mapping):
        raise InvalidOptionError(
            "response_format.json_schema", spec, "an object with a 'schema' object"
        )
    return spec


class Grammar:
    """One request's matcher: it sees exactly the tokens generated under its grammar."""

    __slots__ = ("error", "kind", "matcher", "opener", "vocab_size", "wait_for")

    def __init__(self, matcher: Any, kind: str, vocab_size: int) -> None:
        self.matcher = matcher
        self.kind = kind
        self.vocab_size = vocab_size
        self.error: str | None = None
        self.wait_for = -1
        """A token that must be generated before the grammar may apply (-1: none); set
        from the parser's ``grammar_gate_token`` (harmony: the end of the first header)."""
        self.opener = -1
        """The family's start marker (one token), also allowed at the first position when
        the prompt leaves the model outside reasoning with thinking on: the model may
        open its block itself (minimax_m3, glm45); -1: none, or after the first token."""

    def consume(self, token_ids: Sequence[int]) -> int:
        """Feed tokens in order; the index of the first one rejected, or -1 (all taken)."""
        m = self.matcher
        for i, t in enumerate(token_ids):
            if not m.consume_token(t):
                # llguidance appends its parser state after the first line: keep the line.
                detail = (m.get_error() or "").split("\n")[0].strip()
                self.error = detail or f"token {t} is not allowed here"
                return i
        return -1

    @property
    def stopped(self) -> bool:
        """The grammar is complete: nothing but the end of the output may follow."""
        return self.error is None and bool(self.matcher.is_stopped())

    @property
    def accepting(self) -> bool:
        """The output so far is a complete match (more may still be allowed)."""
        return self.error is None and bool(self.matcher.is_accepting())


def compile_grammar(fmt: object, tok: LoadedTokenizer) -> Grammar | None:
    """A fresh matcher for ``response_format`` on ``tok`` (None for no grammar); a format
    that does not compile raises :class:`GrammarError` naming the problem (one nested too
    deeply, or of the wrong shape, raises :class:`InvalidOptionError`). A format compiled
    before (the :data:`CACHE_SIZE` most recent) is copied, not compiled again."""
    if fmt is None:
        return None
    d = _as_mapping(fmt)
    kind = str(d.get("type"))
    if kind == "text":
        return None
    if kind not in FORMAT_TYPES:
        grammar_source(d)  # raises, naming the type
    llg = _llguidance()  # raises when the engine is not installed, cached or not
    lltok = _lltokenizer(tok)
    key = (kind, _format_text(d))
    with _lock:
        compiled = _compiled_of(tok)
        hit = compiled.get(key)
        if hit is not None:
            compiled.move_to_end(key)
            return Grammar(hit.deep_copy(), kind, int(lltok.vocab_size))
    source = grammar_source(d)
    if source is None:
        return None
    limits = llg.LLParserLimits(**LIMITS)
    problem = llg.LLMatcher.validate_grammar(source, lltok, limits=limits)
    if problem:
        raise GrammarError(f"response_format ({kind}) does not compile: {_first(problem)}")
    matcher = llg.LLMatcher(lltok, source, log_level=0, limits=limits)
    if matcher.is_error():
        raise GrammarError(
            f"response_format ({kind}) does not compile: {_first(matcher.get_error())}"
        )
    with _lock:
        compiled[key] = matcher
        while len(compiled) > CACHE_SIZE:
            compiled.popitem(last=False)
    return Grammar(matcher.deep_copy(), kind, int(lltok.vocab_size))


def prepare_grammar(fmt: object, tok: LoadedTokenizer) -> None:
    """Compile ``fmt`` for ``tok`` into the cache (off the event loop, on a worker thread),
    so the batch's ``add()`` only copies it; raises as :func:`compile_grammar` does."""
    compile_grammar(fmt, tok)


def prepare_tokenizer(tok: LoadedTokenizer) -> bool:
    """Build ``tok``'s llguidance tokenizer now, if llguidance is installed (False if not).

    A server calls this when it loads a model, before it serves: the build holds the GIL
    for seconds, and built on the first request with a ``response_format`` it stalls every
    other stream that long, whichever thread runs it."""
    try:
        _lltokenizer(tok)
    except GrammarUnavailableError:
        return False
    return True


def _format_text(d: Mapping[str, Any]) -> str:
    """The format as canonical JSON: the cache key (its nesting was checked already)."""
    try:
        return json.dumps(d, sort_keys=True, separators=(",", ":"), default=repr)
    except (TypeError, ValueError):
        return repr(sorted(d.items(), key=lambda kv: kv[0]))


def _first(problem: str) -> str:
    """llguidance's message, cut short (it may quote a long stretch of the grammar)."""
    text = problem.strip()
    return text if len(text) <= 1000 else text[:1000] + " ..."


def consume_each(items: Sequence[tuple[Grammar, int]]) -> list[bool]:
    """One token for each grammar, in parallel when llguidance can (``consume_token_par``);
    False where it was rejected (the grammar's ``error`` says why)."""
    global _executor
    if _executor is None:
        _executor = _llguidance().LLExecutor()
    par = getattr(_executor, "consume_token_par", None)
    if par is not None:
        ok: list[bool] = par([(g.matcher, t) for g, t in items])
    else:
        ok = [bool(g.matcher.consume_token(t)) for g, t in items]
    for (g, t), good in zip(items, ok, strict=True):
        if not good:
            detail = (g.matcher.get_error() or "").split("\n")[0].strip()
            g.error = detail or f"token {t} is not allowed here"
    return ok


def bitmask_width(vocab_size: int) -> int:
    """32-bit words per row of a token bitmask over ``vocab_size`` ids."""
    return (int(vocab_size) + 31) // 32


_executor: Any = None


def fill_bitmasks(rows: Sequence[tuple[Grammar, int]], out: npt.NDArray[np.int32]) -> None:
    """Write the next-token bitmask of each ``(grammar, row)`` into ``out[row]`` in one
    parallel llguidance call per vocabulary width. Columns past a grammar's own vocabulary
    (an engine's padded logits) are 0: those ids are never allowed."""
    global _executor
    if not rows:
        return
    llg = _llguidance()
    fill_next_token_bitmask_par = _llguidance("llguidance.numpy").fill_next_token_bitmask_par
    if _executor is None:
        _executor = llg.LLExecutor()
    width = out.shape[1]
    by_width: dict[int, list[tuple[Any, int]]] = {}
    for g, row in rows:
        by_width.setdefault(bitmask_width(g.vocab_size), []).append((g.matcher, row))
    for w, items in by_width.items():
        if w == width:
            fill_next_token_bitmask_par(_executor, items, out)
            continue
        if w > width:
            raise GrammarError(
                f"the token bitmask has {width} words per row, a grammar's vocabulary needs {w}"
            )
        scratch = np.empty((len(items), w), np.int32)
        fill_next_token_bitmask_par(_executor, [(m, i) for i, (m, _) in enumerate(items)], scratch)
        dest = np.array([r for _, r in items], np.int64)
        out[dest, :w] = scratch
        out[dest, w:] = 0
