"""nemotron_v1: Llama-Nemotron v1's tool calls, on Qwen2.5's real BPE with Llama 3's special
tokens (``qwen-2.5_base_with_llama3_special_tokens``): ``<TOOLCALL>`` / ``</TOOLCALL>`` and
``<think>`` / ``</think>`` are plain text there, several tokens each, as in the Llama 3
vocabulary, so they are matched on token bytes.

Facts: the ``llama_nemotron_json`` vLLM tool parser the Llama-Nemotron checkpoints ship
(``<TOOLCALL>`` JSON list ``</TOOLCALL>``, a lone object read as a list of one), vLLM's
``nemotron_json`` parser (the same), and Llama-Nemotron Super v1.5's template in llama.cpp's
``models/templates`` (asks for ``<TOOLCALL>[{"name": …, "arguments": …}, …]</TOOLCALL>``,
writes past calls with ``", "`` between them and the arguments as JSON).

Outputs are assembled from pieces the test knows; the expected text and calls are built from
the same pieces, and each output also goes through every path (``TextSplitter`` split at
every offset and at random ones, the runtime read as chunks and as SSE).
"""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

import reasonspan
from reasonspan import LoadedTokenizer, ParseResult, ReasoningParser
from reasonspan.detection import describe, detect
from tests.support import family_cases as fc
from tests.support.cases import split_both_ways
from tests.support.fixtures import FAMILY_TOKENIZERS, tokenizer
from tests.support.paths import every_path

# Llama-Nemotron v1 is a Llama 3 tokenizer: its <think> is plain text there too (the fixture
# and its tokens are declared in tests/families/test_llama3_json.py).
FIXTURE = "qwen-2.5_base_with_llama3_special_tokens"

# One call to f(a=V) in each form of the tool-call format architectures/nemotron_v1.py
# documents (V: where the value goes), for the fuzz and the hostile-value tests
# (tests/support/hostile.py reads it).
CALL_TEMPLATES = ('<TOOLCALL>[{"name": "f", "arguments": {"a": V}}]</TOOLCALL>',)

FAMILY = "nemotron_v1"
TOK = tokenizer(FAMILY_TOKENIZERS[FAMILY])


def prompt(switch: str) -> list[int]:
    return TOK.encode(
        "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\n"
        f"detailed thinking {switch}<|eot_id|><|start_header_id|>user<|end_header_id|>\n\n"
        "q<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n"
    )


ON, OFF = prompt("on"), prompt("off")
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "put",
            "parameters": {"type": "object", "properties": {"s": {"type": "string"}}},
        },
    },
    {"type": "function", "function": {"name": "ping", "parameters": {"type": "object"}}},
]


def parser() -> ReasoningParser:
    return reasonspan.create_parser_sync(FAMILY, TOK)


def calls(*pairs: tuple[str, dict[str, Any]]) -> str:
    """Calls as the template writes them: one JSON list, ``", "`` between the objects."""
    body = ", ".join(
        '{"name": "' + name + '", "arguments": ' + json.dumps(args, ensure_ascii=False) + "}"
        for name, args in pairs
    )
    return f"<TOOLCALL>[{body}]</TOOLCALL>"


def canon(name: str, args: dict[str, Any]) -> tuple[str, str]:
    return name, json.dumps(args, sort_keys=True, ensure_ascii=False)


def got(res: ParseResult) -> list[tuple[str, str]]:
    return [canon(c.name, json.loads(c.arguments)) for c in res.tool_calls]


ARGS = {"s": "Paris", "n": 3, "x": 1.5, "b": False, "z": None, "o": {"k": [1, "two"]}}


def test_the_markers_are_plain_text_here() -> None:
    for marker in ("<TOOLCALL>", "</TOOLCALL>", "<think>", "</think>"):
        assert TOK.single_token_id(marker) is None
        assert len(TOK.encode(marker)) > 1


def test_two_calls_after_reasoning() -> None:
    out = "<think>\nplan\n</think>\n\nSure.\n" + calls(("put", ARGS), ("ping", {}))
    res = every_path(parser, ON, TOK.encode(out), TOOLS)
    assert got(res) == [canon("put", ARGS), canon("ping", {})]
    assert (res.reasoning, res.content) == ("\nplan\n", "\n\nSure.")


def test_a_close_marker_inside_a_string_is_argument_text() -> None:
    args = {"s": "wrap it in </TOOLCALL> and ]"}
    res = every_path(parser, OFF, TOK.encode(calls(("put", args)) + " Done."), TOOLS)
    assert got(res) == [canon("put", args)]
    assert res.content == "Done."  # the space next to the call is layout


def test_a_lone_object_and_string_arguments_are_read() -> None:
    # vLLM's nemotron_json reads a body that is not a list as a list of one; arguments
    # written as a JSON string holding an object are that object.
    out = '<TOOLCALL>{"name": "put", "arguments": "{\\"s\\": \\"x\\"}"}</TOOLCALL>'
    res = every_path(parser, OFF, TOK.encode(out), TOOLS)
    assert got(res) == [canon("put", {"s": "x"})]
    assert not res.content


def test_a_call_cut_by_the_end_of_the_output_is_not_returned() -> None:
    before = TOK.encode("Checking.")
    full = calls(("put", {"s": "Paris"}))
    ids = TOK.encode(full)
    for keep in range(1, len(ids)):
        res = parser().parse(before + ids[:keep], OFF, tools=TOOLS)
        cut = TOK.decode(ids[:keep])
        assert res.tool_calls == [], cut
        if "<TOOLCALL>".startswith(cut):
            # the output ends inside the opener: those tokens never became a marker
            assert res.content == "Checking." + cut
        else:
            assert res.content == "Checking.", cut


@pytest.mark.parametrize(
    "body",
    ["<TOOLCALL>[not json]</TOOLCALL>", '<TOOLCALL>[{"a": 1}]</TOOLCALL>', "<TOOLCALL></TOOLCALL>"],
)
def test_a_malformed_body_goes_back_to_the_content_verbatim(body: str) -> None:
    res = every_path(parser, OFF, TOK.encode("Hi. " + body + " after"), TOOLS)
    assert res.tool_calls == []
    assert res.content == "Hi. " + body + " after"


def test_thinking_off_reads_calls_from_the_start() -> None:
    assert not parser().is_prompt_in_reasoning(OFF)
    res = every_path(parser, OFF, TOK.encode(calls(("ping", {}))), TOOLS)
    assert got(res) == [canon("ping", {})]
    assert (res.reasoning, res.content) == (None, None)


def test_a_call_inside_the_reasoning_is_reasoning_text() -> None:
    # The reasoning parser these checkpoints are served with (R1's) leaves the block alone:
    # a <TOOLCALL> the model writes while thinking is its thought, not a call.
    thought = "\nmaybe " + calls(("ping", {})) + "\n"
    res = every_path(parser, ON, TOK.encode("<think>" + thought + "</think>Ok."), TOOLS)
    assert res.tool_calls == []
    assert (res.reasoning, res.content) == (thought, "Ok.")


@pytest.mark.parametrize("seed", range(5))
def test_random_outputs_give_the_test_s_calls_on_every_path(seed: int) -> None:
    rng = random.Random(seed)
    thinking = rng.random() < 0.5
    text = "<think>\nplan\n</think>\n\n" if thinking else ""
    want = []
    for _ in range(rng.randint(1, 3)):
        text += rng.choice(["Sure. ", "\n", "多 🙂", "[not a call] ", "{x} "])
        pairs = [
            ("put", {"s": rng.choice(["a", "</TOOLCALL>", "]}", "多"])})
            for _ in range(rng.randint(1, 2))
        ]
        text += calls(*pairs)
        want += [canon(n, a) for n, a in pairs]
    res = every_path(parser, ON if thinking else OFF, TOK.encode(text), TOOLS)
    assert got(res) == want, text


# ---------------------------------------------------------------------- matrix rows

NEMO = FAMILY_TOKENIZERS["nemotron_v1"]
R, C, D = "Let me think it over.", "The answer is 42.", " And more."


def llama_prompt(system: str | None, user: str = "Hi?") -> str:
    head = "<|begin_of_text|>"
    if system is not None:
        head += f"<|start_header_id|>system<|end_header_id|>\n\n{system}<|eot_id|>"
    return (
        head
        + f"<|start_header_id|>user<|end_header_id|>\n\n{user}<|eot_id|>"
        + "<|start_header_id|>assistant<|end_header_id|>\n\n"
    )


def test_seeded_from_the_system_prompt() -> None:
    on, off = llama_prompt("detailed thinking on"), llama_prompt("detailed thinking off")
    assert fc.scan("nemotron_v1", NEMO, on)
    assert not fc.scan("nemotron_v1", NEMO, off)
    assert not fc.scan("nemotron_v1", NEMO, llama_prompt(None))
    # Only the system message counts, not a user who quotes the phrase.
    assert not fc.scan("nemotron_v1", NEMO, llama_prompt(None, "say detailed thinking on"))
    assert not fc.default_state("nemotron_v1", NEMO)
    out = f"<think>{R}</think>{C}"
    for prompt in (on, off):  # the model's own block is split either way
        assert fc.texts_or_none(split_both_ways("nemotron_v1", NEMO, out, prompt=prompt)) == (R, C)
    # Where the seed matters: no <think> written (or cut short) is reasoning when on.
    assert fc.texts_or_none(split_both_ways("nemotron_v1", NEMO, R, prompt=on)) == (R, None)
    assert fc.texts_or_none(split_both_ways("nemotron_v1", NEMO, C, prompt=off)) == (None, C)


def test_markers_are_text() -> None:
    tok = tokenizer(NEMO)
    assert tok.single_token_id("<think>") is None  # several tokens, as in Llama 3
    # An old block in the history, before the last <|eot_id|>, does not decide the scan.
    history = (
        llama_prompt("detailed thinking on")
        + f"<think>old</think>{C}<|eot_id|>"
        + "<|start_header_id|>user<|end_header_id|>\n\nAgain?<|eot_id|>"
        + "<|start_header_id|>assistant<|end_header_id|>\n\n"
    )
    assert fc.scan("nemotron_v1", NEMO, history)


LLAMA_NEMOTRON_TEMPLATE = (
    "{%- for message in messages %}{%- set content = message['content'] %}"
    "{%- if message['role'] == 'assistant' %}"
    "{%- set content = content.split('</think>')[-1].lstrip() %}{%- endif %}"
    "{{- '<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n' + content + "
    "'<|eot_id|>' }}{%- endfor %}"
    "{%- if add_generation_prompt %}"
    "{{- '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}{%- endif %}"
)


def test_detect_needs_its_template() -> None:
    # Plain-text markers: the vocabulary alone says nothing (no guess) ...
    base = tokenizer(NEMO)
    assert detect(base).parser is None
    # ... a template that spells </think> (stripping old reasoning) and config.json do.
    folder = LoadedTokenizer(
        base.tokenizer,
        base.source,
        config=dict(base.config),
        chat_template=LLAMA_NEMOTRON_TEMPLATE,
        model_config={"model_type": "nemotron-nas", "architectures": ["DeciLMForCausalLM"]},
    )
    result = detect(folder)
    assert result.parser == "nemotron_v1", describe(result)
