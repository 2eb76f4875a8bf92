"""What the family specs cannot say about which models a family serves.

Kept as data, one row per family that needs one, so that a new family adds a row rather
than a branch in the scoring.
"""

from __future__ import annotations

from typing import NamedTuple


class Hint(NamedTuple):
    """What a family's specs cannot say about which models it serves."""

    model_types: tuple[str, ...] = ()
    """config.json ``model_type`` values of this family's models (registered names and
    aliases count too; ``architectures`` are matched by the same names)."""
    tokens: tuple[str, ...] = ()
    """Single tokens that (among the families here) only this family's models ship."""
    absent: tuple[str, ...] = ()
    """Tokens its models do not have (a later model's additions): their presence counts
    against it."""
    prefills_start: bool | None = None
    """Whether this family's chat templates prefill the start marker, where that is what
    tells two families with the same markers apart."""
    plain_text_markers: bool = False
    """Its models write the markers as ordinary text: a vocabulary with special tokens for
    them belongs to another family."""
    needs_evidence: bool = False
    """It shares its markers with a more common family, so it ranks below that one unless
    config.json names its model type or the vocabulary has one of its ``tokens``."""


HINTS: dict[str, Hint] = {
    # R1 and V3/V3.1 checkpoints share model_type "deepseek_v3"; the template decides.
    "deepseek_r1": Hint(model_types=("deepseek_v3",)),
    # V3.2 introduced the DSML tool-call tokens; V4 keeps them and adds more.
    "deepseek_v3": Hint(
        model_types=("deepseek_v3", "deepseek_v32"),
        tokens=("｜DSML｜",),
        absent=("<｜latest_reminder｜>",),
    ),
    "deepseek_v4": Hint(
        model_types=("deepseek_v4",), tokens=("<｜latest_reminder｜>",), needs_evidence=True
    ),
    # V4.1 has V4's vocabulary; only its DSML spelling differs, which a vocabulary cannot show.
    "deepseek_v41": Hint(needs_evidence=True),
    "holo2": Hint(needs_evidence=True),  # a Qwen3-VL fine-tune with Qwen's tokens
    "qwen3": Hint(model_types=("qwen3", "qwen3_moe", "qwen3_next", "qwen3_5_moe")),
    # MiMo ships Qwen's <think> tokens; only its model type tells it apart.
    "mimo": Hint(model_types=("mimo", "mimo_v2_flash"), needs_evidence=True),
    # GLM-4.5/4.6 let the model open <think>; GLM-4.7 templates prefill it.
    "glm45": Hint(model_types=("glm4_moe", "glm4v_moe"), prefills_start=False),
    "glm47": Hint(model_types=("glm4_moe", "glm4_moe_lite"), prefills_start=True),
    "minimax_m2": Hint(model_types=("minimax_m2",)),
    "kimi_k2": Hint(model_types=("kimi_k2",)),
    "nemotron_v3": Hint(model_types=("nemotron_h",), needs_evidence=True),
    "ernie45": Hint(model_types=("ernie4_5", "ernie4_5_moe"), needs_evidence=True),
    "step3": Hint(tokens=("<|BOT|>",), needs_evidence=True),
    "step3p5": Hint(tokens=("<|BOT|>",), needs_evidence=True),
    "hunyuan_a13b": Hint(model_types=("hunyuan_v1_moe",)),
    "olmo3": Hint(model_types=("olmo3",), plain_text_markers=True),
    "granite": Hint(model_types=("granite",), plain_text_markers=True),
    "cohere_command3": Hint(model_types=("cohere2",)),
    # Issue 17, part A. Ling 3 and MiniCPM-V write Qwen's/GLM's <think> tokens: config.json
    # (or, for MiniCPM-V, its image tags) must say so.
    "ling3": Hint(needs_evidence=True),
    "minicpmv": Hint(model_types=("minicpmv",), tokens=("<slice>",), needs_evidence=True),
}
