"""How a parser class becomes a parser: switches, spec, machine, start state.

The classmethods every family's parser inherits (and a few override: how
chat_template_kwargs switch thinking, a spec that depends on the vocabulary, a custom
machine). Its own module because this is the once-per-request (or once-per-tokenizer)
side of the parser: it compiles, renders and validates options, while
:mod:`.contract` is the per-token side that uses what was built here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, ClassVar, Self

import anyio.to_thread

from reasonspan.runtime.core.errors import InvalidOptionError
from reasonspan.runtime.core.machine import Machine
from reasonspan.runtime.core.markers import compile_machine
from reasonspan.runtime.core.spec import ReasoningSpec
from reasonspan.runtime.parser.option_keys import check_near_misses, keys_read
from reasonspan.tokenizer.loader import LoadedTokenizer, as_loaded

_KNOWN_KEYS: dict[type[Any], frozenset[str]] = {}
"""Per parser class: the chat_template_kwargs keys it reads (see ``option_keys``)."""


StartStateSource = Callable[[type[Any], LoadedTokenizer, Mapping[str, Any]], bool | None]
"""``(parser class, tokenizer, chat_template_kwargs) -> start state or None``: where a parser
built without an explicit ``default_reasoning`` learns its start state from the model's own
chat template (None: no template here, use the family's documented default)."""

_start_state_source: StartStateSource | None = None


def set_start_state_source(source: StartStateSource | None) -> StartStateSource | None:
    """Install the template profile as the source of parsers' default start state.

    Rendering a chat template belongs to the top layer (it needs jinja2 and the serving
    renderer), which this layer must not import: the top layer plugs its profile in here
    when ``reasonspan`` is imported, as the families register themselves. Returns the
    source it replaced (tests restore it)."""
    global _start_state_source
    previous = _start_state_source
    _start_state_source = source
    return previous


class ParserConstruction:
    """The constructors and construction hooks of :class:`~.contract.ReasoningParser`
    (its base class)."""

    spec: ClassVar[ReasoningSpec]
    __slots__ = ()

    if TYPE_CHECKING:  # ReasoningParser.__init__ (what ``create`` calls)

        def __init__(self, *args: Any, **kwargs: Any) -> None: ...

    @classmethod
    def resolve_switches(cls, kwargs: Mapping[str, Any]) -> tuple[bool, bool]:
        """Return ``(thinking, prompt_start)`` for these chat_template_kwargs."""
        thinking = cls.spec.thinking_default
        for key in cls.spec.thinking_switches:
            if key in kwargs:
                value = kwargs[key]
                if not isinstance(value, bool):
                    raise InvalidOptionError(key, value, "a bool")
                thinking = value
        for key, off in cls.spec.thinking_off_when:
            value = kwargs.get(key)
            if value is not None and not isinstance(value, str):
                raise InvalidOptionError(key, value, f'a string such as "{off}"')
            if value == off:
                thinking = False
        if cls.spec.thinking_off_keeps_markers:
            return True, thinking and cls.spec.prompt_start
        return thinking, cls.spec.prompt_start

    @classmethod
    def resolve_spec(cls, tokenizer: LoadedTokenizer) -> ReasoningSpec:
        """The spec for this tokenizer: ``cls.spec`` unless a family's markers depend on
        the vocabulary (hy_v3 spells them with a checkpoint-specific suffix)."""
        return cls.spec

    @classmethod
    def compile(cls, tokenizer: LoadedTokenizer, kwargs: Mapping[str, Any]) -> Machine:
        thinking, prompt_start = cls.resolve_switches(kwargs)
        spec = cls.resolve_spec(tokenizer)
        return compile_machine(spec, tokenizer, thinking=thinking, prompt_start=prompt_start)

    @classmethod
    def create(
        cls,
        tokenizer: LoadedTokenizer | Any,
        chat_template_kwargs: Mapping[str, Any] | None = None,
        *,
        default_reasoning: bool | None = None,
    ) -> Self:
        """Blocking constructor; :meth:`from_tokenizer` is the async one.

        ``default_reasoning`` is the start state when no prompt is given (``parse(ids)``,
        ``TextSplitter(parser)``). Left None, it comes from the model's chat template when
        the tokenizer was loaded from a folder that has one (the template profile, rendered
        once per tokenizer and switches, then cached), else from the family's documented
        default (:attr:`ReasoningSpec.start_source`)."""
        if chat_template_kwargs is not None and not isinstance(chat_template_kwargs, Mapping):
            raise InvalidOptionError(
                "chat_template_kwargs", chat_template_kwargs, "a mapping or None"
            )
        if default_reasoning is not None and not isinstance(default_reasoning, bool):
            raise InvalidOptionError("default_reasoning", default_reasoning, "a bool or None")
        tok = as_loaded(tokenizer)
        kwargs = dict(chat_template_kwargs or {})
        if kwargs:
            check_near_misses(kwargs, cls.option_keys(), cls.spec.name)
        machine = cls.compile(tok, kwargs)
        if default_reasoning is None and _start_state_source is not None:
            default_reasoning = _start_state_source(cls, tok, kwargs)
        return cls(tok, machine, kwargs, default_reasoning=default_reasoning)

    @classmethod
    def option_keys(cls) -> frozenset[str]:
        """The chat_template_kwargs keys this family reads (declared in the spec or read by
        its ``resolve_switches``); an unknown key close to one of them is refused as a typo."""
        known = _KNOWN_KEYS.get(cls)
        if known is None:
            spec = cls.spec
            declared = [
                *spec.thinking_switches,
                *(k for k, _ in spec.thinking_off_when),
                *(k for k, _ in spec.reasoning_as_content_if),
            ]
            known = _KNOWN_KEYS[cls] = keys_read(cls.resolve_switches, declared)
        return known

    @classmethod
    async def from_tokenizer(
        cls,
        tokenizer: LoadedTokenizer | Any,
        chat_template_kwargs: Mapping[str, Any] | None = None,
        *,
        default_reasoning: bool | None = None,
    ) -> Self:
        """Build a parser; the first one per tokenizer compiles tables (and renders the
        chat template's profile) in a worker thread."""
        return await anyio.to_thread.run_sync(
            lambda: cls.create(tokenizer, chat_template_kwargs, default_reasoning=default_reasoning)
        )

    @classmethod
    async def reasoning_end_token_id(cls, tokenizer: LoadedTokenizer | Any) -> int | None:
        """The id of the first end marker if it is a single token here (for grammar
        back-ends and budget forcing), else None."""
        tok = as_loaded(tokenizer)
        for text in cls.resolve_spec(tok).end:
            tid = tok.single_token_id(text)
            if tid is not None:
                return tid
        return None
