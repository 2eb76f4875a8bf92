"""The public ``create_parser``: the registry's, plus a model folder's chat template.

A parser built on a tokenizer loaded from a folder with a template already takes its
start state from that template (the runtime asks :mod:`reasonspan.detection.profile`).
``model_path`` is for the other case: the tokenizer came from elsewhere (an in-memory
``tokenizers.Tokenizer``, a bare tokenizer.json) and the template lives in a model folder.

The name ``"auto"`` chooses the parser the way ``reasonspan detect`` does: the format the
folder declares (``response_template`` / ``response_schema``, the ``declared`` family) when
it compiles, else the best-scoring family; no clear answer raises
:class:`~reasonspan.runtime.core.errors.ParserNotDetectedError`. A tokenizer may be given as a
model folder (or tokenizer.json) path.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import anyio.to_thread

from reasonspan.detection.profile import folder_chat_template, template_start_state
from reasonspan.detection.scoring import detect_tokenizer
from reasonspan.runtime.core.errors import ParserNotDetectedError
from reasonspan.runtime.parser.contract import ReasoningParser
from reasonspan.runtime.parser.registry import get_parser_class
from reasonspan.tokenizer.loader import LoadedTokenizer, as_loaded, load_tokenizer_sync

AUTO = "auto"


def choose_parser(tok: LoadedTokenizer) -> str:
    """The parser ``"auto"`` means for this tokenizer (see the module doc)."""
    found = detect_tokenizer(tok)
    if found.parser is not None:
        return found.parser
    if found.ambiguous:
        why = f"the evidence ties between {', '.join(found.tied)}"
    else:
        why = "no family's markers are in this folder"
    if found.evidence.declaration_error is not None:
        why += f"; the declared format could not be used: {found.evidence.declaration_error}"
    raise ParserNotDetectedError(tok.source, why, (c.name for c in found.candidates[:5]))


def create_parser_sync(
    name: str,
    tokenizer: Any,
    chat_template_kwargs: Mapping[str, Any] | None = None,
    *,
    model_path: str | Path | None = None,
    default_reasoning: bool | None = None,
) -> ReasoningParser:
    """Blocking form of :func:`create_parser`."""
    if isinstance(tokenizer, (str, Path)):
        tokenizer = load_tokenizer_sync(tokenizer)
    if isinstance(name, str) and name.strip().lower() == AUTO:
        tokenizer = as_loaded(tokenizer)
        name = choose_parser(tokenizer)
    cls = get_parser_class(name)
    if default_reasoning is None and model_path is not None:
        template = folder_chat_template(str(model_path))
        if template is not None:
            tok = as_loaded(tokenizer)
            # Compile first: a wrong tokenizer or bad kwargs raise their own errors.
            cls.compile(tok, dict(chat_template_kwargs or {}))
            default_reasoning = template_start_state(
                cls, tok, dict(chat_template_kwargs or {}), chat_template=template
            )
            tokenizer = tok
    return cls.create(tokenizer, chat_template_kwargs, default_reasoning=default_reasoning)


async def create_parser(
    name: str,
    tokenizer: Any,
    chat_template_kwargs: Mapping[str, Any] | None = None,
    *,
    model_path: str | Path | None = None,
    default_reasoning: bool | None = None,
) -> ReasoningParser:
    """Create the parser registered as ``name`` (or chosen for the folder: ``"auto"``)
    for this tokenizer (a loaded one, or a model folder path).

    Without a prompt (``parse(ids)``, ``TextSplitter(parser)``) the parser starts where the
    model's chat template leaves it: the template of ``model_path`` if given, else that of
    the folder the tokenizer was loaded from, else the family's documented default.
    ``default_reasoning`` sets it outright. The template is rendered once per tokenizer,
    family and switches; later parsers cost a cache lookup."""
    return await anyio.to_thread.run_sync(
        lambda: create_parser_sync(
            name,
            tokenizer,
            chat_template_kwargs,
            model_path=model_path,
            default_reasoning=default_reasoning,
        )
    )
