"""The four labels: every generated token gets exactly one.

Usage counts, logprob routing and thinking budgets are all derived from these labels, so
that they can never disagree with the text the client sees.
"""

from __future__ import annotations

from enum import IntEnum


class Label(IntEnum):
    """What a generated token is.

    - ``REASONING``: chain of thought, shown as ``delta.reasoning``.
    - ``CONTENT``: the answer, shown as ``delta.content``.
    - ``DELIMITER``: a consumed marker (``<think>``, ``</think>``, a stripped wrapper); shown
      nowhere and counted in neither reasoning nor content tokens.
    - ``TOOL``: a marker that ends reasoning and stays in the content, so the tool-call
      parser downstream still sees it (``<tool_call>``, ``<|tool_calls_section_begin|>``).
    """

    REASONING = 0
    CONTENT = 1
    DELIMITER = 2
    TOOL = 3


REASONING = int(Label.REASONING)
CONTENT = int(Label.CONTENT)
DELIMITER = int(Label.DELIMITER)
TOOL = int(Label.TOOL)


def split_labels(
    ids: list[int], labels: bytes | bytearray, include_reasoning: bool = True
) -> tuple[list[int], list[int]]:
    """``(reasoning ids, content ids)``: TOOL markers go to content, delimiters to neither.
    With ``include_reasoning=False`` the reasoning list is empty (generated, never shown)."""
    reasoning: list[int] = []
    content: list[int] = []
    for t, lab in zip(ids, labels, strict=True):
        if lab == REASONING:
            reasoning.append(t)
        elif lab in (CONTENT, TOOL):
            content.append(t)
    return (reasoning if include_reasoning else []), content
