"""Load every family's fixture tokenizer with its byte table and print what it cost.

    .venv/bin/python scripts/load_fixtures.py            # this tree
    cd <another checkout> && <this venv>/bin/python scripts/load_fixtures.py

The test suite's memory and much of its collection time go to these loads (each worker
loads each fixture tokenizer at least once), and so does a server's start for its
model. Resident memory is read after ``malloc_trim`` (glibc), so what a load frees is not
counted; CPU time is the process's own, so a busy machine moves it less than wall time.
Run it under ``chrt -f 50 taskset -c 1`` for steady figures.
"""

from __future__ import annotations

import ctypes
import gc
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from reasonspan import LoadedTokenizer, load_tokenizer_sync
from tests.support.fixtures import FAMILY_TOKENIZERS, folder


def _resident_mib() -> int:
    with open("/proc/self/statm", encoding="ascii") as f:
        return int(f.read().split()[1]) * 4096 // 2**20


def main() -> None:
    trim = ctypes.CDLL(None).malloc_trim
    names = sorted(set(FAMILY_TOKENIZERS.values()))
    for name in names:  # extracted from the package before anything is measured
        folder(name)
    gc.collect()
    trim(0)
    start = _resident_mib()
    kept: list[LoadedTokenizer] = []
    cpu = 0.0
    for name in names:
        t0 = time.process_time()
        tok = load_tokenizer_sync(folder(name))
        _ = tok.token_bytes, tok.special_ids
        cpu += time.process_time() - t0
        kept.append(tok)
        trim(0)
    grown = _resident_mib() - start
    print("| fixture tokenizers | CPU s | resident MiB | MiB each |")
    print("|---:|---:|---:|---:|")
    print(f"| {len(names)} | {cpu:.2f} | {grown:,} | {grown // len(names)} |")


if __name__ == "__main__":
    main()
