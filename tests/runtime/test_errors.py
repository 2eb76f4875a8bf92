"""Bad input gets a clear error that names what was wrong, and never corrupts state."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import reasonspan
from reasonspan import (
    InvalidOptionError,
    InvalidTokenError,
    MissingMarkerError,
    TokenizerLoadError,
    UnknownParserError,
)
from tests.support.fixtures import folder, tokenizer


async def test_unknown_parser_lists_known_names() -> None:
    tok = tokenizer("qwen-3")
    with pytest.raises(UnknownParserError) as err:
        await reasonspan.create_parser("qwen4", tok)
    msg = str(err.value)
    assert "'qwen4'" in msg
    assert "qwen3" in msg and "deepseek_r1" in msg
    assert set(err.value.known) == set(reasonspan.list_parsers())


async def test_missing_tokenizer_file(tmp_path: Path) -> None:
    with pytest.raises(TokenizerLoadError, match="no such file"):
        await reasonspan.load_tokenizer(tmp_path / "nope" / "tokenizer.json")


async def test_folder_without_tokenizer(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text("{}")
    with pytest.raises(TokenizerLoadError, match=r"no tokenizer\.json.*config\.json"):
        await reasonspan.load_tokenizer(tmp_path)


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        ("{not json", "not a valid tokenizer.json"),
        ('{"version": "1.0"}', "no 'model' section"),
        ('{"model": {"type": "Nonsense"}}', "tokenizers could not read it"),
    ],
)
async def test_malformed_tokenizer_json(tmp_path: Path, content: str, reason: str) -> None:
    path = tmp_path / "tokenizer.json"
    path.write_text(content)
    with pytest.raises(TokenizerLoadError) as err:
        await reasonspan.load_tokenizer(path)
    assert reason in str(err.value)
    assert str(path) in str(err.value)


async def test_wrong_type_for_path() -> None:
    with pytest.raises(TypeError, match="takes a path"):
        await reasonspan.load_tokenizer(42)  # type: ignore[arg-type]


def test_missing_required_marker_names_marker_and_file() -> None:
    tok = tokenizer("qwen-2.5")  # a Qwen vocabulary from before <think> was a token
    with pytest.raises(MissingMarkerError) as err:
        reasonspan.create_parser_sync("qwen3", tok)
    assert "'<think>'" in str(err.value)
    assert str(folder("qwen-2.5")) in str(err.value)


@pytest.mark.parametrize(
    ("bad", "position", "what"),
    [
        ([1, -5, 2], 1, "outside the vocabulary"),
        ([1, 10**9], 1, "outside the vocabulary"),
        ([1, "x"], 1, "of type str"),
        ([1.5], 0, "of type float"),
        ([None], 0, "of type NoneType"),
    ],
)
def test_invalid_token_ids(bad: list[object], position: int, what: str) -> None:
    tok = tokenizer("qwen-3")
    parser = reasonspan.create_parser_sync("qwen3", tok)
    with pytest.raises(InvalidTokenError) as err:
        parser.stream(bad, True)  # type: ignore[arg-type]
    assert f"delta_token_ids[{position}]" in str(err.value)
    assert what in str(err.value)
    with pytest.raises(InvalidTokenError):
        parser.parse(bad)  # type: ignore[arg-type]
    with pytest.raises(InvalidTokenError):
        parser.is_prompt_in_reasoning(bad)  # type: ignore[arg-type]


def test_invalid_numpy_ids() -> None:
    tok = tokenizer("qwen-3")
    parser = reasonspan.create_parser_sync("qwen3", tok)
    with pytest.raises(InvalidTokenError, match=r"delta_token_ids\[2\]"):
        parser.stream(np.array([1, 2, tok.vocab_size]), True)
    with pytest.raises(TypeError, match="1-D integer array"):
        parser.stream(np.array([1.0, 2.0]), True)
    with pytest.raises(TypeError, match="sequence of int"):
        parser.stream("hello", True)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="sequence of int"):
        parser.stream(5, True)  # type: ignore[arg-type]


def test_bad_input_does_not_corrupt_state_multi_token() -> None:
    """A delta rejected in the middle of a held-back marker leaves the held tokens intact."""
    tok = tokenizer("qwen-3")
    parser = reasonspan.create_parser_sync("minimax_m3", tok)
    ids = tok.encode("<mm:think>a</mm:think>b")
    whole = parser.parse(ids)
    parser.reset()
    state = parser.default_reasoning
    got: list[int] = []
    labels = b""
    for i, t in enumerate(ids):
        if i == 2:
            with pytest.raises(InvalidTokenError):
                parser.stream([t, -1], state)
        d = parser.stream([t], state)
        state = d.is_still_reasoning
        got += d.token_ids
        labels += d.labels
    tail = parser.finish(state)
    assert got + tail.token_ids == ids
    assert labels + tail.labels == whole.labels


def test_parser_usable_after_error_and_reset() -> None:
    tok = tokenizer("qwen-3")
    parser = reasonspan.create_parser_sync("qwen3", tok)
    with pytest.raises(InvalidTokenError):
        parser.stream([1, 2, -3], True)
    parser.reset()
    ids = tok.encode("<think>a</think>b")
    assert parser.parse(ids).content == "b"
    d = parser.stream(ids, True)
    assert d.content_token_ids == tok.encode("b")


@pytest.mark.parametrize(
    ("kwargs", "key"),
    [({"enable_thinking": "no"}, "enable_thinking"), ({"enable_thinking": 0}, "enable_thinking")],
)
def test_bad_chat_template_kwargs(kwargs: dict[str, object], key: str) -> None:
    with pytest.raises(InvalidOptionError) as err:
        reasonspan.create_parser_sync("qwen3", tokenizer("qwen-3"), kwargs)
    assert repr(key) in str(err.value)


def test_chat_template_kwargs_must_be_a_mapping() -> None:
    with pytest.raises(InvalidOptionError, match="chat_template_kwargs"):
        reasonspan.create_parser_sync("qwen3", tokenizer("qwen-3"), ["x"])  # type: ignore[arg-type]


def test_error_text_is_json_safe() -> None:
    """Errors end up in API responses: their text must serialise."""
    err = InvalidTokenError("x", 3, 10, "delta_token_ids")
    assert json.loads(json.dumps(str(err))) == str(err)
