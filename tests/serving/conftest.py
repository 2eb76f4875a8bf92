"""The reference server on loopback, one per test module (``running``), and the official
``openai`` client pointed at it (``client``): the fixtures the server's test modules share
(a module that needs another server or client defines its own)."""

from __future__ import annotations

from collections.abc import Iterator

import openai
import pytest

from tests.serving.test_server import Running, start


@pytest.fixture(scope="module")
def running() -> Iterator[Running]:
    with start() as r:
        yield r


@pytest.fixture(scope="module")
def client(running: Running) -> openai.OpenAI:
    return openai.OpenAI(base_url=running.base_url, api_key="unused", max_retries=0, timeout=30)
