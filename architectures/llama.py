"""Llama 3.x and Llama 4: no reasoning, served for their tool calls.

Neither has a thinking block: every token is the answer (``turn`` is the header that
starts an assistant turn, for the prompt scan).

Llama 3.1 / 3.2 / 3.3 (``llama3_json``; facts: the official Llama 3.3 chat template, via
the unsloth mirror rendered into the CanIToolCall fixtures, and vLLM's ``llama3_json`` /
SGLang's ``llama3`` parsers): with custom tools the model answers with a bare JSON object
``{"name": …, "parameters": {…}}`` (``arguments`` is accepted too), optionally after
``<|python_tag|>``; parallel calls are separated by ``;``. A call region therefore opens at
``<|python_tag|>`` or where the answer's first non-space character is ``{``, and runs to
the end of the output (kind ``json``). An answer that only looks like JSON (``{"a": 1} is a
dict``, an object without ``name``) is not a call and stays content verbatim. Text before
``<|python_tag|>`` is kept as written, trailing space included (SGLang's parser).

Llama 4 (``llama4_pythonic``; facts: Meta's Llama 4 prompt-format documentation and vLLM's
``llama4_pythonic`` parser): calls are one Python list ``[f(a=1), g(b="x")]`` at the start
of the answer, optionally between ``<|python_start|>`` and ``<|python_end|>``; a region
opens at ``<|python_start|>`` or a leading ``[`` and closes at ``<|python_end|>`` (text after
it is content: ``<|python_start|>[f(a=1)]<|python_end|> Done.``), or runs to the end when
the model writes no ``<|python_end|>`` (a bare list; vLLM's parser strips the marker where
it is there) (kind ``pythonic``, literals read with :mod:`ast`, never evaluated).

A bare answer cannot be told from a call until it ends, so these regions are held to the
end of the output, and one the end cut (no complete JSON / list) is given back as content.
"""

from __future__ import annotations

from reasonspan.runtime.core.spec import ReasoningSpec
from reasonspan.runtime.parser.contract import ReasoningParser
from reasonspan.runtime.parser.registry import register
from reasonspan.runtime.toolcalls import ToolFormat

PYTHON_TAG = "<|python_tag|>"
PYTHON_START = "<|python_start|>"
PYTHON_END = "<|python_end|>"

LLAMA3_TOOL_CALLS = ToolFormat(
    kinds=("json",),
    open=(PYTHON_TAG,),
    close=(),
    leading="{",
    trim_gaps=False,
    source="Llama 3.3 chat template (unsloth mirror, rendered into the CanIToolCall fixtures): "
    '`{"name": …, "parameters": {…}}`, bare or after `<|python_tag|>`, `;` between calls; '
    "vLLM's `llama3_json` and SGLang's `llama3` parsers",
)

LLAMA4_TOOL_CALLS = ToolFormat(
    kinds=("pythonic",),
    open=(PYTHON_START,),
    close=(PYTHON_END,),
    close_optional=True,
    leading="[",
    source='Meta\'s Llama 4 prompt format: `[func(a=1), g(b="x")]`, optionally in '
    "`<|python_start|>`…`<|python_end|>`; vLLM's `llama4_pythonic` parser",
)


@register
class Llama3JsonParser(ReasoningParser):
    """Llama 3.x: no reasoning; JSON tool calls (module doc)."""

    spec = ReasoningSpec(
        name="llama3_json",
        aliases=("llama3", "llama3_1", "llama3_2", "llama3_3"),
        turn=("<|start_header_id|>",),
        prompt_start=False,
        thinking_default=False,
        tool_calls=LLAMA3_TOOL_CALLS,
        start_source="template: the Llama 3.3 template ends with "
        "`<|start_header_id|>assistant<|end_header_id|>\\n\\n` and has no thinking block",
        notes="no reasoning (all content); tool calls as a bare JSON answer or after "
        "<|python_tag|>",
    )


@register
class Llama4PythonicParser(ReasoningParser):
    """Llama 4: no reasoning; pythonic tool calls (module doc)."""

    spec = ReasoningSpec(
        name="llama4_pythonic",
        aliases=("llama4",),
        turn=("<|header_start|>",),
        prompt_start=False,
        thinking_default=False,
        tool_calls=LLAMA4_TOOL_CALLS,
        start_source="template: Llama 4 prompts end with "
        "`<|header_start|>assistant<|header_end|>\\n\\n` and have no thinking block",
        notes="no reasoning (all content); tool calls as a leading Python list of calls, "
        "optionally in <|python_start|>…<|python_end|>",
    )
