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
from reasonspan.runtime.core.labels import CONTENT, REASONING, TOOL
from reasonspan.runtime.core.machine import Machine
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
        start_source=(
            "documented: the prompt ends `<|start|>assistant`; the model writes the recipient "
            "header (MAX's muse_glimmer parser)"
        ),
        notes="custom machine (harmony's): to=self bodies are reasoning, to=user the answer, "
        "other recipients tool channels kept in content (TOOL); headers dropped; self "
        "blocks joined with \\n",
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
