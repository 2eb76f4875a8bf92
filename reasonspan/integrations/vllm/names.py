"""Which names the plugin registers its parsers under, in vLLM's parser managers.

Every family gets ``reasonspan_<family>`` (a reasoning parser, and a tool parser where the
family declares a tool-call format). With ``REASONSPAN_VLLM_REPLACE=1`` in the environment
of every vLLM process, the families below are also registered under vLLM's own names, in
place of its built-in parsers (``--reasoning-parser qwen3`` then runs reasonspan).

The tables list only names whose format is the family's: a reasoning name where vLLM's
parser of that name serves the same models (vLLM 0.34's ``vllm/reasoning/__init__.py``), a
tool name where vLLM's parser reads the same call syntax (``vllm/tool_parsers/__init__.py``).
Harmony's families (``openai_gptoss``, ``muse_glimmer``) are left out: vLLM routes them
through its own harmony parser, which does not read reasoning through these classes.
"""

from __future__ import annotations

import os

# Shared with the other engines' adapters (reasonspan/integrations/common.py).
from reasonspan.integrations.common import PREFIX, SKIPPED, class_stem, own_name

__all__ = [
    "NO_PROMPT_START",
    "PREFIX",
    "REASONING_NAMES",
    "REPLACE_ENV",
    "SKIPPED",
    "TOOL_NAMES",
    "class_stem",
    "own_name",
    "replacing",
]

REPLACE_ENV = "REASONSPAN_VLLM_REPLACE"

# family -> vLLM reasoning-parser names it replaces.
REASONING_NAMES: dict[str, tuple[str, ...]] = {
    **{
        name: (name,)
        for name in (
            "cohere_command3",
            "cohere_command4",
            "deepseek_r1",
            "deepseek_v3",
            "deepseek_v4",
            "deepseek_v41",
            "ernie45",
            "gemma4",
            "glm45",
            "glm47",
            "granite",
            "holo2",
            "hunyuan_a13b",
            "hy_v3",
            "hy_v4",
            "inkling",
            "k2_horizon",
            "kimi_k2",
            "kimi_k3",
            "ling3",
            "mimo",
            "minicpmv",
            "minimax_m2",
            "minimax_m2_append_think",
            "minimax_m3",
            "mistral",
            "nemotron_v3",
            "olmo3",
            "plamo3",
            "poolside_v1",
            "qwen3",
            "seed_oss",
            "step3",
            "step3p5",
        )
    },
    "granite_thinking": ("granite_thinking_parser",),
}

# family -> vLLM tool-parser names it replaces (the same call syntax).
TOOL_NAMES: dict[str, tuple[str, ...]] = {
    "apertus": ("apertus",),
    "cohere_command3": ("cohere_command3",),
    "cohere_command4": ("cohere_command4",),
    "deepseek_v3_0324": ("deepseek_v3",),
    "deepseek_v3": ("deepseek_v31", "deepseek_v32"),
    "deepseek_v4": ("deepseek_v4",),
    "deepseek_v41": ("deepseek_v41",),
    "ernie45": ("ernie45",),
    "gemma4": ("gemma4",),
    "glm45": ("glm45",),
    "glm47": ("glm47",),
    "granite": ("granite",),
    "hunyuan_a13b": ("hunyuan_a13b",),
    "hy_v3": ("hy_v3",),
    "hy_v4": ("hy_v4",),
    "inkling": ("inkling",),
    "internlm2": ("internlm",),
    "jamba": ("jamba",),
    "k2_horizon": ("k2_horizon",),
    "kimi_k2": ("kimi_k2",),
    "kimi_k3": ("kimi_k3",),
    "lfm2": ("lfm2",),
    "ling3": ("ling3",),
    "llama3_json": ("llama3_json", "llama4_json"),
    "llama4_pythonic": ("llama4_pythonic",),
    "mimo": ("mimo",),
    "minimax_m2": ("minimax_m2",),
    "minimax_m3": ("minimax_m3",),
    "mistral": ("mistral",),
    "olmo3": ("olmo3",),
    "plamo3": ("plamo3",),
    "poolside_v1": ("poolside_v1",),
    "qwen3": ("hermes", "qwen3_json", "qwen3_xml", "qwen3_coder"),
    "seed_oss": ("seed_oss",),
    "step3": ("step3",),
    "step3p5": ("step3p5",),
    "xlam": ("xlam",),
}


# vLLM name -> the start state its built-in parser assumes when no prompt is given, where
# that differs from the family's documented default. vLLM 0.34 registers ``glm45`` as its
# GLM-4.7 parser (``Glm47MoeParserReasoningAdapter``), which starts in reasoning; GLM-4.5's
# own template lets the model open ``<think>``. With a prompt (vLLM's server always hands
# it over), the prompt decides either way; in the ``vllm`` text mode the plugin registered
# under that name takes vLLM's assumption when there is none.
NO_PROMPT_START: dict[str, bool] = {"glm45": True}


def replacing() -> bool:
    """Whether the user opted in to replacing vLLM's built-in parsers."""
    return os.environ.get(REPLACE_ENV, "").strip().lower() in {"1", "true", "yes", "on"}
