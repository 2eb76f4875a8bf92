"""The ``declared`` family: a format the checkpoint declares, compiled at load time.

Fixture folders are built in ``tmp_path`` from real tokenizers (tests/support/fixtures.py: their
tokenizer.json, and tokenizer_config.json with its chat template where the fixture has one)
plus a declaration copied from its published source (tests/support/declarations.py names the file
and commit of each): three formats, each checked against the hand-written family with the
same markers.

- SmolLM3's ``response_schema`` (transformers tests/utils/test_chat_parsing_utils.py at
  cdd6f90311f6c0f489e54efedaec6f6ead7985cf) on Qwen3's folder, against ``qwen3``;
- Cohere Command's ``response_schema`` (same file and commit) on the Cohere stand-in,
  against ``cohere_command3``;
- Gemma 4's ``response_template`` (transformers 5.23.0, cli/serving/utils.py,
  ``_RESPONSE_TEMPLATE_FALLBACKS["gemma4"]``) on the Gemma 4 stand-in, against ``gemma4``.

Gemma 4's own ``response_schema`` (models/gemma4/convert_gemma4_weights.py) names an
``x-parser`` transformers' schema reader does not define (``gemma4-tool-call``): it is the
published declaration this cannot honour, and detection falls back to the family.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import reasonspan
from reasonspan import LoadedTokenizer, ReasoningParser
from reasonspan.detection import describe, detect
from reasonspan.runtime.core.errors import DeclarationError, ParserNotDetectedError
from tests.support.declarations import (
    COHERE_SCHEMA,
    GEMMA4_SCHEMA,
    GEMMA4_TEMPLATE,
    QWEN35_TEMPLATE,
    SMOLLM_SCHEMA,
)
from tests.support.fixtures import folder
from tests.support.strategies import splits

# A checkpoint that declares its output format: the base's config (and template) plus the
# declaration of tests/support/declarations.py, no new tokens.
FIXTURE = "qwen-3_base_with_declared_response_schema"
ADDED_TOKENS = ()

# One call to f(a=V) in each form of the tool-call format architectures/declared.py
# documents (V: where the value goes), for the fuzz and the hostile-value tests
# (tests/support/hostile.py reads it); the same format as qwen3's.
CALL_TEMPLATES = ('<tool_call>\n{"name": "f", "arguments": {"a": V}}\n</tool_call>',)

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
        },
    }
]
CALL = '{"name": "get_weather", "arguments": {"city": "Paris"}}'


class Format(NamedTuple):
    base: str
    key: str
    declaration: dict[str, Any]
    family: str
    start: str
    end: str
    tool: str
    outputs: tuple[str, ...]
    same_labels: bool
    """The family's markers are the declaration's (Gemma 4's template opens with
    ``<|channel>thought\\n`` where the family opens with ``<|channel>`` and trims the label:
    same text, the label's tokens labelled differently)."""
    same_calls: bool
    """Both read tool calls alike (Gemma 4's template body, unquoted keys with ``<|"|>``
    strings and the name in the opener, is no kind the declaration maps to: its calls stay
    in the content, where the family reads them with its own ``gemma4`` kind)."""


FORMATS: dict[str, Format] = {
    "smollm3_schema": Format(
        "qwen-3",
        "response_schema",
        SMOLLM_SCHEMA,
        "qwen3",
        "<think>",
        "</think>",
        "<tool_call>",
        (
            "<think>\nI should greet.\n</think>\n\nHello!",
            "I should greet.\n</think>\n\nHello!",
            f"<think>\nweather\n</think>\n\n<tool_call>\n{CALL}\n</tool_call>",
            f"checking\n</think>\n\nLet me look.\n<tool_call>\n{CALL}\n</tool_call>",
            "still thinking, cut off",
            "a</think>b</think>c<think>d",
            f"plan <tool_call>\n{CALL}\n</tool_call>",
        ),
        True,
        True,
    ),
    "cohere_schema": Format(
        "deepseek-v3_base_with_cohere_special_tokens",
        "response_schema",
        COHERE_SCHEMA,
        "cohere_command3",
        "<|START_THINKING|>",
        "<|END_THINKING|>",
        "<|START_ACTION|>",
        (
            "<|START_THINKING|>I should call a tool.<|END_THINKING|>"
            "<|START_RESPONSE|>It is sunny.<|END_RESPONSE|>",
            "<|START_THINKING|>plan<|END_THINKING|><|START_ACTION|>"
            '[{"tool_call_id": "0", "tool_name": "get_weather", "parameters": {}}]'
            "<|END_ACTION|>",
            "<|START_THINKING|>a<|END_THINKING|>b<|END_THINKING|>c",
            "<|START_THINKING|>cut off",
            "<|START_THINKING|>x<|START_RESPONSE|>skipped the end<|END_RESPONSE|>",
        ),
        True,
        True,
    ),
    "gemma4_template": Format(
        "qwen-3_base_with_gemma4_special_tokens",
        "response_template",
        GEMMA4_TEMPLATE,
        "gemma4",
        "<|channel>thought\n",
        "<channel|>",
        "<|tool_call>call:",
        (
            "<|channel>thought\nI think.<channel|>Hi there",
            "<|channel>thought\nplan\n<channel|><|tool_call>call:get_weather{}<tool_call|>",
            "Just content",
            "a<channel|>b<|channel>thought\nc<channel|>d",
            "<|channel>thought\ncut off",
        ),
        False,
        False,
    ),
}


def declared_folder(root: Path, base: str, key: str, declaration: object) -> Path:
    """A copy of a fixture folder whose tokenizer_config.json carries ``declaration``."""
    src = folder(base)
    root.mkdir(parents=True, exist_ok=True)
    shutil.copy(src / "tokenizer.json", root / "tokenizer.json")
    config_file = src / "tokenizer_config.json"
    config = json.loads(config_file.read_text("utf-8")) if config_file.exists() else {}
    config[key] = declaration
    (root / "tokenizer_config.json").write_text(json.dumps(config), encoding="utf-8")
    return root


_loaded: dict[str, LoadedTokenizer] = {}


@pytest.fixture(scope="module", autouse=True)
def _release_loaded() -> Iterator[None]:
    """This module's declared tokenizers (~60 MB each) go when its tests are done."""
    yield
    _loaded.clear()


def loaded(name: str, tmp_path_factory: pytest.TempPathFactory) -> LoadedTokenizer:
    if name not in _loaded:
        f = FORMATS[name]
        root = tmp_path_factory.mktemp(name)
        _loaded[name] = reasonspan.load_tokenizer_sync(
            declared_folder(root, f.base, f.key, f.declaration)
        )
    return _loaded[name]


def pair(
    name: str, factory: pytest.TempPathFactory, start: bool | None
) -> tuple[ReasoningParser, ReasoningParser]:
    tok = loaded(name, factory)
    declared = reasonspan.create_parser_sync("declared", tok, default_reasoning=start)
    family = reasonspan.create_parser_sync(FORMATS[name].family, tok, default_reasoning=start)
    return declared, family


CASES = [(name, i) for name, f in FORMATS.items() for i in range(len(f.outputs))]


def as_declared(f: Format, family: ReasoningParser, text: str | None) -> str | None:
    """The family's ``text`` as the declaration can give it. Where the two read calls
    differently (``same_calls`` False: no tool-call format is declared) the family also
    shows the special markers of its own format that are not its machine's (Gemma 4's
    close ``<tool_call|>``: a tool-call format's markers show as text), which the
    declaration leaves out as it leaves out any special token it does not know."""
    fmt = family.machine.spec.tool_calls
    if f.same_calls or text is None or fmt is None:
        return text
    tok = family.tokenizer
    for marker in fmt.markers():
        tid = tok.single_token_id(marker)
        if tid in tok.special_ids and tid not in family.machine.id_markers:
            text = text.replace(marker, "")
    return text


# ---------------------------------------------------------------------- compiling


@pytest.mark.parametrize("name", sorted(FORMATS))
def test_markers_come_from_the_declaration(
    name: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    f = FORMATS[name]
    parser = reasonspan.create_parser_sync("declared", loaded(name, tmp_path_factory))
    spec = parser.spec  # the compiled class carries the declared spec
    assert spec.name == "declared"
    assert spec.start == (f.start,)
    assert f.end in spec.end
    assert spec.tool == (f.tool,)
    assert parser.machine.spec == spec


def test_schema_whitespace_is_layout_and_json_calls_are_read(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    spec = reasonspan.create_parser_sync(
        "declared", loaded("smollm3_schema", tmp_path_factory)
    ).spec
    # (?:<think>\n?(?P<thinking>.+?)\n?</think>)?\s*…\s*(?P<content>.+?)?
    assert (spec.reasoning_trim.lead, spec.reasoning_trim.lead_max) == ("\n", 1)
    assert (spec.reasoning_trim.trail, spec.reasoning_trim.trail_max) == ("\n", 1)
    assert set(spec.content_trim.lead) >= set(" \t\n")
    assert spec.tool_calls is not None
    assert spec.tool_calls.kinds == ("json",)
    assert spec.tool_calls.close == ("</tool_call>",)


def test_cohere_calls_are_read_by_the_cohere_kind(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    # Its transform renames tool_name/parameters: the cohere kind reads that body (as the
    # cohere family does); the answer wrapper is the declared content part: it ends
    # reasoning, its closer is stripped.
    spec = reasonspan.create_parser_sync("declared", loaded("cohere_schema", tmp_path_factory)).spec
    assert spec.tool_calls is not None and spec.tool_calls.kinds == ("cohere",)
    assert spec.tool_calls.open == ("<|START_ACTION|>",)
    assert "<|START_RESPONSE|>" in spec.end
    assert spec.strip == ("<|END_RESPONSE|>",)


def test_template_anchor_bounds_the_prompt_scan(tmp_path_factory: pytest.TempPathFactory) -> None:
    tok = loaded("gemma4_template", tmp_path_factory)
    declared = reasonspan.create_parser_sync("declared", tok)
    assert declared.spec.turn == ("<|turn>model\n", "<tool_response|>")
    family = reasonspan.create_parser_sync("gemma4", tok)
    history = "<|turn>user\nhi<turn|>\n<|turn>model\n<|channel>thought\nold<channel|>4<turn|>\n"
    for tail, inside in (("<|turn>model\n<|channel>thought\n", True), ("<|turn>model\n", False)):
        prompt = tok.encode(history + "<|turn>user\nagain<turn|>\n" + tail)
        assert declared.is_prompt_in_reasoning(prompt) is inside
        assert family.is_prompt_in_reasoning(prompt) is inside


# ---------------------------------------------------------------------- same split as the family


@pytest.mark.parametrize(("name", "index"), CASES)
@pytest.mark.parametrize("start", [None, True, False])
def test_declared_splits_as_the_family(
    name: str, index: int, start: bool | None, tmp_path_factory: pytest.TempPathFactory
) -> None:
    f = FORMATS[name]
    declared, family = pair(name, tmp_path_factory, start)
    ids = declared.tokenizer.encode(f.outputs[index])
    tools = TOOLS if f.same_calls else None
    got = declared.parse(ids, tools=tools)
    want = family.parse(ids, tools=tools)
    assert (got.reasoning, got.content) == (want.reasoning, as_declared(f, family, want.content))
    assert got.tool_calls == want.tool_calls
    if f.same_labels:
        assert got.labels == want.labels


def test_declared_tool_call_is_read(tmp_path_factory: pytest.TempPathFactory) -> None:
    declared, _ = pair("smollm3_schema", tmp_path_factory, None)
    got = declared.parse(
        declared.tokenizer.encode(FORMATS["smollm3_schema"].outputs[2]), tools=TOOLS
    )
    assert [(c.name, json.loads(c.arguments)) for c in got.tool_calls] == [
        ("get_weather", {"city": "Paris"})
    ]


@pytest.mark.parametrize("name", sorted(FORMATS))
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_streamed_in_any_split_as_the_family_parses(
    name: str, data: st.DataObject, tmp_path_factory: pytest.TempPathFactory
) -> None:
    f = FORMATS[name]
    start = data.draw(st.booleans(), label="start_in_reasoning")
    declared, family = pair(name, tmp_path_factory, start)
    text = "".join(data.draw(st.lists(st.sampled_from(f.outputs), min_size=1, max_size=3)))
    ids = declared.tokenizer.encode(text)
    want = family.parse(ids)
    splitter = reasonspan.TextSplitter(declared)
    reasoning = content = ""
    for delta in data.draw(splits(ids), label="deltas"):
        r, c = splitter.feed(delta)
        reasoning += r
        content += c
    r, c = splitter.finish()
    assert (reasoning + r or None, content + c or None) == (
        want.reasoning,
        as_declared(f, family, want.content),
    )
    labels = bytearray()
    state = start
    declared.reset()
    for delta in data.draw(splits(ids), label="label deltas"):
        d = declared.stream(delta, state)
        state = d.is_still_reasoning
        labels += d.labels
    labels += declared.finish(state).labels
    assert bytes(labels) == declared.parse(ids).labels
    if f.same_labels:
        assert bytes(labels) == want.labels


def test_template_xml_calls_read_as_qwen3_reads_them(tmp_path: Path) -> None:
    """Qwen3.5's fallback template (``xml-inline`` with ``<function=`` / ``<parameter=``)
    maps onto the ``xml`` kind; on Qwen3.5's own folder (its template prefills ``<think>``)
    the declared parser splits and reads calls as qwen3 does."""
    tok = reasonspan.load_tokenizer_sync(
        declared_folder(tmp_path, "qwen-3.5", "response_template", QWEN35_TEMPLATE)
    )
    declared = reasonspan.create_parser_sync("declared", tok)
    family = reasonspan.create_parser_sync("qwen3", tok)
    assert declared.spec.tool_calls is not None
    assert declared.spec.tool_calls.kinds == ("xml",)
    assert declared.spec.tool_calls.open == ("<tool_call>",)
    assert declared.spec.tool_calls.close == ("</tool_call>",)
    call = "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n</function>"
    for output in (f"hm\n</think>\n\nOk.\n\n{call}\n</tool_call>", f"hm\n</think>\n\n{call}"):
        ids = tok.encode(output)
        got, want = declared.parse(ids, tools=TOOLS), family.parse(ids, tools=TOOLS)
        assert (got.reasoning, got.content, got.tool_calls) == (
            want.reasoning,
            want.content,
            want.tool_calls,
        )
    got = declared.parse(tok.encode(f"hm\n</think>\n\n{call}\n</tool_call>"), tools=TOOLS)
    assert [(c.name, json.loads(c.arguments)) for c in got.tool_calls] == [
        ("get_weather", {"city": "Paris"})
    ]


# ---------------------------------------------------------------------- declarations it cannot honour


def _error(tmp_path: Path, key: str, declaration: object) -> DeclarationError:
    tok = reasonspan.load_tokenizer_sync(declared_folder(tmp_path, "qwen-3", key, declaration))
    with pytest.raises(DeclarationError) as info:
        reasonspan.create_parser_sync("declared", tok)
    return info.value


def test_unknown_x_parser_names_property_and_parser(tmp_path: Path) -> None:
    err = _error(tmp_path, "response_schema", GEMMA4_SCHEMA)
    assert err.property == "tool_calls"
    assert err.pattern == "gemma4-tool-call"
    assert "'tool_calls'" in str(err) and "gemma4-tool-call" in str(err)
    assert isinstance(err, ValueError) and isinstance(err, reasonspan.ReasonspanError)


def test_thinking_regex_without_literal_delimiters(tmp_path: Path) -> None:
    pattern = r"^(?P<thinking>.*?)(?P<content>[A-Z].*)$"
    schema = {**SMOLLM_SCHEMA, "x-regex": pattern}
    err = _error(tmp_path, "response_schema", schema)
    assert err.property == "thinking"
    assert err.pattern == pattern
    assert "no literal delimiter before" in str(err)
    assert pattern in str(err)


@pytest.mark.parametrize(
    ("key", "declaration", "prop", "says"),
    [
        (
            "response_schema",
            {**SMOLLM_SCHEMA, "x-regex": "(?P<thinking>"},
            "x-regex",  # the top-level pattern, where the broken regex is
            "not a regular expression",
        ),
        (
            "response_template",
            {"fields": {"tool_calls": {"open": "<tool_call>", "close": "</tool_call>"}}},
            "fields",
            "no reasoning field",
        ),
        (
            "response_template",
            {"fields": {"thinking": {"open": "<think>", "close": "</think>", "content": "yaml"}}},
            "thinking.content",
            "content parser 'yaml'",
        ),
        (
            "response_template",
            {"fields": {"thinking": {"open": "<think>"}}},
            "thinking",
            "no literal close delimiter",
        ),
        (
            "response_template",
            {"fields": {"thinking": {"open": "\n", "close": "</think>"}}},
            "thinking.open",
            "must not be blank",
        ),
        ("response_schema", ["not", "an", "object"], "response_schema", "expected a JSON object"),
    ],
)
def test_bad_declarations_are_refused(
    tmp_path: Path, key: str, declaration: object, prop: str, says: str
) -> None:
    err = _error(tmp_path, key, declaration)
    assert err.property == prop
    assert says in str(err)


def test_no_declaration_is_an_error_for_the_declared_family() -> None:
    with pytest.raises(DeclarationError, match="declares no output format"):
        reasonspan.create_parser_sync("declared", folder("qwen-3"))


# ---------------------------------------------------------------------- detection and "auto"


@pytest.mark.parametrize("name", sorted(FORMATS))
def test_detect_picks_the_declared_format(
    name: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    tok = loaded(name, tmp_path_factory)
    result = detect(tok)
    assert result.parser == "declared", describe(result)
    assert result.candidates[0].name == "declared"
    # The family it would otherwise be is still scored, behind the declaration.
    assert FORMATS[name].family in [c.name for c in result.candidates[1:]]
    assert result.evidence.declared is not None
    assert FORMATS[name].key in result.evidence.declared
    assert "declared format: " + FORMATS[name].key in describe(result)
    parser = reasonspan.create_parser_sync("auto", tok)
    assert parser.spec.name == "declared"
    assert parser.spec.start == (FORMATS[name].start,)


def test_detect_falls_back_and_says_why(tmp_path: Path) -> None:
    f = FORMATS["gemma4_template"]
    tok = reasonspan.load_tokenizer_sync(
        declared_folder(tmp_path, f.base, "response_schema", GEMMA4_SCHEMA)
    )
    result = detect(tok)
    assert result.parser == "gemma4", describe(result)
    assert result.evidence.declared is None
    assert result.evidence.declaration_error is not None
    assert "gemma4-tool-call" in result.evidence.declaration_error
    report = describe(result)
    assert "declared format not used" in report and "fell back" in report
    assert reasonspan.create_parser_sync("auto", tok).spec.name == "gemma4"


def test_a_template_wins_over_a_schema(tmp_path: Path) -> None:
    # transformers 5.13+ reads response_template and drops response_schema.
    root = declared_folder(tmp_path, "qwen-3", "response_schema", GEMMA4_SCHEMA)
    config = json.loads((root / "tokenizer_config.json").read_text("utf-8"))
    config["response_template"] = {
        "fields": {"reasoning_content": {"open": "<think>", "close": "</think>"}}
    }
    (root / "tokenizer_config.json").write_text(json.dumps(config), encoding="utf-8")
    result = detect(root)
    assert result.parser == "declared", describe(result)
    assert result.evidence.declared is not None
    assert result.evidence.declared.startswith("response_template")


def test_auto_takes_a_folder_path_and_names_its_candidates() -> None:
    path = folder("qwen-3_base_with_declared_response_schema")
    assert reasonspan.create_parser_sync("auto", str(path)).spec.name == "declared"
    assert reasonspan.create_parser_sync("AUTO", folder("qwen-3")).spec.name == "qwen3"
    with pytest.raises(ParserNotDetectedError, match="pass a parser name"):
        reasonspan.create_parser_sync("auto", folder("qwen-2.5"))


def test_detect_cli_reports_the_declaration(tmp_path_factory: pytest.TempPathFactory) -> None:
    tok = loaded("cohere_schema", tmp_path_factory)
    out = subprocess.run(
        [sys.executable, "-m", "reasonspan", "detect", str(Path(tok.source).parent)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    assert "parser: declared" in out.stdout
    assert "declared format: response_schema" in out.stdout
