"""Text on top of the parser: feed token deltas, get reasoning and content text deltas."""

from __future__ import annotations

from .parser import ReasoningParser, TokenIds


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
    ) -> None:
        """Without ``prompt_token_ids`` the start state is ``parser.default_reasoning`` (the
        model's chat template, else the family's documented default). Special tokens that
        are not the family's markers are left out of the text unless
        ``skip_special_tokens`` is False, as a server decoding with its default does."""
        self.parser = parser
        parser.reset()
        self.is_reasoning = (
            parser.is_prompt_in_reasoning(prompt_token_ids)
            if prompt_token_ids is not None
            else parser.default_reasoning
        )
        self._decoder = parser.decoder(skip_special_tokens=skip_special_tokens)
        self._hold = parser.may_return_reasoning_as_content
        """The family may present a reasoning-only output as its content (nemotron_v3's
        switches): reasoning text is held until content shows up (then no swap can happen)
        or the request ends, so the text returned is never reasoning that ``parse()``
        calls content."""
        self._held: list[str] = []
        self.reasoning_as_content = False
        """Set by :meth:`finish` when the reasoning was returned as the content because no
        content came, as ``parse()`` returns it; nothing was returned as reasoning."""

    def feed(self, delta_token_ids: TokenIds) -> tuple[str, str]:
        """Return ``(reasoning_text, content_text)`` released by these tokens."""
        d = self.parser.stream(delta_token_ids, self.is_reasoning)
        self.is_reasoning = d.is_still_reasoning
        r, c = self._decoder.feed(d.token_ids, d.labels, d.spill)
        if self._hold:
            return self._held_text(r, c)
        return r, c

    def finish(self) -> tuple[str, str]:
        """Release held tokens and held text at the end of the request."""
        d = self.parser.finish(self.is_reasoning)
        self.is_reasoning = d.is_still_reasoning
        self.reasoning_as_content = d.reasoning_as_content
        r1, c1 = self._decoder.feed(d.token_ids, d.labels, d.spill)
        r2, c2 = self._decoder.finish()
        r, c = r1 + r2, c1 + c2
        if self._hold:
            self._hold = False
            r = "".join(self._held) + r
            self._held.clear()
            if d.reasoning_as_content:
                return "", r + c
        return r, c

    def take_tool_calls(self) -> str:
        """Text of tool-call messages (TOOL_CALL tokens, harmony's ``to=functions.X``)
        decided since the last call: never part of the reasoning or content text."""
        return self._decoder.take_tool_calls()

    def _held_text(self, r: str, c: str) -> tuple[str, str]:
        if not c:
            if r:
                self._held.append(r)
            return "", ""
        # Content came: no swap is possible any more; release what was held.
        self._hold = False
        r = "".join(self._held) + r
        self._held.clear()
        return r, c
