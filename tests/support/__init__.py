"""Helpers the tests share: tokenizer fixtures, case runners, strategies, sampling."""
