"""Tokenizer loading and the per-token byte table used for text and multi-token markers."""

from .loader import LoadedTokenizer, as_loaded, load_tokenizer, load_tokenizer_sync

__all__ = ["LoadedTokenizer", "as_loaded", "load_tokenizer", "load_tokenizer_sync"]
