"""SGLang's function-call detector for a reasonspan family, working on re-encoded ids.

SGLang's ``FunctionCallParser`` builds one detector per request (per choice when
streaming) from ``ToolCallParserEnum``, passing the tokenizer because ``__init__`` names
it, and hands it the answer text (after its reasoning parser) with the request's tools:
whole (``detect_and_parse``) or a delta at a time (``parse_streaming_increment``, then
``finish``). The text is re-encoded (:mod:`.reencode`) and read with the family's call
format by one reasonspan ``TextSplitter`` per request, started in the answer and given the
tools (special tokens kept, as in the reasoning detector), so values are typed from their
schemas and a call is returned whole, once its markup closed, as ``parse(tools=...)``
returns it; a call cut by the end of the output is not returned, a malformed one goes back
to the text verbatim.

A call streams as one ``ToolCallItem`` holding the name and all its arguments (``tool_index``
is the call's position in the response, which SGLang sends as the OpenAI delta index); the
non-streaming items carry the tool's position in ``tools``, as SGLang's own detectors do.

``supports_structural_tag`` is False: SGLang then constrains ``tool_choice="required"`` and
named choices with its JSON-schema path and reads that JSON itself.
"""

from __future__ import annotations

import importlib
from typing import Any, ClassVar

from reasonspan.factory import create_parser_sync
from reasonspan.integrations.common import class_stem, encode, tool_dicts
from reasonspan.integrations.sglang.reasoning import need_tokenizer
from reasonspan.integrations.sglang.reencode import Reencoder
from reasonspan.runtime import ReasoningParser, TextSplitter
from reasonspan.runtime.toolcalls import ToolCall

CORE_TYPES = "sglang.srt.function_call.core_types"

CALLS_OF: dict[str, str] = {"minimax_m2_append_think": "minimax_m2"}
"""Families whose calls another family reads from the answer text: M2 "append think" puts
``<think>`` before its content (a text prefix of the reasoning detector's answer), and its
calls are M2's (MiniMax serves it with the ``minimax_m2`` tool parser); read with its own
family, the answer would get the prefix twice."""


def core_types() -> Any:
    """SGLang's ``StreamingParseResult`` and ``ToolCallItem`` (SGLang is optional)."""
    return importlib.import_module(CORE_TYPES)


class ToolDetector:
    """The methods of SGLang's ``BaseFormatDetector`` for :attr:`family`, mixed in ahead of
    SGLang's class by :func:`tool_class` (``sglang_base``)."""

    family: ClassVar[str]
    sglang_base: ClassVar[Any]

    # Set by SGLang's base __init__ (declared for the type checker); SGLang's serving
    # layer reads the last two to send arguments a detector left unsent at the end.
    current_tool_id: int
    prev_tool_call_arr: list[dict[str, Any]]
    streamed_args_for_tool: list[str]

    def __init__(self, tokenizer: Any = None) -> None:
        type(self).sglang_base.__init__(self)
        self._tok = need_tokenizer(tokenizer, self.family)
        self._text = Reencoder(self._tok)
        self._split: TextSplitter | None = None
        self._finished = False

    def _new_parser(self) -> ReasoningParser:
        """A parser that starts in the answer: reasoning was the reasoning parser's."""
        family = CALLS_OF.get(self.family, self.family)
        return create_parser_sync(family, self._tok, default_reasoning=False)

    @property
    def reencoder(self) -> Reencoder:
        """The streamed text's token ids (its counters say what the re-encoding cost)."""
        return self._text

    def has_tool_call(self, text: str) -> bool:
        """Whether the text holds a call this family's format reads (with any tool name)."""
        res = self._new_parser().parse(encode(self._tok, text), tools=[], skip_special_tokens=False)
        return bool(res.tool_calls) or bool(res.tool_call_token_ids)

    def detect_and_parse(self, text: str, tools: Any) -> Any:
        """The calls of a whole answer and the text around them."""
        res = self._new_parser().parse(
            encode(self._tok, text), tools=tool_dicts(tools) or [], skip_special_tokens=False
        )
        names = {t.function.name: i for i, t in enumerate(tools or []) if t.function.name}
        calls = [self._item(names.get(c.name, -1), c) for c in res.tool_calls]
        return core_types().StreamingParseResult(normal_text=res.content or "", calls=calls)

    def parse_streaming_increment(self, new_text: str, tools: Any) -> Any:
        """The text and whole calls that this much more answer settles."""
        split = self._splitter(tools)
        content = split.feed(self._text.feed(new_text))[1]
        return self._stream_result(content, split.take_tool_calls())

    def finish(self, tools: Any) -> Any:
        """At the end of the stream: held text, and a call region left open (cut by the end
        of the output: not a call)."""
        if self._finished:
            return core_types().StreamingParseResult()
        self._finished = True
        split = self._splitter(tools)
        content = split.feed(self._text.finish())[1] + split.finish()[1]
        return self._stream_result(content, split.take_tool_calls())

    def supports_structural_tag(self) -> bool:
        return False

    def structure_info(self) -> Any:
        raise NotImplementedError(
            f"reasonspan_{self.family} offers no structural tag (supports_structural_tag)"
        )

    def _splitter(self, tools: Any) -> TextSplitter:
        if self._split is None:
            self._split = TextSplitter(
                self._new_parser(), tools=tool_dicts(tools) or [], skip_special_tokens=False
            )
        return self._split

    def _stream_result(self, content: str, calls: list[ToolCall]) -> Any:
        items = []
        for call in calls:
            self.current_tool_id = len(self.prev_tool_call_arr)
            items.append(self._item(self.current_tool_id, call))
            # The arguments are sent whole: nothing is left for SGLang to complete.
            self.prev_tool_call_arr.append({"name": call.name, "arguments": call.arguments})
            self.streamed_args_for_tool.append(call.arguments)
        return core_types().StreamingParseResult(normal_text=content, calls=items)

    @staticmethod
    def _item(index: int, call: ToolCall) -> Any:
        return core_types().ToolCallItem(
            tool_index=index, name=call.name, parameters=call.arguments
        )


def tool_class(family: str, base: Any) -> type[ToolDetector]:
    """A subclass of SGLang's ``BaseFormatDetector`` (``base``) for one family."""
    name = f"Reasonspan{class_stem(family)}ToolDetector"
    cls: type[ToolDetector] = type(
        name,
        (ToolDetector, base),
        {"family": family, "sglang_base": base, "__module__": __name__, "__qualname__": name},
    )
    globals()[name] = cls
    return cls
