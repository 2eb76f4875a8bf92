"""Detokenization after the split: one incremental decoder per channel.

This is the only place reasonspan detokenizes, and it does so after the split, so a
multi-byte character split across tokens comes out whole in the channel it belongs to.
It knows token ids, labels and text formatters; it does not know parsers.
"""

from __future__ import annotations

import codecs
from collections.abc import Callable, Sequence
from typing import Any

from tokenizers import Tokenizer
from tokenizers.decoders import DecodeStream

from reasonspan.runtime.core.labels import CONTENT, DELIMITER, REASONING, TOOL, TOOL_CALL
from reasonspan.runtime.text.citations import Citation, CitationFormatter
from reasonspan.runtime.text.formatters import (
    CallGapFormatter,
    IdentityFormatter,
    TextFormatter,
    TextFormatterFactory,
    TrimFormatter,
)
from reasonspan.tokenizer.loader import LoadedTokenizer

_UTF8 = codecs.getincrementaldecoder("utf-8")


_TEXTS_KEY = "reasonspan.decoding.texts"

PlainChannels = tuple[tuple[frozenset[int], str] | None, ...]
"""What :meth:`LabelledDecoder.plain_channels` answers, per channel."""


def whole_texts(table: list[bytes], skip: frozenset[int]) -> list[str | None]:
    """``texts[id]``: the text of token ``id`` when its bytes are a complete UTF-8 text on
    their own (nearly every token of a byte-level vocabulary), ``""`` for a skipped id, else
    None (its bytes need the incremental decoder: part of a character, invalid, empty)."""
    texts: list[str | None] = []
    for b in table:
        try:
            texts.append(b.decode("utf-8") or None)
        except UnicodeDecodeError:
            texts.append(None)
    for tid in skip:
        if 0 <= tid < len(texts):
            texts[tid] = ""
    return texts


def shared_texts(tok: LoadedTokenizer, skip: frozenset[int]) -> list[str | None]:
    """:func:`whole_texts` for this tokenizer and skip set, built once and kept on the
    tokenizer (every decoder of every request reads the same table)."""
    key = (_TEXTS_KEY, skip)
    got = tok.cache.get(key)
    if got is None:
        if skip:
            # A copy of the skip-nothing table: the texts themselves are shared.
            got = list(shared_texts(tok, frozenset()))
            for tid in skip:
                if 0 <= tid < len(got):
                    got[tid] = ""
        else:
            got = whole_texts(tok.token_bytes, skip)
        tok.cache[key] = got
    return got  # type: ignore[return-value]


class ByteDecoder:
    """Incremental detokenization from the per-token byte table, for tokenizers whose
    decoder is plain ByteLevel (Qwen, DeepSeek, GLM, MiniMax, Llama 3 ...): the same text
    as ``DecodeStream`` at a fraction of the cost. A multi-byte character split across
    tokens is held until it is complete; incomplete bytes at the very end are dropped, as
    ``DecodeStream`` drops them.

    While no bytes of an incomplete character are held, a token whose bytes decode on their
    own (``texts``, :func:`whole_texts`) gives its text from the table, without the codec;
    only the other tokens go through the incremental UTF-8 decoder."""

    __slots__ = ("_dec", "_pending", "_skip", "_table", "_texts")

    def __init__(
        self,
        table: list[bytes],
        skip: frozenset[int],
        texts: list[str | None],
    ) -> None:
        """``texts`` is :func:`whole_texts` of ``table`` and ``skip``: the tokenizer's
        shared one (:func:`shared_texts`), never one per decoder (it decodes the whole
        vocabulary)."""
        self._table = table
        self._skip = skip
        self._texts = texts
        self._dec = _UTF8("replace")
        self._pending = False
        """The codec holds bytes of an incomplete character: every token goes through it."""

    def step(self, _tokenizer: object, token_id: int) -> str | None:
        if not self._pending:
            s = self._texts[token_id]
            if s is not None:
                return s or None
        if token_id in self._skip:
            return None
        return self._decode(token_id)

    def step_kept(self, _tokenizer: object, token_id: int) -> str | None:
        """A token the family keeps in the text (a tool marker), special or not."""
        return self._decode(token_id)

    def _decode(self, token_id: int) -> str | None:
        dec = self._dec
        out = dec.decode(self._table[token_id])
        self._pending = bool(dec.getstate()[0])
        return out or None

    @property
    def skip(self) -> frozenset[int]:
        return self._skip

    def idle(self) -> bool:
        """No bytes of an incomplete character held: a whole token's text comes out as
        its bytes decode on their own."""
        return not self._pending


class SkippingDecodeStream:
    """``DecodeStream`` that skips a chosen set of ids (not all special tokens): servers
    skip special tokens but keep the ones a family leaves in the content (tool markers)."""

    __slots__ = ("_dec", "_skip")

    def __init__(self, skip: frozenset[int]) -> None:
        self._dec = DecodeStream(skip_special_tokens=False)
        self._skip = skip

    def step(self, tokenizer: Tokenizer, token_id: int) -> str | None:
        if token_id in self._skip:
            return None
        out: str | None = self._dec.step(tokenizer, token_id)
        return out

    def step_kept(self, tokenizer: Tokenizer, token_id: int) -> str | None:
        """A token the family keeps in the text (a tool marker), special or not."""
        out: str | None = self._dec.step(tokenizer, token_id)
        return out


def _decoder(
    tok: LoadedTokenizer, skip_special_tokens: bool, skip_ids: frozenset[int] | None = None
) -> ByteDecoder | DecodeStream | SkippingDecodeStream:
    if skip_ids is not None:
        if tok.byte_level:
            return ByteDecoder(tok.token_bytes, skip_ids, shared_texts(tok, skip_ids))
        return SkippingDecodeStream(skip_ids)
    if tok.byte_level:
        skip = tok.special_ids if skip_special_tokens else frozenset()
        return ByteDecoder(tok.token_bytes, skip, shared_texts(tok, skip))
    return DecodeStream(skip_special_tokens=skip_special_tokens)


class LabelledDecoder:
    """Turns (token id, label) pairs into reasoning text and content text, incrementally.

    It takes the tokenizer and the family's text formatters rather than a parser, so the
    parser can build one for ``parse()`` without this module knowing parsers
    (:meth:`ReasoningParser.decoder` is the usual way to get one).
    """

    __slots__ = (
        "_cdec",
        "_cfmt",
        "_cites",
        "_ckept",
        "_gaps",
        "_rdec",
        "_rfmt",
        "_skip",
        "_tdec",
        "_tok",
        "_tok_l",
        "_tool",
    )

    def __init__(
        self,
        tokenizer: LoadedTokenizer,
        formatters: tuple[TextFormatterFactory | None, TextFormatterFactory | None] = (None, None),
        *,
        skip_special_tokens: bool = False,
        skip_ids: frozenset[int] | None = None,
        call_gaps: bool = False,
    ) -> None:
        """``skip_ids``, when given, are the ids left out of the text (instead of every
        special token under ``skip_special_tokens``). ``call_gaps``: the whitespace between
        the answer and a tool call (TOOL_CALL tokens) is trimmed from the content, but for
        one separator between answer text on both sides (:class:`CallGapFormatter`)."""
        self._tok = tokenizer.tokenizer
        self._tok_l = tokenizer
        self._skip = skip_special_tokens
        self._tdec: ByteDecoder | DecodeStream | SkippingDecodeStream | None = None
        self._tool: list[str] = []
        if skip_ids is not None and tokenizer.byte_level:
            # The common case (a runtime stream, built at every admission), without
            # _decoder's second look-ups.
            table, texts = tokenizer.token_bytes, shared_texts(tokenizer, skip_ids)
            rdec: ByteDecoder | DecodeStream | SkippingDecodeStream = ByteDecoder(
                table, skip_ids, texts
            )
            cbyte = ByteDecoder(table, skip_ids, texts)
            cdec: ByteDecoder | DecodeStream | SkippingDecodeStream = cbyte
            # TOOL-labelled tokens are markers the family keeps in the content: never
            # skipped.
            ckept: Callable[[Any, int], str | None] = cbyte.step_kept
        else:
            rdec = _decoder(tokenizer, skip_special_tokens, skip_ids)
            cdec = _decoder(tokenizer, skip_special_tokens, skip_ids)
            kept = getattr(cdec, "step_kept", None)
            ckept = kept if kept is not None else cdec.step
        self._rdec = rdec
        self._cdec = cdec
        self._ckept = ckept
        rf, cf = formatters
        rfmt: TextFormatter = rf() if rf else IdentityFormatter()
        cfmt: TextFormatter = cf() if cf else IdentityFormatter()
        # Citation markup (a family with ``ReasoningSpec.citations``): both channels record
        # into one list, in the order their closing tags are decoded.
        self._cites: list[Citation] = []
        if isinstance(rfmt, CitationFormatter):
            rfmt.sink = self._cites
        if isinstance(cfmt, CitationFormatter):
            cfmt.sink = self._cites
        self._rfmt = rfmt
        self._gaps: CallGapFormatter | None = None
        if call_gaps:
            self._gaps = cfmt = CallGapFormatter(cfmt)
        self._cfmt = cfmt

    def feed(
        self,
        token_ids: list[int],
        labels: bytes | bytearray,
        spill: Sequence[tuple[int, bytes, int, int]] = (),
    ) -> tuple[str, str]:
        if len(token_ids) == 1 and not spill:
            # One token per step: the common case, without the loop's lists.
            lab = labels[0]
            if lab == REASONING:
                s = self._rdec.step(self._tok, token_ids[0])
                return (self._rfmt.text(s) if s else ""), ""
            if lab == CONTENT:
                s = self._cdec.step(self._tok, token_ids[0])
                return "", (self._cfmt.text(s) if s else "")
            if lab == TOOL:
                s = self._ckept(self._tok, token_ids[0])
                return "", (self._cfmt.text(s) if s else "")
        if token_ids and not spill and labels.count(TOOL_CALL) == len(labels):
            self._tool_calls(token_ids)  # a call closed: its whole region
            return "", ""
        tok = self._tok
        r: list[str] = []
        c: list[str] = []
        rstep = self._rdec.step
        cstep = self._cdec.step
        rtext = self._rfmt.text
        ctext = self._cfmt.text
        spill_at: dict[int, list[tuple[bytes, int, int]]] = {}
        for idx, data, channel, after in spill:
            spill_at.setdefault(idx, []).append((data, channel, after))
        for i, t in enumerate(token_ids):
            lab = labels[i]
            if spill_at and i in spill_at:
                self._spill(spill_at[i], lab, r, c)
            elif lab == REASONING:
                s = rstep(tok, t)
                if s:
                    r.append(rtext(s))
            elif lab == CONTENT:
                s = cstep(tok, t)
                if s:
                    c.append(ctext(s))
            elif lab == TOOL:
                s = self._ckept(tok, t)
                if s:
                    c.append(ctext(s))
            elif lab == DELIMITER:
                r.append(self._rfmt.marker())
                c.append(self._cfmt.marker())
            elif lab == TOOL_CALL:
                self._tool_calls((t,))
        return "".join(r), "".join(c)

    def _tool_calls(self, token_ids: Sequence[int]) -> None:
        """TOOL_CALL tokens: their own decoder, never skipping (the tool parser reads the
        whole message, structural tokens included), so the call is never content text.
        A call's tokens come in one row when it closes (:meth:`feed` hands such a row
        over whole): a long call is hundreds of thousands of tokens in one step."""
        tdec = self._tdec
        if tdec is None:
            tdec = self._tdec = _decoder(self._tok_l, False)
        tok = self._tok
        step = tdec.step
        tool = self._tool
        start = len(tool)
        for t in token_ids:
            s = step(tok, t)
            if s:
                tool.append(s)
        if self._gaps is not None:
            # Its text, for the whitespace at its edges (CallGapFormatter.call).
            self._gaps.call("".join(tool[start:]))

    def take_tool_calls(self) -> str:
        """Text of TOOL_CALL tokens decoded since the last call (for the tool parser)."""
        out = "".join(self._tool)
        self._tool.clear()
        return out

    def take_citations(self) -> list[Citation]:
        """Citations whose closing tag was decoded since the last call (a family with
        ``ReasoningSpec.citations``; always empty otherwise)."""
        out = self._cites[:]
        self._cites.clear()
        return out

    def _spill(
        self, parts: list[tuple[bytes, int, int]], lab: int, r: list[str], c: list[str]
    ) -> None:
        """A token only partly covered by a marker: the text before the marker, the marker
        itself (a delimiter), then the text after it; a token that ends one marker and
        begins the next has a stage per marker (``after`` counts the markers before)."""
        stages = max(after for _, _, after in parts)
        if lab == DELIMITER:
            stages = max(stages, 1)
        for after in range(stages + 1):
            if after and lab == DELIMITER:
                r.append(self._rfmt.marker())
                c.append(self._cfmt.marker())
            for data, channel, is_after in parts:
                if is_after != after or not data:
                    continue
                text = data.decode("utf-8", errors="replace")
                if channel == REASONING:
                    r.append(self._rfmt.text(text))
                else:
                    c.append(self._cfmt.text(text))

    def finish(self) -> tuple[str, str]:
        return self._rfmt.finish(), self._cfmt.finish()

    def plain_channels(self) -> PlainChannels:
        """Per channel (reasoning, content): None when its next text must go through this
        decoder (an incomplete character held, a formatter with something pending, a
        decoder that is not the byte table's); else ``(skipped ids, trailing characters
        the formatter would hold)``: a whole token outside both then yields exactly its
        own text, with no state change, so the output path may take it from a table
        (:class:`~reasonspan.runtime.text.token_text.TokenText`) instead of calling
        :meth:`feed`."""
        return _plain(self._rdec, self._rfmt), _plain(self._cdec, self._cfmt)

    def plain_channel(self, channel: int) -> tuple[frozenset[int], str] | None:
        """:meth:`plain_channels` of one channel (``REASONING`` or ``CONTENT``): after a
        feed of that channel's tokens alone, the other one's is unchanged."""
        if channel == REASONING:
            return _plain(self._rdec, self._rfmt)
        return _plain(self._cdec, self._cfmt)

    def holds_trail(self, channel: int) -> bool:
        """Whether the channel's formatter, while idle, treats a text ending in its trail
        characters (:meth:`plain_channel`'s) as a trim: it emits the text before them and
        holds them, to go in front of the next text (a :class:`TrimFormatter`). A caller
        that takes whole tokens' texts from a table may then hold those characters
        itself, and must hand them back (:meth:`formatter_text`) before anything else
        reaches this decoder."""
        fmt = self._rfmt if channel == REASONING else self._cfmt
        return type(fmt) is TrimFormatter

    def formatter_text(self, channel: int, text: str) -> str:
        """Text already decoded for a channel (whole characters), to its formatter alone."""
        return (self._rfmt if channel == REASONING else self._cfmt).text(text)


def _plain(
    dec: ByteDecoder | DecodeStream | SkippingDecodeStream, fmt: TextFormatter
) -> tuple[frozenset[int], str] | None:
    """One channel of :meth:`LabelledDecoder.plain_channels` (asked at every SSE admit and
    after every exact-path step of such a request: kept to a few look-ups)."""
    if not isinstance(dec, ByteDecoder) or dec._pending:  # not dec.idle(), inlined
        return None
    trail = fmt.idle_trail()
    return None if trail is None else (dec._skip, trail)
