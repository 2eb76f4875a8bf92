"""Hostile files in a model folder: bounded before any work, refused with a clear error.

Issue 29, item 5. A declared output format (transformers' ``response_template`` /
``response_schema`` in tokenizer_config.json) is bounded in every dimension, each checked
before a marker is resolved or a table built: 2,000 alternative openers took over 150 s to
compile, a 1 MB delimiter ran out of memory at 5.7 GB, 10,000 nested groups were a
RecursionError, and a one-character delimiter was accepted. ``reasonspan detect`` and
``reasonspan serve`` name the refused declaration and fall back to the detected family.

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
from declarations import (
    COHERE_SCHEMA,
    GEMMA4_SCHEMA,
    GEMMA4_TEMPLATE,
    QWEN35_TEMPLATE,
    SMOLLM_SCHEMA,
)
from fixtures import folder
from reasonspan.runtime import declared, declared_regex
from reasonspan.runtime.declared import read_declaration
from reasonspan.runtime.errors import DeclarationError

import reasonspan
from reasonspan.cli import main
from reasonspan.detection import describe, detect

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
            assert declared._nesting(value) * 4 <= declared.MAX_DECLARATION_NESTING
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
    regex reader recursing (the RecursionError issue 29 found)."""
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
    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text("utf-8")
    d, r = declared, declared_regex
    assert f"at most {d.MAX_DELIMITERS} delimiters" in readme
    assert f"each of {d.MIN_DELIMITER_CHARS} to {d.MAX_DELIMITER_CHARS} characters" in readme
    assert f"patterns of\n{r.MAX_PATTERN_CHARS:,} characters" in readme
    assert f"groups nested {r.MAX_PATTERN_NESTING} deep" in readme
    assert f"arrays nested {d.MAX_DECLARATION_NESTING} deep" in readme
