"""Inkling (Thinking Machines): typed content blocks, every marker a special token.

A model message is ``<|message_model|>``, an optional header (a tool name), a block kind,
the block, and ``<|end_message|>`` (or ``<|content_model_end_sampling|>`` when sampling
stops). A ``<|content_thinking|>`` block is reasoning; its close consumes the closer. Blocks
repeat in any order, so a thinking block may follow a closed one: a start after content
re-enters reasoning. Nothing is prefilled, but a prompt that ends inside an open thinking
block (``…<|message_model|><|content_thinking|>``) seeds the turn in reasoning; the scan
stops at the last ``<|message_model|>``.

The framing tokens are structure, never content text: ``<|content_text|>`` (a visible
text block) ends reasoning if one is open and is consumed; ``<|end_message|>`` and
``<|content_model_end_sampling|>`` after content are consumed; a ``<|message_model|>`` the
model writes to open its next message is consumed (``turn_in_output``). Tool-call blocks
(``<|content_invoke_tool_json|>``, ``<|content_invoke_tool_text|>``) end reasoning and their
opener stays in content for the tool parser (labelled TOOL), as other families' tool
markers do.

Tool calls (:data:`INKLING_TOOL_CALLS`, kind ``inkling``): a ``<|content_invoke_tool_json|>``
block holds one JSON object ``{"name": NAME, "args": {…}}`` and ends at ``<|end_message|>``
or ``<|content_model_end_sampling|>`` (vLLM's Inkling parser engine and its tests, SGLang's
``InklingDetector``). Both closers are framing tokens this spec consumes
(``end_in_content="drop"``); the shared extractor closes an open region on a close marker
the reasoning machine consumed, unless it sits in a JSON string argument.

The header between ``<|message_model|>`` and a call block (the tool's name:
``<|message_model|>get_weather<|content_invoke_tool_json|>{…}``) is metadata both engines
drop (vLLM's ``MESSAGE_HEADER`` state; SGLang's ``_split_trailing_tool_header``), so
:class:`InklingMachine` holds the text after ``<|message_model|>`` (and at the start of
an output that starts outside reasoning: the generation prompt ends with
``<|message_model|>``, vLLM's initial state) until the next framing token decides it:
before ``<|content_invoke_tool_json|>`` it is dropped (DELIMITER); before any other token
it is content as written (SGLang keeps it; vLLM drops a header before a text block too,
so the engines disagree there). A run longer than :data:`MAX_HEADER` tokens is no header:
it goes out as content then, so a model that writes its answer without a block kind is
delayed by that much at most. Not followed: vLLM reads the prompt for a prefilled
``<|content_text|>`` (then the output's first text is no header); here the machine does
not see the prompt, so such text, if written right before a call block with no framing
between, is dropped as a header. ``<|content_invoke_tool_text|>`` is visible text in vLLM
and a ``{"text": …}`` call in SGLang, here content.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from reasonspan.runtime.core.holdback import Cursor, Spill
from reasonspan.runtime.core.labels import CONTENT, DELIMITER, REASONING
from reasonspan.runtime.core.machine import Machine
from reasonspan.runtime.core.markers import compile_machine
from reasonspan.runtime.core.spec import ReasoningSpec
from reasonspan.runtime.parser.contract import ReasoningParser
from reasonspan.runtime.parser.registry import register
from reasonspan.runtime.toolcalls import ToolFormat
from reasonspan.tokenizer.loader import LoadedTokenizer

CONTENT_THINKING = "<|content_thinking|>"
END_MESSAGE = "<|end_message|>"
END_SAMPLING = "<|content_model_end_sampling|>"
CONTENT_TEXT = "<|content_text|>"
INVOKE_TOOL_JSON = "<|content_invoke_tool_json|>"
MESSAGE_MODEL = "<|message_model|>"
MAX_HEADER = 64
"""Held header tokens at most: a longer run is text, not a tool's name."""

INKLING_TOOL_CALLS = ToolFormat(
    kinds=("inkling",),
    open=(INVOKE_TOOL_JSON,),
    close=(END_MESSAGE, END_SAMPLING),
    json_strings=True,
    source="vLLM's Inkling parser (parser engine config and tests) and SGLang's InklingDetector: "
    '`<|message_model|>NAME<|content_invoke_tool_json|>{"name": NAME, "args": {…}}'
    "<|end_message|>`, or `<|content_model_end_sampling|>` when sampling stops",
)


@dataclass(slots=True)
class InklingCursor(Cursor):
    """Per request: ``held`` is the header read so far (module doc)."""

    header: bool = True
    """Text here is at a header position: the output's start, or right after a
    ``<|message_model|>`` that left the output outside reasoning."""

    def clear(self) -> None:
        Cursor.clear(self)  # not super(): slots dataclasses break zero-argument super()
        self.header = True


class InklingMachine(Machine):
    """The base machine's routing (every Inkling marker is one token: no byte markers,
    no lead or cut rule), with the message header held until the next framing token
    says whether it names a call (module doc)."""

    def __init__(self, spec: ReasoningSpec, tokenizer: LoadedTokenizer, **kw: Any) -> None:
        super().__init__(spec, tokenizer, **kw)
        assert not (self.has_byte_markers or self.has_cut or self.has_lead), spec.name
        self.call_ids = frozenset(
            t for t in (tokenizer.single_token_id(INVOKE_TOOL_JSON),) if t is not None
        )
        """The token after which a held header is the call's metadata (dropped)."""
        self.model_ids = frozenset(
            t for t in (tokenizer.single_token_id(MESSAGE_MODEL),) if t is not None
        )

    def new_cursor(self) -> InklingCursor:
        return InklingCursor()

    def run(
        self,
        tokens: Sequence[int],
        reasoning: bool,
        cursor: Cursor,
        out_ids: list[int],
        out_labels: bytearray,
        spill: list[Spill] | None = None,
    ) -> bool:
        assert isinstance(cursor, InklingCursor)
        lut, trans, held = self.lut, self.trans, cursor.held
        state = 1 if (reasoning and self.thinking) else 0
        for t in tokens:
            k = lut[t]
            if not k:
                if cursor.header and not state:
                    if len(held) < MAX_HEADER:
                        held.append(t)
                        continue
                    self._settle_header(cursor, CONTENT, out_ids, out_labels)
                cursor.header = False
                out_ids.append(t)
                out_labels.append(REASONING if state else CONTENT)
                continue
            if held:
                label = DELIMITER if t in self.call_ids else CONTENT
                self._settle_header(cursor, label, out_ids, out_labels)
            label, state = trans[state][k]
            out_ids.append(t)
            out_labels.append(label)
            cursor.header = not state and t in self.model_ids
        return bool(state)

    def flush(
        self,
        reasoning: bool,
        cursor: Cursor,
        out_ids: list[int],
        out_labels: bytearray,
        spill: list[Spill] | None = None,
    ) -> bool:
        """End of output: a header no framing token decided is content as written."""
        assert isinstance(cursor, InklingCursor)
        self._settle_header(cursor, CONTENT, out_ids, out_labels)
        return super().flush(reasoning, cursor, out_ids, out_labels, spill)

    @staticmethod
    def _settle_header(
        cursor: InklingCursor, label: int, out_ids: list[int], out_labels: bytearray
    ) -> None:
        held = cursor.held
        out_ids.extend(held)
        out_labels.extend(bytes((label,)) * len(held))
        held.clear()
        cursor.header = False


@register
class InklingParser(ReasoningParser):
    spec = ReasoningSpec(
        name="inkling",
        start=(CONTENT_THINKING,),
        # END_MESSAGE first: it is the marker budgets force.
        end=(END_MESSAGE, END_SAMPLING, CONTENT_TEXT),
        tool=(INVOKE_TOOL_JSON, "<|content_invoke_tool_text|>"),
        turn=(MESSAGE_MODEL,),
        required=(CONTENT_THINKING, END_MESSAGE),
        prompt_start=False,
        start_in_content="enter",
        end_in_content="drop",
        turn_in_output="drop",
        tool_calls=INKLING_TOOL_CALLS,
        start_source=(
            "documented: Inkling's model message opens its own `<|content_thinking|>` block"
        ),
        notes="a thinking block may follow a closed one; text and tool blocks end reasoning; "
        "message framing tokens are consumed, never content text",
    )

    @classmethod
    def compile(cls, tokenizer: LoadedTokenizer, kwargs: Mapping[str, Any]) -> Machine:
        """An :class:`InklingMachine` (module doc), one per tokenizer and switches."""
        thinking, prompt_start = cls.resolve_switches(kwargs)
        spec = cls.resolve_spec(tokenizer)
        return compile_machine(
            spec,
            tokenizer,
            thinking=thinking,
            prompt_start=prompt_start,
            machine_class=InklingMachine,
        )
