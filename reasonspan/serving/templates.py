"""Rendering a conversation with the model's own chat template (jinja2, optional extra).

A server must render exactly what the model was trained on, so this renders the folder's
template the way Hugging Face's ``apply_chat_template`` does: a sandboxed jinja2
environment with ``trim_blocks``/``lstrip_blocks`` and loop controls, the helpers templates
call (``raise_exception``, ``tojson``, ``strftime_now``), the special tokens of
``tokenizer_config.json`` (``bos_token``, ``eos_token``, ...) and any
``chat_template_kwargs`` passed through. Assistant turns may carry their old reasoning as
``reasoning`` or ``reasoning_content``; both names are filled, since templates read
either. Their tool calls' ``function.arguments`` JSON strings (OpenAI's wire format) are
parsed into objects, which is what templates iterate (kept as given when they are not a
JSON object).

A folder without a template is an error (:class:`ChatTemplateError`), never a silent
ChatML guess: a wrong rendering moves the model's start state and puts answers in the
wrong field. ``fallback="chatml"`` opts in to a plain ChatML rendering, and says so.

A template is a program, and a hostile or broken one must not hang a server, its startup
or ``create_parser``: every rendering runs within a budget (:class:`RenderLimits`:
operations, characters, seconds; :mod:`.template_sandbox`), and one that spends past it
raises :class:`TemplateBudgetError`, naming the template and the limit. The output is
byte-identical to the unbounded sandbox's.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from reasonspan.runtime.core.errors import ReasonspanError
from reasonspan.serving.template_limits import (
    HOW_TO_RAISE,
    BudgetExceeded,
    RenderLimits,
    default_render_limits,
    set_default_render_limits,
)
from reasonspan.tokenizer import LoadedTokenizer

__all__ = [
    "MINIMAL_CONVERSATION",
    "ChatTemplateError",
    "Fallback",
    "RenderLimits",
    "TemplateBudgetError",
    "chat_template_of",
    "default_render_limits",
    "render_chat",
    "render_prompt_ids",
    "set_default_render_limits",
    "template_from_config",
    "template_origin",
    "template_problem",
]

Fallback = Literal["chatml"] | None


class ChatTemplateError(ReasonspanError, ValueError):
    """The chat template is missing, cannot be rendered, or jinja2 is not installed."""


class TemplateBudgetError(ChatTemplateError):
    """The chat template spent past its :class:`RenderLimits` while rendering (a runaway
    loop, a huge string). ``budget`` names the limit (``max_operations``, ``max_chars`` or
    ``timeout``), ``template`` the template (model, file)."""

    def __init__(self, message: str, *, budget: str, template: str) -> None:
        super().__init__(message)
        self.budget = budget
        self.template = template


def chat_template_of(tok: LoadedTokenizer, name: str = "default") -> str | None:
    """The template text of a loaded folder: ``chat_template.jinja``, else
    ``tokenizer_config.json``'s ``chat_template`` (a string, or a list of named templates,
    of which ``name`` is taken)."""
    if tok.chat_template:
        return tok.chat_template
    return template_from_config(tok.config, name)


def template_from_config(config: Mapping[str, Any], name: str = "default") -> str | None:
    """``tokenizer_config.json``'s ``chat_template``: a string, or the template called
    ``name`` in a list of named templates."""
    raw = config.get("chat_template")
    if isinstance(raw, str):
        return raw
    if isinstance(raw, list):
        named = {
            t.get("name"): t.get("template")
            for t in raw
            if isinstance(t, dict) and isinstance(t.get("template"), str)
        }
        found = named.get(name)
        return found if isinstance(found, str) else None
    return None


def _special_token(value: object) -> str:
    """tokenizer_config.json writes special tokens as strings or AddedToken dicts."""
    if isinstance(value, str):
        return value
    if isinstance(value, Mapping) and isinstance(value.get("content"), str):
        return str(value["content"])
    return ""


def _raise_exception(message: str) -> None:
    from jinja2.exceptions import TemplateError

    raise TemplateError(message)


def _tojson(
    value: Any,
    ensure_ascii: bool = False,
    indent: int | None = None,
    separators: tuple[str, str] | None = None,
    sort_keys: bool = False,
) -> str:
    # HF's tojson: no HTML escaping (jinja2's built-in escapes <, > and &).
    return json.dumps(
        value, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys
    )


def _strftime_now(fmt: str) -> str:
    return datetime.now().strftime(fmt)


_ENVS: dict[str, Any] = {}


def _describe(exc: BaseException) -> str:
    """An exception as a reason: its message, or its type when it has none (a MemoryError
    or RecursionError says nothing by itself)."""
    text = str(exc)
    return text if text.strip() else f"{type(exc).__name__} (no message)"


def _compile(template: str) -> Any:
    """Compiled templates are cached by text: a server renders one template per request."""
    compiled = _ENVS.get(template)
    if compiled is not None:
        return compiled
    try:
        import jinja2.sandbox  # noqa: F401  (first: the sandbox module may be imported already)

        from reasonspan.serving.template_sandbox import BoundedEnvironment
    except ImportError as exc:
        raise ChatTemplateError(
            "rendering a chat template needs jinja2: pip install -e '.[server]' in the clone "
            "(or any extra that carries jinja2)"
        ) from exc
    env = BoundedEnvironment()
    env.filters["tojson"] = _tojson
    env.globals["raise_exception"] = _raise_exception
    env.globals["strftime_now"] = _strftime_now
    env.guard_filters()
    try:
        compiled = env.bounded_template(template)
    except Exception as exc:  # jinja2.TemplateSyntaxError and friends
        raise ChatTemplateError(f"the chat template does not compile: {_describe(exc)}") from exc
    _ENVS[template] = compiled
    return compiled


def template_origin(tok: LoadedTokenizer, chat_template: str | None = None) -> str:
    """Where a tokenizer's template comes from, for messages: the file, or that it was
    given."""
    if chat_template is not None and chat_template != chat_template_of(tok):
        return f"given as chat_template= for {tok.source}"
    folder = Path(tok.source).parent
    jinja = folder / "chat_template.jinja"
    return str(jinja if jinja.is_file() else folder / "tokenizer_config.json")


def _budget_error(
    exc: BudgetExceeded, tok: LoadedTokenizer, chat_template: str | None, name: str | None
) -> TemplateBudgetError:
    origin = template_origin(tok, chat_template)
    label = f"the chat template of {name} ({origin})" if name else f"the chat template ({origin})"
    flag = HOW_TO_RAISE[exc.budget]
    message = (
        f"{label} exceeded its render budget: {exc.what} (RenderLimits.{exc.budget}; "
        f"reasonspan serve {flag})"
    )
    return TemplateBudgetError(message, budget=exc.budget, template=label)


def _normalise(messages: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for i, m in enumerate(messages):
        if not isinstance(m, Mapping):
            raise ChatTemplateError(f"messages[{i}] is a {type(m).__name__}, not an object")
        d = dict(m)
        if d.get("role") == "assistant":
            old = d.get("reasoning_content") or d.get("reasoning")
            if old:
                d.setdefault("reasoning_content", old)
                d.setdefault("reasoning", old)
            calls = d.get("tool_calls")
            if isinstance(calls, Sequence) and not isinstance(calls, str):
                d["tool_calls"] = [_call_with_object_arguments(c) for c in calls]
        out.append(d)
    return out


def _call_with_object_arguments(call: object) -> object:
    """A past tool call with its ``function.arguments`` as an object, as templates read it.

    OpenAI's wire format (and so every client's history) carries the arguments as a JSON
    *string*; the templates of Qwen3.5, GLM and MiniMax iterate them as a mapping
    (``arguments | items``) and raise on a string. A string that parses to a JSON object
    is replaced by that object, as other servers do; anything else (not valid JSON, or
    JSON that is not an object) is kept exactly as given, so a template that writes the
    text still sees what the client sent. The caller's dicts are not changed."""
    if not isinstance(call, Mapping):
        return call
    fn = call.get("function")
    if not isinstance(fn, Mapping) or not isinstance(fn.get("arguments"), str):
        return call
    try:
        parsed = json.loads(fn["arguments"])
    except (ValueError, RecursionError):
        return call
    if not isinstance(parsed, dict):
        return call
    return {**call, "function": {**fn, "arguments": parsed}}


def _chatml(messages: Sequence[Mapping[str, Any]], add_generation_prompt: bool) -> str:
    parts = []
    for m in messages:
        content = m.get("content") or ""
        old = m.get("reasoning_content") or m.get("reasoning")
        if m.get("role") == "assistant" and old:
            content = f"<think>\n{old}\n</think>\n\n{content}"
        parts.append(f"<|im_start|>{m.get('role')}\n{content}<|im_end|>\n")
    if add_generation_prompt:
        parts.append("<|im_start|>assistant\n")
    return "".join(parts)


def render_chat(
    tok: LoadedTokenizer,
    messages: Sequence[Mapping[str, Any]],
    *,
    add_generation_prompt: bool = True,
    tools: Sequence[Mapping[str, Any]] | None = None,
    chat_template: str | None = None,
    chat_template_kwargs: Mapping[str, Any] | None = None,
    fallback: Fallback = None,
    limits: RenderLimits | None = None,
    template_name: str | None = None,
) -> str:
    """The prompt text for ``messages``, rendered with the model's own chat template.

    ``chat_template`` overrides the folder's template. ``chat_template_kwargs`` are passed
    to the template as variables (``enable_thinking``, ``thinking``, ``reasoning_effort``,
    ...). Raises :class:`ChatTemplateError` when there is no template (unless
    ``fallback="chatml"``), when jinja2 is missing, or when the template raises, and
    :class:`TemplateBudgetError` when it spends past ``limits`` (default:
    :func:`default_render_limits`); ``template_name`` (e.g. ``"model 'qwen3'"``) names the
    template in that error.
    """
    template = chat_template if chat_template is not None else chat_template_of(tok)
    msgs = _normalise(messages)
    if not template:
        if fallback == "chatml":
            return _chatml(msgs, add_generation_prompt)
        raise ChatTemplateError(
            f"the tokenizer loaded from {tok.source!r} has no chat template (no "
            "chat_template.jinja beside it and no chat_template in tokenizer_config.json); "
            "pass chat_template=..., or fallback='chatml' to render plain ChatML on purpose"
        )
    compiled = _compile(template)
    variables: dict[str, Any] = {
        key: _special_token(tok.config.get(key))
        for key in ("bos_token", "eos_token", "unk_token", "pad_token")
    }
    variables.update(chat_template_kwargs or {})
    variables.update(messages=msgs, add_generation_prompt=add_generation_prompt)
    if tools is not None:
        variables["tools"] = [dict(t) for t in tools]
    from reasonspan.serving.template_sandbox import (
        render_bounded,  # jinja2 is there: the template compiled
    )

    try:
        return render_bounded(compiled, variables, limits or default_render_limits())
    except BudgetExceeded as exc:
        raise _budget_error(exc, tok, chat_template, template_name) from None
    except Exception as exc:  # raise_exception(), undefined names, type errors in the template
        raise ChatTemplateError(
            f"the chat template raised while rendering: {_describe(exc)}"
        ) from exc


def render_prompt_ids(
    tok: LoadedTokenizer,
    messages: Sequence[Mapping[str, Any]],
    **kwargs: Any,
) -> list[int]:
    """:func:`render_chat`, then token ids (special tokens in the text are recognised; a
    template that writes ``bos_token`` itself gets no second one).

    The ids are ``tok.encode``'s, computed through ``encode_batch``, which releases the
    GIL while it works (``encode`` holds it): a server tokenizing a huge prompt on a
    worker thread then leaves its event loop free to stream the other requests."""
    text = render_chat(tok, messages, **kwargs)
    encode_batch = getattr(tok.tokenizer, "encode_batch", None)
    if encode_batch is None:
        return tok.encode(text)
    return list(encode_batch([text], add_special_tokens=False)[0].ids)


MINIMAL_CONVERSATION: list[dict[str, Any]] = [{"role": "user", "content": "Hello."}]
"""What every chat template must render: one user turn."""


def template_problem(
    tok: LoadedTokenizer,
    *,
    chat_template: str | None = None,
    chat_template_kwargs: Mapping[str, Any] | None = None,
    fallback: Fallback = None,
    limits: RenderLimits | None = None,
    template_name: str | None = None,
) -> str | None:
    """Why the template cannot render :data:`MINIMAL_CONVERSATION` (None: it can), within
    ``limits`` (a template that spends past them cannot serve anything either).

    A server checks this at startup, so a broken template (one that raises, reads an
    undefined name, or breaks the sandbox) refuses to serve rather than failing every
    request; and when a request fails to render, a template that fails here too is the
    server's fault (500), not the client's (400)."""
    try:
        render_prompt_ids(
            tok,
            MINIMAL_CONVERSATION,
            chat_template=chat_template,
            chat_template_kwargs=chat_template_kwargs,
            fallback=fallback,
            limits=limits,
            template_name=template_name,
        )
    except ChatTemplateError as exc:
        return str(exc)
    return None
