"""The same output three ways: SGLang 0.5.23's built-in detectors, reasonspan's, and
reasonspan's own ``parse()``; each test names a defect of the built-in that reasonspan's
detectors do not have.

Each output goes through SGLang's per-request composition (``ReasoningParser``, whose normal
text feeds a ``FunctionCallParser``), non-streaming and streamed as SGLang's detokenizer
sends text: the decoded text of one token a step, and of 1 to 6 tokens a step (a draft
model's accepted tokens, or a detokenizer that fell behind). reasonspan's detectors must give
``parse()``'s answer every way; the built-in's answer is asserted too, so each test shows the
defect on the SGLang this project pins (``scripts/sglang_env.sh``): if a release fixes one,
its test says so. SGLang keeps the whitespace next to markers that reasonspan trims (a
documented convention, docs/sglang.md), so the built-in's texts are compared stripped.
Streamed calls are joined by ``tool_index`` (SGLang streams a call's arguments in pieces).
"""

from __future__ import annotations

import json
import random
from typing import Any

from sglang.srt.function_call.function_call_parser import FunctionCallParser
from sglang.srt.parser.reasoning_parser import ReasoningParser

from reasonspan.integrations import sglang as adapter
from tests.integrations_sglang.test_sglang_detectors import SGL_TOOLS, Answer, hf, reference

Names = tuple[str, str]
STEPS = (1, 0)
"""One token a step, and 1 to 6 tokens a step at random (0)."""


def _joined(items: list[Any]) -> list[tuple[str, Any]]:
    """Streamed call items joined per call; arguments that do not parse stay a string."""
    calls: dict[int, list[str]] = {}
    for item in items:
        call = calls.setdefault(item.tool_index, ["", ""])
        call[0] = item.name or call[0]
        call[1] += item.parameters or ""
    out: list[tuple[str, Any]] = []
    for name, arguments in calls.values():
        try:
            out.append((name, json.loads(arguments)))
        except json.JSONDecodeError:
            out.append((name, arguments))
    return out


def _parsers(family: str, names: Names, force: bool | None) -> tuple[Any, Any]:
    tok = hf(family)
    rp = ReasoningParser(names[0], True, force, None, tokenizer=tok)
    return rp, FunctionCallParser(SGL_TOOLS, names[1], tokenizer=tok)


def whole(family: str, names: Names, text: str, force: bool | None) -> Answer:
    rp, fp = _parsers(family, names, force)
    reasoning, content = rp.parse_non_stream(text)
    items: list[Any] = []
    if content:
        content, items = fp.parse_non_stream(content)
    return reasoning or "", content or "", _joined(items)


def streamed(family: str, names: Names, text: str, force: bool | None, k: int) -> Answer:
    """SGLang's streaming path over the decoded text of ``k`` tokens a step (0: 1 to 6)."""
    tok = hf(family)
    ids = tok.encode(text, add_special_tokens=False)
    rp, fp = _parsers(family, names, force)
    steps = random.Random(7)
    reasoning: list[str] = []
    content: list[str] = []
    items: list[Any] = []
    i = 0
    while i < len(ids):
        n = k or steps.randint(1, 6)
        delta, i = tok.decode(ids[i : i + n]), i + n
        r, normal = rp.parse_stream_chunk(delta)
        if i >= len(ids):
            end_r, end_n = rp.parse_stream_end()
            r, normal = (r or "") + (end_r or ""), (normal or "") + (end_n or "")
        reasoning.append(r or "")
        normal, new = fp.parse_stream_chunk(normal or "")
        content.append(normal)
        items += new
        if i >= len(ids):
            end_text, end_items = fp.parse_stream_end()
            content.append(end_text)
            items += end_items
    return "".join(reasoning), "".join(content), _joined(items)


def three_ways(family: str, builtin: Names, text: str, force: bool | None = None) -> dict[str, Any]:
    """Every way's answer (``builtin whole``, ``builtin k=1``, ..., ``parse()``); asserts
    that reasonspan's detectors give ``parse()``'s."""
    want = reference(family, text, force)
    mine = (adapter.own_name(family), adapter.own_name(family))
    got: dict[str, Any] = {"parse()": want, "reasonspan whole": whole(family, mine, text, force)}
    for k in STEPS:
        got[f"reasonspan k={k or '1-6'}"] = streamed(family, mine, text, force, k)
    assert all(answer == want for answer in got.values()), got
    r, c, calls = whole(family, builtin, text, force)
    got["builtin whole"] = (r.strip(), c.strip(), calls)
    for k in STEPS:
        r, c, calls = streamed(family, builtin, text, force, k)
        got[f"builtin k={k or '1-6'}"] = (r.strip(), c.strip(), calls)
    return got


QWEN = ("qwen3", "qwen25")
CALL = '<tool_call>\n{"name": "f", "arguments": {"a": [1]}}\n</tool_call>'
BUILTIN_WAYS = ("builtin whole", "builtin k=1", "builtin k=1-6")


def test_the_text_after_a_call_is_kept() -> None:
    """Hermes (``qwen25``): ``Before. <call> After.`` loses ``After.`` every way."""
    got = three_ways("qwen3", QWEN, f"<think>\nhmm\n</think>\n\nBefore.\n\n{CALL}\n\nAfter.")
    assert got["parse()"] == ("hmm", "Before.\n\nAfter.", [("f", {"a": [1]})])
    for way in BUILTIN_WAYS:
        assert got[way] == ("hmm", "Before.", [("f", {"a": [1]})]), way


def test_a_call_cut_by_max_tokens_is_not_sent_half_written() -> None:
    """Hermes: an output cut inside a call's arguments. SGLang's streaming path has sent the
    call with arguments that never close; reasonspan sends no call, as ``parse()``."""
    got = three_ways(
        "qwen3",
        QWEN,
        '<think>\nhmm\n</think>\n\n<tool_call>\n{"name": "f", "arguments": {"a": [1, 2',
    )
    assert got["parse()"] == ("hmm", "", [])
    assert got["builtin whole"] == ("hmm", "", [])
    for way in ("builtin k=1", "builtin k=1-6"):
        assert got[way] == ("hmm", "", [("f", '{"a": [1')]), way


def test_a_malformed_call_is_kept_as_text() -> None:
    """Hermes: arguments that are not JSON (``{"a": Bern}``). SGLang's non-streaming path
    drops the markup with no call (the text is lost); streamed, it sends a call with empty
    arguments. reasonspan returns the markup as content every way, as ``parse()``."""
    bad = '<tool_call>\n{"name": "f", "arguments": {"a": Bern}}\n</tool_call>'
    got = three_ways("qwen3", QWEN, f"<think>\nhmm\n</think>\n\n{bad}")
    assert got["parse()"] == ("hmm", bad, [])
    assert got["builtin whole"] == ("hmm", "", [])
    for way in ("builtin k=1", "builtin k=1-6"):
        assert got[way] == ("hmm", "", [("f", "")]), way


def test_a_multi_token_step_keeps_the_text_before_a_glm_call() -> None:
    """GLM-4.5: when a step holds the end of the text and the call's opener together,
    SGLang's ``glm45`` detector drops that text (``Calling.`` is lost)."""
    text = "<think>Plan.</think>\nCalling.<tool_call>f\n<arg_key>a</arg_key>\n<arg_value>[1, 2]</arg_value>\n</tool_call>"
    got = three_ways("glm45", ("glm45", "glm45"), text)
    want = ("Plan.", "Calling.", [("f", {"a": [1, 2]})])
    assert got["parse()"] == want
    assert got["builtin whole"] == got["builtin k=1"] == want
    assert got["builtin k=1-6"] == ("Plan.", "", [("f", {"a": [1, 2]})])


def test_a_multi_token_step_keeps_the_text_before_a_deepseek_call() -> None:
    """DeepSeek R1 with ``deepseekv3``: the same, the step's text cut short (``Calling``)."""
    text = (
        "Plan.</think>Calling.<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>f"
        '\n```json\n{"a": [1, 2]}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>'
    )
    got = three_ways("deepseek_r1", ("deepseek-r1", "deepseekv3"), text, force=True)
    want = ("Plan.", "Calling.", [("f", {"a": [1, 2]})])
    assert got["parse()"] == want
    assert got["builtin whole"] == got["builtin k=1"] == want
    assert got["builtin k=1-6"] == ("Plan.", "Calling", [("f", {"a": [1, 2]})])


def test_kimi_k2_text_after_the_call_section_streamed_or_not() -> None:
    """Kimi K2: text after the call section is kept when streamed and lost when not (the
    same output, two answers); reasonspan keeps it both ways, as ``parse()``."""
    text = (
        "<think>Plan.</think>Calling.<|tool_calls_section_begin|><|tool_call_begin|>"
        'functions.f:0<|tool_call_argument_begin|>{"a": [3]}<|tool_call_end|>'
        "<|tool_calls_section_end|>Done."
    )
    got = three_ways("kimi_k2", ("kimi_k2", "kimi_k2"), text)
    want = ("Plan.", "Calling.Done.", [("f", {"a": [3]})])
    assert got["parse()"] == got["builtin k=1"] == got["builtin k=1-6"] == want
    assert got["builtin whole"] == ("Plan.", "Calling.", [("f", {"a": [3]})])
