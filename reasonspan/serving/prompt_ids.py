"""Text to token ids for the server, off the event loop and bounded in tokens.

The server tokenizes a request's rendered prompt (and the SIMULATED engine's
``simulated_output``) on a worker thread. That keeps the event loop free only for the part
of the work that releases the GIL, so this module is about the parts that do not
(measured on a 2-core x86-64 box, a 4 MB prompt of 1.4-3.0 M tokens; BENCHMARKS.md):

- ``Tokenizer.encode`` holds the GIL for the whole encode (seconds for megabytes);
  ``encode_batch`` and ``encode_batch_fast`` release it while they work.
- The ``Encoding`` that ``encode_batch`` returns tracks character offsets and token
  strings; freeing it takes 0.26-0.46 s with the GIL held, a stall of every stream. The one
  ``encode_batch_fast`` returns has no offsets and frees in 1-25 ms; its ids are the same
  (offsets are all it skips).
- Reading ``Encoding.ids`` (the Python list) costs about 50 ns a token with the GIL held,
  and freeing that list later about as much, on whichever thread drops it (often the
  event loop, when the request ends). So a prompt's size is bounded in tokens
  (``max_tokens``, the server's ``max_model_len``) and checked on ``len(encoding)``,
  before the ids are read: a prompt that is refused costs the loop nothing but the
  ``Encoding``'s free.

:func:`render_prompt_ids` is :func:`~reasonspan.serving.templates.render_chat` followed
by :func:`tokenize`, for the server; ``templates.render_prompt_ids`` stays the unbounded
helper that tests and tools use.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from reasonspan.serving.protocol import RequestError
from reasonspan.serving.templates import render_chat
from reasonspan.tokenizer import LoadedTokenizer


def tokenize(tok: LoadedTokenizer, text: str, *, max_tokens: int, param: str) -> list[int]:
    """``tok.encode(text)``'s ids (special tokens recognised, none added), computed without
    holding the GIL for the encode; a text of more than ``max_tokens`` tokens is refused
    (:class:`RequestError` naming ``param``) before its ids are read."""
    hf = tok.tokenizer
    encode_batch = getattr(hf, "encode_batch_fast", None) or getattr(hf, "encode_batch", None)
    if encode_batch is None:  # not a tokenizers.Tokenizer: its own encode, bounded after
        ids = tok.encode(text)
        _check(len(ids), max_tokens, param)
        return ids
    encoding = encode_batch([text], add_special_tokens=False)[0]
    _check(len(encoding), max_tokens, param)
    return list(encoding.ids)


def render_prompt_ids(
    tok: LoadedTokenizer,
    messages: Sequence[Mapping[str, Any]],
    *,
    max_tokens: int,
    **kwargs: Any,
) -> list[int]:
    """The rendered prompt's ids (:func:`~reasonspan.serving.templates.render_chat`'s
    keyword arguments), refused past ``max_tokens`` as vLLM refuses a prompt past
    ``max_model_len``: 400, ``context_length_exceeded``."""
    return tokenize(
        tok, render_chat(tok, messages, **kwargs), max_tokens=max_tokens, param="messages"
    )


def check_ids(ids: Sequence[int], tok: LoadedTokenizer, *, max_tokens: int, param: str) -> None:
    """Token ids a client sent (``simulated_output_ids``, ``/detokenize``'s ``tokens``): at
    most ``max_tokens`` of them, each inside the vocabulary, else a 400 naming ``param``."""
    _check(len(ids), max_tokens, param)
    vocab = tok.vocab_size
    bad = next((t for t in ids if t >= vocab), None)
    if bad is not None:
        raise RequestError(
            f"{param} holds token id {bad}, outside the vocabulary of {tok.source} "
            f"(ids 0..{vocab - 1})",
            param=param,
        )


def _check(n_tokens: int, max_tokens: int, param: str) -> None:
    if n_tokens <= max_tokens:
        return
    if param == "messages":
        raise RequestError(
            f"this model's maximum context length is {max_tokens:,} tokens; the rendered "
            f"prompt is {n_tokens:,} tokens (shorten the messages, or raise the server's "
            "--max-model-len)",
            param=param,
            code="context_length_exceeded",
        )
    raise RequestError(
        f"{param} is {n_tokens:,} tokens, over this server's max_model_len of "
        f"{max_tokens:,} (see --max-model-len)",
        param=param,
        code="context_length_exceeded",
    )
