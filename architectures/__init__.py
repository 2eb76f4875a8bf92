"""One module per model family: its markers and its quirks, nothing else.

Importing this package registers every built-in family.
"""

from . import (
    deepseek,
    gemma4,
    glm,
    granite,
    kimi,
    minimax,
    qwen3,
    step,
)

__all__ = [
    "deepseek",
    "gemma4",
    "glm",
    "granite",
    "kimi",
    "minimax",
    "qwen3",
    "step",
]
