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
    minimax,
    minimax_append_think,
    mistral,
    nemotron,
    olmo,
    qwen3,
    seed_oss,
    step,
)
from . import (  # issue 17, part A
    granite_thinking,
    hunyuan_v4,
    k2_horizon,
    ling3,
    minicpmv,
    plamo3,
    poolside,
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
    "minimax",
    "minimax_append_think",
    "mistral",
    "nemotron",
    "olmo",
    "qwen3",
    "seed_oss",
    "step",
    # issue 17, part A
    "granite_thinking",
    "hunyuan_v4",
    "k2_horizon",
    "ling3",
    "minicpmv",
    "plamo3",
    "poolside",
]
