"""Scripted requests for the simulated engine: the demo's transcripts in each family's format.

The demo, the benchmarks and the tests build their workloads here, on top of the runtime's
:mod:`~reasonspan.runtime.stream.simulation` machinery, which knows no transcript.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from reasonspan.prompts import messages_for, render_prompt
from reasonspan.runtime.parser.contract import ReasoningParser
from reasonspan.runtime.stream.simulation import SimRequest
from reasonspan.tokenizer import LoadedTokenizer
from reasonspan.transcripts import ALL


def scripted_output(
    parser: ReasoningParser,
    reasoning: str,
    answer: str,
    tool_call: str,
    *,
    prompt_ids: Sequence[int] | None = None,
) -> str:
    """What a model of this family writes: its markers around reasoning, then the answer
    and, where the family has a tool marker, a tool call.

    With ``prompt_ids`` (the rendered prompt) the script follows it, as a model does: no
    second start marker after a prompt that opened reasoning (Qwen3.5's ``<think>\n``),
    no reasoning at all after one that closed it (MiniMax-M3's ``thinking_mode:
    "disabled"``, a ``<think></think>`` prefill)."""
    spec = parser.spec
    if tool_call and spec.tool:
        answer = f"{answer}\n{spec.tool[0]}\n{tool_call}\n"
    if not parser.thinking_enabled or not spec.end:
        return answer
    opening = prompt_opening(parser, prompt_ids) if prompt_ids is not None else "none"
    if opening == "closed":
        return answer
    if opening == "open":
        return f"{reasoning}\n{spec.end[0]}\n\n{answer}"
    start = spec.start[0] if spec.start else ""
    return f"{start}\n{reasoning}\n{spec.end[0]}\n\n{answer}"


PROMPT_TAIL_TOKENS = 16
"""How many trailing prompt tokens are decoded to see what the template wrote last (the
longest marker of any family is a few tokens)."""


def prompt_opening(parser: ReasoningParser, prompt_ids: Sequence[int]) -> str:
    """What the chat template wrote at the end of the prompt: ``"open"`` (a start marker:
    the model goes on inside reasoning), ``"closed"`` (an end marker: the model answers
    without reasoning) or ``"none"`` (the model opens reasoning itself, as Qwen3 does).

    This asks what the template *wrote*, not :meth:`is_prompt_in_reasoning`'s question of
    which state the parser starts in: Qwen3's parser starts in reasoning at a bare turn
    start (newer templates prefill ``<think>``), yet a Qwen3 model still writes it."""
    spec = parser.spec
    tail = parser.tokenizer.decode(list(prompt_ids[-PROMPT_TAIL_TOKENS:])).rstrip()
    for markers, opening in ((spec.start, "open"), (spec.end, "closed")):
        if any(tail.endswith(m.rstrip()) for m in markers if m.strip()):
            return opening
    return "none"


def workload(
    parsers: Sequence[tuple[ReasoningParser, LoadedTokenizer]],
    n_requests: int,
    *,
    seed: int = 0,
    arrival_rate: float = 2.0,
    truncate_fraction: float = 0.1,
) -> list[SimRequest]:
    """Realistic requests of mixed families: multi-turn prompts, reasoning, answers, tool
    calls, some cut by ``max_tokens`` inside reasoning; arrivals spread over steps."""
    rng = random.Random(seed)
    out: list[SimRequest] = []
    cache: dict[tuple[int, int], tuple[list[int], list[int]]] = {}
    step = 0.0
    for i in range(n_requests):
        pi = rng.randrange(len(parsers))
        parser, tok = parsers[pi]
        ti = rng.randrange(len(ALL))
        key = (pi, ti)
        if key not in cache:
            t = ALL[ti]
            prompt, _ = render_prompt(tok, messages_for(t))
            text = scripted_output(parser, t.reasoning, t.answer, t.tool_call, prompt_ids=prompt)
            cache[key] = (prompt, tok.encode(text))
        prompt, output = cache[key]
        max_tokens = None
        if rng.random() < truncate_fraction:
            max_tokens = max(1, int(len(output) * rng.uniform(0.2, 0.6)))
        out.append(
            SimRequest(
                request_id=i,
                # One parser per request (they share the compiled machine).
                parser=type(parser)(tok, parser.machine, parser.chat_template_kwargs),
                prompt_ids=prompt,
                output_ids=output,
                arrival_step=int(step),
                max_tokens=max_tokens,
                title=ALL[ti].title,
            )
        )
        step += rng.expovariate(arrival_rate)
    return out
