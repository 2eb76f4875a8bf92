"""One module per model family: its markers and its quirks, nothing else.

Importing this package registers every built-in family.
"""

from . import (
    cohere,
    deepseek,
    gemma4,
    glm,
    granite,
    harmony,
    inkling,
    kimi,
    kimi_k3,
    minimax,
    mistral,
    qwen3,
    step,
)

__all__ = [
    "cohere",
    "deepseek",
    "gemma4",
    "glm",
    "granite",
    "harmony",
    "inkling",
    "kimi",
    "kimi_k3",
    "minimax",
    "mistral",
    "qwen3",
    "step",
]
