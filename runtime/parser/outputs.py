"""What a parser's labels become downstream: text, tool calls, and the markers a budget
or a grammar engine needs.

The hooks of :class:`~.contract.ReasoningParser` that the runtime and the serving layer
read (a decoder and its shared fresh state, the special tokens text leaves out, the tool
call extractor and reader, budget and grammar markers); a family overrides the few that
its format needs (harmony: the tool-call reader, the end markers, the grammar gate).
Its own module because none of it is on the labelling path: :mod:`.contract` labels
tokens, this says what to do with the labels.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import partial
from typing import Any

import numpy as np

from reasonspan.runtime.core.machine import Machine
from reasonspan.runtime.core.spec import MarkerKind
from reasonspan.runtime.text.decoder_states import DecoderState
from reasonspan.runtime.text.decoding import LabelledDecoder
from reasonspan.runtime.text.formatters import TextFormatterFactory
from reasonspan.runtime.toolcalls import ToolCallExtractor, Tools, as_tools, compile_format
from reasonspan.runtime.wire.call_messages import ToolCallReader
from reasonspan.tokenizer.loader import LoadedTokenizer


class ParserOutputs:
    """The output hooks of :class:`~.contract.ReasoningParser` (its base class)."""

    __slots__ = ()

    # Set by ReasoningParser.__init__ (see there).
    tokenizer: LoadedTokenizer
    _machine: Machine
    _fresh: dict[tuple[bool, bool], DecoderState]
    _rfmt: TextFormatterFactory | None
    _cfmt: TextFormatterFactory | None

    def skipped_token_ids(self) -> frozenset[int]:
        """Token ids left out of the text with ``skip_special_tokens``: the tokenizer's
        special tokens (end of sequence, ``<|im_end|>``, a turn marker), except the family's
        tool markers, which it keeps in content for the tool parser (after reasoning ended
        they are labelled CONTENT), every marker of its tool-call format
        (:meth:`~reasonspan.runtime.toolcalls.ToolFormat.markers`: open, close and
        separator markers, and those its kinds read inside a call, such as ``[ARGS]``), and
        the pieces of its multi-token markers, so a marker kept never loses half of itself
        (``<|close|>think<|sep|>`` must not become ``think``). A token labelled TOOL is never
        left out, whatever it is.

        Why a tool-call marker is kept: one the model writes where no call is made of it
        (inside its reasoning, or a close with no call open) shows as the text it is,
        whether or not the tokenizer calls it special, as engines show it: they decode with
        ``skip_special_tokens=False`` whenever tools are offered (vLLM's Mistral, InternLM2,
        Gemma 4 and MiniCPM tool parsers in ``adjust_request``, SGLang's chat serving for
        any request with tools), so the call the model began in its thinking is visible
        there, and a tool parser reading the content sees both ends of a call."""
        machine = self._machine
        got = machine.skipped_ids
        if got is None:  # once per machine, shared by every parser and request on it
            tok = self.tokenizer
            pieces = {
                tid
                for marker in machine.byte_markers
                for tid in tok.encode(marker.decode("utf-8", "replace"))
            }
            kept = {t for t, k in machine.id_markers.items() if k == MarkerKind.TOOL}
            fmt = machine.spec.tool_calls
            for marker in fmt.markers() if fmt is not None else ():
                tid = tok.single_token_id(marker)
                kept.update(tok.encode(marker) if tid is None else (tid,))
            got = machine.skipped_ids = tok.special_ids - pieces - kept
        return got

    def decoder(
        self, *, skip_special_tokens: bool = True, call_gaps: bool = False
    ) -> LabelledDecoder:
        """A fresh text decoder for this parser's tokenizer and text formatters.

        ``skip_special_tokens`` (the default, as servers decode) drops special tokens from
        the text (end of sequence, ``<|im_end|>``), but never a TOOL-labelled token nor a
        piece of a multi-token marker (:meth:`skipped_token_ids`)."""
        return LabelledDecoder(
            self.tokenizer,
            self.text_formatters(),
            skip_ids=self.skipped_token_ids() if skip_special_tokens else frozenset(),
            call_gaps=call_gaps,
        )

    def fresh_state(
        self, *, skip_special_tokens: bool = True, call_gaps: bool = False
    ) -> DecoderState:
        """The state of a fresh :meth:`decoder` with these options, and the states its
        requests reach from it (``runtime/text/decoder_states.py``): its ``plain_channels()``,
        ``holds_trail()`` and ``finish()`` are worked out once per machine, as
        :meth:`skipped_token_ids` is (a fresh decoder's answers depend on nothing else), so
        a runtime admitting a request need not build the request's decoder (two byte
        decoders and two formatters) to ask it."""
        key = (skip_special_tokens, call_gaps)
        got = self._fresh.get(key)
        if got is None:
            got = self._fresh[key] = DecoderState.fresh(
                partial(self.decoder, skip_special_tokens=skip_special_tokens, call_gaps=call_gaps)
            )
        return got

    def tool_call_extractor(
        self, tools: Tools | Sequence[Mapping[str, Any]] | None = None
    ) -> ToolCallExtractor | None:
        """A fresh per-request reader of this family's tool-call regions (None when the
        family declares no :attr:`ReasoningSpec.tool_calls` format). ``tools`` (the
        request's OpenAI ``tools``) types the values of formats that write them untyped."""
        fmt = self._machine.spec.tool_calls
        if fmt is None:
            return None
        return ToolCallExtractor(compile_format(fmt, self.tokenizer), as_tools(tools))

    def tool_call_reader(self) -> ToolCallReader | None:
        """A fresh splitter of this family's TOOL_CALL tokens into calls (function name,
        argument tokens), for a server's ``tool_calls``; None for families that label no
        tool-call messages (their tool markers stay in the content, for the user's own
        tool parser)."""
        return None

    def text_formatters(self) -> tuple[TextFormatterFactory | None, TextFormatterFactory | None]:
        return self._rfmt, self._cfmt

    def end_marker_token_ids(self) -> list[int]:
        """Token ids that close reasoning when emitted, for budgets: the first end marker
        that this parser's machine matches (a family may declare end markers that only some
        of its tokenizers have, e.g. Mistral's ``[/THINK]`` or older Magistral's ``</think>``)."""
        machine = self._machine
        for text in machine.spec.end:
            tid = self.tokenizer.single_token_id(text)
            if tid is not None and tid in machine.id_markers:
                return [tid]
            if text.encode("utf-8") in machine.byte_markers:
                return self.tokenizer.encode(text)
        return []

    def grammar_gate_token(self, prompt_token_ids: Sequence[int] | np.ndarray) -> int | None:
        """The token a grammar engine waits for before it constrains the output, or None:
        the grammar then starts where the output's state says (in the answer, or after the
        reasoning ends). A family whose turn opens with a header that is neither reasoning
        nor answer (harmony) names the token that ends the header."""
        return None
