"""Detection across families: each of ling3, granite_thinking, hy_v4, k2_horizon, minicpmv,
plamo3 and poolside_v1 is picked on its fixture (a real base tokenizer with the family's
documented special tokens added; config.json naming the model where the vocabulary is
Qwen's). Each family's matrix rows live in its module (``tests/families/test_<family>.py``).
"""

from __future__ import annotations

import pytest

from reasonspan import LoadedTokenizer
from reasonspan.detection import describe, detect
from tests.support.fixtures import FAMILY_TOKENIZERS, tokenizer


def tok_of(family: str) -> str:
    return FAMILY_TOKENIZERS[family]


# ------------------------------------------------------------------------------- detection

# Families with a token of their own are told by the vocabulary; the others share Qwen's
# <think> tokens, and config.json naming the model (architectures, matched by name) decides,
# as for nemotron_v3.
FAMILIES = ("ling3", "granite_thinking", "hy_v4", "k2_horizon", "minicpmv", "plamo3", "poolside_v1")
NAMED_BY_CONFIG = {"ling3": "Ling3ForCausalLM", "minicpmv": "MiniCPMVForCausalLM"}


@pytest.mark.parametrize("family", FAMILIES)
def test_detect_picks_the_family_on_its_fixture(family: str) -> None:
    tok = tokenizer(tok_of(family))
    arch = NAMED_BY_CONFIG.get(family)
    if arch is not None:
        tok = LoadedTokenizer(
            tok.tokenizer,
            tok.source,
            config=dict(tok.config),
            model_config={"architectures": [arch]},
        )
    result = detect(tok)
    assert result.parser == family, describe(result)
