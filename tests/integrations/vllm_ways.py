"""One output read the ways vLLM 0.34 reads it, and reasonspan's own ``parse()`` of it: the
helpers the plugin's contract tests and the built-in defect tests share.

A parser pair is named ``(reasoning parser, tool parser or None)``, by vLLM's registry names
(the plugin's ``reasonspan_<family>`` or a built-in's), and built as vLLM's OpenAI server
builds it per request (``ParserManager.get_parser``). :func:`whole` is its non-streaming
path (``Parser.parse``, text plus the generated ids), :func:`streamed` its streaming path
(``Parser.parse_delta`` per engine step, the steps drawn from ``steps.randint(1, 6)``: a
seeded ``random.Random``, or one that always gives ``k``). Calls come back as the client
joins them: pieces of one ``index`` concatenated, arguments parsed as JSON, or kept as text
when they are not JSON (a broken call, which only a built-in sends).
"""

from __future__ import annotations

import json
import random
from functools import cache
from typing import Any

from transformers import PreTrainedTokenizerFast
from vllm.entrypoints.openai.chat_completion.protocol import ChatCompletionRequest
from vllm.parser.parser_manager import ParserManager

import reasonspan
from reasonspan.integrations.vllm.text import in_text_mode, strips_reasoning_tail
from reasonspan.integrations.vllm.tokens import loaded_tokenizer
from tests.support.fixtures import FAMILY_TOKENIZERS, tokenizer

Call = tuple[str, Any]
Answer = tuple[str, str, list[Call]]
Names = tuple[str, str | None]
Tools = list[dict[str, Any]] | None


@cache
def hf(family: str) -> PreTrainedTokenizerFast:
    """The family's fixture tokenizer as the fast tokenizer vLLM passes its parsers."""
    return PreTrainedTokenizerFast(tokenizer_object=tokenizer(FAMILY_TOKENIZERS[family]).tokenizer)


def request(tools: Tools) -> ChatCompletionRequest:
    return ChatCompletionRequest(
        model="m", messages=[{"role": "user", "content": "hi"}], tools=tools
    )


def vllm_parser(names: Names, tok: Any, req: ChatCompletionRequest) -> Any:
    """vLLM's per-request parser for a reasoning parser and a tool parser (or none)."""
    cls = ParserManager.get_parser(
        tool_parser_name=names[1],
        reasoning_parser_name=names[0],
        enable_auto_tools=True,
        tokenizer=tok,
    )
    return cls(tok, req.tools, chat_template_kwargs={})


def call_of(name: str, arguments: str) -> Call:
    """A call as the client gets it; arguments that are not JSON stay text (a broken call)."""
    try:
        return name, json.loads(arguments)
    except json.JSONDecodeError:
        return name, arguments


def whole(names: Names, tok: Any, ids: list[int], prompt: list[int] | None, tools: Tools) -> Answer:
    """vLLM's non-streaming path: the prompt, then the output text and ids."""
    req = request(tools)
    p = vllm_parser(names, tok, req)
    if prompt is not None:
        p.set_prompt_token_ids(prompt)
    reasoning, content, calls = p.parse(
        tok.decode(ids), req, enable_auto_tools=True, model_output_token_ids=ids
    )
    return reasoning or "", content or "", [call_of(c.name, c.arguments) for c in calls or []]


def streamed(
    names: Names,
    tok: Any,
    ids: list[int],
    prompt: list[int] | None,
    tools: Tools,
    steps: random.Random,
) -> Answer:
    """vLLM's streaming path: ``parse_delta`` per engine step of ``steps.randint(1, 6)``
    tokens."""
    req = request(tools)
    p = vllm_parser(names, tok, req)
    reasoning: list[str] = []
    content: list[str] = []
    calls: dict[int, list[str]] = {}
    i = 0
    while i < len(ids):
        n = steps.randint(1, 6)
        delta = ids[i : i + n]
        i += n
        m = p.parse_delta(
            tok.decode(delta), delta, req, prompt_token_ids=prompt, finished=i >= len(ids)
        )
        if m is None:
            continue
        reasoning.append(m.reasoning or "")
        content.append(m.content or "")
        for tc in m.tool_calls or []:
            got = calls.setdefault(tc.index, ["", ""])
            if tc.function is not None:
                got[0] += tc.function.name or ""
                got[1] += tc.function.arguments or ""
    return (
        "".join(reasoning),
        "".join(content),
        [call_of(n, a) for _, (n, a) in sorted(calls.items())],
    )


class Fixed(random.Random):
    """Steps of ``k`` tokens each (a ``steps`` for :func:`streamed`)."""

    def __init__(self, k: int) -> None:
        super().__init__(0)
        self.k = k

    def randint(self, a: int, b: int) -> int:
        return self.k


def reference(
    family: str, tok: Any, ids: list[int], prompt: list[int] | None, tools: Tools
) -> Answer:
    """reasonspan's own ``parse()`` on the same vocabulary, in the plugin's text mode
    (``text.in_text_mode``: vLLM's whitespace by default, and the reasoning's trailing
    whitespace dropped for ``text.VLLM_REASONING_RSTRIP``)."""
    parser = in_text_mode(reasonspan.create_parser_sync(family, loaded_tokenizer(tok)))
    res = parser.parse(ids, prompt, tools=tools)
    reasoning = (res.reasoning or "").rstrip() if strips_reasoning_tail(family) else res.reasoning
    return (
        reasoning or "",
        res.content or "",
        [(c.name, json.loads(c.arguments)) for c in res.tool_calls],
    )
