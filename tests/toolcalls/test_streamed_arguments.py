"""Tool-call arguments sent as they are written (``stream_arguments``, a server's
``stream=True``): ``runtime/wire/region_calls.py`` over the partial readers of
``runtime/toolcalls/partial*.py``.

On the real Qwen3 tokenizer (its ``<tool_call>`` / ``</tool_call>`` are single tokens; the
JSON body is Hermes', the XML body Qwen3-Coder's, both as Qwen3's chat template writes
them), MiniMax-M2's ``xml_invoke`` body on its family fixture. The property: for every
split of the output into engine steps, a call's entries join, by index, to exactly the
``(name, arguments)`` of ``parse()``; its first entry carries its id, type and name, the
later ones its index and argument text only. The expected calls are built by the tests
from the values they wrote, never read back from an output.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import reasonspan
from reasonspan.runtime.stream.runtime import ReasoningRuntime
from reasonspan.runtime.wire.region_calls import READ_EVERY
from tests.support import streamed_calls
from tests.support.fixtures import FAMILY_TOKENIZERS, tokenizer
from tests.support.streamed_calls import (
    CODE,
    TOOLS,
    Entries,
    Maker,
    Writer,
    compact,
    joined,
    pieces,
    streams_as_whole,
)

TOK = tokenizer("qwen-3")
ANSWER_ONLY = TOK.encode(
    "<|im_start|>user\nWrite it.<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n"
)
"""Qwen3's template with ``enable_thinking: false``: the turn starts in the answer."""


def parser() -> reasonspan.ReasoningParser:
    return reasonspan.create_parser_sync("qwen3", TOK)


def hermes(name: str, args: dict[str, Any]) -> str:
    body = json.dumps({"name": name, "arguments": args}, ensure_ascii=False)
    return f"<tool_call>\n{body}\n</tool_call>"


def coder(name: str, args: dict[str, Any]) -> str:
    params = "".join(
        f"<parameter={k}>\n{v if isinstance(v, str) else json.dumps(v)}\n</parameter>\n"
        for k, v in args.items()
    )
    return f"<tool_call>\n<function={name}>\n{params}</function>\n</tool_call>"


def run(
    ids: list[int],
    cuts: list[int],
    finish: str = "stop",
    prompt: list[int] | None = None,
    make: Maker = parser,
    step: int = READ_EVERY,
) -> tuple[str, Entries, Writer, str | None]:
    """:func:`tests.support.streamed_calls.run` on Qwen3 with thinking off unless told."""
    prompt = ANSWER_ONLY if prompt is None else prompt
    return streamed_calls.run(ids, cuts, finish, prompt=prompt, make=make, step=step)


VALUE = st.one_of(
    st.text('ab "\\\n東🙂</tool_call></parameter>{}', max_size=12),
    st.integers(-99, 99),
)
ARGS = st.fixed_dictionaries({"path": st.text("ab/.", min_size=1, max_size=5)}).flatmap(
    lambda first: st.dictionaries(st.sampled_from(["content", "mode"]), VALUE, max_size=2).map(
        lambda more: {**first, **more}
    )
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    calls=st.lists(ARGS, min_size=1, max_size=3),
    xml=st.booleans(),
    prose=st.sampled_from(["", "Writing it.\n", "Done: "]),
    data=st.data(),
)
def test_entries_join_to_the_whole_read_at_any_split(
    calls: list[dict[str, Any]], xml: bool, prose: str, data: st.DataObject
) -> None:
    """Hermes JSON or Qwen3-Coder XML calls, one to three, with text before them: at any
    split the streamed entries join to exactly ``parse()``'s calls, and the content is the
    same."""
    for args in calls:  # an XML value is text, typed by the schema (``mode`` an integer)
        if xml and "mode" in args and not isinstance(args["mode"], int):
            args["mode"] = 7
        if xml and isinstance(args.get("content"), int):
            args["content"] = str(args["content"])
    write = coder if xml else hermes
    out = prose + "\n".join(write("write_file", a) for a in calls)
    ids = TOK.encode(out)
    whole = parser().parse(ids, ANSWER_ONLY, tools=TOOLS, finish_reason="stop")
    want = [("write_file", compact(a)) for a in calls]
    assert [(c.name, c.arguments) for c in whole.tool_calls] == want
    cuts = data.draw(st.lists(st.integers(0, len(ids)), max_size=12))
    content, entries, writer, reason = run(ids, cuts, step=data.draw(st.sampled_from([1, 3, 16])))
    assert joined(entries) == want
    assert content == (whole.content or "")
    assert writer.broken == [] and reason == "tool_calls"


def test_a_long_argument_arrives_as_it_is_written() -> None:
    """A coding agent's file write (thousands of tokens in one string argument), in both
    bodies: its text arrives in many entries, the first of them long before the call's
    close token is generated, and they join to the whole read."""
    args = {"path": "steps.py", "content": CODE}
    for write in (hermes, coder):
        ids = TOK.encode(write("write_file", args))
        assert len(ids) > 2000
        close = ids.index(TOK.single_token_id("</tool_call>"))
        one_by_one = list(range(len(ids)))
        content, entries, _, reason = run(ids, one_by_one)
        assert joined(entries) == [("write_file", compact(args))]
        assert pieces(entries, 0) >= 10
        assert (content, reason) == ("", "tool_calls")
        steps_before_close = _entries_before(ids, close)
        assert steps_before_close >= 10, write.__name__


def _entries_before(ids: list[int], close: int) -> int:
    """How many entries a stream sent before the call's close token was stepped."""
    _, entries, _, _ = run(ids[:close], list(range(close)), finish="length")
    return sum(len(chunk) for chunk in entries)


def test_a_call_invalid_in_its_first_argument_is_never_sent() -> None:
    """``1e999`` (no JSON number holds it) as the first argument: the call never committed,
    so nothing of it is sent; the whole read gives the region back as content, and so does
    the stream."""
    out = 'Trying.\n<tool_call>\n{"name": "write_file", "arguments": {"mode": 1e999, "path": "a"}}\n</tool_call>'
    ids = TOK.encode(out)
    whole = parser().parse(ids, ANSWER_ONLY, tools=TOOLS, finish_reason="stop")
    assert whole.tool_calls == []
    for cuts in ([], list(range(len(ids)))):
        content, entries, writer, _ = run(ids, cuts)
        assert entries == [] and writer.broken == []
        assert content == whole.content


def test_a_call_cut_after_it_committed_never_shows_whole_arguments() -> None:
    """``max_tokens`` cuts a call inside its second argument: the stream already sent its
    name, its first argument and the start of the second (the documented price of
    streaming), the whole read drops it. What was sent never parses as JSON (the closing
    brace waits for the region), so no client runs a call the model did not finish, and
    the finish reason says "length"."""
    script = "rm -rf /tmp/build && " + "echo step; " * 40
    out = coder("write_file", {"path": "/tmp/build.sh", "content": script})
    ids = TOK.encode(out)
    cut = ids[: next(i for i in range(len(ids)) if "echo step; " * 20 in TOK.decode(ids[:i]))]
    whole = parser().parse(cut, ANSWER_ONLY, tools=TOOLS, finish_reason="length")
    assert whole.tool_calls == []
    _, entries, writer, reason = run(cut, list(range(len(cut))), finish="length", step=4)
    [(name, arguments)] = joined(entries)
    assert name == "write_file" and writer.broken == [0] and reason == "length"
    assert arguments.startswith('{"path":"/tmp/build.sh","content":"rm')
    assert compact({"path": "/tmp/build.sh", "content": script}).startswith(arguments)
    try:
        json.loads(arguments)
    except ValueError:
        pass
    else:
        raise AssertionError(f"a cut call's arguments parse: {arguments!r}")


def test_a_call_whose_body_breaks_after_its_arguments_never_closes_them() -> None:
    """CanIToolCall's ``vllm-invalid-json-missing-brace``: the arguments object is whole
    but the call object never closes. The whole read has no call; the stream sent the
    arguments as far as it read the open region (a long second one, so it is read while it
    is written), never their closing brace."""
    args = {"city": "Oslo", "note": "bring an umbrella, " * 12}
    body = json.dumps({"name": "get_weather", "arguments": args})[:-1]  # no closing brace
    ids = TOK.encode(f"<tool_call>\n{body}\n</tool_call>")
    assert parser().parse(ids, ANSWER_ONLY, tools=TOOLS, finish_reason="stop").tool_calls == []
    _, entries, writer, _ = run(ids, list(range(len(ids))), step=4)
    [(name, arguments)] = joined(entries)
    assert name == "get_weather" and writer.broken == [0]
    assert arguments.startswith('{"city":"Oslo","note":"bring an umbrella')
    assert compact(args).startswith(arguments) and arguments != compact(args)


def test_arguments_before_the_name_are_sent_whole() -> None:
    """A call the reader does not follow (its arguments written before its name) is sent
    whole at its close, and so is every call after it in the region: the entries keep the
    order of the whole read."""
    body = '[{"arguments": {"city": "Oslo"}, "name": "get_weather"}, {"name": "get_weather", "arguments": {"city": "Rome"}}]'
    ids = TOK.encode(f"<tool_call>\n{body}\n</tool_call>")
    _, entries, writer, _ = run(ids, list(range(len(ids))))
    assert joined(entries) == [
        ("get_weather", '{"city":"Oslo"}'),
        ("get_weather", '{"city":"Rome"}'),
    ]
    assert pieces(entries, 0) == 1 and pieces(entries, 1) == 1 and writer.broken == []


def test_minimax_invoke_blocks_stream_too() -> None:
    """MiniMax-M2's ``<invoke name=…>`` calls (its family fixture tokenizer, its template's
    generation prompt, which opens ``<think>``): a long string parameter streams, and the entries join to
    the whole read."""
    tok = tokenizer(FAMILY_TOKENIZERS["minimax_m2"])

    def make() -> reasonspan.ReasoningParser:
        return reasonspan.create_parser_sync("minimax_m2", tok)

    text = "\n".join(f"line {i}: <b>bold</b> & more" for i in range(200))
    out = (
        'plan\n</think>\n\n<minimax:tool_call>\n<invoke name="write_file">\n'
        '<parameter name="path">notes.md</parameter>\n'
        f'<parameter name="content">{text}</parameter>\n'
        "</invoke>\n</minimax:tool_call>"
    )
    ids = tok.encode(out)
    prompt = tok.encode("]~b]user\nWrite it.[e~[\n]~b]ai\n<think>\n")  # its template's
    whole = make().parse(ids, prompt, tools=TOOLS, finish_reason="stop")
    want = [(c.name, c.arguments) for c in whole.tool_calls]
    assert want == [("write_file", compact({"path": "notes.md", "content": text}))]
    _, entries, writer, _ = run(ids, list(range(len(ids))), prompt=prompt, make=make)
    assert joined(entries) == want and writer.broken == []
    assert pieces(entries, 0) >= 10


def test_glm_key_value_calls_stream_too() -> None:
    """GLM-4.7's ``NAME<arg_key>K</arg_key><arg_value>V</arg_value>`` calls (the real
    GLM-4.7-Flash tokenizer; its template writes the pairs back to back, the generation
    prompt opens ``<think>``): after the first pair, a long string value streams, markup
    written inside it (``</arg_value>`` followed by text) included, and the entries join to
    the whole read."""
    tok = tokenizer("glm-4.7-flash")

    def make() -> reasonspan.ReasoningParser:
        return reasonspan.create_parser_sync("glm47", tok)

    text = "\n".join(f"row {i}: '</arg_value>' stays text" for i in range(150))
    out = (
        "plan</think><tool_call>write_file<arg_key>path</arg_key><arg_value>t.txt</arg_value>"
        f"<arg_key>content</arg_key><arg_value>{text}</arg_value><arg_key>mode</arg_key>"
        "<arg_value>420</arg_value></tool_call>"
    )
    ids = tok.encode(out)
    prompt = tok.encode("<|user|>Write it.<|assistant|><think>")
    whole = make().parse(ids, prompt, tools=TOOLS, finish_reason="stop")
    want = [(c.name, c.arguments) for c in whole.tool_calls]
    assert want == [("write_file", compact({"path": "t.txt", "content": text, "mode": 420}))]
    _, entries, writer, _ = run(ids, list(range(len(ids))), prompt=prompt, make=make)
    assert joined(entries) == want and writer.broken == []
    assert pieces(entries, 0) >= 10


def test_each_reader_follows_a_very_long_argument() -> None:
    """A few hundred kilobytes of one argument, read 64 characters at a time by each
    kind's partial reader (so the readers drop the text they read past, and keep aside a
    long value that is not streamed): what each reported is the whole read's text, or a
    prefix of it where the last value is only decided by the end of the body."""
    from reasonspan.runtime.core.tool_types import as_tools
    from reasonspan.runtime.toolcalls import (
        deepseek_calls,
        json_calls,
        kimi_calls,
        kv_calls,
        partial_json,
        partial_kv,
        partial_sections,
        partial_xml,
        xml_calls,
    )
    from reasonspan.runtime.toolcalls.partial import PartialReader

    tools = as_tools(TOOLS)
    text = 'a line with <b>tags</b>, "quotes" and \\ slashes\n' * 6000
    raw = json.dumps({"rows": list(range(30_000))})
    cases: list[tuple[str, PartialReader, Any, str, bool]] = [
        (
            "xml, a string",
            partial_xml._qwen_reader(tools),
            xml_calls.parse_xml,
            f"<function=write_file>\n<parameter=path>\na\n</parameter>\n"
            f"<parameter=content>\n{text}\n</parameter>\n</function>",
            True,
        ),
        (
            "xml, not a string",
            partial_xml._qwen_reader(tools),
            xml_calls.parse_xml,
            f"<function=write_file>\n<parameter=path>\na\n</parameter>\n"
            f"<parameter=data>\n{raw}\n</parameter>\n<parameter=mode>\n1\n</parameter>\n"
            "</function>",
            True,
        ),
        (
            "kv, a string",
            partial_kv._reader(tools),
            kv_calls.parse_kv,
            "write_file<arg_key>path</arg_key><arg_value>a</arg_value><arg_key>content"
            f"</arg_key><arg_value>{text}</arg_value><arg_key>mode</arg_key><arg_value>1",
            False,
        ),
        (
            "json",
            partial_json.JsonCallsReader(tools),
            json_calls.parse_json,
            json.dumps({"name": "write_file", "arguments": {"path": "a", "content": text}}),
            True,
        ),
        (
            "kimi section",
            partial_sections._kimi_reader(tools),
            kimi_calls.parse_kimi_k2,
            "<|tool_call_begin|>functions.write_file:0<|tool_call_argument_begin|>"
            + json.dumps({"path": "a", "content": text})
            + "<|tool_call_end|>",
            True,
        ),
        (
            "deepseek v3 section",
            partial_sections._deepseek_v3_reader(tools),
            deepseek_calls.parse_deepseek_v3,
            "<｜tool▁call▁begin｜>function<｜tool▁sep｜>write_file\n```json\n"
            + json.dumps({"path": "a", "content": text})
            + "\n```<｜tool▁call▁end｜>",
            True,
        ),
    ]
    for name, reader, whole_read, body, to_the_end in cases:
        for i in range(0, len(body), 64):
            reader.feed(body[i : i + 64])
        [want] = whole_read(body, tools)
        [call] = reader.calls
        got = "".join(call.arguments)
        assert not call.broken and call.name == want.name, name
        if to_the_end:
            assert call.complete and got == want.arguments, name
        else:
            assert len(got) > len(text) and want.arguments.startswith(got), name


def test_harmony_calls_stream_too() -> None:
    """gpt-oss's harmony call messages (the family fixture: Qwen3's base tokenizer with
    harmony's special tokens added, as ``tests/support/fixtures.py`` says; the facts of the
    format from the published openai/gpt-oss chat template): a long call streams its raw
    argument text, as the whole call sends it, once its first member is whole; the entries
    join to ``parse()``'s; a call cut inside its arguments keeps what was sent, never its
    closing brace, and is reported broken."""
    tok = tokenizer(FAMILY_TOKENIZERS["openai_gptoss"])

    def make() -> reasonspan.ReasoningParser:
        return reasonspan.create_parser_sync("openai_gptoss", tok)

    args = {"path": "steps.py", "content": CODE[:6000]}
    out = (
        "<|channel|>analysis<|message|>Write the file.<|end|>"
        "<|start|>assistant<|channel|>commentary to=functions.write_file <|constrain|>json"
        f"<|message|>{json.dumps(args)}<|call|>"
    )
    ids = tok.encode(out)
    prompt = tok.encode("<|start|>user<|message|>Write it.<|end|><|start|>assistant")
    whole = make().parse(ids, prompt, tools=TOOLS, finish_reason="stop")
    want = [(c.name, c.arguments) for c in whole.tool_calls]
    assert want == [("write_file", json.dumps(args))]  # as written, not re-encoded
    for step in (1, 4, READ_EVERY):
        _, entries, _, _ = run(ids, list(range(len(ids))), prompt=prompt, make=make, step=step)
        assert joined(entries) == want, step
        assert pieces(entries, 0) >= 10, step
    cut = ids[: len(ids) * 2 // 3]
    assert make().parse(cut, prompt, tools=TOOLS, finish_reason="length").tool_calls == []
    rt = ReasoningRuntime(argument_step=4)
    stream = rt.add("r", make(), prompt, tools=TOOLS, stream_arguments=True)
    rt.step([stream.engine_id], cut, [0, len(cut)])
    rt.finish("r", "length")
    assert stream._rec.tools is not None and stream._rec.tools.broken == [0]


DS_TOK = tokenizer(FAMILY_TOKENIZERS["deepseek_r1"])
DS_PROMPT = DS_TOK.encode("<｜User｜>Write it.<｜Assistant｜><think>\n")
"""DeepSeek-R1's generation prompt (its template opens ``<think>``)."""


def deepseek_v3_calls(calls: list[tuple[str, dict[str, Any]]], tag: str = "json") -> str:
    """R1's chat template: ``function<sep>NAME``, a fenced JSON object, calls a line apart."""
    return (
        "<｜tool▁calls▁begin｜>"
        + "\n".join(
            f"<｜tool▁call▁begin｜>function<｜tool▁sep｜>{name}\n```{tag}\n"
            f"{json.dumps(args, ensure_ascii=False)}\n```<｜tool▁call▁end｜>"
            for name, args in calls
        )
        + "<｜tool▁calls▁end｜>"
    )


def _deepseek_r1() -> reasonspan.ReasoningParser:
    return reasonspan.create_parser_sync("deepseek_r1", DS_TOK)


def test_deepseek_fenced_calls_stream_too() -> None:
    """DeepSeek-R1's sections (its real tokenizer: every marker one token): a long code
    argument after the first streams in many pieces, and the entries join to the whole
    read; the fence's ``json`` tag may be left out."""
    for tag in ("json", ""):
        args = {"path": "steps.py", "content": CODE}
        out = "Plan.\n</think>\n\nWriting.\n" + deepseek_v3_calls([("write_file", args)], tag)
        ids = DS_TOK.encode(out)
        want = [("write_file", compact(args))]
        cuts = list(range(0, len(ids), 3))
        entries = streams_as_whole(ids, DS_PROMPT, _deepseek_r1, want, cuts)
        assert pieces(entries, 0) >= 10, tag


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(calls=st.lists(ARGS, min_size=1, max_size=3), data=st.data())
def test_deepseek_fenced_entries_join_to_the_whole_read_at_any_split(
    calls: list[dict[str, Any]], data: st.DataObject
) -> None:
    """One to three fenced calls (values with quotes, markup, emoji): at any split and read
    step, the streamed entries join to exactly ``parse()``'s calls."""
    out = "Plan.\n</think>\n\n" + deepseek_v3_calls([("write_file", a) for a in calls])
    ids = DS_TOK.encode(out)
    want = [("write_file", compact(a)) for a in calls]
    cuts = data.draw(st.lists(st.integers(0, len(ids)), max_size=12))
    step = data.draw(st.sampled_from([1, 3, 16]))
    streams_as_whole(ids, DS_PROMPT, _deepseek_r1, want, cuts, step)


def test_deepseek_fenced_call_dropped_or_broken_as_the_whole_read_says() -> None:
    """A call whose fence never closes before its call-end marker does not read: its
    sibling still does; streamed, the broken call keeps what was sent and never closes."""
    good = ("get_weather", {"city": "Bern", "days": 2})
    bad = deepseek_v3_calls([("write_file", {"path": "a", "content": CODE})]).replace(
        "\n```<｜tool▁call▁end｜>", "\n<｜tool▁call▁end｜>"
    )
    body = (
        bad.removesuffix("<｜tool▁calls▁end｜>")
        + "\n"
        + deepseek_v3_calls([good]).removeprefix("<｜tool▁calls▁begin｜>")
    )
    ids = DS_TOK.encode("Plan.\n</think>\n\n" + body)
    whole = _deepseek_r1().parse(ids, DS_PROMPT, tools=TOOLS, finish_reason="stop")
    assert [(c.name, c.arguments) for c in whole.tool_calls] == [("get_weather", compact(good[1]))]
    _, entries, writer, _ = run(
        ids, list(range(0, len(ids), 5)), prompt=DS_PROMPT, make=_deepseek_r1
    )
    got = joined(entries)
    assert writer.broken == [0]
    assert got[0][0] == "write_file" and not got[0][1].endswith("}")
    assert got[1] == ("get_weather", compact(good[1]))


MS_TOK = tokenizer(FAMILY_TOKENIZERS["mistral"])
"""A base tokenizer (Qwen2.5's) with Mistral's special tokens added (``[TOOL_CALLS]``,
``[ARGS]``, ``[CALL_ID]`` single tokens, as in mistral-common's v11 tokenizers)."""
MS_PROMPT = MS_TOK.encode("[SYSTEM_PROMPT]Be brief.[/SYSTEM_PROMPT][INST]Write it.[/INST]")


def _mistral() -> reasonspan.ReasoningParser:
    return reasonspan.create_parser_sync("mistral", MS_TOK)


def mistral_v11(calls: list[tuple[str, dict[str, Any]]], call_id: bool = False) -> str:
    """mistral-common's v11 form: ``[TOOL_CALLS]NAME[ARGS]{…}`` per call (a rendered
    history may write ``[CALL_ID]ID`` before ``[ARGS]``)."""
    return "".join(
        f"[TOOL_CALLS]{name}" + (f"[CALL_ID]c{i}x9" if call_id else "")
        + f"[ARGS]{json.dumps(args, ensure_ascii=False)}"
        for i, (name, args) in enumerate(calls)
    )  # fmt: skip


def test_mistral_v11_calls_stream_too() -> None:
    """Devstral writing a file: the ``content`` argument after ``path`` streams in many
    pieces, with ``[CALL_ID]`` or without, and the entries join to the whole read."""
    for call_id in (False, True):
        args = {"path": "steps.py", "content": CODE}
        ids = MS_TOK.encode("Writing it." + mistral_v11([("write_file", args)], call_id))
        want = [("write_file", compact(args))]
        entries = streams_as_whole(ids, MS_PROMPT, _mistral, want, list(range(0, len(ids), 2)))
        assert pieces(entries, 0) >= 10, call_id


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(calls=st.lists(ARGS, min_size=1, max_size=3), data=st.data())
def test_mistral_v11_entries_join_to_the_whole_read_at_any_split(
    calls: list[dict[str, Any]], data: st.DataObject
) -> None:
    out = "Sure." + mistral_v11([("write_file", a) for a in calls], data.draw(st.booleans()))
    ids = MS_TOK.encode(out)
    want = [("write_file", compact(a)) for a in calls]
    cuts = data.draw(st.lists(st.integers(0, len(ids)), max_size=12))
    streams_as_whole(ids, MS_PROMPT, _mistral, want, cuts, data.draw(st.sampled_from([1, 3, 16])))


def test_mistral_v11_a_call_cut_by_max_tokens_is_broken_and_its_sibling_kept() -> None:
    """The end of the output cuts the second call inside its arguments: the whole read keeps
    the first; streamed, the second (sent once its first argument was whole) is broken and
    its arguments never close."""
    first = ("get_weather", {"city": "Bern", "days": 2})
    second = ("write_file", {"path": "a.py", "content": CODE})
    text = mistral_v11([first, second])
    ids = MS_TOK.encode(text)[:-40]
    whole = _mistral().parse(ids, MS_PROMPT, tools=TOOLS, finish_reason="length")
    assert [(c.name, c.arguments) for c in whole.tool_calls] == [(first[0], compact(first[1]))]
    _, entries, writer, reason = run(
        ids, list(range(0, len(ids), 4)), finish="length", prompt=MS_PROMPT, make=_mistral
    )
    got = joined(entries)
    assert got[0] == (first[0], compact(first[1])) and writer.broken == [1]
    assert got[1][0] == "write_file" and not got[1][1].endswith("}") and reason == "length"


G4_TOK = tokenizer(FAMILY_TOKENIZERS["gemma4"])
"""Qwen3's tokenizer with Gemma 4's special tokens added (``<|tool_call>``, ``<tool_call|>``,
``<|"|>`` single tokens, as in Gemma 4's vocabulary)."""
G4_PROMPT = G4_TOK.encode("<|turn>user\nWrite it.<turn|>\n<|turn>model\n")
G4Q = '<|"|>'


def gemma4_value(value: Any) -> str:
    """Gemma 4's chat template's object notation: strings between ``<|"|>``, other values
    bare, objects and arrays nested."""
    if isinstance(value, str):
        return f"{G4Q}{value}{G4Q}"
    if isinstance(value, dict):
        return "{" + ",".join(f"{k}:{gemma4_value(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ",".join(gemma4_value(v) for v in value) + "]"
    return json.dumps(value)


def gemma4_call(name: str, args: dict[str, Any]) -> str:
    return f"<|tool_call>call:{name}{gemma4_value(args)}<tool_call|>"


def _gemma4() -> reasonspan.ReasoningParser:
    return reasonspan.create_parser_sync("gemma4", G4_TOK)


def test_gemma4_calls_stream_too() -> None:
    """Gemma 4 writing a file: ``content`` after ``path`` streams (quotes, backslashes,
    braces and commas in it are text), a nested value after it is read whole, and the
    entries join to the whole read."""
    args = {"path": "steps.py", "content": CODE + "{a, b}: [c]", "mode": 420}
    ids = G4_TOK.encode("Writing it." + gemma4_call("write_file", args))
    want = [("write_file", compact(args))]
    entries = streams_as_whole(ids, G4_PROMPT, _gemma4, want, list(range(0, len(ids), 3)))
    assert pieces(entries, 0) >= 10


G4_VALUE = st.one_of(
    # Gemma 4 quotes a string with <|"|> and has no escape for it: no string holds it
    # (hypothesis drew '<|"|>' from these characters once; the whole read then has no call).
    st.text('ab "\\\n東🙂{},[]:<tool_call|>', max_size=12).filter(lambda t: '<|"|>' not in t),
    st.integers(-99, 99),
    st.lists(st.integers(0, 9), max_size=3),
    st.fixed_dictionaries({"x": st.integers(0, 9), "y": st.text("ab, ", max_size=3)}),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    first=st.text("ab/.", min_size=1, max_size=5),
    more=st.dictionaries(st.sampled_from(["content", "days"]), G4_VALUE, max_size=2),
    data=st.data(),
)
def test_gemma4_entries_join_to_the_whole_read_at_any_split(
    first: str, more: dict[str, Any], data: st.DataObject
) -> None:
    """Any values (strings with the notation's own punctuation, numbers, arrays, nested
    objects) after a first string member: at any split and read step, the streamed entries
    join to exactly ``parse()``'s call."""
    name = "get_weather"
    args = {"city": first, **more}
    ids = G4_TOK.encode("Sure." + gemma4_call(name, args))
    cuts = data.draw(st.lists(st.integers(0, len(ids)), max_size=12))
    step = data.draw(st.sampled_from([1, 3, 16]))
    entries = streams_as_whole(ids, G4_PROMPT, _gemma4, None, cuts, step)
    assert {e.function.name for chunk in entries for e in chunk if e.function} <= {name, None}


@settings(max_examples=80, deadline=None)
@given(
    first=st.text("ab/.", min_size=1, max_size=5),
    more=st.dictionaries(st.sampled_from(["content", "days"]), G4_VALUE, max_size=2),
    data=st.data(),
)
def test_gemma4_reader_at_any_character_split(
    first: str, more: dict[str, Any], data: st.DataObject
) -> None:
    """The reader itself fed a few characters at a time (a tokenizer whose ``<|"|>`` is
    several tokens cuts it anywhere): what it reports is the whole read's arguments."""
    from reasonspan.runtime.core.tool_types import as_tools
    from reasonspan.runtime.toolcalls import gemma4_calls, partial_gemma4

    tools = as_tools(TOOLS)
    body = gemma4_call("get_weather", {"city": first, **more})
    body = body.removeprefix("<|tool_call>").removesuffix("<tool_call|>")
    [want] = gemma4_calls.parse_gemma4(body, tools) or []
    reader = partial_gemma4._reader(tools)
    i = 0
    while i < len(body):
        k = data.draw(st.integers(1, 5))
        reader.feed(body[i : i + k])
        i += k
    [call] = reader.calls
    assert not call.broken and call.complete
    assert (call.name, "".join(call.arguments)) == (want.name, want.arguments)


XL_TOK = tokenizer(FAMILY_TOKENIZERS["xlam"])
"""Qwen2.5's real tokenizer (xLAM-2's checkpoints are Qwen2.5 fine-tunes)."""
XL_PROMPT = XL_TOK.encode("<|im_start|>user\nWrite it.<|im_end|>\n<|im_start|>assistant\n")


def _xlam() -> reasonspan.ReasoningParser:
    return reasonspan.create_parser_sync("xlam", XL_TOK)


def test_xlam_calls_stream_too() -> None:
    """xLAM's JSON list (bare, fenced or in ``<tool_call>``): a long argument after the
    first streams, and the entries join to the whole read."""
    args = {"path": "steps.py", "content": CODE}
    listed = json.dumps([{"name": "write_file", "arguments": args}], ensure_ascii=False)
    for out in (listed, f"```json\n{listed}\n```", f"<tool_call>{listed}</tool_call>"):
        ids = XL_TOK.encode(out)
        want = [("write_file", compact(args))]
        entries = streams_as_whole(ids, XL_PROMPT, _xlam, want, list(range(0, len(ids), 3)))
        assert pieces(entries, 0) >= 10, out[:12]


def test_xlam_a_list_that_is_not_calls_is_never_streamed_as_one() -> None:
    """A JSON list the user asked for, its objects with ``name`` and ``parameters`` (not
    ``arguments``): the whole read has no call (xLAM's rule), so the stream never starts
    one, and the list is the content."""
    rows = [{"name": "Ada", "parameters": {"bio": "x" * 400, "age": 36}}]
    ids = XL_TOK.encode(json.dumps(rows))
    whole = _xlam().parse(ids, XL_PROMPT, tools=TOOLS, finish_reason="stop")
    assert whole.tool_calls == [] and whole.content == json.dumps(rows)
    content, entries, writer, reason = run(
        ids, list(range(len(ids))), prompt=XL_PROMPT, make=_xlam, step=1
    )
    assert entries == [] and writer.broken == [] and content == whole.content
    assert reason == "stop"
