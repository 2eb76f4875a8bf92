"""vLLM's tokenizer as reasonspan's: the same vocabulary, read through its ``tokenizers``
backend, so the plugin works on the token ids vLLM generated.

vLLM hands its parsers a Hugging Face fast tokenizer (or an object of the same protocol);
its ``backend_tokenizer`` is the ``tokenizers.Tokenizer`` reasonspan loads anyway. The
wrapping is cached per backend (``as_loaded``), so a parser per request costs a lookup.
"""

from __future__ import annotations

from collections.abc import Sequence

# Shared with the other engines' adapters (reasonspan/integrations/common.py).
from reasonspan.integrations.common import (
    UnsupportedTokenizerError,
    encode,
    loaded_tokenizer,
)
from reasonspan.tokenizer.loader import LoadedTokenizer

__all__ = ["UnsupportedTokenizerError", "as_ids", "encode", "loaded_tokenizer"]


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
