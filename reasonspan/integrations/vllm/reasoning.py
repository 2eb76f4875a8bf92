"""vLLM's ``ReasoningParser`` for a reasonspan family, working on token ids.

vLLM builds one of these per request (its ``Parser`` holds one per stream and choice) and
one per structured-output request for the grammar gate. Streaming reads ``delta_token_ids``
through one ``TextSplitter`` per request, started from the prompt vLLM hands over
(``set_prompt_token_ids`` / ``adjust_initial_state_from_prompt``), so the split is the one
``parse()`` gives however the deltas fall (k > 1 tokens per step included) and a template
that opened ``<think>`` in the prompt is honoured.

The class declares itself engine-based (``engine_based_streaming``): vLLM then passes
deltas only, asks :meth:`has_engine_confirmed_reasoning_end` when reasoning ended, and calls
:meth:`finish_streaming` for the tokens held at a possible marker. Without a tool parser it
also streams the answer (``opens_reasoning_in_content``), so content text gets the same
treatment as in ``parse()``.

Non-streaming, vLLM hands text only (``extract_reasoning``): the text is re-encoded with
the tokenizer and split as token ids. Text that re-encodes differently than it was
generated (a marker the model spelled in pieces) may split differently; forwarding
``model_output_token_ids`` from vLLM's ``Parser.parse`` to the reasoning parser would remove
the re-encoding.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, ClassVar

from reasonspan.factory import create_parser_sync
from reasonspan.integrations.vllm.markers import (
    GATE_FAMILIES,
    end_token_ids,
    honoured_switches,
    may_hold_marker,
)
from reasonspan.integrations.vllm.names import NO_PROMPT_START
from reasonspan.integrations.vllm.text import (
    ReasoningTail,
    delta_message,
    in_text_mode,
    strips_reasoning_tail,
    text_mode,
    vllm_text,
)
from reasonspan.integrations.vllm.tokens import as_ids, encode, loaded_tokenizer
from reasonspan.runtime import Label, ParseResult, ReasoningParser, TextSplitter
from reasonspan.runtime.toolcalls import ToolCall
from reasonspan.tokenizer.loader import LoadedTokenizer

_NOT_CONTENT = frozenset({Label.REASONING, Label.DELIMITER})


class ReasoningAdapter:
    """The methods of vLLM's ``ReasoningParser``, for the family in :attr:`family`.

    Mixed in ahead of vLLM's class by :func:`reasoning_class`; ``vllm_base`` is that class
    (typed loosely: vLLM is an optional dependency)."""

    family: ClassVar[str]
    vllm_base: ClassVar[Any]
    vllm_name: ClassVar[str | None] = None
    """The vLLM name this class is registered under in place of a built-in (None: the
    plugin's own ``reasonspan_<family>``)."""
    empty_reasoning: ClassVar[str | None] = ""
    """``extract_reasoning``'s reasoning for an output that began in reasoning and closed it
    at once: ``""`` as vLLM's marker parsers return it (deepseek_r1), ``None`` under the
    name of one of vLLM's engine-based parsers (step3p5), which return no empty field."""
    engine_based_streaming: ClassVar[bool] = True
    opens_reasoning_in_content: ClassVar[bool] = True

    def __init__(self, tokenizer: Any, *args: Any, **kwargs: Any) -> None:
        type(self).vllm_base.__init__(self, tokenizer, *args, **kwargs)
        self._tok = loaded_tokenizer(tokenizer)
        self._kwargs = honoured_switches(
            self.family,
            self._tok,
            kwargs.get("chat_template_kwargs") or {},
            getattr(tokenizer, "chat_template", None),
        )
        self._start = NO_PROMPT_START.get(self.vllm_name or "") if text_mode() == "vllm" else None
        self._rs = self._new_parser()
        gate = GATE_FAMILIES.get(self.family)
        self._gate = self._rs if gate is None else self._new_parser(gate)
        self._end_ids = end_token_ids(self._rs)
        self._tail = ReasoningTail() if strips_reasoning_tail(self.family) else None
        self._prompt: list[int] | None = None
        self._split: TextSplitter | None = None
        self._last_delta: list[int] = []
        self._delta_content: list[int] | None = None
        self._finished = False
        self._handed_over = False
        self._tools: list[dict[str, Any]] | None = None
        self.pending: tuple[str, list[ToolCall]] | None = None
        """The content and calls of the delta where reasoning ended, for the linked tool
        parser (vLLM asks it next, with the same delta)."""
        self.whole: ParseResult | None = None
        """The last ``extract_reasoning`` result read with tools, for the linked tool
        parser's ``extract_tool_calls``."""

    def _new_parser(self, family: str | None = None) -> ReasoningParser:
        """A parser of this request's family (or ``family``), with its switches, and the
        start state without a prompt that vLLM's parser of this name assumes (``vllm``
        text mode, :data:`~.names.NO_PROMPT_START`)."""
        return in_text_mode(
            create_parser_sync(
                family or self.family, self._tok, self._kwargs, default_reasoning=self._start
            )
        )

    # -- the prompt --------------------------------------------------------------------

    def set_prompt_token_ids(self, prompt_token_ids: Sequence[int]) -> None:
        """The rendered prompt: it decides the start state (a template that opened
        ``<think>``, or closed it to switch thinking off)."""
        self._prompt = list(prompt_token_ids)

    def adjust_initial_state_from_prompt(self, prompt_token_ids: Sequence[int]) -> None:
        self._prompt = list(prompt_token_ids)

    # -- reasoning end -----------------------------------------------------------------

    @property
    def reasoning_end_token_ids(self) -> frozenset[int]:
        """Every token that alone ends reasoning (empty when reasoning can end another
        way: :func:`~.markers.end_token_ids`). vLLM's grammar gate then asks
        :meth:`find_reasoning_end`, which is vLLM's default (None: "ask
        :meth:`is_reasoning_end_streaming`"), so the prompt scan still decides."""
        return self._end_ids[0]

    @property
    def implicit_reasoning_end_token_ids(self) -> frozenset[int]:
        """The tool-call starts among :attr:`reasoning_end_token_ids` (also content)."""
        return self._end_ids[1]

    def is_reasoning_end(self, input_ids: Sequence[int]) -> bool:
        """Whether reasoning is over at the end of ``input_ids`` (a prompt, or a prompt and
        the output so far): reasonspan's right-to-left scan of the current turn, so an old
        ``</think>`` in the history never decides it. Ids that hold no marker at all (an
        output without its prompt) are where the turn starts: in reasoning when this
        parser starts there without a prompt. A family that reports the model's reasoning
        as content answers with the markers that end that reasoning (:data:`GATE_FAMILIES`):
        a grammar must not constrain the model's thinking."""
        ids = as_ids(self._tok, list(input_ids))
        gate = self._gate
        if not may_hold_marker(gate, ids):
            return not gate.default_reasoning
        return not gate.is_prompt_in_reasoning(ids)

    def is_reasoning_end_streaming(
        self, input_ids: Sequence[int], delta_ids: Iterable[int]
    ) -> bool:
        """The same scan over everything so far (the grammar gate's question: it pops
        tokens off the end to find where reasoning ended, so the answer must not depend
        on what was asked before)."""
        return self.is_reasoning_end(input_ids)

    def has_engine_confirmed_reasoning_end(self) -> bool:
        """Reasoning ended in what was streamed (the marker released, not merely seen)."""
        return self._split is not None and not self._split.is_reasoning

    # -- token ids ---------------------------------------------------------------------

    def extract_content_ids(self, input_ids: list[int]) -> list[int]:
        """The content tokens of ``input_ids``: during a stream, vLLM asks this of the
        delta in which reasoning ended (the tokens after the end marker, which its tool
        parser then reads); otherwise ``input_ids`` is a whole output. Token strings are
        accepted too (and returned as strings)."""
        if self._delta_content is not None and list(input_ids) == self._last_delta:
            return list(self._delta_content)
        ids = as_ids(self._tok, input_ids)
        labels = self._new_parser().parse(ids, self._prompt).labels
        pairs = zip(input_ids, labels, strict=True)
        return [item for item, label in pairs if label not in _NOT_CONTENT]

    def count_reasoning_tokens(self, token_ids: Sequence[int]) -> int:
        """Reasoning tokens of a whole output (markers not counted), from the prompt's
        start state."""
        ids = as_ids(self._tok, list(token_ids))
        return self._new_parser().parse(ids, self._prompt).reasoning_tokens

    # -- text --------------------------------------------------------------------------

    def extract_reasoning(self, model_output: str, request: Any) -> tuple[str | None, str | None]:
        """``(reasoning, content)`` of a whole output. vLLM hands text only: it is
        re-encoded with the tokenizer (see the module docstring). With a linked tool
        parser the calls are read in the same parse (and left out of the content)."""
        tools = self._tools if _auto_tools(request) else None
        res = self._new_parser().parse(encode(self._tok, model_output), self._prompt, tools=tools)
        self.whole = res if tools is not None else None
        # vLLM's convention: an output that began in reasoning has a reasoning string,
        # empty if the model closed it at once (None for its engine-based parsers); an
        # empty field otherwise is None.
        text = (res.reasoning or "").rstrip() if self._tail is not None else res.reasoning
        reasoning = text or (self.empty_reasoning if res.started_in_reasoning else None)
        return reasoning, vllm_text(res.content)

    def extract_reasoning_streaming(
        self,
        previous_text: str,
        current_text: str,
        delta_text: str,
        previous_token_ids: Sequence[int],
        current_token_ids: Sequence[int],
        delta_token_ids: Sequence[int],
    ) -> Any:
        """The reasoning and content text these delta tokens release (``None`` when they
        release nothing: held at a possible marker, or a consumed marker)."""
        delta = list(delta_token_ids)
        self._last_delta = delta
        reasoning, content, calls = self.feed(delta)
        if self._handed_over or not self.has_engine_confirmed_reasoning_end():
            return delta_message(reasoning, content, calls)
        # Reasoning is over: vLLM hands this delta's content tokens to its tool parser
        # (extract_content_ids), or, without one, goes on asking this parser.
        self._handed_over = True
        self._delta_content = self._content_of_last_delta()
        if self._tools is not None:
            # The linked tool parser sends them, from this request's one splitter.
            self.pending = (content, calls)
            return delta_message(reasoning, "")
        return delta_message(reasoning, content, calls)

    def finish_streaming(self) -> Any:
        """What the splitter still holds (tokens at a possible marker, trimmed runs): vLLM
        asks at the end of the stream, and also when reasoning ended, where a linked tool
        parser goes on with the same splitter (nothing is finished then)."""
        if self._tools is not None and self.has_engine_confirmed_reasoning_end():
            return None
        return delta_message(*self.finish_split())

    def shares(self, tok: LoadedTokenizer) -> bool:
        """Whether this parser reads the same vocabulary (a linked tool parser's check)."""
        return self._tok is tok

    # -- the request's one splitter, shared with a linked tool parser ------------------

    def link_tools(self, tools: list[dict[str, Any]]) -> None:
        """Called by the tool parser vLLM builds beside this one, for the same family:
        the calls are read by this request's splitter (one parse, not two)."""
        self._tools = tools

    def _splitter(self) -> TextSplitter:
        if self._split is None:
            self._split = TextSplitter(self._rs, self._prompt, tools=self._tools)
        return self._split

    def feed(self, delta: list[int]) -> tuple[str, str, list[ToolCall]]:
        split = self._splitter()
        reasoning, content = split.feed(delta)
        if self._tail is not None:
            reasoning = self._tail(reasoning)
        return reasoning, content, split.take_tool_calls()

    def finish_split(self) -> tuple[str, str, list[ToolCall]]:
        if self._finished:
            return "", "", []
        self._finished = True
        split = self._splitter()
        reasoning, content = split.finish()
        if self._tail is not None:
            reasoning = self._tail(reasoning)
        return reasoning, content, split.take_tool_calls()

    def _content_of_last_delta(self) -> list[int]:
        """The content tokens of the delta just fed, from the splitter's own labels (those
        of ``parse()`` of the output so far; tokens held at a possible marker labelled as
        if the output ended there): nothing is parsed again."""
        delta = self._last_delta
        labels = self._splitter().fed_labels(len(delta))
        return [t for t, lab in zip(delta, labels, strict=True) if lab not in _NOT_CONTENT]


def _auto_tools(request: Any) -> bool:
    """vLLM reads calls with the tool parser only for ``tool_choice`` auto (or unset);
    "required" and named choices are JSON it reads itself, "none" reads none."""
    return getattr(request, "tool_choice", None) in (None, "auto")


def reasoning_class(
    family: str, base: Any, *, builtin: type | None = None, vllm_name: str | None = None
) -> type[ReasoningAdapter]:
    """A subclass of vLLM's ``ReasoningParser`` (``base``) for one family; registered under
    vLLM's name ``vllm_name``, a subclass of that name's built-in class too (``builtin``:
    :mod:`.builtins` says what is inherited from it: nothing that runs)."""
    from reasonspan.integrations.vllm.builtins import class_name, engine_based, masked

    name = class_name(family, vllm_name, "ReasoningParser")
    space = masked(builtin, base, ReasoningAdapter) if builtin is not None else {}
    space |= {"family": family, "vllm_base": base, "vllm_name": vllm_name}
    space |= {"__module__": __name__, "__qualname__": name}
    if builtin is not None and engine_based(builtin):
        space["empty_reasoning"] = None
    bases = (ReasoningAdapter, base) if builtin is None else (ReasoningAdapter, builtin)
    cls: type[ReasoningAdapter] = type(name, bases, space)
    globals()[name] = cls  # importable by name, as vLLM's lazy registry and pickling expect
    return cls
