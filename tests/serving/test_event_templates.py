"""A :class:`~reasonspan.serving.segments.Template` fills its holes with the values' JSON
and gives the very bytes msgspec writes for the whole object, whatever the template or the
values hold (a ``%`` is text to it, never a format)."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

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
