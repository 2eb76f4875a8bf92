"""Upstage Solar Open 2: ``<|think:start|>`` / ``<|think:end|>``, single special tokens.

Facts and where they come from:

- Markers, turn opener and tool opener: vLLM's ``SolarOpen2ReasoningParser`` (THINK_START,
  THINK_END, TOOL_CALL_START) and its tool parser's tests, which write
  ``<|tool_call:start|>name`` … ``<|tool_call:end|>``; the assistant turn opens with
  ``<|im:start|>assistant<|im:content|>`` (the chat template's generation prompt, as quoted
  by vLLM's parser docstring and its test notes).
- Start state: the chat template *always* prefills ``<|think:start|>``. It leaves the block
  open for ``reasoning_effort`` unset (the template's default is high), ``medium``,
  ``high`` or ``xhigh`` (vLLM's ``_OPEN_REASONING_EFFORTS = (None, "medium", "high",
  "xhigh")``) and writes the closed pair ``<|think:start|><|think:end|>`` for every other
  value (the template's ``else`` branch: its test is exact and case-sensitive, so ``low``,
  ``minimal``, ``none`` and any other string close it). Here: thinking on for the open
  efforts, off (the turn is content) for any other string; a value that is not a string
  is refused, naming the key.
- Implicit end: vLLM's streaming path ends reasoning at ``<|tool_call:start|>`` and keeps
  it in the content for the tool parser; so does this family.
- Tool calls (:data:`SOLAR_OPEN2_TOOL_CALLS`, kind ``solar``): ``<|tool_call:start|>NAME\\n``
  then ``<|tool_arg:start|>K<|tool_arg:value|>V<|tool_arg:end|>\\n`` per argument and
  ``<|tool_call:end|>``, every marker one special token; values raw, typed from the tool's
  schema (vLLM's ``solar_open2`` tool parser and its tests; SGLang's port). A call whose
  end marker the model left out ends at the next ``<|tool_call:start|>``, as in vLLM.

Where the engine reorders and this family keeps the stream order:

- vLLM's non-streaming reasoning parser moves each complete tool block written *inside*
  the think block out of the reasoning and appends it after the content, and the text the
  model wrote after it before ``<|think:end|>`` stays reasoning. Here, as in vLLM's
  streaming path, ``<|tool_call:start|>`` ends the reasoning where it is written: the call
  is read there and the text after it (up to a ``<|think:end|>``, dropped) is content, so
  ``parse()`` and every stream give the same split.
- vLLM's tool parser returns only the text before the first call as content and drops the
  text after the calls; here text after a call is content, as the model wrote it.

The prompt scan reads only the current turn (after the last ``<|im:start|>``), so a
``<|think:end|>`` from an earlier assistant turn never decides it; a ``<|think:end|>``
the model repeats after its answer is dropped, as vLLM's split on the first one does.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from reasonspan.runtime.core.errors import InvalidOptionError
from reasonspan.runtime.core.spec import ReasoningSpec
from reasonspan.runtime.parser.contract import ReasoningParser
from reasonspan.runtime.parser.registry import register
from reasonspan.runtime.shared.hint import DetectionHint
from reasonspan.runtime.toolcalls import ToolFormat

THINK_START, THINK_END = "<|think:start|>", "<|think:end|>"
TOOL_CALL_START = "<|tool_call:start|>"
TURN = "<|im:start|>"

SOLAR_OPEN2_TOOL_CALLS = ToolFormat(
    kinds=("solar",),
    open=(TOOL_CALL_START,),
    close=("<|tool_call:end|>",),
    source="vLLM's solar_open2 tool parser and its tests (SGLang's port too): "
    "`<|tool_call:start|>NAME\\n<|tool_arg:start|>K<|tool_arg:value|>V<|tool_arg:end|>\\n…"
    "<|tool_call:end|>`, raw values typed from the tool's schema",
)

OPEN_EFFORTS = ("medium", "high", "xhigh")
"""``reasoning_effort`` values whose generation prompt leaves the think block open
(unset counts too: the template defaults to high)."""


@register
class SolarOpen2Parser(ReasoningParser):
    spec = ReasoningSpec(
        name="solar_open2",
        aliases=("solar_open_2", "solar_pro4"),
        start=(THINK_START,),
        end=(THINK_END,),
        tool=(TOOL_CALL_START,),
        turn=(TURN,),
        required=(THINK_START, THINK_END),
        prompt_start=True,
        thinking_default=True,
        end_in_content="drop",
        tool_calls=SOLAR_OPEN2_TOOL_CALLS,
        start_source=(
            "documented: Solar Open 2's template always prefills `<|think:start|>`, left open "
            "for reasoning_effort unset/medium/high/xhigh (vLLM's solar_open2 parser)"
        ),
        notes="reasoning_effort outside medium/high/xhigh: the template writes the closed "
        "pair, the turn is content; <|tool_call:start|> ends reasoning",
    )
    hint = DetectionHint(model_types=("solar_open2",))

    @classmethod
    def resolve_switches(cls, kwargs: Mapping[str, Any]) -> tuple[bool, bool]:
        """``reasoning_effort``: open block (thinking) for unset/medium/high/xhigh, the
        closed pair (content) for any other string, as the template decides."""
        effort = kwargs.get("reasoning_effort")
        if effort is None:
            return True, True
        if not isinstance(effort, str):
            raise InvalidOptionError("reasoning_effort", effort, 'a string such as "high" or "low"')
        return effort in OPEN_EFFORTS, True
