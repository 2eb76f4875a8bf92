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
