"""Tool calls in every family's own format, with well-formed and hostile argument values:
shared by the fuzz of every path (``test_fuzz_paths``) and the hostile-call tests
(``test_hostile_calls``)."""

from __future__ import annotations

import random

from reasonspan import ReasoningParser
from reasonspan.runtime.core.nesting import MAX_NESTING

NS = "]<]minimax[>["
_QWEN = '<tool_call>\n{"name": "f", "arguments": {"a": V}}\n</tool_call>'
_DSML = (
    '<｜DSML｜{block}>\n<｜DSML｜invoke name="f">\n<｜DSML｜parameter name="a" string="false">'
    "V</｜DSML｜parameter>\n</｜DSML｜invoke>\n</｜DSML｜{block}>"
)
CALLS: dict[str, tuple[str, ...]] = {
    "qwen3": (
        _QWEN,
        "<tool_call>\n<function=f>\n<parameter=a>\nV\n</parameter>\n</function>\n</tool_call>",
    ),
    "qwen3_instruct": (_QWEN,),
    "mimo": (_QWEN,),
    "declared": (_QWEN,),
    "glm45": ("<tool_call>f\n<arg_key>a</arg_key>\n<arg_value>V</arg_value>\n</tool_call>",),
    "glm47": ("<tool_call>f<arg_key>a</arg_key><arg_value>V</arg_value></tool_call>",),
    "gemma4": ("<|tool_call>call:f{a:V}<tool_call|>",),
    "kimi_k2": (
        "<|tool_calls_section_begin|><|tool_call_begin|>functions.f:0 "
        '<|tool_call_argument_begin|>{"a": V}<|tool_call_end|><|tool_calls_section_end|>',
    ),
    "kimi_k3": (
        '<|open|>tools<|sep|><|open|>call tool="f" index="1"<|sep|><|open|>argument key="a" '
        'type="array"<|sep|>V<|close|>argument<|sep|><|close|>call<|sep|><|close|>tools<|sep|>',
    ),
    "deepseek_v3_0324": (
        "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>f\n```json\n"
        '{"a": V}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>',
    ),
    "deepseek_v3": (
        '<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>f<｜tool▁sep｜>{"a": V}<｜tool▁call▁end｜>'
        "<｜tool▁calls▁end｜>",
        _DSML.format(block="function_calls"),
    ),
    "deepseek_v4": (_DSML.format(block="tool_calls"),),
    "deepseek_v41": (_DSML.format(block="calls").replace("｜DSML｜", "｜DSML｜ "),),
    "minimax_m2": (
        '<minimax:tool_call>\n<invoke name="f">\n<parameter name="a">V</parameter>\n</invoke>\n'
        "</minimax:tool_call>",
    ),
    "minimax_m3": (
        f'{NS}<tool_call>\n{NS}<invoke name="f">{NS}<a>V{NS}</a>{NS}</invoke>\n{NS}</tool_call>',
    ),
    "mistral": (
        '[TOOL_CALLS][{"name": "f", "arguments": {"a": V}}]',
        '[TOOL_CALLS]f[ARGS]{"a": V}',
    ),
    "llama3_json": (
        '{"name": "f", "parameters": {"a": V}}',
        '<|python_tag|>{"name": "f", "parameters": {"a": V}}',
    ),
    "llama4_pythonic": ("<|python_start|>[f(a=V)]<|python_end|>", "[f(a=V), f(a=[1])]"),
    "openai_gptoss": (
        "<|start|>assistant<|channel|>commentary to=functions.f <|constrain|>json<|message|>"
        '{"a": V}<|call|>',
    ),
}
"""One call of each family's own format to ``f`` with argument ``a`` (``V`` is the value);
:func:`test_each_call_template_reads` checks each reads as that call with a plain value."""
CALLS["minimax_m2_append_think"] = CALLS["minimax_m2"]

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "f",
            "parameters": {"type": "object", "properties": {"a": {"type": "array"}}},
        },
    }
]

WORDS = (" The", " answer", " is", ".", ",", " 42", "\n", "\n\n", " ", "Hmm", " x", '"', "{", "}")


def _deep(rng: random.Random) -> str:
    n = rng.choice((2, 50, MAX_NESTING, MAX_NESTING + 1, 300, 1200))
    if rng.random() < 0.5:
        return "[" * n + "1" + "]" * n
    return '{"a":' * n + "1" + "}" * n


def value(rng: random.Random) -> str:
    """A well-formed or a hostile argument value (as text in the call's own syntax)."""
    return rng.choice(
        (
            lambda: "[1, 2]",
            lambda: '["x", {"y": null}]',
            lambda: "[1.5e3]",
            lambda: _deep(rng),
            lambda: "[" + "9" * rng.choice((20, 4301, 6000)) + "]",
            lambda: "[0x" + "f" * rng.choice((8, 5000)) + "]",
            lambda: "[1e999]",
            lambda: "[-1e999, 1]",
            lambda: "[1, {",
            lambda: "[1, 2]]]",
            lambda: '["</tool_call> and <|call|> in a string"]',
            lambda: "[b'z']",
            lambda: "[" + "1, " * rng.choice((3, 800)) + "1]",
        )
    )()


def _markers(parser: ReasoningParser) -> list[str]:
    spec = parser.spec
    fmt = spec.tool_calls
    found = [*spec.start, *spec.end, *spec.tool]
    if fmt is not None:
        found += [*fmt.open, *fmt.close]
    return found


def output(rng: random.Random, family: str, parser: ReasoningParser) -> str:
    """A random output of the family: markers, words and calls (whole, cut short, or with
    a hostile value)."""
    markers = _markers(parser)
    calls = CALLS.get(family, ())
    parts: list[str] = []
    for _ in range(rng.randint(0, 24)):
        r = rng.random()
        if r < 0.15 and markers:
            parts.append(rng.choice(markers))
        elif r < 0.3 and calls:
            call = rng.choice(calls).replace("V", value(rng))
            if rng.random() < 0.15:
                call = call[: rng.randint(0, len(call))]
            parts.append(call)
        else:
            parts.append(rng.choice(WORDS))
    return "".join(parts)


CALLS["exaone4"] = ('<tool_call>{"name": "f", "arguments": {"a": V}}</tool_call>',)
CALLS["deepseek_r1"] = CALLS["deepseek_v3_0324"]
CALLS["seed_oss"] = (
    "<seed:tool_call>\n<function=f>\n<parameter=a>V</parameter>\n</function>\n</seed:tool_call>",
)
CALLS["internlm2"] = (
    '<|action_start|><|plugin|>\n{"name": "f", "parameters": {"a": V}}<|action_end|>',
)
CALLS["lfm2"] = (
    "<|tool_call_start|>[f(a=V)]<|tool_call_end|>",
    '<|tool_call_start|>[{"name": "f", "arguments": {"a": V}}]<|tool_call_end|>',
)
CALLS["ling3"] = ("<tool_call>f<arg_key>a</arg_key><arg_value>V</arg_value></tool_call>",)
CALLS["nemotron_v3"] = (
    "<tool_call>\n<function=f>\n<parameter=a>\nV\n</parameter>\n</function>\n</tool_call>",
)
CALLS["granite_thinking"] = (
    "<tool_call>\n<function=f>\n<parameter=a>\nV\n</parameter>\n</function>\n</tool_call>",
)
CALLS["k2_horizon"] = (
    "<ifm|tool_calls>\n<ifm|tool_call>f\n<ifm|arg_key>a</ifm|arg_key>\n"
    "<ifm|arg_value>V</ifm|arg_value>\n</ifm|tool_call>\n</ifm|tool_calls>",
    '<ifm|tool_calls><ifm|tool_call>{"name": "f", "arguments": {"a": V}}</ifm|tool_call>'
    "</ifm|tool_calls>",
)
CALLS["granite"] = (
    '<|tool_call|>[{"name": "f", "arguments": {"a": V}}]',
    '<tool_call> [{"name": "f", "arguments": {"a": V}}]',
)
CALLS["gigachat35"] = (
    '<｜GCML｜tool_calls>\n<｜GCML｜invoke name="f">\n<｜GCML｜parameter name="a" string="false">V'
    "</｜GCML｜parameter>\n</｜GCML｜invoke>\n</｜GCML｜tool_calls>",
)
CALLS["plamo3"] = (
    "<|plamo:begin_tool_requests:plamo|><|plamo:begin_tool_request:plamo|>"
    "<|plamo:begin_tool_name:plamo|>f<|plamo:end_tool_name:plamo|>"
    "<|plamo:begin_tool_arguments:plamo|><|plamo:constrain|>json<|plamo:msg|>"
    '{"a": V}<|plamo:end_tool_arguments:plamo|><|plamo:end_tool_request:plamo|>'
    "<|plamo:end_tool_requests:plamo|>",
)
CALLS["jamba"] = ('<tool_calls>[{"name": "f", "arguments": {"a": V}}]</tool_calls>',)
CALLS["apertus"] = ('<|tools_prefix|>[{"f": {"a": V}}]<|tools_suffix|>',)
CALLS["solar_open2"] = (
    "<|tool_call:start|>f\n<|tool_arg:start|>a<|tool_arg:value|>V<|tool_arg:end|>\n"
    "<|tool_call:end|>",
)
CALLS["minicpmv"] = (
    '<tool_call>\n{"name": "f", "arguments": {"a": V}}\n</tool_call>',
    "<tool_call>\n<function=f>\n<parameter=a>\nV\n</parameter>\n</function>\n</tool_call>",
)
CALLS["cohere_command3"] = (
    '<|START_ACTION|>[{"tool_call_id": "0", "tool_name": "f", "parameters": {"a": V}}]'
    "<|END_ACTION|>",
)
CALLS["cohere_command4"] = CALLS["cohere_command3"]
CALLS["xlam"] = (
    '```json\n[{"name": "f", "arguments": {"a": V}}]\n```',
    '<tool_call>[{"name": "f", "arguments": {"a": V}}]</tool_call>',
    '[TOOL_CALLS][{"name": "f", "arguments": {"a": V}}]',
)
CALLS["nemotron_v1"] = ('<TOOLCALL>[{"name": "f", "arguments": {"a": V}}]</TOOLCALL>',)
CALLS["poolside_v1"] = (
    "<tool_call>f\n<arg_key>a</arg_key>\n<arg_value>V</arg_value>\n</tool_call>",
    "<tool_call>f<arg_key>a</arg_key><arg_value>V</arg_value></tool_call>",
)
CALLS["step3"] = (
    "<｜tool_calls_begin｜><｜tool_call_begin｜>function<｜tool_sep｜>"
    '<steptml:invoke name="f"><steptml:parameter name="a">V</steptml:parameter>'
    "</steptml:invoke><｜tool_call_end｜><｜tool_calls_end｜>",
)
CALLS["step3p5"] = (
    "<tool_call>\n<function=f>\n<parameter=a>\nV\n</parameter>\n</function>\n</tool_call>",
)
CALLS["hunyuan_a13b"] = ('<tool_calls>[{"name": "f", "arguments": {"a": V}}]</tool_calls>',)
CALLS["hy_v3"] = (
    "<tool_calls:opensource>\n<tool_call:opensource>f<tool_sep:opensource>\n"
    "<arg_key:opensource>a</arg_key:opensource>\n<arg_value:opensource>V</arg_value:opensource>\n"
    "</tool_call:opensource>\n</tool_calls:opensource>",
)
CALLS["hy_v4"] = (
    "<tool_calls:6124c78e><tool_call:6124c78e>f<arg_key:6124c78e>a</arg_key:6124c78e>"
    "<arg_value:6124c78e>V</arg_value:6124c78e></tool_call:6124c78e></tool_calls:6124c78e>",
)
CALLS["inkling"] = ('<|content_invoke_tool_json|>{"name": "f", "args": {"a": V}}<|end_message|>',)
CALLS["ernie45"] = ('<tool_call>\n{"name": "f", "arguments": {"a": V}}\n</tool_call>',)
CALLS["olmo3"] = ("<function_calls>f(a=V)</function_calls>",)
