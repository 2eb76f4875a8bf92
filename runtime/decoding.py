"""Detokenization after the split: one incremental decoder per channel.

This is the only place reasonspan detokenizes, and it does so after the split, so a
multi-byte character split across tokens comes out whole in the channel it belongs to.
It knows token ids, labels and text formatters; it does not know parsers.
"""

from __future__ import annotations

import codecs
from collections.abc import Sequence

from tokenizers.decoders import DecodeStream

from ..tokenizer.loader import LoadedTokenizer
from .formatters import IdentityFormatter, TextFormatter, TextFormatterFactory
from .labels import CONTENT, DELIMITER, REASONING, TOOL, TOOL_CALL


class ByteDecoder:
    """Incremental detokenization from the per-token byte table, for tokenizers whose
    decoder is plain ByteLevel (Qwen, DeepSeek, GLM, MiniMax, Llama 3 ...): the same text
    as ``DecodeStream`` at about a third of the cost. A multi-byte character split across
    tokens is held until it is complete; incomplete bytes at the very end are dropped, as
    ``DecodeStream`` drops them."""

    __slots__ = ("_dec", "_skip", "_table")

    def __init__(self, table: list[bytes], skip: frozenset[int]) -> None:
        self._table = table
        self._skip = skip
        self._dec = codecs.getincrementaldecoder("utf-8")("replace")

    def step(self, _tokenizer: object, token_id: int) -> str | None:
        if token_id in self._skip:
            return None
        return self._dec.decode(self._table[token_id]) or None


def _decoder(tok: LoadedTokenizer, skip_special_tokens: bool) -> ByteDecoder | DecodeStream:
    if tok.byte_level:
        return ByteDecoder(tok.token_bytes, tok.special_ids if skip_special_tokens else frozenset())
    return DecodeStream(skip_special_tokens=skip_special_tokens)


class LabelledDecoder:
    """Turns (token id, label) pairs into reasoning text and content text, incrementally.

    It takes the tokenizer and the family's text formatters rather than a parser, so the
    parser can build one for ``parse()`` without this module knowing parsers
    (:meth:`ReasoningParser.decoder` is the usual way to get one).
    """

    __slots__ = ("_cdec", "_cfmt", "_rdec", "_rfmt", "_skip", "_tdec", "_tok", "_tok_l", "_tool")

    def __init__(
        self,
        tokenizer: LoadedTokenizer,
        formatters: tuple[TextFormatterFactory | None, TextFormatterFactory | None] = (None, None),
        *,
        skip_special_tokens: bool = False,
    ) -> None:
        self._tok = tokenizer.tokenizer
        self._tok_l = tokenizer
        self._skip = skip_special_tokens
        self._tdec: ByteDecoder | DecodeStream | None = None
        self._tool: list[str] = []
        self._rdec = _decoder(tokenizer, skip_special_tokens)
        self._cdec = _decoder(tokenizer, skip_special_tokens)
        rf, cf = formatters
        self._rfmt: TextFormatter = rf() if rf else IdentityFormatter()
        self._cfmt: TextFormatter = cf() if cf else IdentityFormatter()

    def feed(
        self,
        token_ids: list[int],
        labels: bytes | bytearray,
        spill: Sequence[tuple[int, bytes, int, int]] = (),
    ) -> tuple[str, str]:
        tok = self._tok
        if len(token_ids) == 1 and not spill:
            # One token per step: the common case, without the loop's lists.
            lab = labels[0]
            if lab == REASONING:
                s = self._rdec.step(tok, token_ids[0])
                return (self._rfmt.text(s) if s else ""), ""
            if lab in (CONTENT, TOOL):
                s = self._cdec.step(tok, token_ids[0])
                return "", (self._cfmt.text(s) if s else "")
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
            elif lab in (CONTENT, TOOL):
                s = cstep(tok, t)
                if s:
                    c.append(ctext(s))
            elif lab == DELIMITER:
                r.append(self._rfmt.marker())
                c.append(self._cfmt.marker())
            elif lab == TOOL_CALL:
                self._tool_call(t)
        return "".join(r), "".join(c)

    def _tool_call(self, t: int) -> None:
        """A TOOL_CALL token: its own decoder, so the call's text is never content text."""
        if self._tdec is None:
            self._tdec = _decoder(self._tok_l, self._skip)
        s = self._tdec.step(self._tok, t)
        if s:
            self._tool.append(s)

    def take_tool_calls(self) -> str:
        """Text of TOOL_CALL tokens decoded since the last call (for the tool parser)."""
        out = "".join(self._tool)
        self._tool.clear()
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
