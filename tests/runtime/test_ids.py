"""Token ids and request ids are checked by one rule (``runtime/core/ids.py``) on every path:
``parser.stream``, ``parser.parse`` and ``ReasoningBatch.step`` accept the same ids and
refuse the same bad id, at the same position, with the same words.

The explicit cases are the inputs on which the parser's and the batch's checks used to
disagree: a ``Sequence`` that is not a list (the batch let numpy read ``True`` as token 1),
an int subclass (the parser refused an ``IntEnum`` id as "outside the vocabulary"), a
numpy integer past int64 (both said "of type uint64, not int"), and request ids or offsets
past int64 (numpy wrapped them round to negative numbers, so the step named the wrong
request). The property then throws mixed lists at both paths.
"""

from __future__ import annotations

import enum
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import reasonspan
from reasonspan import InvalidTokenError, ReasoningBatch, ReasoningParser
from reasonspan.runtime import InvalidStepError
from reasonspan.runtime.batch.errors import BatchTokenError
from reasonspan.runtime.core import ids
from tests.support.fixtures import tokenizer

RID = 7
_VOCAB = tokenizer("qwen-3").vocab_size


class Colour(enum.IntEnum):
    """An int subclass: an id like any other int."""

    RED = 5
    BLUE = 6


class Ids(Sequence[Any]):
    """A caller's own sequence type (neither list, tuple nor array)."""

    def __init__(self, items: list[Any]) -> None:
        self._items = items

    def __len__(self) -> int:
        return len(self._items)

    def __getitem__(self, i: Any) -> Any:
        return self._items[i]

    def __iter__(self) -> Iterator[Any]:
        return iter(self._items)


def _parser() -> ReasoningParser:
    return reasonspan.create_parser_sync("qwen3", tokenizer("qwen-3"))


def _step(toks: Any, k: int) -> Any:
    batch = ReasoningBatch()
    batch.add(RID, _parser(), [])
    return batch.step([RID], toks, [0, k])


def _both(toks: Any, k: int) -> tuple[object, object]:
    """What ``stream`` and ``step`` do with ``toks``: the token ids each accepted, or the
    error each raised."""
    out: list[object] = []
    for call in (lambda: _parser().stream(toks, True), lambda: _step(toks, k)):
        try:
            got = call()
        except Exception as exc:  # the error is what is compared
            out.append(exc)
        else:
            ids_ = got.token_ids if hasattr(got, "token_ids") else got.decided(RID)[0]
            out.append(ids_.tolist() if isinstance(ids_, np.ndarray) else list(ids_))
    return out[0], out[1]


def _same_token_error(streamed: object, stepped: object) -> str:
    """Both raised InvalidTokenError for the same id: the batch's message is the parser's
    (``token_ids`` for ``delta_token_ids``) plus the request it names."""
    assert isinstance(streamed, InvalidTokenError), streamed
    assert isinstance(stepped, BatchTokenError), stepped
    assert (stepped.position, stepped.value) == (streamed.position, streamed.value)
    body = str(streamed).removeprefix("delta_")
    assert str(stepped) == f"{body} of request {RID} (parser 'qwen3')"
    return body


# ---------------------------------------------------------------- former disagreements


def test_a_bool_in_a_sequence_of_any_type_is_refused_on_both_paths() -> None:
    """The batch read a non-list Sequence with numpy, which turns True into token 1."""
    streamed, stepped = _both(Ids([True, 2]), 2)
    assert _same_token_error(streamed, stepped) == "token_ids[0] = True is of type bool, not int"
    streamed, stepped = _both(Ids([3, 1.5]), 2)
    assert _same_token_error(streamed, stepped) == "token_ids[1] = 1.5 is of type float, not int"


def test_an_int_subclass_is_an_id_on_both_paths() -> None:
    """The parser refused an IntEnum id as outside the vocabulary; it is an int, read as
    its value (a plain int in the result), as the batch and request ids always read it."""
    streamed, stepped = _both([Colour.RED, Colour.BLUE], 2)
    assert streamed == stepped == [5, 6]
    assert isinstance(streamed, list) and all(type(t) is int for t in streamed)
    delta = _parser().stream([np.int32(5), Colour.BLUE], True)
    assert [type(t) for t in delta.token_ids] == [int, int]


@pytest.mark.parametrize("value", [np.uint64(2**63), np.int64(-1), np.int32(1 << 30)])
def test_a_numpy_integer_out_of_bounds_is_named_as_out_of_bounds(value: np.integer) -> None:
    """Not "of type uint64, not int": it is an integer, outside the vocabulary."""
    streamed, stepped = _both([1, value], 2)
    body = _same_token_error(streamed, stepped)
    assert body.startswith(f"token_ids[1] = {int(value)} is outside the vocabulary [0, ")


@pytest.mark.parametrize(
    "toks",
    [[-1, True], [_VOCAB, "x"], (2**70, None)],
    ids=["negative, then bool", "vocabulary, then str", "past int64, then None"],
)
def test_the_first_bad_id_in_order_is_reported_by_both(toks: Any) -> None:
    """The step checked types before vocabularies, so it named the bool at 1 where
    ``stream`` named the id outside the vocabulary at 0."""
    streamed, stepped = _both(toks, 2)
    body = _same_token_error(streamed, stepped)
    assert body.startswith(f"token_ids[0] = {toks[0]} is outside the vocabulary")


@pytest.mark.parametrize(
    "bad",
    [
        np.array([1.0, 2.0]),
        np.array([[1, 2]]),
        np.array(3),
        np.array([True]),
        np.array([1, 2], dtype=object),
        (i for i in (1, 2)),
        {1, 2},
        "12",
        5,
    ],
    ids=["float", "2-D", "0-d", "bool", "object", "generator", "set", "str", "int"],
)
def test_a_bad_container_gets_the_same_message_from_both(bad: Any) -> None:
    """Each API keeps its error class (the parser's TypeError, the batch's
    InvalidStepError); the words are the same."""
    k = 2 if not isinstance(bad, (np.ndarray, int)) else max(1, int(np.size(bad)))
    streamed, stepped = _both(bad, k)
    assert isinstance(streamed, TypeError), streamed
    assert isinstance(stepped, InvalidStepError), stepped
    assert str(streamed).removeprefix("delta_") == str(stepped)
    assert "1-D integer array" in str(stepped)


@pytest.mark.parametrize(
    "rids", [[2**63], np.array([2**63], np.uint64), (np.uint64(2**64 - 1),)], ids=repr
)
def test_a_request_id_past_int64_is_refused_by_step_as_by_remove(rids: Any) -> None:
    """It was wrapped round to -2**63 and reported as an unknown request of that id."""
    batch = ReasoningBatch()
    batch.add(RID, _parser(), [])
    value = int(rids[0])
    with pytest.raises(InvalidStepError) as stepped:
        batch.step(rids, [1], [0, 1])
    assert str(stepped.value) == f"request_ids[0] = {value} does not fit in int64"
    with pytest.raises(ValueError, match=f"request id {value} does not fit in int64"):
        batch.remove(rids[0])
    assert sorted(batch.request_ids()) == [RID]


def test_offsets_past_int64_and_float_ids_name_the_element() -> None:
    batch = ReasoningBatch()
    batch.add(RID, _parser(), [])
    bad_calls: list[tuple[Any, Any, Any, str]] = [
        ([RID], [1], np.array([0, 2**64 - 1], np.uint64), "offsets[1] = 18446744073709551615"),
        ([RID], [1], [0, 2**63], "offsets[1] = 9223372036854775808 does not fit in int64"),
        ([RID], [1], [0, 1.0], "offsets[1] = 1.0 of type float"),
        ([7.0], [1], [0, 1], "request_ids[0] = 7.0 of type float"),
        (Ids([True]), [1], [0, 1], "request_ids[0] = True of type bool"),
    ]
    for rids, toks, offs, text in bad_calls:
        with pytest.raises(InvalidStepError) as info:
            batch.step(rids, toks, offs)
        assert text in str(info.value)
    assert list(batch.step(Ids([RID]), Ids([1]), Ids([0, 1])).decided(RID)[0]) == [1]


# ---------------------------------------------------------------- one rule, any input

_ELEMENTS = st.one_of(
    st.integers(0, _VOCAB - 1),
    st.integers(0, _VOCAB - 1),
    st.sampled_from([-1, _VOCAB, 2**63 - 1, 2**63, 2**64, -(2**63) - 1]),
    st.sampled_from([True, False, np.True_, 1.0, 2.5, "3", None, b"4", [5]]),
    st.sampled_from([Colour.RED, np.int8(7), np.uint16(9), np.uint64(2**63 + 1)]),
    st.integers(0, _VOCAB - 1).map(np.int64),
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    items=st.lists(_ELEMENTS, max_size=6),
    container=st.sampled_from([list, tuple, Ids]),
)
def test_stream_parse_and_step_agree_on_every_list(items: list[Any], container: Any) -> None:
    """Both paths accept the same ids (as the same plain ints) or refuse the same first
    bad id with the same words; ``parse`` refuses it too, naming its own argument."""
    toks = container(items)
    streamed, stepped = _both(toks, len(items))
    if isinstance(streamed, Exception) or isinstance(stepped, Exception):
        body = _same_token_error(streamed, stepped)
        with pytest.raises(InvalidTokenError) as parsed:
            _parser().parse(toks)
        assert str(parsed.value) == f"output_{body}"
        return
    assert streamed == stepped == [int(t) for t in items]


# ---------------------------------------------------------------- the module itself


def test_scan_says_whether_the_ids_can_be_used_as_they_are() -> None:
    assert ids.scan([], 0, 10) == ids.ALL_INTS
    assert ids.scan([0, 9], 0, 10) == ids.ALL_INTS
    assert ids.scan([0, np.int16(9), Colour.RED], 0, 10) == ids.CONVERT
    assert ids.scan([0, np.int16(9), 10], 0, 10) == 2
    assert ids.scan([np.int16(9), True], 0, 10) == 1
    assert ids.scan([np.bool_(False)], 0, 10) == 0
    assert ids.scan([2**63 - 1, -(2**63)], ids.I64_MIN, ids.I64_END) == ids.ALL_INTS
    assert ids.scan([2**63], ids.I64_MIN, ids.I64_END) == 0


def test_is_id_and_as_request_id() -> None:
    for good in (0, -3, Colour.RED, np.int8(1), np.uint64(2**64 - 1)):
        assert ids.is_id(good)
    for bad in (True, np.True_, 1.0, "1", None, np.float64(1)):
        assert not ids.is_id(bad)
    assert ids.as_request_id(np.uint32(4), "x") == 4
    assert type(ids.as_request_id(Colour.RED, "x")) is int
    with pytest.raises(TypeError, match="x: request ids are ints, not bool"):
        ids.as_request_id(True, "x")
    with pytest.raises(ValueError, match="does not fit in int64"):
        ids.as_request_id(np.uint64(2**63), "x")


def test_int_array_is_an_owned_int64_copy() -> None:
    src = np.array([3, 4], np.int32)
    got = ids.int_array(src, "offsets", ValueError)
    assert got.dtype == np.int64 and got.tolist() == [3, 4]
    got[0] = 9
    assert src[0] == 3
    assert ids.int_array(range(3), "offsets", ValueError).tolist() == [0, 1, 2]
    assert ids.int_array(np.zeros(0, np.float64), "offsets", ValueError).shape == (0,)
