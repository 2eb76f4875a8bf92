"""One module per model family: its markers and its quirks, nothing else.

Importing this package registers every built-in family.
"""

from . import (
    cohere,
    deepseek,
    deepseek_v4,
    ernie,
    gemma4,
    glm,
    granite,
    harmony,
    hunyuan,
    inkling,
    kimi,
    kimi_k3,
    llama,
    minimax,
    minimax_append_think,
    mistral,
    nemotron,
    olmo,
    qwen3,
    seed_oss,
    step,
)

__all__ = [
    "cohere",
    "deepseek",
    "deepseek_v4",
    "ernie",
    "gemma4",
    "glm",
    "granite",
    "harmony",
    "hunyuan",
    "inkling",
    "kimi",
    "kimi_k3",
    "llama",
    "minimax",
    "minimax_append_think",
    "mistral",
    "nemotron",
    "olmo",
    "qwen3",
    "seed_oss",
    "step",
]
