"""``reasonspan demo``: realistic multi-turn requests streamed through a parser, step by step.

Each request's prompt is rendered with the model's own chat template (history with old
reasoning included), seeded with ``is_prompt_in_reasoning``, and its output is fed a few
tokens per step, as a continuous-batching engine would. Reasoning and content stream on
separate lanes; a summary table closes the run.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from dataclasses import dataclass, field

from .demo_data import NoTokenizerError, default_tokenizer_path
from .prompts import messages_for, render_prompt
from .runtime import ReasoningParser, ReasonspanError, TextSplitter, create_parser_sync
from .tokenizer import LoadedTokenizer, load_tokenizer_sync
from .transcripts import ALL, Transcript


@dataclass
class Request:
    rid: int
    title: str
    parser: ReasoningParser
    prompt: list[int]
    output: list[int]
    kwargs: dict[str, object]
    note: str
    pos: int = 0
    splitter: TextSplitter | None = None
    lanes: dict[str, str] = field(default_factory=lambda: {"reasoning": "", "content": ""})
    reasoning_tokens: int = 0
    content_tokens: int = 0
    seeded: bool = False
    parse_ns: int = 0


def output_text(parser: ReasoningParser, t: Transcript, *, thinking: bool) -> str:
    """What the model writes for this transcript in this family's markup."""
    spec = parser.spec
    answer = t.answer
    if t.tool_call and spec.tool:
        answer = f"{t.answer}\n{spec.tool[0]}\n{t.tool_call}\n"
    if not thinking or not spec.end:
        return answer
    start = spec.start[0] if spec.start else ""
    return f"{start}\n{t.reasoning}\n{spec.end[0]}\n\n{answer}"


def build_requests(tok: LoadedTokenizer, family: str) -> list[Request]:
    """A handful of cases: thinking on, a tool call, thinking off, a truncated reply."""
    out: list[Request] = []
    plans: list[tuple[Transcript, dict[str, object], str, int | None]] = [
        (ALL[0], {}, "thinking on, multi-turn", None),
        (ALL[2], {}, "ends in a tool call", None),
        (ALL[1], {"enable_thinking": False}, "thinking switched off", None),
        (ALL[3], {}, "max_tokens hit inside reasoning", 60),
    ]
    for rid, (t, kwargs, note, limit) in enumerate(plans, 1):
        try:
            parser = create_parser_sync(family, tok, kwargs)
        except ReasonspanError:
            parser = create_parser_sync(family, tok)
            kwargs = {}
        prompt, _how = render_prompt(tok, messages_for(t), **kwargs)
        text = output_text(parser, t, thinking=parser.thinking_enabled)
        output = tok.encode(text)
        if limit is not None:
            output = output[:limit]
        out.append(Request(rid, t.title, parser, prompt, output, kwargs, note))
    return out


class Screen:
    """Prints each request's lanes a line at a time, so interleaved streams stay readable."""

    def __init__(self, color: bool) -> None:
        self.color = color

    def paint(self, text: str, lane: str) -> str:
        if not self.color:
            return text
        return f"\033[2;3m{text}\033[0m" if lane == "reasoning" else f"\033[1m{text}\033[0m"

    def emit(self, req: Request, lane: str, text: str, *, final: bool = False) -> None:
        buf = req.lanes[lane] + text
        while "\n" in buf or len(buf) >= 72 or (final and buf):
            cut = buf.find("\n")
            if cut < 0 or cut > 72:
                cut = min(len(buf), 72)
                line, buf = buf[:cut], buf[cut:]
            else:
                line, buf = buf[:cut], buf[cut + 1 :]
            if line.strip():
                tag = f"[{req.rid} {req.title[:12]:<12}] {lane:<9} │ "
                print(tag + self.paint(line, lane))
        req.lanes[lane] = buf


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--tokenizer", help="model folder or tokenizer.json (default: real Qwen3)")
    p.add_argument("--parser", default=None, help="parser name (default: qwen3)")
    p.add_argument("--seed", type=int, default=7, help="seed for tokens-per-step draws")
    p.add_argument("--no-color", action="store_true")


def run(args: argparse.Namespace) -> int:
    try:
        path = args.tokenizer or default_tokenizer_path()
        tok = load_tokenizer_sync(path)
    except (NoTokenizerError, ReasonspanError) as exc:
        print(f"reasonspan demo: {exc}", file=sys.stderr)
        return 2
    family = args.parser or "qwen3"
    try:
        requests = build_requests(tok, family)
    except ReasonspanError as exc:
        print(f"reasonspan demo: {exc}", file=sys.stderr)
        return 2
    rng = random.Random(args.seed)
    screen = Screen(color=sys.stdout.isatty() and not args.no_color)
    print(f"tokenizer: {tok.source}\nparser:    {family}\n")
    for r in requests:
        t0 = time.perf_counter_ns()
        r.splitter = TextSplitter(r.parser, r.prompt)
        r.seeded = r.splitter.is_reasoning
        r.parse_ns += time.perf_counter_ns() - t0
        old = [t for t in r.prompt if r.parser.machine.id_markers.get(t) is not None]
        print(
            f"request {r.rid}: {r.title} — {r.note}; prompt {len(r.prompt)} tokens "
            f"({len(old)} marker tokens in it), "
            f"starts {'inside' if r.seeded else 'outside'} reasoning"
        )
    print()
    active = list(requests)
    steps = 0
    while active:
        steps += 1
        for r in list(active):
            k = rng.randint(1, 3)
            delta = r.output[r.pos : r.pos + k]
            r.pos += len(delta)
            assert r.splitter is not None
            t0 = time.perf_counter_ns()
            reasoning, content = r.splitter.feed(delta)
            r.parse_ns += time.perf_counter_ns() - t0
            screen.emit(r, "reasoning", reasoning)
            screen.emit(r, "content", content)
            if r.pos >= len(r.output):
                reasoning, content = r.splitter.finish()
                screen.emit(r, "reasoning", reasoning, final=True)
                screen.emit(r, "content", content, final=True)
                res = r.parser.parse(r.output, prompt_token_ids=r.prompt)
                r.reasoning_tokens = res.reasoning_tokens
                r.content_tokens = len(res.content_token_ids)
                if not res.reasoning_ended:
                    print(f"[{r.rid}] finished inside reasoning: content is empty (length)")
                active.remove(r)
    print()
    print("| request | case | output tokens | reasoning | content | µs/token (split+text) |")
    print("|---:|---|---:|---:|---:|---:|")
    for r in requests:
        n = max(1, len(r.output))
        print(
            f"| {r.rid} | {r.note} | {len(r.output)} | {r.reasoning_tokens} | "
            f"{r.content_tokens} | {r.parse_ns / n / 1e3:.2f} |"
        )
    total = sum(len(r.output) for r in requests)
    print(f"\n{len(requests)} requests, {total} tokens, {steps} steps")
    return 0
