"""``reasonspan demo``: a continuous-batching loop over real tokenizers, streamed live.

A dozen multi-turn requests of mixed families (Qwen3, DeepSeek R1, GLM-4.7, MiniMax-M3 by
default, each with its real tokenizer and chat template) arrive over time at a SIMULATED
engine (scripted outputs, not a model). Every engine step goes through one
``ReasoningRuntime.step`` for the whole batch; each request is consumed as an async stream
of OpenAI chunks, printed on a reasoning lane and a content lane. Some requests have a
thinking budget (forced end of reasoning), one a grammar waiting for the answer, one a
``max_tokens`` cut inside reasoning, one thinking switched off.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from dataclasses import dataclass, field
from typing import Any

import anyio

from reasonspan.argtypes import POSITIVE
from reasonspan.demo_data import NoTokenizerError, default_tokenizer_path
from reasonspan.prompts import messages_for, render_prompt
from reasonspan.runtime import ReasoningParser, ReasonspanError, build_parser_sync
from reasonspan.runtime.stream.runtime import ReasoningRuntime, RequestStream
from reasonspan.runtime.stream.simulation import SimRequest, SimulatedEngine, drive
from reasonspan.tokenizer import LoadedTokenizer, load_tokenizer_sync
from reasonspan.transcripts import ALL
from reasonspan.workload import scripted_output

DEFAULT_FAMILIES = (
    ("qwen3", "qwen-3"),
    ("deepseek_r1", "deepseek-r1"),
    ("glm47", "glm-4.7-flash"),
    ("minimax_m3", "minimax-m3"),
)


@dataclass
class Case:
    """One demo request: what it shows and the options it is admitted with."""

    request: SimRequest
    family: str
    note: str
    options: dict[str, Any]
    lanes: dict[str, str] = field(default_factory=lambda: {"reasoning": "", "content": ""})
    reasoning_tokens: int = 0
    finish_reason: str | None = None
    chunks: int = 0


class Screen:
    """Prints each request's lanes a line at a time, so interleaved streams stay readable."""

    def __init__(self, color: bool) -> None:
        self.color = color

    def paint(self, text: str, lane: str) -> str:
        if not self.color:
            return text
        return f"\033[2;3m{text}\033[0m" if lane == "reasoning" else f"\033[1m{text}\033[0m"

    def emit(self, case: Case, lane: str, text: str, *, final: bool = False) -> None:
        """Print ``text`` of ``lane`` a line at a time. Text of the other lane arriving
        first prints that lane's unfinished line, so lines come out in stream order (the
        reasoning's tail before the content after it)."""
        other = "content" if lane == "reasoning" else "reasoning"
        if text and case.lanes[other]:
            self.emit(case, other, "", final=True)
        buf = case.lanes[lane] + text
        while "\n" in buf or len(buf) >= 72 or (final and buf):
            cut = buf.find("\n")
            if cut < 0 or cut > 72:
                cut = min(len(buf), 72)
                line, buf = buf[:cut], buf[cut:]
            else:
                line, buf = buf[:cut], buf[cut + 1 :]
            if line.strip():
                rid = case.request.request_id
                tag = f"[{rid:>2} {case.family[:11]:<11}] {lane:<9} │ "
                print(tag + self.paint(line, lane))
        case.lanes[lane] = buf


def build_cases(setups: list[tuple[str, LoadedTokenizer]], n: int = 12) -> list[Case]:
    """``n`` requests cycling through the families and through the situations worth seeing."""
    situations: list[tuple[str, dict[str, Any], dict[str, Any], float | None]] = [
        # note, chat_template_kwargs, batch options, max_tokens as a fraction of the output
        ("thinking on, multi-turn", {}, {}, None),
        (
            "thinking budget of 24 tokens",
            {},
            {"thinking_token_budget": 24, "budget_lead_in": " I should answer now."},
            None,
        ),
        ("grammar waits for the answer", {}, {"structured_output": True}, None),
        ("max_tokens hit inside reasoning", {}, {}, 0.3),
        ("thinking switched off", {"enable_thinking": False, "thinking": False}, {}, None),
        ("reasoning hidden (include_reasoning=False)", {}, {"include_reasoning": False}, None),
    ]
    cases: list[Case] = []
    for i in range(n):
        family, tok = setups[i % len(setups)]
        note, kwargs, options, cut = situations[i % len(situations)]
        try:
            parser: ReasoningParser = build_parser_sync(family, tok, kwargs)
        except ReasonspanError:
            parser = build_parser_sync(family, tok)
            kwargs = {}
        t = ALL[i % len(ALL)]
        prompt, _how = render_prompt(tok, messages_for(t), **kwargs)
        script = scripted_output(parser, t.reasoning, t.answer, t.tool_call, prompt_ids=prompt)
        output = tok.encode(script)
        max_tokens = max(1, int(len(output) * cut)) if cut else None
        req = SimRequest(
            request_id=i + 1,
            parser=parser,
            prompt_ids=prompt,
            output_ids=output,
            arrival_step=i * 3,
            max_tokens=max_tokens,
            title=t.title,
        )
        cases.append(Case(req, family, note, options))
    return cases


async def consume(stream: RequestStream, case: Case, screen: Screen) -> None:
    async for chunk in stream:
        case.chunks += 1
        choice = chunk.choices[0]
        screen.emit(case, "reasoning", choice.delta.reasoning or "")
        screen.emit(case, "content", choice.delta.content or "")
        if choice.finish_reason:
            case.finish_reason = choice.finish_reason
            screen.emit(case, "reasoning", "", final=True)
            screen.emit(case, "content", "", final=True)
            if chunk.usage is not None:
                case.reasoning_tokens = chunk.usage.completion_tokens_details.reasoning_tokens
            if choice.finish_reason == "length":
                rid = case.request.request_id
                print(f"[{rid:>2}] finish_reason=length inside reasoning: no content was produced")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--tokenizer", help="one model folder or tokenizer.json (default: several real ones)"
    )
    p.add_argument("--parser", default=None, help="parser name for --tokenizer (default: detected)")
    p.add_argument("--requests", type=POSITIVE, default=12, help="how many requests (>= 1)")
    p.add_argument(
        "--tokens-per-step",
        type=POSITIVE,
        default=2,
        metavar="K",
        help="tokens per request per engine step (>= 1; k > 1 models speculative decoding)",
    )
    p.add_argument("--no-color", action="store_true", help="no ANSI colours")


def _setups(args: argparse.Namespace) -> list[tuple[str, LoadedTokenizer]]:
    if args.tokenizer:
        tok = load_tokenizer_sync(args.tokenizer)
        family = args.parser
        if family is None:
            from reasonspan.detection import detect

            found = detect(tok)
            if found.parser is None:
                raise NoTokenizerError(
                    f"could not tell which parser fits {args.tokenizer}; pass --parser NAME "
                    f"(candidates: {', '.join(c.name for c in found.candidates[:4]) or 'none'})"
                )
            family = found.parser
        return [(family, tok)]
    out = []
    for family, model in DEFAULT_FAMILIES:
        out.append((family, load_tokenizer_sync(default_tokenizer_path(model))))
    return out


def run(args: argparse.Namespace) -> int:
    if args.parser is not None and not args.tokenizer:
        print(
            "reasonspan demo: --parser applies to --tokenizer; pass both, or neither for "
            "the default models",
            file=sys.stderr,
        )
        return 2
    try:
        setups = _setups(args)
        cases = build_cases(setups, args.requests)
    except (NoTokenizerError, ReasonspanError) as exc:
        print(f"reasonspan demo: {exc}", file=sys.stderr)
        return 2
    screen = Screen(color=sys.stdout.isatty() and not args.no_color)
    for family, tok in setups:
        print(f"{family:<12} tokenizer {tok.source}")
    print("(a SIMULATED engine replays scripted outputs through the real runtime)\n")
    by_id = {c.request.request_id: c for c in cases}
    engine = SimulatedEngine(
        [c.request for c in cases], max_batch=16, tokens_per_step=args.tokens_per_step
    )
    runtime = ReasoningRuntime(model="reasonspan-demo")

    async def main() -> Any:
        async with anyio.create_task_group() as tg:

            def on_admit(r: SimRequest, stream: RequestStream) -> None:
                case = by_id[r.request_id]
                seeded = "inside" if runtime.batch.is_reasoning(r.request_id) else "outside"
                print(
                    f"step {engine.step_no:>3}: + request {r.request_id} "
                    f"({case.family}, {r.title}): {case.note}; "
                    f"prompt {len(r.prompt_ids)} tokens, starts {seeded} reasoning"
                )
                tg.start_soon(consume, stream, case, screen)

            def on_step(step: int, res: Any) -> None:
                if step % 40 == 0 and len(res):
                    print(
                        f"step {step:>3}: {len(res)} requests in the batch, "
                        f"{int(res.is_reasoning.sum())} reasoning, "
                        f"{int(res.grammar_active.sum())} with grammar on, "
                        f"{len(engine.pending)} waiting"
                    )

            return await drive(
                engine,
                runtime,
                options=lambda r: by_id[r.request_id].options,
                on_admit=on_admit,
                on_step=on_step,
            )

    stats = anyio.run(main)
    print()
    print("| request | family | case | output tokens | reasoning tokens | budget hit | finish |")
    print("|---:|---|---|---:|---:|---|---|")
    for c in cases:
        r = c.request
        hit = "yes" if r.forced_emitted else "—"
        print(
            f"| {r.request_id} | {c.family} | {c.note} | {len(r.emitted_ids)} | "
            f"{c.reasoning_tokens} | {hit} | {c.finish_reason} |"
        )
    step_us = [ns / 1e3 for ns in stats.step_ns]
    med = statistics.median(step_us) if step_us else 0.0
    slowest = max(step_us, default=0.0)
    print(
        f"\n{len(cases)} requests, {stats.tokens} tokens, "
        f"{sum(c.reasoning_tokens for c in cases)} reasoning tokens, "
        f"{stats.budget_hits} budget hits, {stats.steps} steps of "
        f"{stats.tokens / max(1, stats.steps):.1f} tokens on average.\n"
        f"Parse time per engine step (runtime.step: routing, text and chunks for the whole "
        f"batch): median {med:.1f} µs; the slowest step took {slowest:,.1f} µs (a family's "
        f"first request builds its tables)."
    )
    return 0
