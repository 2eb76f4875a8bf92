"""The matrix rows of the think-tag families not yet in their own module
(``tests/families/test_<family>.py``), on real tokenizers (expected text by hand); the
checks are :mod:`tests.support.family_cases`."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support import family_cases as fc
from tests.support.family_cases import Row, Seed

# (family, tokenizer, prompt or None, output, kwargs, reasoning, content, reasoning_ended)
Case = tuple[str, str, str | None, str, dict[str, Any], str | None, str | None, bool]

R1_TURN = "<｜User｜>What is 2+2?<｜Assistant｜>"
CHATML = "<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n"
CASES: list[tuple[str, Case]] = [
    # deepseek_r1: the template prefills <think>; a missing start is tolerated.
    (
        "r1 start in prompt",
        (
            "deepseek_r1",
            "deepseek-r1",
            R1_TURN + "<think>\n",
            "2+2=4.</think>It is 4.",
            {},
            "2+2=4.",
            "It is 4.",
            True,
        ),
    ),
    (
        "r1 start in output",
        (
            "deepseek_r1",
            "deepseek-r1",
            R1_TURN,
            "<think>\n2+2=4.\n</think>\n\nIt is 4.",
            {},
            "\n2+2=4.\n",
            "\n\nIt is 4.",
            True,
        ),
    ),
    (
        "r1 missing start",
        (
            "deepseek_r1",
            "deepseek-r1",
            R1_TURN,
            "2+2=4.</think>It is 4.",
            {},
            "2+2=4.",
            "It is 4.",
            True,
        ),
    ),
    (
        "r1 truncated",
        (
            "deepseek_r1",
            "deepseek-r1",
            R1_TURN,
            "<think>Still thinking",
            {},
            "Still thinking",
            None,
            False,
        ),
    ),
    (
        "r1 empty reasoning",
        (
            "deepseek_r1",
            "deepseek-r1",
            R1_TURN,
            "<think></think>It is 4.",
            {},
            None,
            "It is 4.",
            True,
        ),
    ),
    (
        "r1 repeated end kept in content",
        ("deepseek_r1", "deepseek-r1", None, "a</think>b</think>c", {}, "a", "b</think>c", True),
    ),
    (
        "r1 distill qwen",
        (
            "deepseek_r1",
            "deepseek-r1-distill-qwen-7b",
            R1_TURN + "<think>\n",
            "hm</think>4",
            {},
            "hm",
            "4",
            True,
        ),
    ),
    (
        "r1 distill llama",
        (
            "deepseek_r1",
            "deepseek-r1-distill-llama-8b",
            R1_TURN + "<think>\n",
            "hm</think>4",
            {},
            "hm",
            "4",
            True,
        ),
    ),
    ("qwq", ("qwq", "qwq-32b", CHATML + "<think>\n", "hm</think>4", {}, "hm", "4", True)),
    # step3 / step3p5
    (
        "step3 turn-scoped",
        (
            "step3",
            "deepseek-v3.1_base_with_step3_special_tokens",
            "<|BOT|>assistant\n<think>old</think>A<|EOT|><|BOT|>user\nQ<|EOT|><|BOT|>assistant\n<think>\n",
            "a</think>b",
            {},
            "a",
            "b",
            True,
        ),
    ),
    (
        "step3p5 trims one newline each side",
        ("step3p5", "qwen-3", None, "a\n\n</think>\n\nb", {}, "a\n", "\nb", True),
    ),
    (
        "step3p5 single newlines",
        ("step3p5", "qwen-3", None, "a\n</think>\nb", {}, "a", "b", True),
    ),
]


@pytest.mark.parametrize("case", [c for _, c in CASES], ids=[name for name, _ in CASES])
def test_family_case(case: Case) -> None:
    family, tok_name, prompt, output, kwargs, reasoning, content, ended = case
    fc.check_row(family, Row("", output, reasoning, content, ended, prompt, kwargs, tok_name))


# Multi-turn prompts: an old </think> in the history never decides the answer by itself.
PROMPTS = [
    (
        "r1 history, new turn prefilled",
        "deepseek_r1",
        "deepseek-r1",
        R1_TURN
        + "<think>\nold</think>4<｜end▁of▁sentence｜><｜User｜>And 3+3?<｜Assistant｜><think>\n",
        True,
    ),
    (
        "r1 history, new turn bare",
        "deepseek_r1",
        "deepseek-r1",
        R1_TURN + "<think>\nold</think>4<｜end▁of▁sentence｜><｜User｜>And 3+3?<｜Assistant｜>",
        True,
    ),
]


@pytest.mark.parametrize(
    ("family", "tok_name", "prompt", "expected"),
    [p[1:] for p in PROMPTS],
    ids=[p[0] for p in PROMPTS],
)
def test_prompt_seeding(family: str, tok_name: str, prompt: str, expected: bool) -> None:
    fc.check_seed(family, Seed("", prompt, expected, tokenizer=tok_name))
