"""Text on top of the parser: feed token deltas, get reasoning and content text deltas."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from reasonspan.runtime.parser.contract import ReasoningParser, TokenIds
from reasonspan.runtime.text.citations import Citation, as_content
from reasonspan.runtime.text.results import ParsedReasoningDelta
from reasonspan.runtime.toolcalls import ToolCall, ToolCallExtractor, Tools
from reasonspan.runtime.wire.call_messages import ToolCallStream


class TextSplitter:
    """A parser plus incremental detokenization: feed token deltas, get text deltas.

    ``parse(...).reasoning``/``.content`` are exactly the concatenation of what ``feed`` and
    ``finish`` return, however the output is split into deltas.
    """

    def __init__(
        self,
        parser: ReasoningParser,
        prompt_token_ids: TokenIds | None = None,
        *,
        skip_special_tokens: bool = True,
        tools: Tools | Sequence[Mapping[str, Any]] | None = None,
        tool_choice: object = None,
    ) -> None:
        """Without ``prompt_token_ids`` the start state is ``parser.default_reasoning`` (the
        model's chat template, else the family's documented default). Special tokens that
        are not the family's markers are left out of the text unless
        ``skip_special_tokens`` is False, as a server decoding with its default does.
        With ``tools`` the family's tool calls are taken out of the answer, as
        ``parse(tools=...)`` does; :meth:`take_tool_calls` hands them over."""
        self.parser = parser
        parser.reset()
        self.is_reasoning = (
            parser.is_prompt_in_reasoning(prompt_token_ids)
            if prompt_token_ids is not None
            else parser.default_reasoning
        )
        self._tools: ToolCallExtractor | None = (
            parser.tool_call_extractor(tools)
            if tools is not None and tool_choice != "none"
            else None
        )
        reader = parser.tool_call_reader() if self._tools is None else None
        self._messages: ToolCallStream | None = (
            ToolCallStream(reader, parser.tokenizer) if reader is not None else None
        )
        """Harmony's calls: the runtime's own reader of tool-call messages, so a call is
        complete here exactly when the runtime sends it and ``parse()`` returns it."""
        self._calls: list[ToolCall] = []
        self._decoder = parser.decoder(
            skip_special_tokens=skip_special_tokens,
            call_gaps=self._tools is not None and self._tools.trims_gaps,
        )
        self._hold = parser.may_return_reasoning_as_content
        """The family may present a reasoning-only output as its content (nemotron_v3's
        switches): reasoning text is held until content shows up (then no swap can happen)
        or the request ends, so the text returned is never reasoning that ``parse()``
        calls content."""
        self._held: list[str] = []
        self._plain = self._tools is None and self._messages is None and not self._hold
        """Neither tool calls nor held reasoning: a delta's labels go straight to text."""
        self._stream = parser.stream
        self._feed_text = self._decoder.feed
        self._swapped: list[Citation] = []
        """Citations held with the reasoning and moved to the content by the swap."""
        self.reasoning_as_content = False
        """Set by :meth:`finish` when the reasoning was returned as the content because no
        content came, as ``parse()`` returns it; nothing was returned as reasoning."""
        self._decided: ParsedReasoningDelta | None = None
        """What the parser decided in the last :meth:`feed` (for :meth:`fed_labels`)."""
        self._final: bytes | None = None
        """After :meth:`finish`: the labels the last feed and the finish decided."""

    def feed(self, delta_token_ids: TokenIds) -> tuple[str, str]:
        """Return ``(reasoning_text, content_text)`` released by these tokens."""
        d = self._decided = self._stream(delta_token_ids, self.is_reasoning)
        self.is_reasoning = d.is_still_reasoning
        if self._plain:
            return self._feed_text(d.token_ids, d.labels, d.spill)
        if self._tools is not None:
            ids, labels, spill, calls = self._tools.feed(d.token_ids, d.labels, d.spill)
            self._calls += calls
            r, c = self._decoder.feed(ids, labels, spill)
        else:
            if self._messages is not None:
                self._calls += self._messages.calls(d.token_ids, d.labels)
            r, c = self._decoder.feed(d.token_ids, d.labels, d.spill)
        if self._hold:
            return self._held_text(r, c)
        return r, c

    def finish(self, finish_reason: str | None = None) -> tuple[str, str]:
        """Release held tokens and held text at the end of the request; ``finish_reason``
        as :meth:`ReasoningParser.parse` takes it (a call region left open at ``"stop"``
        is read as it is)."""
        d = self.parser.finish(self.is_reasoning)
        self.is_reasoning = d.is_still_reasoning
        self.reasoning_as_content = d.reasoning_as_content
        if self._final is None:
            self._final = (self._decided.labels if self._decided is not None else b"") + d.labels
        ids, labels, spill = d.token_ids, bytearray(d.labels), list(d.spill)
        if self._tools is not None:
            ids, labels, spill, calls = self._tools.feed(ids, labels, spill)
            tail = self._tools.finish(finish_reason)
            spill += [(i + len(ids), b, ch, a) for i, b, ch, a in tail[2]]
            ids = ids + tail[0]
            labels += tail[1]
            self._calls += calls + tail[3]
        elif self._messages is not None:
            self._calls += self._messages.calls(ids, labels, final=True)
        r1, c1 = self._decoder.feed(ids, labels, spill)
        r2, c2 = self._decoder.finish()
        r, c = r1 + r2, c1 + c2
        if self._hold:
            self._hold = False
            self._plain = self._tools is None and self._messages is None
            r = "".join(self._held) + r
            self._held.clear()
            if d.reasoning_as_content:
                self._swapped = as_content(self._decoder.take_citations(), len(r))
                return "", r + c
        return r, c

    def fed_labels(self, n: int) -> bytes:
        """The labels of the last ``n`` token ids fed, as ``parse()`` of everything fed so
        far labels them (before its ``reasoning_as_content`` swap, which only the end of
        the output decides); ``n`` at most the length of the last delta fed.

        Tokens the parser decided are labelled for good. Tokens it holds at a possible
        marker are labelled as :meth:`finish` would label them if the output ended here
        (the parser's state is put back: nothing changes), which the next tokens may
        overturn. For a caller that must say now what a delta's tokens are (vLLM asks a
        reasoning parser for the content ids of the delta where reasoning ended) without
        parsing the output again. After :meth:`finish`, the labels of the last feed's
        tokens, final."""
        if n < 0:
            raise ValueError(f"n must be at least 0, not {n}")
        labels = self._final
        if labels is None:
            d = self._decided
            labels = d.labels if d is not None else b""
            if d is not None and d.held_token_count:
                parser = self.parser
                snap = parser.snapshot()
                try:
                    labels += parser.finish(self.is_reasoning).labels
                finally:
                    parser.restore(snap)
        if n > len(labels):
            raise ValueError(
                f"the labels of the last {n} tokens are not known here: at most the last "
                f"delta's ({len(labels)} tokens decided or held since the feed before it)"
            )
        return labels[len(labels) - n :]

    def take_tool_calls(self) -> list[ToolCall]:
        """The tool calls completed since the last call, in order (with ``tools``; and
        harmony's ``to=functions.X`` messages always)."""
        out = self._calls
        self._calls = []
        return out

    def take_citations(self) -> list[Citation]:
        """The inline citations whose closing tag was decoded since the last call, in order
        (a family with ``ReasoningSpec.citations``, Cohere's: ``<co>…</co: 0:[1]>`` is taken
        out of the text). A citation's ``start``/``end`` index the concatenation of its
        channel's text returned so far, so a client may take them after each ``feed`` or
        once after ``finish``; together they are ``parse(...).citations``. While reasoning
        is held for a possible swap (``reasoning_as_content``) none are handed out."""
        if self._hold:
            return []
        out = self._swapped + self._decoder.take_citations()
        self._swapped = []
        return out

    def take_tool_call_text(self) -> str:
        """Text of tool-call tokens (TOOL_CALL: call regions, harmony's tool-call
        messages) decided since the last call, markup included: never part of the
        reasoning or content text."""
        return self._decoder.take_tool_calls()

    def _held_text(self, r: str, c: str) -> tuple[str, str]:
        if not c:
            if r:
                self._held.append(r)
            return "", ""
        # Content came: no swap is possible any more; release what was held.
        self._hold = False
        self._plain = self._tools is None and self._messages is None
        r = "".join(self._held) + r
        self._held.clear()
        return r, c
