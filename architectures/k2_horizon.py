"""IFM K2-Horizon (``k2_horizon``): one think-token pair per reasoning effort.

Facts and where they come from (vLLM's ``vllm/reasoning/k2_horizon_reasoning_parser.py``;
the IFM model card's serving notes; kronk's ``k2horizon`` state machine; a llama.cpp-style
server that reads the generation prompt's last line):

- ``chat_template_kwargs.reasoning_effort`` picks the pair: ``high`` (the default, as in
  the template) ``<ifm|think>``/``</ifm|think>``, ``medium`` ``<ifm|think_fast>``/
  ``</ifm|think_fast>``, ``low`` ``<ifm|think_faster>``/``</ifm|think_faster>``. Each is
  one token in K2-Horizon's vocabulary. Only the chosen pair is a marker, as in vLLM: the
  other tiers' tokens are ordinary text of the channel they fall in.
- Any other value is refused (:class:`InvalidOptionError` naming the three). Engines
  disagree here: vLLM raises, SGLang's ``K2V3Detector`` falls back to ``medium`` and a
  vLLM plugin to ``high``. A silent fallback would split on the wrong pair, so the error
  it is.
- The template primes the start (the prompt ends with ``<ifm|think>\\n``), or the model
  writes it: a turn starts in reasoning and a generated start is consumed.
- ``<ifm|tool_calls>`` ends reasoning and stays in content (vLLM's parser splits there).
- Tool calls (:data:`K2_HORIZON_TOOL_CALLS`, kind ``ifm``): a group
  ``<ifm|tool_calls>`` … ``</ifm|tool_calls>`` of ``<ifm|tool_call>`` … ``</ifm|tool_call>``
  calls, each the name and ``<ifm|arg_key>K</ifm|arg_key><ifm|arg_value>V</ifm|arg_value>``
  pairs (the template's default ``tool_call_format: xml``, a newline after the name, each
  pair and each call), the same with ``<ifm|arg_type>`` (``xml_typed``), or a JSON object
  (``json``). Sources: the template as rendered in the kronk and IFM client tests
  (``<ifm|tool_call>shell\\n<ifm|arg_key>cmd</ifm|arg_key>\\n<ifm|arg_value>ls
  </ifm|arg_value>\\n</ifm|tool_call>``), vLLM's ``k2_horizon`` tool parser (the three
  layouts, values typed from the tool's schema) and SGLang's ``K2V3Detector``. vLLM
  requires the format named in ``tool_call_format`` and refuses any other value; here
  every layout reads whatever was asked, so the switch needs no option.
- Turn scope: every message ends with ``<|ifm|im_end|>`` (one token, one of the model's
  EOS ids, kronk), so the prompt scan reads only what follows the last one; in the output
  it is the end of generation and is dropped from the text.

Not followed: vLLM's non-streaming ``extract_reasoning`` returns an output with neither
end nor tool marker as all content, while its streaming path (and this parser, which
splits a stream and a whole output alike) treats it as truncated reasoning.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec

from reasonspan.runtime.core.errors import InvalidOptionError
from reasonspan.runtime.core.machine import Machine
from reasonspan.runtime.core.markers import compile_machine
from reasonspan.runtime.core.spec import ReasoningSpec
from reasonspan.runtime.parser.contract import ReasoningParser
from reasonspan.runtime.parser.registry import register
from reasonspan.runtime.toolcalls import ToolFormat
from reasonspan.tokenizer.loader import LoadedTokenizer

K2_HORIZON_TOOL_CALLS = ToolFormat(
    kinds=("ifm",),
    open=("<ifm|tool_calls>",),
    close=("</ifm|tool_calls>",),
    call_close=("</ifm|tool_call>",),
    source="K2-Horizon's chat template writes a `<ifm|tool_calls>` group of `<ifm|tool_call>NAME"
    "\\n<ifm|arg_key>K</ifm|arg_key>\\n<ifm|arg_value>V</ifm|arg_value>\\n</ifm|tool_call>` "
    "calls (tool_call_format xml; xml_typed adds <ifm|arg_type>, json writes an object); vLLM's "
    "k2_horizon tool parser and SGLang's K2V3Detector read them",
)

EFFORT_MARKERS: dict[str, tuple[str, str]] = {
    "high": ("<ifm|think>", "</ifm|think>"),
    "medium": ("<ifm|think_fast>", "</ifm|think_fast>"),
    "low": ("<ifm|think_faster>", "</ifm|think_faster>"),
}
DEFAULT_EFFORT = "high"


def effort_of(kwargs: Mapping[str, Any]) -> str:
    """The requested effort tier, or InvalidOptionError for anything else (module doc)."""
    effort = kwargs.get("reasoning_effort", DEFAULT_EFFORT)
    if not isinstance(effort, str) or effort not in EFFORT_MARKERS:
        raise InvalidOptionError("reasoning_effort", effort, '"high", "medium" or "low"')
    return effort


@register
class K2HorizonParser(ReasoningParser):
    spec = ReasoningSpec(
        name="k2_horizon",
        aliases=("k2h", "ifm_k2_horizon"),
        start=(EFFORT_MARKERS[DEFAULT_EFFORT][0],),
        end=(EFFORT_MARKERS[DEFAULT_EFFORT][1],),
        tool=("<ifm|tool_calls>",),
        turn=("<|ifm|im_end|>",),
        required=EFFORT_MARKERS[DEFAULT_EFFORT],
        prompt_start=True,
        thinking_default=True,
        turn_in_output="drop",
        tool_calls=K2_HORIZON_TOOL_CALLS,
        start_source=(
            "documented: K2-Horizon's template ends the generation prompt with the effort's "
            "think token (`<ifm|think>\\n` at the default high)"
        ),
        notes="reasoning_effort high/medium/low picks the think pair (others refused); "
        "<ifm|tool_calls> ends reasoning",
    )

    @classmethod
    def resolve_switches(cls, kwargs: Mapping[str, Any]) -> tuple[bool, bool]:
        effort_of(kwargs)  # refuse an unknown tier however the parser is built
        return cls.spec.thinking_default, cls.spec.prompt_start

    @classmethod
    def spec_for(cls, kwargs: Mapping[str, Any]) -> ReasoningSpec:
        """The spec with the requested effort's think pair."""
        start, end = EFFORT_MARKERS[effort_of(kwargs)]
        return msgspec.structs.replace(cls.spec, start=(start,), end=(end,), required=(start, end))

    @classmethod
    def compile(cls, tokenizer: LoadedTokenizer, kwargs: Mapping[str, Any]) -> Machine:
        thinking, prompt_start = cls.resolve_switches(kwargs)
        return compile_machine(
            cls.spec_for(kwargs), tokenizer, thinking=thinking, prompt_start=prompt_start
        )
