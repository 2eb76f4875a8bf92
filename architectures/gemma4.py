"""Gemma 4: reasoning is the ``<|channel>`` … ``<channel|>`` thought channel.

The model opens the channel with the label ``thought\\n`` (``<|channel>thought\\n…<channel|>``).
The label is stripped from the reasoning text by the reasoning channel's ``Trim.label``,
once per block, however the tokens are cut into deltas. The label's tokens stay labelled
REASONING: telling that a ``thought`` token is the label (and not ``thoughtful``) takes
the next token, so a DELIMITER label would need a hold-back after every ``<|channel>``
and would take this single-token family off the vectorized batch path. They are
generated inside the channel, so counting them as reasoning tokens is honest. The
template writes one newline after the thought before ``<channel|>`` (the CanIToolCall
fixtures rendered from it end the thought with ``\n<channel|>`` and expect the reasoning
without it): one trailing newline of a closed block is layout, trimmed.

Routing: reasoning inside the channel, content outside it; a channel after content opens
reasoning; ``<|tool_call>`` ends reasoning and stays in content; a stray ``<channel|>`` in
content is dropped. The channel is routed whatever the thinking switch says (small Gemma 4
models emit an empty ``<|channel>thought\\n<channel|>`` with thinking off).

A turn starts in content, with thinking on or off: the model opens the channel itself,
and a model that skips it (it may, with thinking on) answers in content. Only a prompt
that actually leaves the channel open starts the output inside reasoning: after a tool
response the template ends the prompt with ``<|channel>thought\\n``, so the prompt scan
(bounded by ``<|turn>`` and ``<|tool_response>``) finds ``<|channel>`` and the output
begins inside the channel. With thinking off the template pre-closes the channel
(``<|channel>thought\\n<channel|>``), which the scan reads as content. ``enable_thinking``
(default false; ``<|think|>`` in the system turn is the template's way to say it) is
accepted and checked, but it changes nothing here: the prompt says where the turn starts.

Tool calls (facts: the official chat_template.jinja of google/gemma-4-31B-it, rendered into
the CanIToolCall fixtures, and vLLM's ``gemma4`` tool parser): each call is
``<|tool_call>call:NAME{key:value,…}<tool_call|>``, strings delimited by the ``<|"|>``
token, other values bare and typed from the tool's schema (kind ``gemma4``). A
``<tool_call|>`` between two ``<|"|>`` is text of a string argument. The text around a
call is kept as written (SGLang's parser; vLLM's strips the space before a call, which the
corpus' ``vllm-text-before-call`` expects: a whitespace-only difference).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from reasonspan.runtime.core.machine import Machine
from reasonspan.runtime.core.markers import compile_machine
from reasonspan.runtime.core.spec import ReasoningSpec, Trim
from reasonspan.runtime.parser.contract import ReasoningParser
from reasonspan.runtime.parser.registry import register
from reasonspan.runtime.toolcalls import ToolFormat
from reasonspan.tokenizer.loader import LoadedTokenizer

CHANNEL, CHANNEL_END = "<|channel>", "<channel|>"
TURN, TOOL_RESPONSE, TOOL_CALL = "<|turn>", "<|tool_response>", "<|tool_call>"
TOOL_CALL_END, QUOTE = "<tool_call|>", '<|"|>'

GEMMA4_TOOL_CALLS = ToolFormat(
    kinds=("gemma4",),
    open=(TOOL_CALL,),
    close=(TOOL_CALL_END,),
    string_quote=QUOTE,
    trim_gaps=False,
    source="google/gemma-4-31B-it chat_template.jinja (rendered into the CanIToolCall "
    'fixtures): `<|tool_call>call:NAME{key:<|"|>text<|"|>,n:3}<tool_call|>`; vLLM\'s `gemma4` '
    "parser",
)


@register
class Gemma4Parser(ReasoningParser):
    spec = ReasoningSpec(
        name="gemma4",
        aliases=("gemma_4",),
        start=(CHANNEL,),
        end=(CHANNEL_END,),
        tool=(TOOL_CALL,),
        tool_calls=GEMMA4_TOOL_CALLS,
        turn=(TURN, TOOL_RESPONSE),
        required=(CHANNEL, CHANNEL_END),
        prompt_start=False,
        thinking_default=False,
        thinking_switches=("enable_thinking",),
        start_in_content="enter",
        end_in_content="drop",
        reasoning_trim=Trim(label="thought\n", trail="\n", trail_max=1),
        start_source=(
            "documented: Gemma 4 thinks only when `<|think|>` is in the system turn "
            "(`enable_thinking`); after a tool response the template ends with "
            "`<|channel>thought\\n`"
        ),
        notes="label thought\\n stripped; a turn starts in content (a skipped channel is "
        "the answer) unless the prompt leaves <|channel> open; the channel is routed "
        "even with thinking off",
    )

    @classmethod
    def compile(cls, tokenizer: LoadedTokenizer, kwargs: Mapping[str, Any]) -> Machine:
        """The switch is validated, then the same machine serves both settings."""
        cls.resolve_switches(kwargs)
        return compile_machine(cls.spec, tokenizer, thinking=True, prompt_start=False)
