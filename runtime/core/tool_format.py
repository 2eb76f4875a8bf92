"""A family's tool-call format, declared once beside its reasoning spec.

A format says where a call region begins and ends (``open`` / ``close`` markers, or a
leading character of the answer for formats with no marker at all, such as Llama 3's bare
JSON), and which *kinds* of body it holds (a kind is written once, in its own module, and
shared by every family that uses it: Hermes JSON, XML functions, GLM key/value pairs, …).
Regions are found on token ids (a marker that is one token here) or on the bytes of a run of
tokens with hold-back (a marker that is several), never by detokenizing the content; only
the tokens of a region are decoded, for its kind to read.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import msgspec

from reasonspan.runtime.core.tool_types import ToolCall, Tools
from reasonspan.tokenizer.loader import LoadedTokenizer

BodyParser = Callable[[str, Tools], "list[ToolCall] | None"]
"""``(region text without its markers, offered tools) -> calls``, or None when the text is
not a well-formed body of this kind (the region then goes back to the content verbatim)."""

BodyComplete = Callable[[str], "bool | None"]
"""``(region text so far, without its opener) -> complete?``: True when a close marker here
ends a call of this kind, False when the body is this kind's but unfinished (a close marker
now is text of an argument: ``<parameter=text>use </tool_call>``), None when the text is not
this kind's body."""

_T = TypeVar("_T")

_KINDS: dict[str, BodyParser] = {}
_COMPLETE: dict[str, BodyComplete] = {}

KindMarkers = Callable[["ToolFormat"], Sequence[str]]
"""``format -> markers``: the markers of a kind whose spelling depends on the family's
format (Hy3's tags carry the checkpoint's suffix, read off the format's open marker)."""

_MARKERS: dict[str, Sequence[str] | KindMarkers] = {}


def body_kind(
    name: str,
    complete: BodyComplete | None = None,
    markers: Sequence[str] | KindMarkers = (),
) -> Callable[[BodyParser], BodyParser]:
    """Register a body parser under a kind name (each kind module does this on import),
    with an optional ``complete`` check (:data:`BodyComplete`) for kinds whose arguments
    are raw text that may hold the close marker, and the literal ``markers`` its reader
    matches inside a body (Mistral's ``[ARGS]``, Kimi K2's ``<|tool_call_begin|>``), or a
    :data:`KindMarkers` that spells them for a format: a model may write them where no
    call is made of them (in its reasoning), and their text then shows, as an engine that
    offered tools shows it (:meth:`ToolFormat.markers`)."""

    def deco(fn: BodyParser) -> BodyParser:
        _KINDS[name] = fn
        _MARKERS[name] = markers
        if complete is not None:
            _COMPLETE[name] = complete
        return fn

    return deco


def kind_markers(name: str, fmt: ToolFormat) -> tuple[str, ...]:
    """The markers kind ``name`` declared (:func:`body_kind`), spelled for ``fmt``; none
    for an unknown kind."""
    got = _MARKERS.get(name, ())
    return tuple(got(fmt) if callable(got) else got)


def kind_parser(name: str) -> BodyParser:
    try:
        return _KINDS[name]
    except KeyError:
        raise KeyError(
            f"unknown tool-call kind {name!r}; known kinds: {', '.join(sorted(_KINDS))}"
        ) from None


class ToolFormat(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """Where a family's calls are and how their bodies read."""

    kinds: tuple[str, ...]
    """Body kinds tried in order; the first that reads the region wins (Qwen3's
    ``<tool_call>`` holds Hermes JSON or, from Qwen3-Coder and Qwen3.5 on, XML functions)."""
    open: tuple[str, ...] = ()
    """Markers that open a call region (consumed: never content text)."""
    close: tuple[str, ...] = ()
    """Markers that close it. Empty: a region runs to the end of the output (Mistral's
    ``[TOOL_CALLS]``), and is read when the request finishes."""
    close_optional: bool = False
    """A region may end without its close marker: one the output ends before its close is
    read at the finish, as a region of a format without close markers is (Llama 4's
    ``<|python_end|>`` ends a call list when written, text after it is content; a bare
    ``[f(a=1)]`` answer has none). False: such a region is a call cut by ``max_tokens``."""
    leading: str = ""
    """Characters that open a region running to the end of the output when they are the
    first non-space text of the answer (Llama 3's bare JSON ``{``, Llama 4's ``[``)."""
    trim_gaps: bool = True
    """Whitespace between content and a call is layout the template wrote (Qwen3, GLM,
    DeepSeek): trimmed from the content. False keeps it (Kimi K2's reference parser)."""
    json_strings: bool = False
    """A body that begins as JSON (``{`` or ``[``): a close marker inside one of its
    strings is text of the argument, not the end of the call
    (``{"text": "use </tool_call>"}``)."""
    string_quote: str = ""
    """A marker that both opens and closes a string argument (Gemma 4's ``<|"|>``): a
    close marker between an opening and a closing one is text of the argument, not the
    end of the call (``text:<|"|>use <tool_call|><|"|>``)."""
    json_after: tuple[str, ...] = ()
    """Markers after which a call's arguments are one JSON value, inside a body that is not
    JSON itself (Kimi K2's ``<|tool_call_argument_begin|>``, DeepSeek's ``<｜tool▁sep｜>``;
    the value is the first ``{`` or ``[`` after the marker): a close marker inside a string
    of such a value is text of the argument, not the end of the region."""
    call_close: tuple[str, ...] = ()
    """Markers that end one call inside a region that holds several (DSML's
    ``</｜DSML｜invoke>``, Kimi K2's ``<|tool_call_end|>``). When the output ends inside such
    a region (``max_tokens`` cut it), the calls completed before the cut are kept: the
    region up to the last of these markers that reads as calls is read, and the cut call is
    dropped. Empty: a cut region gives no call at all."""
    keep_open_text: bool = False
    """The open marker is part of the body the kind reads (Mistral's repeated
    ``[TOOL_CALLS]``): region text includes it."""
    open_in_body: tuple[str, ...] = ()
    """Further open markers that are the first text of the body itself, kept in the text
    the kind reads (Qwen3-Coder sometimes writes ``<function=…>…</function></tool_call>``
    without the ``<tool_call>``). Such a region still closes at ``close``; one the output
    ends before its close is read at the finish like a to-end region (calls, or verbatim
    content: a ``<function=`` in prose is never lost)."""
    source: str = ""
    """Where the format's facts come from (the family's docstring repeats it)."""

    def markers(self) -> tuple[str, ...]:
        """Every marker of the format: the ones it names (open, close and separator
        markers) and the ones its kinds read inside a body (:func:`body_kind`), each once.
        Each shows as its text wherever no call is made of it, special token or not (one of
        several tokens keeps its special pieces): ``ParserOutputs.skipped_token_ids``."""
        quote = (self.string_quote,) if self.string_quote else ()
        own = (
            *self.open, *self.close, *self.call_close, *self.json_after, *self.open_in_body,
            *quote,
        )  # fmt: skip
        kinds = (m for kind in self.kinds for m in kind_markers(kind, self))
        return tuple(dict.fromkeys((*own, *kinds)))

    def could_end(self, body: str) -> bool:
        """May a close marker end the region whose body so far is ``body``? No when a kind
        with a ``complete`` check reads it as its own, unfinished body: the marker is then
        argument text. The extractor remembers the first such marker; when the output ends
        right after it, it closes there (GLM's ``<arg_value>celsius</tool_call>``, a call
        missing its last argument close; a body that does not read is content).
        Without the finish reason a ``length`` cut right there reads the same way."""
        for kind in self.kinds:
            check = _COMPLETE.get(kind)
            if check is not None and _guarded(check, body) is False:
                return False
        return True

    @property
    def checks_completion(self) -> bool:
        """Some kind of this format has a ``complete`` check (else no body is decoded
        before its close)."""
        return any(kind in _COMPLETE for kind in self.kinds)

    def parse(self, body: str, tools: Tools) -> list[ToolCall] | None:
        """The calls of a closed region, from the first kind that reads it; None when no
        kind does (the region goes back to the content verbatim).

        A kind that raises reads nothing: whatever a model writes in a call (arguments
        nested past :data:`~reasonspan.runtime.core.nesting.MAX_NESTING`, an integer past
        Python's int-to-string limit, a value JSON cannot hold, a bug in one kind's
        reader) makes that call invalid, never an exception in the step, the request's
        neighbours or the server's engine loop."""
        for kind in self.kinds:
            got = _guarded(kind_parser(kind), body, tools)
            if got is not None:
                return got
        return None


def _guarded(fn: Callable[..., _T], *args: Any) -> _T | None:
    """``fn(*args)``, or None when it raises: the one place a body kind's failure turns
    into "not a call of this kind" (:meth:`ToolFormat.parse`, :meth:`ToolFormat.could_end`).
    ``RecursionError`` and ``MemoryError`` are ``Exception`` s too; only
    ``KeyboardInterrupt`` and the like pass."""
    try:
        return fn(*args)
    except Exception:
        return None


@dataclass(frozen=True)
class CompiledToolFormat:
    """A format resolved against one tokenizer (shared by every request on it)."""

    fmt: ToolFormat
    open_ids: frozenset[int]
    close_ids: frozenset[int]
    open_bytes: tuple[bytes, ...]
    body_open_bytes: tuple[bytes, ...]
    """The ``open_in_body`` markers (all matched on bytes: they are also in ``open_bytes``)."""
    close_bytes: tuple[bytes, ...]
    leading: bytes
    quote: bytes
    """:attr:`ToolFormat.string_quote` as bytes (empty: none)."""
    token_bytes: list[bytes]
    tokenizer: LoadedTokenizer
    max_marker: int
    """Longest byte marker (hold-back never keeps more than this many bytes)."""


def compile_format(fmt: ToolFormat, tok: LoadedTokenizer) -> CompiledToolFormat:
    """Each marker is a token id where it is one token of this vocabulary, else bytes."""
    key = ("tool_format", fmt)
    got = tok.cache.get(key)
    if isinstance(got, CompiledToolFormat):
        return got

    def split(markers: tuple[str, ...]) -> tuple[frozenset[int], tuple[bytes, ...]]:
        ids: set[int] = set()
        texts: list[bytes] = []
        for m in markers:
            tid = tok.single_token_id(m)
            if tid is not None:
                ids.add(tid)
            else:
                texts.append(m.encode("utf-8"))
        return frozenset(ids), tuple(texts)

    open_ids, open_bytes = split(fmt.open)
    close_ids, close_bytes = split(fmt.close)
    body_open_bytes = tuple(m.encode("utf-8") for m in fmt.open_in_body)
    open_bytes += body_open_bytes
    compiled = CompiledToolFormat(
        fmt=fmt,
        open_ids=open_ids,
        close_ids=close_ids,
        open_bytes=open_bytes,
        body_open_bytes=body_open_bytes,
        close_bytes=close_bytes,
        leading=fmt.leading.encode("utf-8"),
        quote=fmt.string_quote.encode("utf-8"),
        token_bytes=tok.token_bytes,
        tokenizer=tok,
        max_marker=max((len(b) for b in (*open_bytes, *close_bytes)), default=0),
    )
    tok.cache[key] = compiled
    return compiled
