"""One module per model family: its markers and its quirks, nothing else.

Importing this package registers every built-in family.
"""

from . import deepseek, glm, kimi, minimax, qwen3, step

__all__ = ["deepseek", "glm", "kimi", "minimax", "qwen3", "step"]
