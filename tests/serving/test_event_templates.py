"""A :class:`~reasonspan.serving.segments.Template` fills its holes with the values' JSON
and gives the very bytes msgspec writes for the whole object, whatever the template or the
values hold (a ``%`` is text to it, never a format); the events the protocols' writers fill
from templates are the objects encoded."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from reasonspan.runtime.wire.openai import FinishReason
from reasonspan.serving.messages_events import MessageEvents, event, stop_reason
from reasonspan.serving.segments import HOLE, Template

_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
    max_leaves=6,
)


@given(
    fixed=st.dictionaries(st.text(), _json, max_size=4),
    values=st.lists(_json, min_size=0, max_size=4),
)
def test_a_filled_template_is_msgspecs_encoding(fixed: dict[str, Any], values: list[Any]) -> None:
    holes = {f"hole{i}": HOLE for i in range(len(values))}
    template = Template(msgspec.json.encode({"fixed": fixed, **holes, "pct": "%d %s %%"}))
    filled = template.fill(*(msgspec.json.encode(v) for v in values))
    whole = {"fixed": fixed, **{f"hole{i}": v for i, v in enumerate(values)}, "pct": "%d %s %%"}
    assert filled == msgspec.json.encode(whole)


def test_a_fill_with_the_wrong_number_of_values_names_both() -> None:
    template = Template(msgspec.json.encode({"a": HOLE, "b": HOLE}))
    with pytest.raises(ValueError, match="a template with 2 holes got 1 values"):
        template.fill(b"1")


@pytest.mark.parametrize(
    ("finish", "stop_sequence"), [("stop", None), ("stop", 'END "x"'), ("length", None)]
)
def test_a_messages_opening_and_closing_events_are_the_objects_encoded(
    finish: FinishReason, stop_sequence: str | None
) -> None:
    """Anthropic's ``message_start`` (and ``ping``) and ``message_delta`` / ``message_stop``
    filled from templates: the bytes of the whole objects, encoded."""
    writer = MessageEvents('msg_"1"', "model/ünï", 17)
    head = {
        "type": "message_start",
        "message": {
            "id": 'msg_"1"',
            "type": "message",
            "role": "assistant",
            "model": "model/ünï",
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {"input_tokens": 17, "output_tokens": 0},
        },
    }
    ping = event("ping", {"type": "ping"})
    assert writer.start() == event("message_start", head) + ping
    delta = {
        "type": "message_delta",
        "delta": {
            "stop_reason": stop_reason(finish, stop_sequence),
            "stop_sequence": stop_sequence if finish == "stop" else None,
        },
        "usage": {"output_tokens": 42},
    }
    end = event("message_delta", delta) + event("message_stop", {"type": "message_stop"})
    assert writer.end(finish, stop_sequence, 42) == end
