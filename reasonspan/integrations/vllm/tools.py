"""vLLM's ``ToolParser`` for a reasonspan family, working on token ids.

vLLM hands a tool parser the answer after reasoning: streaming, the content tokens from
the delta where reasoning ended on (``ReasoningParser.extract_content_ids``) and every
delta after; non-streaming, the content text. The plugin reads them with the family's
call format through one ``TextSplitter`` per request, started in the answer (reasoning
over) and given the request's tools, so values are typed from their schemas and a call is
sent whole once its markup closed, as ``parse(tools=...)`` returns it. A call cut by the
end of the output is not sent; a malformed one goes back to the content verbatim.

Like the reasoning parser it is engine-based: vLLM passes deltas only and calls
:meth:`finish_streaming` at the end of the stream, where held tokens and an unclosed call
region are decided. Non-streaming text is re-encoded with the tokenizer.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any, ClassVar

from reasonspan.factory import create_parser_sync
from reasonspan.integrations.common import tool_dicts as _tool_dicts
from reasonspan.integrations.vllm.reasoning import ReasoningAdapter
from reasonspan.integrations.vllm.text import (
    delta_message,
    delta_tool_call,
    in_text_mode,
    protocol,
    tool_call,
    vllm_text,
)
from reasonspan.integrations.vllm.tokens import encode, loaded_tokenizer
from reasonspan.runtime import ReasoningParser, TextSplitter
from reasonspan.runtime.toolcalls import ToolCall
from reasonspan.tokenizer.loader import LoadedTokenizer


def request_tools(request: Any) -> list[dict[str, Any]] | None:
    """The request's OpenAI ``tools`` as plain dicts (vLLM holds pydantic models)."""
    return _tool_dicts(getattr(request, "tools", None))


def _linked_reasoning(family: str, tok: LoadedTokenizer) -> ReasoningAdapter | None:
    """The reasoning parser vLLM built just before this tool parser, for the same request.

    vLLM's ``Parser.__init__`` makes its reasoning parser, then its tool parser, and hands
    neither to the other; the tool parser finds its sibling on the caller's frame (the
    ``Parser`` being built). Linked, one splitter per request reads reasoning, content and
    calls, so the answer is parsed once and the text is the one ``parse()`` gives. Any
    other caller (a tool parser alone, or a different family's reasoning parser) gets no
    link, and the tool parser reads the answer on its own."""
    try:
        frame = sys._getframe(2)  # 0: here, 1: ToolAdapter.__init__, 2: who built it
    except ValueError:
        return None
    owner = frame.f_locals.get("self")
    del frame
    sibling = getattr(owner, "_reasoning_parser", None)
    if isinstance(sibling, ReasoningAdapter) and sibling.family == family and sibling.shares(tok):
        return sibling
    return None


class ToolAdapter:
    """The methods of vLLM's ``ToolParser``, for the family in :attr:`family`; mixed in
    ahead of vLLM's class by :func:`tool_class` (``vllm_base``)."""

    family: ClassVar[str]
    vllm_base: ClassVar[Any]
    vllm_name: ClassVar[str | None] = None
    engine_based_streaming: ClassVar[bool] = True

    # Set by vLLM's ToolParser.__init__ (declared for the type checker).
    prev_tool_call_arr: list[dict[str, Any]]
    streamed_args_for_tool: list[str]
    current_tool_id: int

    def __init__(self, tokenizer: Any, tools: Any = None, *args: Any, **kwargs: Any) -> None:
        type(self).vllm_base.__init__(self, tokenizer, tools)
        self._tok = loaded_tokenizer(tokenizer)
        self._kwargs = dict(kwargs.get("chat_template_kwargs") or {})
        self._split: TextSplitter | None = None
        self._sent = 0
        self._finished = False
        self._link = _linked_reasoning(self.family, self._tok)
        if self._link is not None:
            self._link.link_tools(_tool_dicts(tools) or [])

    def _new_parser(self) -> ReasoningParser:
        """A parser that starts in the answer: reasoning was vLLM's reasoning parser's."""
        return in_text_mode(
            create_parser_sync(self.family, self._tok, self._kwargs, default_reasoning=False)
        )

    def extract_tool_calls(self, model_output: str, request: Any) -> Any:
        """The calls of a whole answer: the linked reasoning parser's parse when it read
        this answer, else the text vLLM hands over, re-encoded."""
        whole = self._link.whole if self._link is not None else None
        if whole is not None and (whole.content or "") == model_output:
            res = whole
        else:
            res = self._new_parser().parse(
                encode(self._tok, model_output),
                tools=request_tools(request) or [],
                tool_choice=getattr(request, "tool_choice", None),
            )
        calls = [tool_call(c) for c in res.tool_calls]
        return protocol().ExtractedToolCallInformation(
            tools_called=bool(calls), tool_calls=calls, content=vllm_text(res.content)
        )

    def extract_tool_calls_streaming(
        self,
        previous_text: str,
        current_text: str,
        delta_text: str,
        previous_token_ids: Sequence[int],
        current_token_ids: Sequence[int],
        delta_token_ids: Sequence[int],
        request: Any,
    ) -> Any:
        """The content text and whole calls these delta tokens release."""
        if self._link is not None:
            pending, self._link.pending = self._link.pending, None
            if pending is not None:  # the delta the reasoning parser read, where it ended
                return self._delta("", *pending)
            return self._delta(*self._link.feed(list(delta_token_ids)))
        if self._split is None:
            self._split = TextSplitter(
                self._new_parser(),
                tools=request_tools(request) or [],
                tool_choice=getattr(request, "tool_choice", None),
            )
        reasoning, content = self._split.feed(list(delta_token_ids))
        return self._delta(reasoning, content, self._split.take_tool_calls())

    def finish_streaming(self) -> Any:
        """At the end of the stream: held tokens, and a call region left open (cut by the
        end of the output: not a call)."""
        if self._link is not None:
            return self._delta(*self._link.finish_split())
        if self._split is None or self._finished:
            return None
        self._finished = True
        reasoning, content = self._split.finish()
        return self._delta(reasoning, content, self._split.take_tool_calls())

    def _delta(self, reasoning: str, content: str, calls: list[ToolCall]) -> Any:
        deltas = []
        for call in calls:
            deltas.append(delta_tool_call(call, self._sent))
            # vLLM appends "arguments not yet streamed" at the end from these two lists.
            self.prev_tool_call_arr.append({"name": call.name, "arguments": call.arguments})
            self.streamed_args_for_tool.append(call.arguments)
            self.current_tool_id = self._sent
            self._sent += 1
        return delta_message(reasoning, content, deltas)


def tool_class(
    family: str, base: Any, *, builtin: type | None = None, vllm_name: str | None = None
) -> type[ToolAdapter]:
    """A subclass of vLLM's ``ToolParser`` (``base``) for one family; registered under
    vLLM's name ``vllm_name``, a subclass of that name's built-in class too (``builtin``,
    with none of its code reachable: :mod:`.builtins`)."""
    from reasonspan.integrations.vllm.builtins import class_name, masked

    name = class_name(family, vllm_name, "ToolParser")
    space = masked(builtin, base, ToolAdapter) if builtin is not None else {}
    space |= {"family": family, "vllm_base": base, "vllm_name": vllm_name}
    space |= {"__module__": __name__, "__qualname__": name}
    bases = (ToolAdapter, base) if builtin is None else (ToolAdapter, builtin)
    cls: type[ToolAdapter] = type(name, bases, space)
    globals()[name] = cls
    return cls
