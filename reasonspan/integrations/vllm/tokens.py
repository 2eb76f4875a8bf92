"""vLLM's tokenizer as reasonspan's: the same vocabulary, read through its ``tokenizers``
backend, so the plugin works on the token ids vLLM generated.

vLLM hands its parsers a Hugging Face fast tokenizer (or an object of the same protocol);
its ``backend_tokenizer`` is the ``tokenizers.Tokenizer`` reasonspan loads anyway. The
wrapping is cached per backend (``as_loaded``), so a parser per request costs a lookup.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tokenizers import Tokenizer

from reasonspan.tokenizer.loader import LoadedTokenizer, as_loaded


class UnsupportedTokenizerError(TypeError):
    """The tokenizer vLLM passed has no ``tokenizers`` backend (a slow or Mistral one)."""


def loaded_tokenizer(tokenizer: Any) -> LoadedTokenizer:
    """reasonspan's view of a vLLM tokenizer."""
    if isinstance(tokenizer, LoadedTokenizer):
        return tokenizer
    backend = tokenizer if isinstance(tokenizer, Tokenizer) else None
    if backend is None:
        backend = getattr(tokenizer, "backend_tokenizer", None)
    if not isinstance(backend, Tokenizer):
        raise UnsupportedTokenizerError(
            f"reasonspan's vLLM parsers need a fast (tokenizers-backed) tokenizer, not "
            f"{type(tokenizer).__name__}"
        )
    return as_loaded(backend)


def encode(tok: LoadedTokenizer, text: str) -> list[int]:
    """Token ids of text vLLM decoded (its non-streaming path hands text only).

    Added tokens written in the text (``<think>``) come back as their ids, as the model
    generated them; an output whose text does not round-trip (a marker the model spelled
    in pieces) may split differently than it was generated."""
    return list(tok.tokenizer.encode(text, add_special_tokens=False).ids)


def as_ids(tok: LoadedTokenizer, items: Sequence[int | str]) -> list[int]:
    """Token ids, from ids or from token strings (vLLM's tests pass either)."""
    out: list[int] = []
    for item in items:
        if isinstance(item, str):
            tid = tok.tokenizer.token_to_id(item)
            if tid is None:
                raise ValueError(f"{item!r} is not a token of this vocabulary")
            out.append(tid)
        else:
            out.append(int(item))
    return out
