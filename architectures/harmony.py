"""OpenAI gpt-oss: the harmony format.

An assistant turn is a run of messages, each ``<|start|>assistant`` + header + ``<|message|>``
+ body + ``<|end|>`` (or ``<|return|>`` / ``<|call|>``, which end the turn). The template ends
the prompt with ``<|start|>assistant``, so the first header is the model's own output. The
header names the channel (``<|channel|>analysis``, ``final``, ``commentary``), may name a
recipient (``to=functions.get_weather``, before or after the channel) and a content type
(``<|constrain|>json``). The routing is:

- ``analysis`` body: reasoning; ``final`` body: content; ``commentary`` without a recipient
  (a preamble to the user): content; an unknown or missing channel: content.
- A ``to=functions.X`` recipient makes the message a tool call, whatever its channel: its
  header, its arguments and its terminator (``<|call|>``) are labelled TOOL_CALL, a channel
  of their own: ``content`` holds only the final (and recipient-less commentary) text, and
  ``ParseResult.tool_calls`` / ``TextSplitter.take_tool_calls()`` hold the whole harmony
  message for the tool parser; a server's ``tool_calls`` come from
  ``HarmonyParser.tool_call_reader()`` (the function from the recipient, the arguments from
  the body). Usage counts it as completion, not reasoning. Built-in tool
  recipients (``to=python``, ``to=browser.search``: tools the server runs itself, never
  offered as functions) are TOOL_CALL too, in ``tool_call_text`` for such a server, but
  not in ``tool_calls`` and never in the content.
- Structural tokens and the headers of other messages are DELIMITER.
- Several messages of one channel read as one text joined with ``\n``: vLLM's
  ``parse_chat_output`` (its harmony output reader, on the openai-harmony
  ``StreamableParser`` messages) returns ``"\n".join`` of the analysis bodies as the
  reasoning and of the final and recipient-less commentary bodies as the content, so two
  preambles and an answer read ``pre1\npre2\nanswer``. The join goes between bodies that
  have text (``Trim.join``): an empty message adds no blank line, where the reference
  would join its empty text too.

The machine is the runtime's message machine (``runtime/shared/messages.py``: headers
held until ``<|message|>`` and read on their tokens' bytes); this module gives it
harmony's structural tokens and the routing above (:class:`HarmonyMachine`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from reasonspan.runtime.core.labels import CONTENT, REASONING, TOOL_CALL
from reasonspan.runtime.core.machine import Machine
from reasonspan.runtime.core.spec import ReasoningSpec, Trim
from reasonspan.runtime.parser.contract import ReasoningParser
from reasonspan.runtime.parser.registry import register
from reasonspan.runtime.shared import messages
from reasonspan.runtime.shared.messages import MessageMachine, MessageToolCalls
from reasonspan.tokenizer.loader import LoadedTokenizer

START, END, MESSAGE, CHANNEL = "<|start|>", "<|end|>", "<|message|>", "<|channel|>"
CONSTRAIN, RETURN, CALL = "<|constrain|>", "<|return|>", "<|call|>"

_JOIN_MESSAGES = Trim(join="\n")
"""The bodies of several messages of one channel (analysis messages; commentary preambles
and the final answer) are joined with ``\n``, as vLLM's harmony output reader does."""

_FUNCTIONS = b"functions."


class HarmonyMachine(MessageMachine):
    """The message machine with harmony's structural tokens and channels."""

    classes = (
        (START, messages.START),
        (END, messages.END),
        (MESSAGE, messages.MESSAGE),
        (CHANNEL, messages.CHANNEL),
        (CONSTRAIN, messages.CONSTRAIN),
        (RETURN, messages.RETURN),
        (CALL, messages.CALL),
    )

    def read_header(self, header: Sequence[int]) -> tuple[bool, int]:
        """A recipient other than the assistant or the user (a function, or a built-in
        tool such as ``to=python``) makes a tool call; else ``analysis`` is reasoning and
        any other channel content."""
        name, recipient = self.header_words(header)
        if recipient not in (None, b"assistant", b"user"):
            return True, TOOL_CALL
        return False, REASONING if name == b"analysis" else CONTENT

    def function_name(self, header: Sequence[int]) -> str | None:
        """The function a header calls (``get_weather`` for ``to=functions.get_weather``),
        or None when the header is not a function call."""
        _, recipient = self.header_words(header)
        if recipient is None or not recipient.startswith(_FUNCTIONS):
            return None
        return recipient[len(_FUNCTIONS) :].decode("utf-8", errors="replace")


@register
class HarmonyParser(ReasoningParser):
    spec = ReasoningSpec(
        name="openai_gptoss",
        aliases=("gpt_oss", "harmony", "gptoss", "openai_gpt_oss"),
        start=("<|channel|>analysis<|message|>",),
        # What a thinking budget forces: close the analysis message and open the final one.
        end=("<|end|><|start|>assistant<|channel|>final<|message|>",),
        turn=(START,),
        required=(START, END, MESSAGE, CHANNEL),
        prompt_start=False,
        # Several messages of a channel read as one text joined with "\n" (module doc).
        reasoning_trim=_JOIN_MESSAGES,
        content_trim=_JOIN_MESSAGES,
        start_source=(
            "documented: harmony; the prompt ends `<|start|>assistant` and the model writes the "
            "channel header"
        ),
        notes="custom machine: headers held until <|message|> and read on token bytes; "
        "analysis = reasoning, final/commentary = content; a to=functions.X header and its "
        "<|call|> are TOOL_CALL (tool_calls, not content)",
    )

    @classmethod
    def compile(cls, tokenizer: LoadedTokenizer, kwargs: Mapping[str, Any]) -> Machine:
        key = ("harmony", cls.spec)
        cached = tokenizer.cache.get(key)
        if isinstance(cached, HarmonyMachine):
            return cached
        machine = HarmonyMachine(cls.spec, tokenizer)
        tokenizer.cache[key] = machine
        return machine

    def tool_call_reader(self) -> MessageToolCalls:
        """Tool-call messages as calls: the function from the header's recipient, the
        arguments from the body (for a server's ``tool_calls``)."""
        machine = self.machine
        if not isinstance(machine, HarmonyMachine):
            raise TypeError(f"openai_gptoss needs a HarmonyMachine, not {type(machine).__name__}")
        return MessageToolCalls(machine)

    def grammar_gate_token(self, prompt_token_ids: Sequence[int] | np.ndarray) -> int | None:
        """``<|message|>`` when the prompt leaves the model to write a header first (it ends
        at ``<|start|>assistant`` or inside a header): the state there is not reasoning, yet
        the header is not the answer, so a grammar engine waits for the end of the first
        header (then the batch's gate decides: analysis reasons, final is the answer).
        None when the prompt ends inside a body (a prefilled final message)."""
        machine = self.machine
        assert isinstance(machine, HarmonyMachine)
        if machine.ends_in_body(prompt_token_ids):
            return None
        return self.tokenizer.single_token_id(MESSAGE)

    def end_marker_token_ids(self) -> list[int]:
        """A budget must not just close the analysis message (the model could open another
        one): it forces ``<|end|>`` and the header of the final message."""
        return self.tokenizer.encode(self.spec.end[0])
