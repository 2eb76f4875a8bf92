"""Meta Muse Glimmer: harmony-like messages addressed to a recipient.

Facts and where they come from:

- An assistant message is ``<|start|>assistant to=RECIPIENT<|message|>BODY`` closed by
  ``<|eom|>`` or ``<|eot|>``; ``<|start|>``, ``<|message|>``, ``<|eom|>`` and ``<|eot|>``
  are single special tokens. A ``to=self`` body is reasoning, ``to=user`` (or no
  recipient) is the answer, any other recipient is a tool channel whose body goes to the
  content for the tool parser; headers and framing tokens are dropped (Modular MAX's
  ``muse_glimmer`` reasoning parser, ``REASONING_START = "to=self<|message|>"``,
  ``REASONING_END = "<|eom|>"``; vLLM's muse_glimmer parser has the same markers).
- The chat template's generation prompt stops after ``<|start|>assistant``, leaving the
  model to write the recipient (MAX's ``will_reason_after_prompt``): the start state is
  decided by the first header, as in harmony (``openai_gptoss``): this family runs the
  runtime's message machine (``runtime/shared/messages.py``) with its own structural
  tokens and header rule.
- Switch: ``reasoning_strength`` (the ``Reasoning strength:`` line of the system prompt;
  Meta's API offers low/medium/high/xhigh). It changes how much the model reasons, not
  the format, so it does not change the routing; a value outside those four, or not a
  string, is refused with an error naming it.
- Implicit end: opening any non-self message ends reasoning (its header decides, as in
  MAX's parser); a tool message's body is labelled TOOL and stays in the content (the
  ATEM ``<atem:invoke name=…>`` markup in it names the function).
- A message to any other recipient passes through *framed*: its ``to=NAME<|message|>``
  stays in the content before its body (TOOL, as the body), because the ATEM tool parser
  downstream needs the recipient for channel scoping. vLLM's engine ``muse_glimmer``
  parser hands the tool channel over starting at its header (its
  ``test_tool_handoff_preserves_channel_framing``: the content starts with
  ``to=read.read<|message|>``); ``<|start|>assistant``, the space before ``to=`` and the
  terminators are dropped as for every message (:meth:`MuseMachine.run`).
- ``force_nonempty_content: true`` (chat_template_kwargs): a turn that produced only
  thinking (no answer, no tool message) returns its reasoning as the content, as
  SGLang's ``force_nonempty_content`` swap does for the families that take it (its
  ``Nemotron3Detector``: reasoning and normal text swapped when the normal text is
  empty); ``ReasoningSpec.reasoning_as_content_if``.

Text: several ``to=self`` messages join with ``\\n`` in the reasoning text, as the
engines' muse_glimmer parsers that collect the bodies do: ``Trim(join="\\n")`` writes it
before the first text of a later block. The tokens keep their labels; only the text gets
the join.

Not handled: MAX's parser also holds back body text that may grow into a bare
`` to=NAME<|message|>`` header written *inside* a body (a model that skips ``<|eom|>`` and
``<|start|>assistant``). Here such a ``<|message|>`` is a stray delimiter and the body
keeps its channel, as in harmony; a later ``<|start|>`` still re-reads the header.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from reasonspan.runtime.core.errors import InvalidOptionError
from reasonspan.runtime.core.labels import CONTENT, DELIMITER, REASONING, TOOL
from reasonspan.runtime.core.machine import Cursor, Machine, Spill
from reasonspan.runtime.core.spec import ReasoningSpec, Trim
from reasonspan.runtime.parser.contract import ReasoningParser
from reasonspan.runtime.parser.registry import register
from reasonspan.runtime.shared import messages
from reasonspan.runtime.shared.hint import DetectionHint
from reasonspan.runtime.shared.messages import MessageMachine
from reasonspan.tokenizer.loader import LoadedTokenizer

START, MESSAGE, EOM, EOT = "<|start|>", "<|message|>", "<|eom|>", "<|eot|>"
STRENGTHS = ("low", "medium", "high", "xhigh")


class MuseMachine(MessageMachine):
    """The message machine (harmony's) with Muse's tokens and recipient rule."""

    classes = (
        (START, messages.START),
        (EOM, messages.END),
        (MESSAGE, messages.MESSAGE),
        (EOT, messages.RETURN),
    )

    def run(
        self,
        tokens: Sequence[int],
        reasoning: bool,
        cursor: Cursor,
        out_ids: list[int],
        out_labels: bytearray,
        spill: list[Spill] | None = None,
    ) -> bool:
        """The message machine's routing, then each tool message's header framed (module
        doc). A header is emitted whole when its ``<|message|>`` arrives, so every header
        this call decided is among the tokens it added."""
        n = len(out_ids)
        state = super().run(tokens, reasoning, cursor, out_ids, out_labels, spill)
        codes = self.codes
        for i in range(n, len(out_ids)):
            if codes[out_ids[i]] == messages.MESSAGE and out_labels[i] == DELIMITER:
                self._frame(n, i, out_ids, out_labels, spill)
        return state

    def _frame(
        self,
        n: int,
        i: int,
        out_ids: list[int],
        out_labels: bytearray,
        spill: list[Spill] | None,
    ) -> None:
        """Relabel ``to=NAME<|message|>`` of the header ending at ``out_ids[i]`` as TOOL
        when it opens a tool message; the bytes before ``to=`` in its first token stay
        consumed (the token is a DELIMITER whose rest is spilled to the content)."""
        j = i
        while j > n and out_labels[j - 1] == DELIMITER and not self.codes[out_ids[j - 1]]:
            j -= 1
        if self.read_header(out_ids[j : i + 1])[1] != TOOL:
            return
        tb = self.token_bytes
        text = b"".join(tb[t] for t in out_ids[j:i])
        at = text.rfind(b"to=")
        pos = 0
        for k in range(j, i):
            size = len(tb[out_ids[k]])
            if pos + size > at:
                if pos < at:
                    if spill is not None:
                        spill.append((k, tb[out_ids[k]][at - pos :], CONTENT, 1))
                    k += 1
                out_labels[k : i + 1] = bytes((TOOL,)) * (i + 1 - k)
                return
            pos += size

    def read_header(self, header: Sequence[int]) -> tuple[bool, int]:
        """``to=self`` → reasoning; ``to=user`` or none → content; else a tool channel whose
        body stays in the content (TOOL). Never a harmony tool call."""
        _, recipient = self.header_words(header)
        if recipient == b"self":
            return False, REASONING
        if recipient in (None, b"user"):
            return False, CONTENT
        return False, TOOL


@register
class MuseGlimmerParser(ReasoningParser):
    spec = ReasoningSpec(
        name="muse_glimmer",
        aliases=("muse", "meta_muse_glimmer"),
        start=(" to=self<|message|>",),
        end=(EOM,),
        turn=(START,),
        required=(START, MESSAGE, EOM, EOT),
        prompt_start=False,
        reasoning_trim=Trim(join="\n"),
        reasoning_as_content_if=(("force_nonempty_content", True),),
        start_source=(
            "documented: the prompt ends `<|start|>assistant`; the model writes the recipient "
            "header (MAX's muse_glimmer parser)"
        ),
        notes="custom machine (harmony's): to=self bodies are reasoning, to=user the answer, "
        "other recipients tool channels kept in content framed by their to=NAME<|message|> "
        "(TOOL); other headers dropped; self blocks joined with \\n; force_nonempty_content "
        "returns a thinking-only turn as content",
    )
    hint = DetectionHint(model_types=("muse_glimmer", "muse_glimmer_text"))

    @classmethod
    def resolve_switches(cls, kwargs: Mapping[str, Any]) -> tuple[bool, bool]:
        """``reasoning_strength`` must be one of ``STRENGTHS``; it does not change routing."""
        strength = kwargs.get("reasoning_strength")
        if strength is not None and strength not in STRENGTHS:
            raise InvalidOptionError(
                "reasoning_strength", strength, "one of " + ", ".join(map(repr, STRENGTHS))
            )
        return True, False

    @classmethod
    def compile(cls, tokenizer: LoadedTokenizer, kwargs: Mapping[str, Any]) -> Machine:
        cls.resolve_switches(kwargs)
        key = ("muse_glimmer", cls.spec)
        cached = tokenizer.cache.get(key)
        if isinstance(cached, MuseMachine):
            return cached
        machine = MuseMachine(cls.spec, tokenizer)
        tokenizer.cache[key] = machine
        return machine
