"""Tokenizer loading and the per-token byte table used for text and multi-token markers."""

from .detect import Detection, detect, detect_tokenizer
from .loader import LoadedTokenizer, as_loaded, load_tokenizer, load_tokenizer_sync

__all__ = [
    "Detection",
    "LoadedTokenizer",
    "as_loaded",
    "detect",
    "detect_tokenizer",
    "load_tokenizer",
    "load_tokenizer_sync",
]
