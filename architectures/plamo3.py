"""Preferred Networks PLaMo 3 (``plamo3``): multi-token text markers.

Facts and where they come from (vLLM's ``vllm/parser/plamo3.py``, adapters
``vllm/reasoning/plamo3_reasoning_parser.py`` and ``plamo3_engine_reasoning_parser.py``):

- Reasoning sits between ``<|plamo:begin_think:plamo|>`` and ``<|plamo:end_think:plamo|>``.
  They are not single tokens: the vocabulary's ``<|plamo:begin_``, ``<|plamo:end_`` and
  ``:plamo|>`` pieces (special tokens, vLLM's ``PLAMO_MARKER_TOKENS``) with the name
  between them as ordinary text, so they are matched on token bytes with hold-back.
- ``enable_thinking`` defaults on; the template prefills the start with thinking on (vLLM
  starts in reasoning), and a start the model repeats inside reasoning is consumed.
  Thinking off: vLLM drops the think markers from its grammar and the output is content;
  here too (the machine is built without them).
- ``<|plamo:begin_tool_requests:plamo|>`` ends reasoning and stays in content.
- ``<|plamo:tag|>`` (one token) ends a turn. In reasoning it ends the reasoning, and in
  content it is consumed (vLLM's ``EOT`` transitions). It is normally the stop token
  (``generation_config.json`` lists it in ``eos_token_id``), so nothing follows it; when
  an engine keeps generating anyway, the text after it is not part of the turn: vLLM's
  ``plamo3`` tool parser (``vllm/tool_parsers/plamo3_tool_parser.py``) moves to its
  ``DONE`` phase at ``EOT_TAG`` and emits nothing more. So here it is a cut marker
  (``ReasoningSpec.cut``): consumed, and every token after it is a DELIMITER -- decided,
  counted in neither reasoning nor content tokens, never text -- with thinking on or off.
- The prompt scan reads right to left; vLLM's ``is_reasoning_end`` stops at
  ``<|plamo:tag|>``; here the prompt scan reads a cut marker as an end, so a prompt whose
  current turn primes nothing after the last message's tag starts in content, and one
  ending with the begin marker starts in reasoning.
- A tag cut short by the end of the output or by ``<|plamo:tag|>``
  (``visible<|plamo:end_``, ``…<|plamo:end_think``, even ``…<|pla``) is not text: vLLM cuts
  the text at ``<|plamo:tag|>`` and strips such a trailing fragment of any PLaMo tag from
  the reasoning and the content (``strip_trailing_partial_marker``; its tests:
  ``Answer<|plamo:begin_`` is content ``Answer``, ``reasoning text<|plamo:end_thin`` is
  safe up to ``text``). Here the tokens the hold-back still holds there, a strict prefix
  of a marker, are DELIMITERs (:class:`Plamo3Machine`), in ``parse()`` and every stream
  alike. Text before the fragment inside the same token stays in its channel.

Tool calls (kind ``plamo3``, :mod:`reasonspan.runtime.toolcalls.plamo3_calls`): a block
``<|plamo:begin_tool_requests:plamo|>`` … ``<|plamo:end_tool_requests:plamo|>`` of requests
``<|plamo:begin_tool_request:plamo|><|plamo:begin_tool_name:plamo|>NAME<|plamo:end_tool_name:plamo|>
<|plamo:begin_tool_arguments:plamo|><|plamo:constrain|>json<|plamo:msg|>{…}<|plamo:end_tool_arguments:plamo|>
<|plamo:end_tool_request:plamo|>`` (vLLM's ``plamo3`` tool parser and its tests), then
``<|plamo:tag|>``. The block's open tag is this family's implicit end of reasoning.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec

from reasonspan.runtime.core.holdback import Cursor, Spill
from reasonspan.runtime.core.labels import CONTENT, DELIMITER, REASONING
from reasonspan.runtime.core.machine import Machine
from reasonspan.runtime.core.marker_tables import CUT, KIND_MASK, Trans
from reasonspan.runtime.core.markers import compile_machine
from reasonspan.runtime.core.spec import ReasoningSpec
from reasonspan.runtime.parser.contract import ReasoningParser
from reasonspan.runtime.parser.registry import register
from reasonspan.runtime.toolcalls import ToolFormat
from reasonspan.tokenizer.loader import LoadedTokenizer

BEGIN_THINK = "<|plamo:begin_think:plamo|>"
END_THINK = "<|plamo:end_think:plamo|>"
BEGIN_TOOL_REQUESTS = "<|plamo:begin_tool_requests:plamo|>"
END_TOOL_REQUESTS = "<|plamo:end_tool_requests:plamo|>"
EOT = "<|plamo:tag|>"

PLAMO3_TOOL_CALLS = ToolFormat(
    kinds=("plamo3",),
    open=(BEGIN_TOOL_REQUESTS,),
    close=(END_TOOL_REQUESTS,),
    call_close=("<|plamo:end_tool_request:plamo|>",),
    json_after=("<|plamo:begin_tool_arguments:plamo|>",),
    source="vLLM's plamo3 tool parser (vllm/tool_parsers/plamo3_tool_parser.py, tags in "
    "vllm/reasoning/plamo3_reasoning_parser.py): `<|plamo:begin_tool_requests:plamo|>` then "
    "per call `<|plamo:begin_tool_request:plamo|><|plamo:begin_tool_name:plamo|>NAME"
    "<|plamo:end_tool_name:plamo|><|plamo:begin_tool_arguments:plamo|><|plamo:constrain|>json"
    "<|plamo:msg|>{JSON}<|plamo:end_tool_arguments:plamo|><|plamo:end_tool_request:plamo|>`, "
    "then `<|plamo:end_tool_requests:plamo|>`",
)


class Plamo3Machine(Machine):
    """The base machine, except that a marker fragment the output ends on is no text: at
    the end of the output, or right before ``<|plamo:tag|>`` (which ends it)."""

    def flush(
        self,
        reasoning: bool,
        cursor: Cursor,
        out_ids: list[int],
        out_labels: bytearray,
        spill: list[Spill] | None = None,
    ) -> bool:
        """End of output: a held fragment is dropped (:meth:`_drop_fragment`); anything
        else settles as the base machine does."""
        if cursor.cut or not self._fragment(cursor):
            return super().flush(reasoning, cursor, out_ids, out_labels, spill)
        state = 1 if (reasoning and self.thinking) else 0
        self._drop_fragment(state, cursor, out_ids, out_labels, spill)
        return state == 1

    def _settle(
        self,
        queue: list[int],
        state: int,
        cursor: Cursor,
        out_ids: list[int],
        out_labels: bytearray,
        spill: list[Spill] | None,
        trans: Trans | None = None,
    ) -> int:
        """The held run meets the next token: a fragment followed by the end of turn
        (vLLM cuts at ``<|plamo:tag|>`` and then strips the trailing fragment) is dropped;
        any other run settles as the base machine does."""
        if (
            queue
            and (self.lut[queue[-1]] & KIND_MASK) == CUT
            and (trans is None or trans is self.trans)
            and self._fragment(cursor)
        ):
            self._drop_fragment(state, cursor, out_ids, out_labels, spill)
            return state
        return super()._settle(queue, state, cursor, out_ids, out_labels, spill, trans)

    def _fragment(self, cursor: Cursor) -> bool:
        """The held tokens only begin a marker (no marker is complete in them)."""
        seg = cursor.held_bytes[cursor.offset :]
        return bool(cursor.held) and cursor.carry is None and self._longest_at(seg) is None

    def _drop_fragment(
        self,
        state: int,
        cursor: Cursor,
        out_ids: list[int],
        out_labels: bytearray,
        spill: list[Spill] | None,
    ) -> None:
        """The held tokens are DELIMITERs; the bytes before the fragment in the first one
        stay in the channel (spilled)."""
        held = cursor.held
        first = len(out_ids)
        out_ids.extend(held)
        out_labels.extend(bytes((DELIMITER,)) * len(held))
        before = self.token_bytes[held[0]][: cursor.offset]
        if before and spill is not None:
            spill.append((first, before, REASONING if state else CONTENT, 0))
        cursor.clear()


@register
class Plamo3Parser(ReasoningParser):
    spec = ReasoningSpec(
        name="plamo3",
        aliases=("plamo_3", "plamo"),
        start=(BEGIN_THINK,),
        end=(END_THINK,),
        tool=(BEGIN_TOOL_REQUESTS,),
        cut=(EOT,),
        text_markers=(BEGIN_THINK, END_THINK, BEGIN_TOOL_REQUESTS),
        required=(EOT,),
        prompt_start=True,
        thinking_default=True,
        thinking_switches=("enable_thinking",),
        end_in_content="drop",
        start_source=(
            "documented: vLLM's plamo3 parser starts in reasoning with enable_thinking on "
            "(the template prefills the begin marker)"
        ),
        tool_calls=PLAMO3_TOOL_CALLS,
        notes="multi-token text markers matched on bytes; <|plamo:tag|> ends the output "
        "(it and everything after it dropped); a marker fragment at the end is no text",
    )

    @classmethod
    def compile(cls, tokenizer: LoadedTokenizer, kwargs: Mapping[str, Any]) -> Machine:
        """Thinking off, every token up to ``<|plamo:tag|>`` is content (vLLM's grammar
        without the think markers): the machine is built without the text markers, so no
        token is held back for them; the batch routes it by table up to the cut. Either
        way it is a :class:`Plamo3Machine` (its ``run`` is the base one: the batch's lanes
        stay those of its markers)."""
        thinking, prompt_start = cls.resolve_switches(kwargs)
        spec = cls.spec
        if not thinking:
            spec = msgspec.structs.replace(spec, start=(), end=(), tool=(), text_markers=())
        return compile_machine(
            spec,
            tokenizer,
            thinking=thinking,
            prompt_start=prompt_start,
            machine_class=Plamo3Machine,
        )
