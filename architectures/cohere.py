"""Cohere Command: ``cohere_command3`` (Command R7B, Command A Reasoning) and
``cohere_command4`` (Command A Plus / cohere2_moe and cohere2_vision).

Thinking is ``<|START_THINKING|>`` … ``<|END_THINKING|>``. With reasoning on, the
templates end the prompt with ``<|CHATBOT_TOKEN|><|START_THINKING|>`` (Command R7B's "auto"
mode leaves the start to the model); with it off they pre-close the block
(``<|START_THINKING|><|END_THINKING|>``). Either way the prompt scan decides, scoped to the
last ``<|CHATBOT_TOKEN|>``; a turn whose prompt holds no marker starts in reasoning.

The answer is wrapped in ``<|START_RESPONSE|>`` … ``<|END_RESPONSE|>`` (Command 4 also uses
``<|START_TEXT|>`` … ``<|END_TEXT|>``). The wrapper is stripped, and its opening marker
also ends reasoning: a model that skips ``<|END_THINKING|>`` still gets its answer routed
to content, and an output that opens with the wrapper (thinking pre-closed, no prompt
given) is content. ``<|START_ACTION|>`` begins tool calls: it ends reasoning and stays in
content. A stray ``<|END_THINKING|>`` after content (seen with thinking off) is dropped.

Text: whitespace the model writes right after ``<|START_THINKING|>`` (and after the
response opener) is trimmed from the text, as other families trim the newline after their
start marker; the tokens keep their labels.

Citations: with documents or tool results in the prompt the model grounds spans of its
text as ``<co>cited text</co: 0:[1,2],1:[0]>`` (tool call index, then the indices of that
call's results; Cohere's ``melody`` parser, ``parsing/citations.rs``, "Command 3" format,
which Command R7B and Command A write in thinking and answer alike). The markup is taken
out of both channels' text and each span is kept as a ``Citation`` (its text, its
position in the cleaned text, its sources): ``ParseResult.citations``,
``TextSplitter.take_citations()`` (see :mod:`reasonspan.runtime.text.citations`). The tokens of
the markup keep their channel's label.

Tool calls (:data:`COHERE_TOOL_CALLS`, kind ``cohere``): ``<|START_ACTION|>[{"tool_call_id":
"0", "tool_name": NAME, "parameters": {…}}, …]<|END_ACTION|>``, every call of a step in one
JSON list. Facts: Command R7B's tool-use template (llama.cpp's
``models/templates/CohereForAI-c4ai-command-r7b-12-2024-tool_use.jinja``) and Cohere's
melody templates for Command 3 and Command 4 (``cmd3-*``, ``cmd4-hf.jinja``) render an
assistant's ``tool_calls`` so, after its ``<|START_THINKING|>`` plan; llama.cpp's Command
R7B handler reads ``tool_name`` / ``parameters`` (vLLM serves Command A Reasoning with
melody's ``cohere_command3`` parser). ``<|START_ACTION|>`` is also an implicit end of
reasoning (a plan the model did not close), so a call right after the plan is read either
way. The action's JSON is read JSON-aware (an ``<|END_ACTION|>`` inside a string argument is
text), and a ``<co>`` written inside an argument is the argument's, never a citation: the
region is taken out before the text's citations are read.
"""

from __future__ import annotations

import msgspec

from reasonspan.runtime.core.spec import ReasoningSpec, Trim
from reasonspan.runtime.parser.contract import ReasoningParser
from reasonspan.runtime.parser.registry import register
from reasonspan.runtime.shared.hint import DetectionHint
from reasonspan.runtime.toolcalls import ToolFormat

START_THINKING, END_THINKING = "<|START_THINKING|>", "<|END_THINKING|>"
START_RESPONSE, END_RESPONSE = "<|START_RESPONSE|>", "<|END_RESPONSE|>"
START_TEXT, END_TEXT = "<|START_TEXT|>", "<|END_TEXT|>"
START_ACTION, END_ACTION = "<|START_ACTION|>", "<|END_ACTION|>"

COHERE_TOOL_CALLS = ToolFormat(
    kinds=("cohere",),
    open=(START_ACTION,),
    close=(END_ACTION,),
    json_strings=True,
    source="Command R7B's tool-use chat template and Cohere's melody templates (Command 3, "
    'Command 4) write `<|START_ACTION|>[{"tool_call_id": "0", "tool_name": NAME, '
    '"parameters": {…}}, …]<|END_ACTION|>`; llama.cpp\'s Command R7B handler reads '
    "tool_name and parameters",
)

_COMMAND3 = ReasoningSpec(
    name="cohere_command3",
    start=(START_THINKING,),
    # END_THINKING first: it is the marker budgets force.
    end=(END_THINKING, START_RESPONSE),
    tool=(START_ACTION,),
    strip=(END_RESPONSE,),
    turn=("<|CHATBOT_TOKEN|>",),
    required=(START_THINKING, END_THINKING),
    prompt_start=True,
    start_in_content="enter",
    end_in_content="drop",
    reasoning_trim=Trim(lead=" \t\n"),
    content_trim=Trim(lead=" \t\n"),
    citations="cohere",
    tool_calls=COHERE_TOOL_CALLS,
    start_source=(
        "documented: Command A Reasoning thinks by default and writes `<|START_THINKING|>` itself "
        "(consumed in reasoning)"
    ),
    notes="<|START_RESPONSE|> … <|END_RESPONSE|> stripped (the opener also ends reasoning); "
    "<|START_ACTION|> ends reasoning; inline citations <co>…</co: 0:[1]> taken out of the "
    "text, kept as citations",
)


@register
class CohereCommand3Parser(ReasoningParser):
    spec = _COMMAND3
    hint = DetectionHint(model_types=("cohere2",))


@register
class CohereCommand4Parser(ReasoningParser):
    spec = msgspec.structs.replace(
        _COMMAND3,
        name="cohere_command4",
        # SMG's name; its parser serves both generations, as this superset does.
        aliases=("cohere_cmd",),
        end=(END_THINKING, START_RESPONSE, START_TEXT),
        strip=(END_RESPONSE, END_TEXT),
        notes="as cohere_command3 (citations too), plus the <|START_TEXT|> … <|END_TEXT|> wrapper",
    )
