"""DeepSeek: R1 (and QwQ, R1 distills), V3.1/V3.2 (thinking off by default), V3-0324 (no
reasoning), Holo2.

R1's template prefills ``<think>`` and the model sometimes omits it, so an assistant turn
starts inside reasoning; output without ``</think>`` is all reasoning (truncated).

Text the model writes before its own ``<think>`` is dropped (``blank_before_start``):
vLLM's ``deepseek_r1`` parser (``BaseThinkingReasoningParser.extract_reasoning``)
partitions the output on the first ``<think>`` and keeps only what follows, so
``\n<think>x</think>y`` gives reasoning ``x``, content ``y``. Its ``deepseek_v3`` parser
delegates to that parser when thinking is on (and Holo2 is served by it), so both rows do
the same. That reference drops any text before the marker when it reads a whole output,
but its streaming path has already sent that text as reasoning; a stream that must agree
with ``parse()`` can only drop what it may hold back, so only a blank (whitespace-only)
run that opens the output is dropped: other text stays reasoning, and the ``<think>``
after it is consumed as before. sglang's ``deepseek-r1`` detector keeps the text (it
only removes the marker), so this is vLLM's behaviour, bounded.

Tool calls (read when a request offers tools):

- ``deepseek_v3`` serves V3.1 and V3.2, which share this reasoning format but not their
  calls: V3.1's chat template (tokenizer_config.json) writes
  ``<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>NAME<｜tool▁sep｜>{…}<｜tool▁call▁end｜>…
  <｜tool▁calls▁end｜>`` (kind ``deepseek_v31``); V3.2 has no chat template, and its
  official encoder (``encoding/*.py`` in the model repo, as the CanIToolCall corpus records
  it) writes a ``<｜DSML｜function_calls>`` block of DSML invokes (kind ``dsml``, the DSML of
  V4's ``encoding_dsv4.py``). The family reads whichever block the model opens. The
  encoders put the calls after ``</think>`` (V4's reference reader asserts it), and this
  family has always kept reasoning open until ``</think>``: a block inside reasoning stays
  reasoning. The ``\\n\\n`` V3.2 writes before its block is layout (the reference reader's
  start token includes it): trimmed from the content.
- ``deepseek_v3_0324`` (DeepSeek-V3 / V3-0324): no ``<think>`` in the vocabulary, so no
  reasoning; its chat template writes ``<｜tool▁call▁begin｜>function<｜tool▁sep｜>NAME\\n
  ```json\\n{…}\\n```<｜tool▁call▁end｜>`` calls in the same section (kind ``deepseek_v3``).
- ``deepseek_r1`` (DeepSeek-R1, R1-0528): the V3 section and body, as R1's chat template
  (tokenizer_config.json) writes an assistant's calls: ``<｜tool▁calls▁begin｜>
  <｜tool▁call▁begin｜>function<｜tool▁sep｜>NAME\\n```json\\n{…}\\n```<｜tool▁call▁end｜>…
  <｜tool▁calls▁end｜>``; vLLM serves R1-0528 with its ``deepseek_v3`` tool parser (its tool
  calling docs, with ``examples/tool_chat_template_deepseekr1.jinja``, which asks for this
  format), and llama.cpp's DeepSeek R1 handler parses the same. The calls follow
  ``</think>``; a section inside reasoning stays reasoning, as for ``deepseek_v3``. The R1
  distills (on Qwen2.5 and Llama 3 bases) and R1-0528-Qwen3-8B copy the template's markup,
  but their vocabularies have none of these tokens and they were not trained to call tools
  this way; the format is read for them too (its markers are then matched as text), and
  QwQ (an alias here) writes Qwen's ``<tool_call>`` JSON, which this family does not read
  (its calls stay content).

A call cut by ``max_tokens`` is dropped; the calls completed before it in the same section
are kept.
"""

from __future__ import annotations

from reasonspan.runtime.core.spec import ReasoningSpec
from reasonspan.runtime.parser.contract import ReasoningParser
from reasonspan.runtime.parser.registry import register
from reasonspan.runtime.shared.hint import DetectionHint
from reasonspan.runtime.toolcalls import ToolFormat

THINK = ("<think>",)
END_THINK = ("</think>",)
# DeepSeek and R1-distill templates open the assistant turn with <｜Assistant｜>; QwQ with
# <|im_start|>. Whichever the tokenizer has bounds the prompt scan.
TURNS = ("<｜Assistant｜>", "<|im_start|>")

CALLS_BEGIN = "<｜tool▁calls▁begin｜>"
CALLS_END = "<｜tool▁calls▁end｜>"
CALL_END = "<｜tool▁call▁end｜>"
SEP = "<｜tool▁sep｜>"

DEEPSEEK_V3_TOOL_CALLS = ToolFormat(
    kinds=("deepseek_v3",),
    open=(CALLS_BEGIN,),
    close=(CALLS_END,),
    call_close=(CALL_END,),
    json_after=(SEP,),
    source="DeepSeek-V3-0324's and DeepSeek-R1's chat templates (tokenizer_config.json) write "
    "`<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>NAME\\n```json\\n{…}"
    "\\n```<｜tool▁call▁end｜>…<｜tool▁calls▁end｜>`; vLLM's deepseek_v3 tool parser reads it "
    "(its docs serve V3-0324 and R1-0528 with it) and so does llama.cpp's DeepSeek R1 handler",
)

DEEPSEEK_V31_V32_TOOL_CALLS = ToolFormat(
    kinds=("deepseek_v31", "dsml"),
    open=(CALLS_BEGIN, "<｜DSML｜function_calls>"),
    close=(CALLS_END, "</｜DSML｜function_calls>"),
    call_close=(CALL_END, "</｜DSML｜invoke>"),
    json_after=(SEP,),
    source="DeepSeek-V3.1's chat template (tokenizer_config.json) writes "
    "`<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>NAME<｜tool▁sep｜>{…}<｜tool▁call▁end｜>…"
    "<｜tool▁calls▁end｜>`; DeepSeek-V3.2's official encoder (no chat template) a "
    "`<｜DSML｜function_calls>` block of DSML invokes",
)


@register
class DeepSeekR1Parser(ReasoningParser):
    spec = ReasoningSpec(
        name="deepseek_r1",
        aliases=("qwq", "deepseek_r1_distill", "r1"),
        start=THINK,
        end=END_THINK,
        turn=TURNS,
        required=THINK + END_THINK,
        prompt_start=True,
        blank_before_start="drop",
        start_source=(
            "template: DeepSeek-R1's tokenizer_config.json (and the R1 distills', QwQ-32B's) ends "
            "the generation prompt with `<think>\\n`"
        ),
        tool_calls=DEEPSEEK_V3_TOOL_CALLS,
        notes="a missing start marker is tolerated (the turn starts in reasoning)",
    )
    # R1 and V3/V3.1 checkpoints share model_type "deepseek_v3"; the template decides.
    hint = DetectionHint(model_types=("deepseek_v3",))


@register
class DeepSeekV3Parser(ReasoningParser):
    spec = ReasoningSpec(
        name="deepseek_v3",
        aliases=("deepseek_v31", "deepseek_v3_1", "deepseek_v32", "deepseek_v3_2"),
        start=THINK,
        end=END_THINK,
        turn=TURNS,
        required=THINK + END_THINK,
        prompt_start=True,
        blank_before_start="drop",
        thinking_default=False,
        thinking_switches=("thinking", "enable_thinking"),
        start_source=(
            "template: DeepSeek-V3.1's tokenizer_config.json ends it with `</think>`, or `<think>` "
            "with `thinking: true`"
        ),
        tool_calls=DEEPSEEK_V31_V32_TOOL_CALLS,
        notes="thinking off by default: the whole response is content",
    )
    # V3.2 introduced the DSML tool-call tokens; V4 keeps them and adds more.
    hint = DetectionHint(
        model_types=("deepseek_v3", "deepseek_v32"),
        tokens=("｜DSML｜",),
        absent=("<｜latest_reminder｜>",),
    )


@register
class DeepSeekV30324Parser(ReasoningParser):
    """DeepSeek-V3 / V3-0324: no reasoning (its vocabulary has no ``<think>``), every token
    is the answer; served for its tool calls (module doc)."""

    spec = ReasoningSpec(
        name="deepseek_v3_0324",
        aliases=("deepseek_v3_chat",),
        turn=("<｜Assistant｜>",),
        prompt_start=False,
        thinking_default=False,
        tool_calls=DEEPSEEK_V3_TOOL_CALLS,
        start_source=(
            "template: DeepSeek-V3-0324's tokenizer_config.json ends the generation prompt with "
            "`<｜Assistant｜>` and has no thinking block"
        ),
        notes="no reasoning (all content); tool calls in <｜tool▁calls▁begin｜> sections",
    )


@register
class Holo2Parser(ReasoningParser):
    """Holo2 (H Company's computer-use VLMs on Qwen3-VL): reasoning as ``deepseek_v3``,
    thinking on by default, and no tool-call format. H Company's API reference (hub.hcompany.ai,
    chat completions) supports native function calling on ``holo3-1-35b-a3b`` only; Holo2
    acts through structured outputs (a JSON object in the content, constrained by a schema),
    its vLLM guide (hcompai/hai-cookbook, holo2/deploy_with_vllm.md) sets a reasoning parser
    and no tool parser, and vLLM's docs list ``holo2`` as a reasoning parser only. (Its
    vocabulary is Qwen's, without DeepSeek's tool-call tokens.)"""

    spec = ReasoningSpec(
        name="holo2",
        start=THINK,
        end=END_THINK,
        turn=TURNS,
        required=THINK + END_THINK,
        prompt_start=True,
        blank_before_start="drop",
        thinking_default=True,
        thinking_switches=("thinking", "enable_thinking"),
        start_source=(
            "documented: Holo2 thinks by default (a DeepSeek-V3.1-style template with `thinking` "
            "defaulting on)"
        ),
        notes="as deepseek_v3, but thinking on by default",
    )
    # A Qwen3-VL fine-tune with Qwen's tokens.
    hint = DetectionHint(needs_evidence=True)
