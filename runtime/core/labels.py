"""The labels: every generated token gets exactly one.

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
    - ``TOOL_CALL``: a whole tool-call message of a format that frames calls as messages of
      their own (harmony's ``to=functions.X`` header, arguments and ``<|call|>``). It is
      neither reasoning nor content text: ``ParseResult.tool_calls`` /
      ``TextSplitter.take_tool_calls()`` hold its text for the tool parser; usage counts it
      as a completion token, never a reasoning one.
    """

    REASONING = 0
    CONTENT = 1
    DELIMITER = 2
    TOOL = 3
    TOOL_CALL = 4


REASONING = int(Label.REASONING)
CONTENT = int(Label.CONTENT)
DELIMITER = int(Label.DELIMITER)
TOOL = int(Label.TOOL)
TOOL_CALL = int(Label.TOOL_CALL)


def split_labels(
    ids: list[int], labels: bytes | bytearray, include_reasoning: bool = True
) -> tuple[list[int], list[int]]:
    """``(reasoning ids, content ids)``: TOOL markers go to content, delimiters and
    TOOL_CALL messages to neither.
    With ``include_reasoning=False`` the reasoning list is empty (generated, never shown)."""
    reasoning: list[int] = []
    content: list[int] = []
    for t, lab in zip(ids, labels, strict=True):
        if lab == REASONING:
            reasoning.append(t)
        elif lab in (CONTENT, TOOL):
            content.append(t)
    return (reasoning if include_reasoning else []), content


def tool_call_ids(ids: list[int], labels: bytes | bytearray) -> list[int]:
    """The ids labelled TOOL_CALL, in order: what a tool parser reads."""
    return [t for t, lab in zip(ids, labels, strict=True) if lab == TOOL_CALL]
