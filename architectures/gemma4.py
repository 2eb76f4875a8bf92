"""Gemma 4: reasoning is the ``<|channel>`` … ``<channel|>`` thought channel.

The model opens the channel with the label ``thought\\n`` (``<|channel>thought\\n…<channel|>``).
The label is stripped from the reasoning text by the reasoning channel's ``Trim.label``,
once per block, however the tokens are cut into deltas. The label's tokens stay labelled
REASONING: telling that a ``thought`` token is the label (and not ``thoughtful``) takes
the next token, so a DELIMITER label would need a hold-back after every ``<|channel>``
and would take this single-token family off the vectorized batch path. They are
generated inside the channel, so counting them as reasoning tokens is honest.

Routing: reasoning inside the channel, content outside it; a channel after content opens
reasoning again; ``<|tool_call>`` ends reasoning and stays in content; a stray
``<channel|>`` in content is dropped. The channel is routed whatever the thinking switch
says (small Gemma 4 models emit an empty ``<|channel>thought\\n<channel|>`` with thinking
off), so ``thinking_enabled`` is always true here.

The thinking switch (``enable_thinking``, default false; ``<|think|>`` at the top of the
prompt's system turn also turns it on) decides only what a turn start means in the prompt
scan, which is bounded by ``<|turn>`` and ``<|tool_response>`` (the model continues its
turn after a tool response):

- thinking off: the template pre-closes the channel (``<|channel>thought\\n<channel|>``),
  so the scan finds ``<channel|>``: content. A bare turn start is content too.
- thinking on, generation prompt ``<|turn>model\\n``: the scan returns True ("reasoning
  is not over"), so a grammar waits; the model opens the channel itself and the
  ``<|channel>`` in reasoning is consumed.
- after a tool response with thinking on, the current template ends the prompt with an
  open ``<|channel>thought\\n``: the scan finds ``<|channel>`` and the output begins
  inside the channel, with no marker of its own.

The rule for a thinking-seeded turn whose model skips the channel (the model matrix asks
for content there): ``stream()`` receives one bool, and True from a thinking-seeded
``<|turn>model\n`` cannot be told from True from the open channel that the current
template leaves after a tool response, whose first output token is already reasoning text
with nothing to mark it. Routing that case as content would put the chain of thought into
the answer on every agent step, so True is reasoning whatever seeded it, as for the other
families: a model that skips the channel after a thinking-seeded turn start has its answer
routed to reasoning until ``<channel|>`` or ``<|tool_call>`` (a direct tool call still
ends reasoning). Without thinking (the default) no turn start is seeded, and output
without a channel is content. Telling the two apart would need the scan to hand the
request more than a bool (a per-request seed kind), which the contract does not carry.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..runtime.machine import Machine, compile_machine, resolve_markers
from ..runtime.parser import ReasoningParser
from ..runtime.registry import register
from ..runtime.spec import ReasoningSpec, Trim
from ..tokenizer.loader import LoadedTokenizer

CHANNEL, CHANNEL_END = "<|channel>", "<channel|>"
TURN, TOOL_RESPONSE, TOOL_CALL = "<|turn>", "<|tool_response>", "<|tool_call>"
THINK = "<|think|>"

THINK_WINDOW = 32
"""How far into the prompt ``<|think|>`` is looked for: the template puts it at the very
top of the first system turn (``<bos><|turn>system\\n<|think|>``), as Google's guidance
tells users writing their own system prompt to do. A bounded look keeps the scan O(1)."""


class Gemma4Machine(Machine):
    """The generic tables (the channel is routed whatever the switch) plus the prompt rule
    that ``<|think|>`` at the top of the prompt turns thinking on for a turn start."""

    def __init__(self, spec: ReasoningSpec, tokenizer: LoadedTokenizer, *, turn_start: bool):
        id_markers, byte_markers = resolve_markers(spec, tokenizer)
        super().__init__(
            spec,
            tokenizer,
            thinking=True,
            prompt_start=turn_start,
            id_markers=id_markers,
            byte_markers=byte_markers,
        )
        self.think_id = tokenizer.single_token_id(THINK)
        # With thinking off, a prompt that asks for it with <|think|> is scanned by the
        # thinking-on machine instead (same tables; only the turn start differs).
        self._thinking_on: Machine | None = None
        if not turn_start and self.think_id is not None:
            self._thinking_on = compile_machine(spec, tokenizer, thinking=True, prompt_start=True)

    def prompt_in_reasoning(self, prompt: Sequence[int] | np.ndarray) -> bool:
        if super().prompt_in_reasoning(prompt):
            return True
        on = self._thinking_on
        if on is None or not self._think_in_system_turn(prompt):
            return False
        return on.prompt_in_reasoning(prompt)

    def _think_in_system_turn(self, prompt: Sequence[int] | np.ndarray) -> bool:
        """``<|think|>`` right after ``<|turn>system\\n`` in the first tokens: the only
        place the template (and Google's guidance for a hand-written system prompt) puts
        it. A ``<|think|>`` in a user turn is text a user typed, never the switch."""
        head = prompt[:THINK_WINDOW]
        head = head.tolist() if isinstance(head, np.ndarray) else list(head)
        self.validate(head, 0, "prompt_token_ids")
        opener = self.tokenizer.single_token_id(TURN)
        if opener is None:
            return False
        for i, t in enumerate(head):
            if t != self.think_id:
                continue
            before = head[:i]
            if opener not in before:
                continue
            j = len(before) - 1 - before[::-1].index(opener)
            if self.tokenizer.decode(head[j + 1 : i]) == "system\n":
                return True
        return False


@register
class Gemma4Parser(ReasoningParser):
    spec = ReasoningSpec(
        name="gemma4",
        aliases=("gemma_4",),
        start=(CHANNEL,),
        end=(CHANNEL_END,),
        tool=(TOOL_CALL,),
        turn=(TURN, TOOL_RESPONSE),
        required=(CHANNEL, CHANNEL_END),
        prompt_start=True,
        thinking_default=False,
        thinking_switches=("enable_thinking",),
        start_in_content="enter",
        end_in_content="drop",
        reasoning_trim=Trim(label="thought\n"),
        notes="label thought\\n stripped; thinking (or <|think|> in the system turn) seeds a "
        "turn start; the channel is routed even with thinking off",
    )

    @classmethod
    def compile(cls, tokenizer: LoadedTokenizer, kwargs: Mapping[str, Any]) -> Machine:
        thinking, prompt_start = cls.resolve_switches(kwargs)
        turn_start = thinking and prompt_start
        key = ("gemma4", cls.spec, turn_start)
        cached = tokenizer.cache.get(key)
        if isinstance(cached, Gemma4Machine):
            return cached
        machine = Gemma4Machine(cls.spec, tokenizer, turn_start=turn_start)
        tokenizer.cache[key] = machine
        return machine
