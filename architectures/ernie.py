"""Baidu ERNIE 4.5 (Thinking).

The template prefills ``<think>``, so a turn starts in reasoning. The answer comes as
``</think>\\n\\n<response>\\n…\\n</response>\\n`` (or plainly ``</think>\\n…``): the
``<response>`` wrapper is consumed, and the content text loses the newlines after each
marker and the one newline just inside ``</response>`` (a Trim, so token labels stay
honest and streaming trims exactly as ``parse()``).

Tool calls (:data:`ERNIE45_TOOL_CALLS`): after ``</think>`` the model writes
``<tool_call>\\n{"name": …, "arguments": {…}}\\n</tool_call>`` (Hermes JSON, kind
``json``): vLLM's ``ernie45`` tool parser and FastDeploy's ``ernie-x1`` parser (Baidu's own
server, which lists ERNIE-4.5-21B-A3B-Thinking as calling tools) both document the output
``abc\\n</think>\\n\\n\\n<tool_call>\\n{…}\\n</tool_call>\\n`` and read one JSON object per
``<tool_call>``. The model's chat template is not in the corpus checked. Both markers are
tokens of ERNIE's vocabulary (the parsers look their ids up).
"""

from __future__ import annotations

from reasonspan.runtime.core.spec import ReasoningSpec, Trim
from reasonspan.runtime.parser.contract import ReasoningParser
from reasonspan.runtime.parser.registry import register
from reasonspan.runtime.shared.hint import DetectionHint
from reasonspan.runtime.toolcalls import ToolFormat

ERNIE45_TOOL_CALLS = ToolFormat(
    kinds=("json",),
    open=("<tool_call>",),
    close=("</tool_call>",),
    json_strings=True,
    source="vLLM's ernie45 tool parser and FastDeploy's ernie-x1 parser read "
    '`<tool_call>\\n{"name": …, "arguments": {…}}\\n</tool_call>` after `</think>` (their '
    "documented output); ERNIE-4.5-Thinking's chat template is not in the corpus checked",
)
"""Hermes JSON (kind ``json``) inside ``<tool_call>`` … ``</tool_call>``."""


@register
class Ernie45Parser(ReasoningParser):
    spec = ReasoningSpec(
        name="ernie45",
        aliases=("ernie4_5", "ernie_45"),
        start=("<think>",),
        end=("</think>",),
        strip=("<response>", "</response>"),
        turn=("<|im_start|>",),
        required=("<think>", "</think>"),
        prompt_start=True,
        content_trim=Trim(lead="\n", trail="\n", trail_max=1),
        tool_calls=ERNIE45_TOOL_CALLS,
        start_source=(
            "documented: ERNIE-4.5-Thinking's template opens the reasoning block for the model"
        ),
        notes="<response> wrapper stripped; newlines after </think> trimmed",
    )
    hint = DetectionHint(model_types=("ernie4_5", "ernie4_5_moe"), needs_evidence=True)
