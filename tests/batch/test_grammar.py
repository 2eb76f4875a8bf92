"""The grammar engine (llguidance) behind the structured-output gate, on real tokenizers.

Outputs are built from the family's real markers (reasoning, end of reasoning, then a JSON
answer), so where the grammar must take over is known from how each output is built, never
from the code under test. What is checked:

- reasoning is never masked and its tokens never reach the matcher; the first masked
  position is the one right after the end of reasoning, with 1-token and k-token steps;
  with thinking off (or a prefilled answer) the mask applies from the first token;
- the answer parses as JSON and satisfies the schema, and llguidance says it is complete;
- the simulated engine, sampling under the mask, turns a schema-breaking scripted answer
  into valid JSON and leaves the reasoning as scripted;
- in a mixed batch each request's masks depend only on its own tokens;
- a bad format fails at ``add`` and changes nothing; a rejected token fails its request
  alone; thinking budgets force first and the grammar follows; a TOOL marker that ends
  reasoning releases the response grammar.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
from dataclasses import dataclass
from typing import Any

import anyio
import numpy as np
import pytest

import reasonspan
from reasonspan import Label, ReasoningBatch, ReasoningParser
from reasonspan.runtime import FAILED, InvalidOptionError, ReasoningRuntime
from reasonspan.runtime.batch.grammar import GrammarError, GrammarUnavailableError, compile_grammar
from reasonspan.runtime.batch.grammar_slots import GrammarRejectedError
from reasonspan.runtime.stream.simulation import SimRequest, SimulatedEngine, drive
from tests.support.fixtures import FAMILY_TOKENIZERS, tokenizer

C = int(Label.CONTENT)

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"answer": {"type": "integer"}, "unit": {"type": "string"}},
    "required": ["answer", "unit"],
    "additionalProperties": False,
}
FORMAT = {"type": "json_schema", "json_schema": {"name": "result", "schema": SCHEMA}}
ANSWER = '{"answer": 4, "unit": "apples"}'


def valid(doc: Any) -> bool:
    """The schema above, checked by hand (no validator dependency)."""
    return (
        isinstance(doc, dict)
        and set(doc) == {"answer", "unit"}
        and isinstance(doc["answer"], int)
        and isinstance(doc["unit"], str)
    )


@dataclass(frozen=True)
class Case:
    """A family on its fixture: the prompt, what the model writes before reasoning (a
    harmony header), the end of reasoning it writes, in text."""

    family: str
    tok: str
    kwargs: tuple[tuple[str, Any], ...]
    prompt: str
    head: str
    end: str

    def parser(self) -> ReasoningParser:
        return reasonspan.create_parser_sync(self.family, tokenizer(self.tok), dict(self.kwargs))


CASES = [
    Case("qwen3", "qwen-3", (), "<|im_start|>assistant\n<think>\n", "", "</think>"),
    # The template prefills <think>: reasoning from the first generated token.
    Case("deepseek_r1", "deepseek-r1", (), "<｜Assistant｜><think>\n", "", "</think>"),
    Case("glm47", "glm-4.7-flash", (), "<|assistant|><think>", "", "</think>"),
    # Five-token markers on a vocabulary that does not have them (per-request path).
    Case("minimax_m3", "qwen-3", (("thinking_mode", "enabled"),), "", "", "</mm:think>"),
    Case(
        "kimi_k2",
        FAMILY_TOKENIZERS["kimi_k2"],
        (),
        "<|im_assistant|>assistant<|im_middle|>",
        "",
        "</think>",
    ),
    # The model writes the analysis header itself; the answer is the final message body.
    Case(
        "openai_gptoss",
        FAMILY_TOKENIZERS["openai_gptoss"],
        (),
        "<|start|>assistant",
        "<|channel|>analysis<|message|>",
        "<|end|><|start|>assistant<|channel|>final<|message|>",
    ),
]
IDS = [c.family for c in CASES]


def allowed(row: np.ndarray, t: int) -> bool:
    return bool((int(row[t >> 5]) >> (t & 31)) & 1)


@dataclass
class Run:
    flags: list[bool]
    """Per token: it was sampled under a mask filled before its step."""
    gmask: list[bool]
    results: list[Any]
    refused: list[int]
    """Tokens that the row filled before them did not allow."""
    content: list[int]


def run(batch: ReasoningBatch, rid: int, out: list[int], sizes: list[int]) -> Run:
    """Step ``out`` in chunks of ``sizes``, filling the bitmask before every step."""
    bitmask = batch.allocate_token_bitmask(1)
    flags: list[bool] = []
    gmask: list[bool] = []
    results: list[Any] = []
    refused: list[int] = []
    content: list[int] = []
    i = 0
    for k in sizes:
        if i >= len(out):
            break
        masked = bool(batch.fill_token_bitmask([rid], bitmask)[0])
        if not masked:
            assert (bitmask[0] == -1).all()  # an unmasked row allows everything
        chunk = out[i : i + k]
        # Only the first token of a step is sampled under this mask.
        flags += [masked] + [False] * (len(chunk) - 1)
        if masked and not allowed(bitmask[0], chunk[0]):
            refused.append(i)
        res = batch.step([rid], chunk, [0, len(chunk)])
        gmask += res.grammar_mask.tolist()
        results.append(res)
        if not res.errors:
            content += res.split(rid)[1]
        i += len(chunk)
    return Run(flags, gmask, results, refused, content)


@pytest.mark.sampled(every=2, by="case")
@pytest.mark.parametrize("k", [1, 3])
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_the_grammar_starts_right_after_reasoning(case: Case, k: int) -> None:
    p = case.parser()
    enc = p.tokenizer.encode
    prompt = enc(case.prompt)
    reasoning = enc(case.head) + enc("Two apples and two more: 2 + 2 = 4.") + enc(case.end)
    answer = enc(ANSWER)
    out = reasoning + answer
    first = len(reasoning)
    batch = ReasoningBatch()
    batch.add(7, p, prompt, response_format=FORMAT)
    batch.add(8, p, prompt)  # a free twin: never masked
    assert not batch.grammar_active(7)
    rng = random.Random(k)
    sizes = [rng.randint(1, k) for _ in out]
    r = run(batch, 7, out, sizes)
    flags, gmask, results, refused = r.flags, r.gmask, r.results, r.refused
    # The matcher sees exactly the answer: the first masked token is the one after the end.
    assert gmask == [i >= first for i in range(len(out))]
    # Every step that starts at or after that position is sampled under the mask.
    starts = np.cumsum([0, *sizes])[: len(results)].tolist()
    assert [flags[s] for s in starts] == [s >= first for s in starts]
    assert refused == []  # the mask allowed every token of the valid answer
    assert all(not r.errors for r in results)
    assert results[-1].grammar_stopped.tolist() == [True]
    assert batch.grammar_stopped(7)
    doc = json.loads(p.tokenizer.decode(r.content + batch.finish(7).content_token_ids))
    assert valid(doc)
    free = run(batch, 8, out, sizes)
    assert not any(free.flags) and not any(free.gmask)


@pytest.mark.parametrize(
    ("family", "tok", "kwargs", "prompt"),
    [
        ("qwen3", "qwen-3", {"enable_thinking": False}, "<|im_start|>assistant\n"),
        ("glm47", "glm-4.7-flash", {"enable_thinking": False}, "<|assistant|>"),
        ("kimi_k2", FAMILY_TOKENIZERS["kimi_k2"], {"thinking": False}, "<|im_assistant|>"),
        # A prefilled final message: the model is inside the answer's body already.
        (
            "openai_gptoss",
            FAMILY_TOKENIZERS["openai_gptoss"],
            {},
            "<|start|>assistant<|channel|>final<|message|>",
        ),
    ],
)
def test_without_reasoning_the_mask_applies_from_the_first_token(
    family: str, tok: str, kwargs: dict[str, Any], prompt: str
) -> None:
    p = reasonspan.create_parser_sync(family, tokenizer(tok), kwargs)
    out = p.tokenizer.encode(ANSWER)
    batch = ReasoningBatch()
    batch.add(1, p, p.tokenizer.encode(prompt), response_format=FORMAT)
    assert batch.grammar_active(1)
    bitmask = batch.allocate_token_bitmask(1)
    assert batch.fill_token_bitmask([1], bitmask).tolist() == [True]
    # The mask is a real constraint: prose cannot start the answer, "{" can.
    assert not allowed(bitmask[0], p.tokenizer.encode("Sure")[0])
    assert allowed(bitmask[0], out[0])
    r = run(batch, 1, out, [1] * len(out))
    assert all(r.flags) and all(r.gmask) and r.refused == []
    assert r.results[-1].grammar_stopped.tolist() == [True]
    assert valid(json.loads(p.tokenizer.decode(r.content + batch.finish(1).content_token_ids)))


@pytest.mark.parametrize("opens", [True, False])
@pytest.mark.parametrize(("family", "tok"), [("minimax_m3", "minimax-m3"), ("glm45", "glm-4.5v")])
def test_a_model_that_opens_its_own_block_may_still_reason(
    family: str, tok: str, opens: bool
) -> None:
    """The prompt leaves the model outside reasoning with thinking on (it writes the start
    marker itself): the first mask allows the grammar's first tokens and the start marker.
    Taking the marker leads into unconstrained reasoning and the grammar after its end;
    answering at once is constrained from the first token."""
    p = reasonspan.create_parser_sync(family, tokenizer(tok))
    enc = p.tokenizer.encode
    start, end = p.spec.start[0], p.spec.end[0]
    reasoning = enc(start) + enc("Just count them.") + enc(end) if opens else []
    out = reasoning + enc(ANSWER)
    batch = ReasoningBatch()
    batch.add(1, p, [], response_format=FORMAT)
    assert batch.grammar_active(1)
    bitmask = batch.allocate_token_bitmask(1)
    assert batch.fill_token_bitmask([1], bitmask).tolist() == [True]
    assert allowed(bitmask[0], enc(start)[0]) and allowed(bitmask[0], enc("{")[0])
    assert not allowed(bitmask[0], enc("Sure")[0])
    r = run(batch, 1, out, [1] * len(out))
    assert r.gmask == [i >= len(reasoning) for i in range(len(out))]
    assert r.refused == [] and all(not x.errors for x in r.results)
    # After the first token the start marker is the grammar's business again.
    assert r.results[-1].grammar_stopped.tolist() == [True]
    assert valid(json.loads(p.tokenizer.decode(r.content + batch.finish(1).content_token_ids)))


def _drive(
    reqs: list[SimRequest], options: Any, k: int, runtime: ReasoningRuntime | None = None
) -> SimulatedEngine:
    engine = SimulatedEngine(reqs, tokens_per_step=k, max_batch=len(reqs))
    rt = runtime if runtime is not None else ReasoningRuntime()

    async def go() -> None:
        await drive(engine, rt, options=options)

    anyio.run(go)
    return engine


@pytest.mark.parametrize("k", [1, 3])
@pytest.mark.parametrize("case", [CASES[0], CASES[3], CASES[5]], ids=lambda c: c.family)
def test_the_simulated_engine_turns_a_broken_answer_into_valid_json(case: Case, k: int) -> None:
    p = case.parser()
    enc = p.tokenizer.encode
    reasoning = enc(case.head) + enc("The user wants a count; {not json} is fine here.")
    end = enc(case.end)
    broken = enc("The answer is 4 apples, I think.")
    reqs = [
        SimRequest(rid, p, enc(case.prompt), reasoning + end + broken, max_tokens=300)
        for rid in (1, 2)
    ]
    engine = _drive(reqs, lambda r: {"response_format": FORMAT} if r.request_id == 1 else {}, k)
    done = {r.request_id: r for r in engine.finished}
    # The structured one: the reasoning as scripted (braces and all), then valid JSON,
    # ended because llguidance says the document is complete.
    got = done[1].emitted_ids
    assert got[: len(reasoning) + len(end)] == reasoning + end
    assert done[1].finish_reason == "stop"
    assert valid(json.loads(p.tokenizer.decode(got[len(reasoning) + len(end) :])))
    # The free one: exactly its script.
    assert done[2].emitted_ids == reasoning + end + broken


def test_budget_forces_first_then_the_grammar() -> None:
    """Budget 3 with a lead-in: the forced lead-in and </think> are reasoning and delimiter,
    the matcher sees none of them, and the answer after them is valid JSON."""
    p = CASES[0].parser()
    enc = p.tokenizer.encode
    long_reasoning = enc("Counting apples one by one, then again, to be sure of it. ") * 3
    script = long_reasoning + enc("</think>") + enc("Four apples.")
    req = SimRequest(1, p, enc(CASES[0].prompt), script, max_tokens=200)
    lead = "Time to answer."
    seen: list[tuple[bool, bool]] = []
    rt = ReasoningRuntime()
    engine = SimulatedEngine([req], tokens_per_step=1)

    async def go() -> None:
        def on_step(_: int, res: Any) -> None:
            seen.append(
                (
                    bool(res.grammar_mask[0]) if len(res.token_ids) else False,
                    res.labels[0] == C if len(res.labels) else False,
                )
            )

        await drive(
            engine,
            rt,
            options=lambda r: {
                "response_format": FORMAT,
                "thinking_token_budget": 3,
                "budget_lead_in": lead,
            },
            on_step=on_step,
        )

    anyio.run(go)
    out = req.emitted_ids
    forced = enc(lead) + enc("</think>")
    assert out[: 3 + len(forced)] == long_reasoning[:3] + forced
    assert req.finish_reason == "stop"
    assert valid(json.loads(p.tokenizer.decode(out[3 + len(forced) :])))
    # Masked exactly from the token after the forced </think>, and those are content.
    n = 3 + len(forced)
    assert [m for m, _ in seen] == [i >= n for i in range(len(out))]
    assert all(c for m, c in seen if m)


def test_a_tool_call_that_ends_reasoning_releases_the_response_grammar() -> None:
    """qwen3: <tool_call> ends reasoning and stays in content (TOOL). What follows is a tool
    call for the tool parser, not the response: no mask, nothing fed, no error."""
    p = CASES[0].parser()
    enc = p.tokenizer.encode
    think = enc("I should call the tool.")
    call = enc('<tool_call>\n{"name": "count", "arguments": {}}\n</tool_call>')
    batch = ReasoningBatch()
    batch.add(1, p, enc(CASES[0].prompt), response_format=FORMAT)
    r = run(batch, 1, think + call, [2] * len(think + call))
    assert not any(r.flags) and not any(r.gmask)
    assert all(not x.errors for x in r.results)
    assert not batch.grammar_active(1) and not batch.grammar_stopped(1)
    assert r.content + batch.finish(1).content_token_ids == call


@pytest.mark.parametrize("analysis_first", [True, False])
def test_a_harmony_tool_call_releases_the_response_grammar(analysis_first: bool) -> None:
    """A tool-call message (TOOL_CALL), after an analysis message or as the first message of
    the turn, is for the tool parser: its JSON arguments never meet the response schema."""
    p = CASES[5].parser()
    enc = p.tokenizer.encode
    header = " to=functions.get_weather<|channel|>commentary "
    args = '<|constrain|>json<|message|>{"location": "Paris"}<|call|>'
    if analysis_first:
        out = enc("<|channel|>analysis<|message|>Need the weather.<|end|>")
        out += enc("<|start|>assistant" + header) + enc(args)
    else:
        out = enc(header) + enc(args)
    batch = ReasoningBatch()
    batch.add(1, p, enc("<|start|>assistant"), response_format=FORMAT)
    r = run(batch, 1, out, [1] * len(out))
    assert not any(r.flags) and not any(r.gmask)
    assert all(not x.errors for x in r.results)


def test_a_rejected_token_fails_its_request_alone() -> None:
    p = CASES[0].parser()
    enc = p.tokenizer.encode
    prompt = enc("<|im_start|>assistant\n<think>\n\n</think>\n\n")  # the answer comes next
    good, bad = enc('{"answer": 1, "unit": "x"}'), enc("Sure, here")
    batch = ReasoningBatch()
    batch.add(1, p, prompt, response_format=FORMAT)
    batch.add(2, p, prompt, response_format=FORMAT)
    batch.add(3, p, prompt)
    res = batch.step([1, 2, 3], [good[0], bad[0], bad[0]], [0, 1, 2, 3])
    assert set(res.errors) == {2}
    err = res.errors[2]
    assert isinstance(err, GrammarRejectedError) and err.token_id == bad[0]
    assert "response_format (json_schema)" in str(err) and str(bad[0]) in str(err)
    assert res.labels.tolist() == [C, FAILED, C]
    assert res.grammar_mask.tolist() == [True, False, False]
    assert batch.usage(2).completion_tokens == 0  # the rejected token is not counted
    # The batch goes on: the failed request stays frozen, the others go on.
    res = batch.step([1, 2, 3], [good[1], bad[1], bad[1]], [0, 1, 2, 3])
    assert set(res.errors) == {2} and res.labels.tolist() == [C, FAILED, C]
    with pytest.raises(GrammarRejectedError):
        batch.finish(2)
    bitmask = batch.allocate_token_bitmask(3)
    assert batch.fill_token_bitmask([1, 2, 3], bitmask).tolist() == [True, False, False]


@pytest.mark.parametrize(
    ("fmt", "error", "says"),
    [
        (
            {"type": "json_schema", "json_schema": {"schema": {"type": "bogus"}}},
            GrammarError,
            "bogus",
        ),
        ({"type": "regex", "regex": "a(b"}, GrammarError, "unclosed group"),
        ({"type": "grammar", "grammar": "start: foo"}, GrammarError, "foo"),
        ({"type": "json_schema"}, InvalidOptionError, "response_format.json_schema"),
        ({"type": "xml"}, InvalidOptionError, "response_format.type"),
        ({"type": "regex", "regex": ""}, InvalidOptionError, "response_format.regex"),
        ("json", InvalidOptionError, "response_format"),
    ],
)
def test_a_bad_format_fails_at_add_and_changes_nothing(
    fmt: Any, error: type[Exception], says: str
) -> None:
    p = CASES[0].parser()
    batch = ReasoningBatch()
    batch.add(1, p, [], response_format=FORMAT)
    with pytest.raises(error, match=None) as info:
        batch.add(2, p, [], response_format=fmt)
    assert says in str(info.value)
    assert batch.request_ids() == [1] and 2 not in batch
    batch.add(2, p, [])  # the id is free, the batch works
    assert len(batch) == 2


def test_other_formats_constrain_too() -> None:
    """json_object, a regex and a Lark grammar (the extensions), each a real constraint."""
    p = CASES[0].parser()
    enc = p.tokenizer.encode
    prompt = enc("<|im_start|>assistant\n<think>\n\n</think>\n\n")
    cases = [
        ({"type": "json_object"}, '{"x": [1, 2]}', "Sure"),
        ({"type": "regex", "regex": r"[0-9]{3}-[0-9]{4}"}, "555-1234", "abc"),
        ({"type": "grammar", "grammar": 'start: "yes" | "no"'}, "yes", "maybe"),
        ({"type": "text"}, "anything at all", None),
    ]
    for rid, (fmt, ok, refused) in enumerate(cases):
        batch = ReasoningBatch()
        batch.add(rid, p, prompt, response_format=fmt)
        bitmask = batch.allocate_token_bitmask(1)
        masked = bool(batch.fill_token_bitmask([rid], bitmask)[0])
        assert masked == (refused is not None)
        if refused is not None:
            assert not allowed(bitmask[0], enc(refused)[0])
        out = enc(ok)
        r = run(batch, rid, out, [1] * len(out))
        assert r.refused == [] and all(not x.errors for x in r.results)
        assert bool(r.results[-1].grammar_stopped[0]) == (refused is not None)


def test_mixed_batch_masks_depend_only_on_each_requests_tokens() -> None:
    """Structured and free requests of three families, three schemas, admitted and removed
    while the batch runs: each request's mask rows, step by step, equal those it gets
    alone in a batch of its own."""
    fams = [CASES[0], CASES[3], CASES[5]]
    schemas = [
        FORMAT,
        {"type": "json_object"},
        {
            "type": "json_schema",
            "json_schema": {"schema": {"type": "array", "items": {"type": "integer"}}},
        },
        None,
    ]
    answers = [ANSWER, '{"k": "v"}', "[1, 2, 3]", "free text"]
    rng = random.Random(5)
    reqs: list[tuple[int, ReasoningParser, list[int], list[int], Any, int, int]] = []
    reached: dict[int, bool] = {}  # ran into its answer (not removed before it)
    for rid in range(12):
        case = fams[rid % 3]
        j = rng.randrange(4)
        p = case.parser()
        enc = p.tokenizer.encode
        out = enc(case.head) + enc(f"thinking {rid}") + enc(case.end) + enc(answers[j])
        start = rng.randrange(6)
        stop_after = rng.choice([None, 3, 8])  # removed mid-way, or run to the end
        n = len(out) if stop_after is None else min(len(out), stop_after)
        reqs.append((rid, p, enc(case.prompt), out[:n], schemas[j], start, n))
        reached[rid] = n == len(out)

    def rows_of(batch: ReasoningBatch, ids: list[int], bm: np.ndarray) -> dict[int, bytes]:
        masked = batch.fill_token_bitmask(ids, bm)
        return {rid: (bm[i].tobytes() if masked[i] else b"") for i, rid in enumerate(ids)}

    together: dict[int, list[bytes]] = {r[0]: [] for r in reqs}
    batch = ReasoningBatch()
    bm = np.zeros((12, 4740), np.int32)
    pos = {r[0]: 0 for r in reqs}
    step = 0
    while any(pos[r[0]] < r[6] for r in reqs):
        for rid, p, prompt, _out, fmt, start, _n in reqs:
            if start == step:
                batch.add(rid, p, prompt, response_format=fmt)
        live = [r for r in reqs if r[0] in batch]
        ids = [r[0] for r in live]
        for rid, row in rows_of(batch, ids, bm).items():
            together[rid].append(row)
        toks = [r[3][pos[r[0]]] for r in live]
        batch.step(ids, toks, list(range(len(ids) + 1)))
        for r in live:
            pos[r[0]] += 1
            if pos[r[0]] == r[6]:
                batch.remove(r[0])
        step += 1
    for rid, p, prompt, out, fmt, _start, _n in reqs:
        alone = ReasoningBatch()
        alone.add(rid, p, prompt, response_format=fmt)
        one = np.zeros((1, 4740), np.int32)
        rows = []
        for t in out:
            rows.append(rows_of(alone, [rid], one)[rid])
            alone.step([rid], [t], [0, 1])
        assert together[rid] == rows, rid
        if reached[rid]:
            assert any(rows) == (fmt is not None), rid
    assert sum(any(rows) for rows in together.values()) >= 3


def test_import_reasonspan_does_not_import_llguidance() -> None:
    code = "import sys, reasonspan; from reasonspan import ReasoningBatch; print('llguidance' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_a_missing_grammar_engine_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    p = CASES[0].parser()
    monkeypatch.setitem(sys.modules, "llguidance", None)  # import llguidance now fails
    batch = ReasoningBatch()
    with pytest.raises(GrammarUnavailableError, match=r"pip install -e '\.\[grammar\]'"):
        batch.add(1, p, [], response_format=FORMAT)
    assert len(batch) == 0
    batch.add(1, p, [], structured_output=True)  # the gate alone needs no engine


def _nested_schema(levels: int) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "integer"}
    for _ in range(levels):
        schema = {"type": "object", "properties": {"a": schema}}
    return schema


@pytest.mark.parametrize(
    ("fmt", "error", "says"),
    [
        (
            {"type": "json_schema", "json_schema": {"name": "x", "schema": _nested_schema(500)}},
            InvalidOptionError,
            "nested at most",
        ),
        (
            {"type": "json_schema", "json_schema": {"name": "x", "schema": [1, 2]}},
            InvalidOptionError,
            "response_format.json_schema.schema",
        ),
        (
            {
                "type": "grammar",
                "grammar": "start: " + " | ".join(f'"w{i}x"' for i in range(50_000)),
            },
            GrammarError,
            "too large to compile",
        ),
    ],
)
def test_formats_that_cannot_be_compiled_safely_are_refused(
    fmt: Any, error: type[Exception], says: str
) -> None:
    """A schema nested 500 deep raised RecursionError, a non-object schema constrained
    nothing, a 50,000-alternative grammar compiled for seconds: each is the documented
    error at add(), and the batch is unchanged."""
    p = CASES[0].parser()
    batch = ReasoningBatch()
    with pytest.raises(error) as info:
        batch.add(1, p, [], response_format=fmt)
    assert says in str(info.value)
    assert len(batch) == 0


def test_a_compiled_format_is_copied_for_the_next_request() -> None:
    """Two requests with one format get matchers of their own (one's tokens do not move
    the other), the second a copy of the first's compile."""
    p = CASES[0].parser()
    batch = ReasoningBatch()
    fmt = {"type": "regex", "regex": "ab|ac"}
    a = compile_grammar(fmt, p.tokenizer)
    b = compile_grammar(fmt, p.tokenizer)
    assert a is not None and b is not None and a.matcher is not b.matcher
    assert a.consume(p.tokenizer.encode("ab")) == -1 and a.accepting
    assert not b.accepting and b.consume(p.tokenizer.encode("ac")) == -1 and b.accepting
    batch.add(1, p, [], response_format=fmt)
    assert len(batch) == 1


def test_compiled_matchers_go_with_their_tokenizer() -> None:
    """A format compiled twice for one tokenizer is compiled once (its matcher copied), and
    the matchers live on the tokenizer: once a server lets a model's tokenizer go, nothing
    keeps its matchers or its llguidance tokenizer (110-180 MB) alive."""
    import gc
    import weakref

    from reasonspan.tokenizer.loader import LoadedTokenizer

    base = tokenizer(FAMILY_TOKENIZERS["qwen3"])
    tok = LoadedTokenizer(base.tokenizer, base.source)  # a tokenizer of its own
    fmt = {"type": "json_schema", "json_schema": {"schema": {"type": "object"}}}
    first = compile_grammar(fmt, tok)
    again = compile_grammar(fmt, tok)
    assert first is not None and again is not None and first is not again
    compiled = tok.cache["reasonspan.grammar_compiled"]
    assert len(compiled) == 1  # (the second was a copy of the first's matcher)
    held = [weakref.ref(tok), weakref.ref(compiled)]
    del tok, compiled, first, again
    gc.collect()
    assert [r() for r in held] == [None, None]
