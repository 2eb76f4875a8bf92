"""IBM Granite 4.x thinking checkpoints (``granite_thinking``).

Not the Granite 3.x phrases (``granite``): Granite 4.x thinking writes Nemotron-3-style
special tokens. Facts and where they come from (vLLM's ``vllm/parser/granite_thinking.py``,
adapter ``vllm/reasoning/granite_thinking_engine_reasoning_parser.py``; the Granite 4.x
template is not in the public corpus this was checked against, so the start state is
``documented``):

- ``<think>``/``</think>`` prefilled by the template with thinking on, ``<tool_call>``
  (XML, as Nemotron 3) ends reasoning; the parser is ``NemotronV3Parser`` with its config.
- ``enable_thinking`` (default on). With ``enable_thinking: false`` or
  ``force_nonempty_content: true``, a response with no content returns its reasoning as
  content (Nemotron 3's swap, ``reasoning_as_content_if``; a stream learns it at
  ``finish()``).
- The template writes ``\\n</think>\\n``: the engine strips the leading newlines of the
  content; here the content text loses its leading newlines after ``</think>`` and the
  reasoning text the one newline before it (the template's layout, not reasoning). Token
  labels are unchanged; streaming and ``parse()`` trim alike.
- Thinking off only moves the turn start (content); markers stay matched, as nemotron_v3.
- The prompt scan is bounded by ``<|start_of_role|>``, Granite's role opener (the same
  token the granite 3 family uses).
"""

from __future__ import annotations

import msgspec

from reasonspan.architectures.nemotron import NemotronV3Parser
from reasonspan.runtime.core.spec import Trim
from reasonspan.runtime.parser.registry import register


@register
class GraniteThinkingParser(NemotronV3Parser):
    """Nemotron 3's parser (its switches hook included) with Granite's name, role opener
    and template layout."""

    spec = msgspec.structs.replace(
        NemotronV3Parser.spec,
        name="granite_thinking",
        aliases=("granite4_thinking", "granite_4_thinking"),
        turn=("<|start_of_role|>",),
        reasoning_trim=Trim(trail="\n", trail_max=1),
        content_trim=Trim(lead="\n"),
        start_source=(
            "documented: vLLM's granite_thinking parser (Nemotron 3's config) starts in "
            "reasoning with enable_thinking on (the template prefills `<think>`)"
        ),
        notes="as nemotron_v3 (empty content → reasoning is the content when asked); the "
        "template's newlines around </think> trimmed from the text",
    )
