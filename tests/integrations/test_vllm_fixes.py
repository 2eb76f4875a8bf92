"""The same output three ways: vLLM 0.34's built-in parsers, the plugin, and reasonspan's own
``parse()``; each test names a defect of the built-in that the plugin does not have.

Each output goes through vLLM's own per-request composition of a reasoning and a tool parser
(``ParserManager.get_parser``, what its OpenAI server builds), non-streaming (``parse``) and
streaming (``parse_delta``, one token per step and the 1-to-6-token steps of a draft model).
The plugin must give ``parse()``'s answer every way; the built-in's answer is asserted too,
so each test shows the defect on the vLLM this project pins (``scripts/vllm_env.sh``): if a
vLLM release fixes one, its test says so. The plugin runs in its default ``vllm`` text mode
(the whitespace next to markers kept, as vLLM's parsers keep it: docs/vllm.md), so the
built-in's texts are compared as they are. Tokenizers: the families' real ones
(``tests/support/fixtures.py``), as the fast tokenizer vLLM hands its parsers.
"""

from __future__ import annotations

import random

from reasonspan.integrations import vllm as plugin
from tests.integrations.vllm_ways import Answer, Fixed, Names, hf, reference, streamed, whole

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
        },
    }
]
STEPS = (1, 0)
"""One token per step, and steps of 1 to 6 tokens at random (0)."""


def _steps(k: int) -> random.Random:
    return Fixed(k) if k else random.Random(7)


def three_ways(
    family: str, builtin: Names, text: str, prompt: str | None = None
) -> dict[str, Answer]:
    """Every way's answer, keyed ``builtin whole``, ``builtin k=1``, ... and ``parse()``;
    asserts that the plugin's are ``parse()``'s (in the plugin's text mode)."""
    tok = hf(family)
    ids = tok.encode(text, add_special_tokens=False)
    prompt_ids = tok.encode(prompt, add_special_tokens=False) if prompt is not None else None
    want = reference(family, tok, ids, prompt_ids, TOOLS)
    mine = (plugin.own_name(family), plugin.own_name(family) if builtin[1] else None)
    got = {"parse()": want, "plugin whole": whole(mine, tok, ids, prompt_ids, TOOLS)}
    for k in STEPS:
        got[f"plugin k={k or '1-6'}"] = streamed(mine, tok, ids, prompt_ids, TOOLS, _steps(k))
    assert all(answer == want for answer in got.values()), got
    r, c, calls = whole(builtin, tok, ids, prompt_ids, TOOLS)
    got["builtin whole"] = (r, c, calls)
    for k in STEPS:
        r, c, calls = streamed(builtin, tok, ids, prompt_ids, TOOLS, _steps(k))
        got[f"builtin k={k or '1-6'}"] = (r, c, calls)
    return got


QWEN_CALL = '<tool_call>\n{{"name": "get_weather", "arguments": {args}}}\n</tool_call>'
THOUGHT = "\nhmm\n"
"""Qwen3's reasoning as its template lays it out, newlines kept (vLLM's text)."""
HEAD = f"<think>{THOUGHT}</think>\n\n"
"""The reasoning block and the blank line the template writes after it: the answer's text
begins with that blank line in vLLM's text."""


def test_the_text_after_a_call_is_kept() -> None:
    """Hermes (Qwen3): ``Before. <call> After.`` loses ``After.`` both ways in vLLM; the
    answer is both texts, one separator between them, and the call."""
    call = QWEN_CALL.format(args='{"city": "Bern"}')
    got = three_ways("qwen3", ("qwen3", "hermes"), f"{HEAD}Before.\n\n{call}\n\nAfter.")
    calls = [("get_weather", {"city": "Bern"})]
    assert got["parse()"] == (THOUGHT, "\n\nBefore.\n\nAfter.", calls)
    for way in ("builtin whole", "builtin k=1", "builtin k=1-6"):
        assert got[way] == (THOUGHT, "\n\nBefore.\n\n", calls), way


def test_a_malformed_call_is_the_same_text_streamed_or_not() -> None:
    """Hermes: a call whose arguments are not JSON (``{"city": Bern}``) comes back as text
    from vLLM's non-streaming path, and as a *call* with the broken arguments from its
    streaming path. The plugin returns the markup as content both ways, as ``parse()``."""
    call = QWEN_CALL.format(args='{"city": Bern}')
    got = three_ways("qwen3", ("qwen3", "hermes"), HEAD + call)
    assert got["parse()"] == (THOUGHT, "\n\n" + call, [])
    assert got["builtin whole"] == (THOUGHT, "\n\n" + call, [])
    for way in ("builtin k=1", "builtin k=1-6"):
        _reasoning, content, calls = got[way]
        assert content == "\n\n" and calls[0][0] == "get_weather"
        assert isinstance(calls[0][1], str), way  # arguments a client cannot parse


def test_a_call_cut_by_max_tokens_is_not_sent_half_written() -> None:
    """Hermes: an output cut inside a call's arguments. vLLM's non-streaming path returns the
    markup as content; its streaming path has already sent the call, with arguments that
    never close (``{"city": "Be``). The plugin sends neither, both ways, as ``parse()`` (which
    drops a call block left open at ``length`` with the blank line before it)."""
    cut = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Be'
    got = three_ways("qwen3", ("qwen3", "hermes"), HEAD + cut)
    assert got["parse()"] == (THOUGHT, "", [])
    assert got["builtin whole"] == (THOUGHT, "\n\n" + cut, [])
    for way in ("builtin k=1", "builtin k=1-6"):
        assert got[way] == (THOUGHT, "\n\n", [("get_weather", '{"city": "Be')]), way


DS_PROMPT = "<｜User｜>Weather in Bern?<｜Assistant｜><think>\n"
DS_CALL = (
    "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n"
    '```json\n{"city": "Bern"}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>'
)


def test_a_draft_step_keeps_the_text_before_a_call() -> None:
    """DeepSeek R1 with vLLM's ``deepseek_v3`` tool parser: when a draft model's step holds
    the end of the text and the calls' opener together, vLLM drops that text (``Calling.``
    becomes ``Call``); one token per step it does not. The plugin reads every split alike."""
    got = three_ways(
        "deepseek_r1", ("deepseek_r1", "deepseek_v3"), f"Plan.</think>Calling.{DS_CALL}", DS_PROMPT
    )
    want = ("Plan.", "Calling.", [("get_weather", {"city": "Bern"})])
    assert got["parse()"] == want
    assert got["builtin whole"] == want and got["builtin k=1"] == want
    assert got["builtin k=1-6"] != want
    assert got["builtin k=1-6"][1] != "Calling."


def test_a_newline_before_think_is_the_same_streamed_or_not() -> None:
    """DeepSeek R1, an output that writes a newline before ``<think>`` (vLLM's own
    ``new_line`` tests pin both of its answers): vLLM's non-streaming path drops the
    newline, its streaming path keeps it as reasoning one token a step, and with a draft
    model's steps (the newline and ``<think>`` in one step) sends ``<think>`` itself as
    reasoning. The plugin gives one answer every way, ``parse()``'s (the non-streaming
    one: deepseek_r1 drops a blank run before its start marker)."""
    output = "\n<think>Plan.</think>\nThe answer."
    got = three_ways("deepseek_r1", ("deepseek_r1", None), output)
    assert got["parse()"] == ("Plan.", "\nThe answer.", [])
    assert got["builtin whole"] == got["parse()"]
    assert got["builtin k=1"] == ("\nPlan.", "\nThe answer.", [])
    assert got["builtin k=1-6"] == ("\n<think>Plan.", "\nThe answer.", [])
