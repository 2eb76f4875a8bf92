"""Tokenizer loading and the per-token byte table used for text and multi-token markers.

This layer knows nothing of reasoning: no family, spec or parser is imported here.
"""

from reasonspan.tokenizer.errors import ReasonspanError, TokenizerLoadError
from reasonspan.tokenizer.loader import (
    LoadedTokenizer,
    as_loaded,
    load_tokenizer,
    load_tokenizer_sync,
)

__all__ = [
    "LoadedTokenizer",
    "ReasonspanError",
    "TokenizerLoadError",
    "as_loaded",
    "load_tokenizer",
    "load_tokenizer_sync",
]
