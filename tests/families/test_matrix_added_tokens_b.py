"""Tables across families: the aliases of families already covered, and detection picking
each of muse_glimmer, solar_open2, apertus, gigachat35, exaone4 and lfm2 on its fixture
(a real base tokenizer with the family's documented special tokens added). Each family's
matrix rows live in its module (``tests/families/test_<family>.py``).
"""

from __future__ import annotations

import pytest

import reasonspan
from reasonspan.detection import describe, detect
from tests.support.fixtures import FAMILY_TOKENIZERS, tokenizer

# ---------------------------------------------------------------------- aliases


@pytest.mark.parametrize(
    ("alias", "family"),
    [
        ("kimi_k25", "kimi_k2"),
        ("qwen3_5", "qwen3"),
        ("qwen3_6", "qwen3"),
        ("glm5", "glm47"),
        ("glm5_1", "glm47"),
        ("glm5_2", "glm47"),
        ("deepseek_v32", "deepseek_v3"),
    ],
)
def test_aliases_of_covered_families(alias: str, family: str) -> None:
    assert reasonspan.get_parser_class(alias) is reasonspan.get_parser_class(family)


# ---------------------------------------------------------------------- detection


@pytest.mark.parametrize(
    "family", ["muse_glimmer", "solar_open2", "apertus", "gigachat35", "exaone4", "lfm2"]
)
def test_detect_picks_each_family_on_its_fixture(family: str) -> None:
    result = detect(tokenizer(FAMILY_TOKENIZERS[family]))
    assert result.parser == family, describe(result)
