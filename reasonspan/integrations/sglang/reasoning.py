"""SGLang's reasoning detector for a reasonspan family, working on re-encoded token ids.

SGLang's ``ReasoningParser`` builds one detector per request (per choice when streaming)
from its ``DetectorMap``, with the keyword arguments its detectors take: the start state
(``force_reasoning``: the template opened ``<think>``, or the request asked for reasoning),
``stream_reasoning``, the tokenizer (passed because ``__init__`` names it), and others this
detector accepts and documents below. It hands text only: the whole output
(``detect_and_parse``) or one text delta at a time (``parse_streaming_increment``, then
``finish`` at the end of the stream).

Here the text becomes token ids again (:mod:`.reencode`: the whole text, or a window at the
end of the stream) and goes through one reasonspan ``TextSplitter`` per request, so the
split is the one ``parse()`` gives on those ids however SGLang cuts the text. Special
tokens are kept (``skip_special_tokens=False``): the text is SGLang's decode, which already
left out what the request skips, so what is left is the user's; and the content keeps the
family's tool-call markup whole, for SGLang's function-call parser (reasonspan's, of the
same family, reads it again from the text).

``think_start_token`` / ``think_end_token`` are the family's first markers as text: SGLang
encodes the end marker to gate a grammar after reasoning (``get_think_end_token_ids``).
"""

from __future__ import annotations

import importlib
from typing import Any, ClassVar

from reasonspan.factory import create_parser_sync
from reasonspan.integrations.common import class_stem, encode, loaded_tokenizer
from reasonspan.integrations.sglang.reencode import Reencoder
from reasonspan.runtime import ReasoningParser, TextSplitter
from reasonspan.tokenizer.loader import LoadedTokenizer

MODULE = "sglang.srt.parser.reasoning_parser"


def sglang_module() -> Any:
    """SGLang's reasoning-parser module (imported when first used: SGLang is optional)."""
    return importlib.import_module(MODULE)


def need_tokenizer(tokenizer: Any, family: str) -> LoadedTokenizer:
    """reasonspan's view of the tokenizer SGLang passed; SGLang's serving paths pass one,
    and without it text cannot become token ids."""
    if tokenizer is None:
        raise ValueError(
            f"reasonspan_{family} needs the tokenizer: SGLang passes it to detectors whose "
            "__init__ takes `tokenizer` (ReasoningParser(..., tokenizer=...))"
        )
    return loaded_tokenizer(tokenizer, "SGLang")


class ReasoningDetector:
    """The methods of SGLang's ``BaseReasoningFormatDetector`` for :attr:`family`, mixed in
    ahead of SGLang's class by :func:`reasoning_class` (``sglang_base``)."""

    family: ClassVar[str]
    sglang_base: ClassVar[Any]

    # Set by SGLang's base __init__ (declared for the type checker).
    think_start_token: str
    think_end_token: str
    stream_reasoning: bool

    def __init__(
        self,
        stream_reasoning: bool = True,
        force_reasoning: bool | None = None,
        continue_final_message: bool = False,
        previous_content: str = "",
        force_nonempty_content: bool = False,
        tokenizer: Any = None,
    ) -> None:
        """``force_reasoning`` (SGLang's start state) is reasonspan's ``default_reasoning``;
        not given, the family's documented default. A continued assistant message
        (``continue_final_message``) is the prompt the state is read from, as reasonspan
        reads a prompt. ``force_nonempty_content`` is accepted and not applied (reasonspan
        returns a reasoning-only output as reasoning, or as content where the family says
        so)."""
        self._tok = need_tokenizer(tokenizer, self.family)
        self._rs = create_parser_sync(self.family, self._tok, default_reasoning=force_reasoning)
        start, end = self._rs.spec.start, self._rs.spec.end
        type(self).sglang_base.__init__(
            self,
            start[0] if start else "",
            end[0] if end else "",
            force_reasoning=bool(force_reasoning),
            stream_reasoning=stream_reasoning,
        )
        # What SGLang assumes when neither the template nor the request says (its serving
        # layer reads this attribute): the family's documented default, not "always".
        self.reasoning_default = "always" if self._rs.default_reasoning else None
        self._prompt = (
            encode(self._tok, previous_content)
            if continue_final_message and previous_content
            else None
        )
        self._text = Reencoder(self._tok)
        self._split: TextSplitter | None = None
        self._held = ""
        """Reasoning not yet returned (``stream_reasoning=False``: SGLang's detectors
        return the reasoning whole, once it ended)."""
        self._finished = False

    @property
    def parser(self) -> ReasoningParser:
        """The request's reasonspan parser."""
        return self._rs

    @property
    def reencoder(self) -> Reencoder:
        """The streamed text's token ids (its counters say what the re-encoding cost)."""
        return self._text

    def detect_and_parse(self, text: str) -> Any:
        """The reasoning and content of a whole output: its text re-encoded, then split as
        ``parse()`` splits the ids."""
        res = self._rs.parse(encode(self._tok, text), self._prompt, skip_special_tokens=False)
        return self._result(res.content or "", res.reasoning or "")

    def parse_streaming_increment(self, new_text: str) -> Any:
        """The reasoning and content text that this much more output settles."""
        split = self._splitter()
        reasoning, content = split.feed(self._text.feed(new_text))
        return self._stream_result(reasoning, content, split.is_reasoning)

    def finish(self) -> Any:
        """At the end of the stream: the held text and the tokens held at a marker."""
        if self._finished:
            return self._result("", "")
        self._finished = True
        split = self._splitter()
        reasoning, content = split.feed(self._text.finish())
        more_reasoning, more_content = split.finish()
        return self._stream_result(reasoning + more_reasoning, content + more_content, False)

    def _splitter(self) -> TextSplitter:
        if self._split is None:
            self._split = TextSplitter(self._rs, self._prompt, skip_special_tokens=False)
        return self._split

    def _stream_result(self, reasoning: str, content: str, still_reasoning: bool) -> Any:
        if not self.stream_reasoning:
            self._held += reasoning
            reasoning = ""
            if not still_reasoning:
                reasoning, self._held = self._held, ""
        return self._result(content, reasoning)

    @staticmethod
    def _result(normal_text: str, reasoning_text: str) -> Any:
        return sglang_module().StreamingParseResult(
            normal_text=normal_text, reasoning_text=reasoning_text
        )


def reasoning_class(family: str, base: Any) -> type[ReasoningDetector]:
    """A subclass of SGLang's ``BaseReasoningFormatDetector`` (``base``) for one family."""
    name = f"Reasonspan{class_stem(family)}ReasoningDetector"
    cls: type[ReasoningDetector] = type(
        name,
        (ReasoningDetector, base),
        {"family": family, "sglang_base": base, "__module__": __name__, "__qualname__": name},
    )
    globals()[name] = cls  # importable by name (pickling a detector finds its class)
    return cls
