"""``reasonspan split``: one output in, ``{reasoning, content, reasoning_tokens}`` out.

The tool to reach for when a server puts reasoning in the wrong field: feed it the raw
output (text or token ids) and, ideally, the prompt, and compare with what the server did.
Without a prompt, the start state comes from the model folder's chat template (or the
family's documented default); ``start_state_from`` in the output says which.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import msgspec

from reasonspan.detection.profile import template_start_state
from reasonspan.factory import create_parser_sync
from reasonspan.runtime import ReasonspanError
from reasonspan.tokenizer import load_tokenizer_sync


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--tokenizer", required=True, help="model folder or tokenizer.json")
    p.add_argument("--parser", required=True, help="parser name (see `reasonspan detect`)")
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--text", help="the raw generated text (markers written out)")
    src.add_argument("--ids", metavar="FILE", help="generated token ids: JSON list or whitespace")
    prompt = p.add_mutually_exclusive_group()
    prompt.add_argument("--prompt-text", help="the rendered prompt, to seed the state")
    prompt.add_argument("--prompt-ids", metavar="FILE", help="prompt token ids (as --ids)")
    p.add_argument(
        "--keep-special-tokens",
        action="store_true",
        help="keep special tokens in the text (by default they are skipped, as servers do; "
        "tool markers the family keeps in content always stay)",
    )
    p.add_argument(
        "--kwargs",
        default="{}",
        help="chat_template_kwargs as JSON, e.g. '{\"enable_thinking\": false}'",
    )


def _read_ids(path: str, flag: str) -> list[int]:
    """Token ids from ``path`` (``-``: stdin); every failure names the flag and the file."""
    where = f"{flag} {'(stdin)' if path == '-' else path}"
    try:
        raw = sys.stdin.buffer.read() if path == "-" else Path(path).read_bytes()
        text = raw.decode("utf-8").strip()
    except UnicodeDecodeError as exc:
        raise ValueError(
            f"{where}: not UTF-8 text (byte {exc.object[exc.start : exc.start + 1]!r} at "
            f"offset {exc.start})"
        ) from None
    except OSError as exc:
        raise ValueError(f"{where}: {exc.strerror or exc}") from None
    try:
        data: Any = json.loads(text) if text.startswith("[") else [int(x) for x in text.split()]
    except ValueError:
        data = None
    if not isinstance(data, list) or not all(type(x) is int for x in data):
        raise ValueError(f"{where}: expected a JSON list of ints or whitespace-separated ints")
    return data


def _kwargs(text: str) -> dict[str, Any]:
    """``--kwargs``: a JSON object, or an error naming the flag."""
    try:
        kwargs = json.loads(text)
    except ValueError as exc:
        raise ValueError(f"--kwargs is not valid JSON ({exc}): {text[:60]!r}") from None
    if not isinstance(kwargs, dict):
        raise ValueError(f"--kwargs must be a JSON object, got {text[:60]!r}")
    return kwargs


def _utf8(text: str, option: str) -> str:
    """``text`` as given on the command line, refused when its bytes were not UTF-8 (Python
    keeps them as lone surrogates, which no tokenizer can encode)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        byte = exc.object[exc.start].encode("utf-8", "surrogateescape")
        raise ValueError(
            f"{option} is not valid UTF-8 (byte {byte!r} at character {exc.start}); "
            "pass the output as token ids with --ids"
        ) from None
    return text


def run(args: argparse.Namespace) -> int:
    try:
        kwargs = _kwargs(args.kwargs)
        tok = load_tokenizer_sync(args.tokenizer)
        parser = create_parser_sync(args.parser, tok, kwargs)
        output = (
            tok.encode(_utf8(args.text, "--text"))
            if args.text is not None
            else _read_ids(args.ids, "--ids")
        )
        prompt: list[int] | None = None
        if args.prompt_text is not None:
            prompt = tok.encode(_utf8(args.prompt_text, "--prompt-text"))
        elif args.prompt_ids is not None:
            prompt = _read_ids(args.prompt_ids, "--prompt-ids")
        res = parser.parse(
            output, prompt_token_ids=prompt, skip_special_tokens=not args.keep_special_tokens
        )
    except (ReasonspanError, ValueError, OSError, UnicodeError) as exc:
        print(f"reasonspan split: {exc}", file=sys.stderr)
        return 2
    # Where the start state came from (prompt scan, then template profile, then the
    # family's documented default): the first thing to check when a server disagrees.
    if prompt is not None:
        start_from = "prompt"
    elif template_start_state(type(parser), tok, kwargs) is not None:
        start_from = "chat template"
    else:
        start_from = "documented default"
    out = {
        "parser": parser.name,
        "reasoning": res.reasoning,
        "content": res.content,
        "reasoning_tokens": res.reasoning_tokens,
        "content_tokens": len(res.content_token_ids),
        "delimiter_tokens": res.delimiter_tokens,
        "started_in_reasoning": res.started_in_reasoning,
        "start_state_from": start_from,
        "reasoning_ended": res.reasoning_ended,
    }
    sys.stdout.write(msgspec.json.format(msgspec.json.encode(out), indent=2).decode() + "\n")
    return 0
