"""IBM Granite (3.2 / 3.3): reasoning between two plain-English phrases.

Granite 4.x thinking (``granite_thinking``) writes Nemotron 3's tokens instead: it is in
``nemotron.py``, beside the format it shares.

With ``thinking: true`` the template's system prompt asks the model to write its thoughts
after ``Here is my thought process:`` and its answer after ``Here is my response:``
(quantized models also write ``Here's``). The phrases are ordinary text, so they tokenize
differently in context (``Here`` / `` Here`` / ``.Here``; ``:`` / ``:\\n`` / ``:**``) and are
matched on the bytes of each token id with hold-back: a token such as `` Here`` waits
until the next tokens decide. A token that the phrase only partly covers is a DELIMITER
whose other bytes go to their channel's text.

The output starts in content (nothing is prefilled) and enters reasoning at the start
phrase; truncated after it, the output is reasoning. ``<|tool_call|>`` (a special token
where the vocabulary has it) ends reasoning; the prompt scan is bounded by the last
``<|start_of_role|>``.

Tool calls (:data:`GRANITE_TOOL_CALLS`): with tools, the Granite 3.x template's system
prompt asks the model to "respond only with <|tool_call|> followed by a JSON list of tools
used", ``<|tool_call|>[{"name": …, "arguments": {…}}, …]``; vLLM's ``granite`` tool parser
(an output that is ``<|tool_call|>`` and then one JSON list) and llama.cpp's granite
handler (content up to ``<|tool_call|>``, then the JSON list; its grammar writes
``<|tool_call|>`` and the list) read it. There is no close marker: the region runs to the
end of the output and is read at the finish (kind ``json``); a list the end cut short is
not a call. Text before ``<|tool_call|>`` is content (llama.cpp keeps it; vLLM only reads
an output that starts with the call). The plain-text ``<tool_call>`` opens a call list too:
vLLM's parser reads it in place of the token (its comment: Granite 3.1's string form; its
unit tests call both forms), matched on token bytes where it is not one token.

A user who picks the granite parser gets the phrases parsed by default, as other engines
do (vLLM's and SGLang's granite parsers always look for them), although the template's own
``thinking`` switch defaults to off: output without the start phrase is content anyway,
so parsing costs nothing but hold-back. ``thinking: false`` switches it off (the machine is
then built without the phrases, so an answer that quotes one is left alone and the family
stays on the vectorized batch path). ``enable_thinking`` does not change the Granite
prompt and is not read.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec

from reasonspan.runtime.core.machine import Machine
from reasonspan.runtime.core.markers import compile_machine
from reasonspan.runtime.core.spec import ReasoningSpec
from reasonspan.runtime.parser.contract import ReasoningParser
from reasonspan.runtime.parser.registry import register
from reasonspan.runtime.shared.hint import DetectionHint
from reasonspan.runtime.toolcalls import ToolFormat
from reasonspan.tokenizer.loader import LoadedTokenizer

START = ("Here is my thought process:", "Here's my thought process:")
END = ("Here is my response:", "Here's my response:")
TOOL_CALL, TOOL_CALL_TEXT = "<|tool_call|>", "<tool_call>"

GRANITE_TOOL_CALLS = ToolFormat(
    kinds=("json",),
    open=(TOOL_CALL, TOOL_CALL_TEXT),
    source="Granite 3.x chat template (system prompt: respond only with <|tool_call|> followed "
    'by a JSON list of tools used): `<|tool_call|>[{"name": …, "arguments": {…}}]`; vLLM\'s '
    "`granite` tool parser and llama.cpp's granite handler read it; vLLM's parser also reads "
    "Granite 3.1's `<tool_call>` string form",
)
"""``<|tool_call|>`` (or the text ``<tool_call>``) and a JSON list of ``{"name",
"arguments"}`` objects, to the end of the output (kind ``json``)."""


@register
class GraniteParser(ReasoningParser):
    spec = ReasoningSpec(
        name="granite",
        aliases=("granite3", "granite_3"),
        start=START,
        end=END,
        tool=(TOOL_CALL,),
        turn=("<|start_of_role|>",),
        text_markers=START + END,
        prompt_start=False,
        thinking_default=True,
        thinking_switches=("thinking",),
        start_in_content="enter",
        start_source=(
            "documented: the Granite template prefills nothing; the model writes the start "
            "phrase itself (parsed by default, as other engines do)"
        ),
        tool_calls=GRANITE_TOOL_CALLS,
        notes="plain-text phrases (also Here's) matched on token bytes with hold-back",
    )
    hint = DetectionHint(model_types=("granite",), plain_text_markers=True)

    @classmethod
    def compile(cls, tokenizer: LoadedTokenizer, kwargs: Mapping[str, Any]) -> Machine:
        """With thinking off (``thinking: false``) the phrases are content like any text, so the
        machine is built without them: no token is held back and the family stays on the
        vectorized path."""
        thinking, prompt_start = cls.resolve_switches(kwargs)
        spec = cls.spec if thinking else msgspec.structs.replace(cls.spec, text_markers=())
        return compile_machine(spec, tokenizer, thinking=thinking, prompt_start=prompt_start)
