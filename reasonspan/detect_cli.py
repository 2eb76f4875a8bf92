"""``reasonspan detect PATH``: which reasoning parser fits a model folder, and why.

The report ends with the template profile of the chosen parser: under each thinking
setting, whether the model's chat template leaves a new turn inside reasoning.

Exit status: 0 when one parser fits, 1 when none fits or the evidence ties (the report
names the candidates), 2 when the folder cannot be read.
"""

from __future__ import annotations

import argparse
import sys

import msgspec

from reasonspan.argtypes import POSITIVE
from reasonspan.detection import describe, detect
from reasonspan.detection.profile import template_profile
from reasonspan.runtime.core.errors import ReasonspanError
from reasonspan.tokenizer import load_tokenizer_sync


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "path", help="a model folder (tokenizer.json, tokenizer_config.json, config.json ...)"
    )
    parser.add_argument(
        "--json", action="store_true", help="print the full result as JSON (all candidates)"
    )
    parser.add_argument(
        "--top", type=POSITIVE, default=5, metavar="N", help="candidates to list (>= 1)"
    )


def run(args: argparse.Namespace) -> int:
    try:
        tok = load_tokenizer_sync(args.path)
        result = detect(tok)
        profile = template_profile(result.parser, tok) if result.parser is not None else None
    except (ReasonspanError, OSError) as exc:
        print(f"reasonspan detect: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(msgspec.json.format(msgspec.json.encode(result)).decode())
    else:
        print(describe(result, top=max(args.top, 1)))
        if profile is not None:
            # Where a turn starts when a server gives no prompt: the template's answer.
            print("\n".join(profile.describe()))
    return 0 if result.parser is not None else 1
