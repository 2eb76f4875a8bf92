"""Chat templates render within a budget.

A template is a program shipped with a model folder: one that loops 10^10 times used to hang
``create_parser_sync``, ``detect`` and ``serve`` startup; one that loops only on some message
content tied up the server's worker threads for good (and SIGTERM no longer stopped it);
``{{ 'x'*4000000000 }}`` allocated 4 GB and then said "does not compile: " with no reason.
Each hostile case here hits its budget in well under a second (the defaults are generous
for real templates and still fail a runaway loop fast; the timeout cases set a short one).
"""

from __future__ import annotations

import json
import logging
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import tracemalloc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
from jinja2.ext import loopcontrols
from jinja2.sandbox import ImmutableSandboxedEnvironment

import reasonspan
from reasonspan.cli import main
from reasonspan.detection.profile import template_profile
from reasonspan.serving import templates
from reasonspan.serving.app import ServedModel, Server
from reasonspan.serving.engine import SimulatedServingEngine
from reasonspan.serving.templates import (
    ChatTemplateError,
    RenderLimits,
    TemplateBudgetError,
    chat_template_of,
    render_chat,
    set_default_render_limits,
)
from reasonspan.tokenizer import LoadedTokenizer
from tests.serving.test_server import Running
from tests.support.fixtures import folder, tokenizer

RUNAWAY = "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}"
"""10^10 iterations: hours unbounded."""

SPIN = (
    "{% if messages[-1].content == 'spin' %}{% set l = range(100000) | list %}"
    "{% for i in range(100000) %}{% set s = l | sort(reverse=true) %}{% endfor %}{% endif %}"
)
"""Slow only for one message content, and slow per step (a sort of 100,000 items each
iteration: few operations, so only the clock stops it)."""

HISTORY: list[dict[str, Any]] = [
    {"role": "system", "content": "You are terse."},
    {"role": "user", "content": "What is 2+2?"},
    {"role": "assistant", "content": "4", "reasoning": "Two and two </think> make four."},
    {"role": "user", "content": "And 3+3? Say <think> literally."},
]
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Weather for a city.",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
                "required": ["city"],
            },
        },
    }
]
CALL_TURN: list[dict[str, Any]] = [
    {"role": "user", "content": "Weather in Paris?"},
    {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {
                "id": "c1",
                "type": "function",
                "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
            }
        ],
    },
    {"role": "tool", "tool_call_id": "c1", "content": "sunny"},
]


def with_template(name: str, template: str) -> LoadedTokenizer:
    base = tokenizer(name)
    return LoadedTokenizer(base.tokenizer, base.source, chat_template=template)


def hostile_folder(tmp_path: Path, prefix: str, fixture: str = "qwen-3") -> Path:
    """A copy of a real model folder whose chat_template.jinja is its own template with
    ``prefix`` in front (so detection still sees the family)."""
    src = folder(fixture)
    dst = tmp_path / f"{fixture}-hostile"
    shutil.copytree(src, dst)
    own = chat_template_of(tokenizer(fixture))
    assert own is not None
    (dst / "chat_template.jinja").write_text(prefix + own, encoding="utf-8")
    return dst


@pytest.fixture
def limits() -> Iterator[None]:
    """Put the process default back after a test changes it."""
    previous = templates.default_render_limits()
    yield
    set_default_render_limits(previous)


# ------------------------------------------------------------------ the budgets themselves


def test_a_runaway_loop_hits_the_operation_budget_fast() -> None:
    tok = with_template("qwen-3", RUNAWAY)
    start = time.monotonic()
    with pytest.raises(TemplateBudgetError) as info:
        render_chat(tok, HISTORY, template_name="model 'q'")
    assert time.monotonic() - start < 5
    err = info.value
    assert err.budget == "max_operations" and "model 'q'" in err.template
    assert "1,000,000 loop iterations" in str(err) and "--template-max-operations" in str(err)


def test_a_slow_step_hits_the_clock() -> None:
    tok = with_template("qwen-3", SPIN + "ok")
    spin = [{"role": "user", "content": "spin"}]
    start = time.monotonic()
    with pytest.raises(TemplateBudgetError, match=r"ran longer than 0\.3 s") as info:
        render_chat(tok, spin, limits=RenderLimits(timeout=0.3))
    assert time.monotonic() - start < 3  # the deadline plus at most one step
    assert info.value.budget == "timeout"
    assert render_chat(tok, HISTORY, limits=RenderLimits(timeout=0.3)) == "ok"


def test_four_billion_characters_are_refused_before_any_allocation() -> None:
    tok = with_template("qwen-3", "{{ 'x'*4000000000 }}")
    tracemalloc.start()
    try:
        with pytest.raises(TemplateBudgetError) as info:
            render_chat(tok, HISTORY)  # compiling too: jinja2 used to fold it there
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 64 * 1024 * 1024
    assert info.value.budget == "max_chars"
    assert "4,000,000,000 characters" in str(info.value)


@pytest.mark.parametrize(
    "template",
    [
        "{% set ns = namespace(s='x') %}{% for i in range(40) %}{% set ns.s = ns.s ~ ns.s %}"
        "{% endfor %}",  # doubling with ~
        "{% set ns = namespace(s='x') %}{% for i in range(40) %}{% set ns.s = ns.s + ns.s %}"
        "{% endfor %}",  # and with +
        "{{ 'x' | center(10**9) }}",
        "{{ 'x'.ljust(10**9) }}",
        "{{ '%0999999999d' | format(1) }}",
        "{{ '{:>999999999}'.format(1) }}",
        "{% set s = 'a' * 100000 %}{{ s.replace('a', s) }}",
        "{% set s = ['x' * 100000] * 1000 %}{{ s | join }}",
        "{% set s = ['x' * 100000] * 1000 %}{{ s }}",  # a list written out
        "{% set s = 'x' * 1000000 %}{% set b %}{% for i in range(100) %}{{ s }}{% endfor %}"
        "{% endset %}",  # a captured block
        "{{ 7 ** 99999999 }}",
        "{{ [1] | batch(10**9) }}",
    ],
)
def test_values_are_sized_before_they_are_built(template: str) -> None:
    tok = with_template("qwen-3", template)
    start = time.monotonic()
    with pytest.raises(TemplateBudgetError) as info:
        render_chat(tok, HISTORY, limits=RenderLimits(max_chars=10_000_000))
    assert info.value.budget == "max_chars"
    assert time.monotonic() - start < 2


def test_the_output_is_bounded() -> None:
    template = "{% for i in range(1000) %}{{ messages[0].content }}{% endfor %}"
    tok = with_template("qwen-3", template)
    big = [{"role": "user", "content": "y" * 1000}]
    with pytest.raises(TemplateBudgetError, match=r"its output passed 100,000 characters"):
        render_chat(tok, big, limits=RenderLimits(max_chars=100_000))
    assert len(render_chat(tok, big, limits=RenderLimits(max_chars=1_000_000))) == 1_000_000


def test_an_exception_without_a_message_is_named_by_its_type() -> None:
    tok = with_template("qwen-3", "{{ raise_exception('') }}")
    with pytest.raises(ChatTemplateError, match=r"raised while rendering: TemplateError"):
        render_chat(tok, HISTORY)
    assert templates._describe(MemoryError()) == "MemoryError (no message)"


def test_limits_are_checked() -> None:
    for bad in ({"max_operations": 0}, {"max_chars": True}, {"timeout": float("nan")}):
        with pytest.raises(ValueError, match="RenderLimits"):
            RenderLimits(**bad)


# ------------------------------------------------------------------ real templates unchanged


def plain_render(tok: LoadedTokenizer, messages: list[dict[str, Any]], **kw: Any) -> str:
    """What Hugging Face's apply_chat_template renders: jinja2's immutable sandbox, no
    budget (the renderer as it was before the budget)."""
    env = ImmutableSandboxedEnvironment(
        trim_blocks=True, lstrip_blocks=True, extensions=[loopcontrols]
    )
    env.filters["tojson"] = templates._tojson
    env.globals["raise_exception"] = templates._raise_exception
    env.globals["strftime_now"] = templates._strftime_now
    template = chat_template_of(tok)
    assert template is not None
    variables = {
        k: templates._special_token(tok.config.get(k))
        for k in ("bos_token", "eos_token", "unk_token", "pad_token")
    }
    variables.update(kw.pop("chat_template_kwargs", {}))
    variables.update(messages=templates._normalise(messages), add_generation_prompt=True, **kw)
    return env.from_string(template).render(**variables)


@pytest.mark.parametrize(
    "fixture",
    # Families whose fixtures the other template tests load too (a load is the cost here).
    ["qwen-3", "qwen-3.5", "deepseek-r1", "glm-4.7-flash", "minimax-m3"],
)
def test_real_templates_render_byte_identically(fixture: str) -> None:
    tok = tokenizer(fixture)
    long_history = HISTORY * 30 + CALL_TURN
    cases: list[tuple[list[dict[str, Any]], dict[str, Any]]] = [
        (HISTORY, {}),
        (HISTORY, {"chat_template_kwargs": {"enable_thinking": False}}),
        (long_history, {"tools": TOOLS}),
    ]
    for messages, kw in cases:
        try:
            want = plain_render(tok, messages, **json.loads(json.dumps(kw)))
        except Exception as exc:  # the template refuses this conversation: so must we
            with pytest.raises(ChatTemplateError):
                render_chat(tok, messages, **kw)
            assert str(exc)
            continue
        assert render_chat(tok, messages, **kw) == want


# ------------------------------------------------------------------ startup


def test_startup_with_a_runaway_template_falls_back_or_fails_clearly(
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    capsys: pytest.CaptureFixture[str],
    limits: None,
) -> None:
    set_default_render_limits(RenderLimits(max_operations=100_000))  # each render: ~0.05 s
    path = hostile_folder(tmp_path, RUNAWAY)
    tok = reasonspan.load_tokenizer_sync(path)
    start = time.monotonic()
    with caplog.at_level(logging.WARNING, logger="reasonspan.detection"):
        parser = reasonspan.create_parser_sync("qwen3", tok)
    assert "exceeded its render budget" in caplog.text
    assert str(path / "chat_template.jinja") in caplog.text

    profile = template_profile("qwen3", tok)
    assert "exceeded its render budget" in profile.fallback
    documented = profile.setting({})
    assert documented is not None and parser.default_reasoning == documented.starts_in_reasoning

    assert main(["detect", str(path)]) == 0
    out = capsys.readouterr().out
    assert "qwen3" in out and "exceeded its render budget" in out
    assert "100,000 loop iterations" in out

    argv = ["serve", "--simulated", "--model", str(path), "--parser", "qwen3", "--port", "1"]
    argv += ["--template-max-operations", "100000"]
    assert main(argv) == 2  # refused before the port is touched
    err = capsys.readouterr().err
    assert "cannot render a one-message conversation" in err
    assert "exceeded its render budget" in err and str(path) in err
    assert time.monotonic() - start < 20


def test_serve_takes_the_budget_from_its_flags(limits: None) -> None:
    from reasonspan.cli import build_parser
    from reasonspan.serve_cli import DEFAULT_TEMPLATE_MAX_CHARS, DEFAULT_TEMPLATE_TIMEOUT
    from reasonspan.serving import template_limits

    assert DEFAULT_TEMPLATE_MAX_CHARS == template_limits.DEFAULT_MAX_CHARS
    assert DEFAULT_TEMPLATE_TIMEOUT == template_limits.DEFAULT_TIMEOUT
    args = build_parser().parse_args(
        ["serve", "--model", "m", "--template-max-operations", "10", "--template-timeout", "0.5"]
    )
    assert args.template_max_operations == 10 and args.template_timeout == 0.5
    for bad in (["--template-timeout", "0"], ["--template-max-chars", "0"]):
        with pytest.raises(SystemExit):
            build_parser().parse_args(["serve", "--model", "m", *bad])


# ------------------------------------------------------------------ at request time, over HTTP


def test_hostile_requests_get_a_400_and_never_exhaust_the_workers(limits: None) -> None:
    set_default_render_limits(RenderLimits(timeout=0.5))
    own = chat_template_of(tokenizer("qwen-3"))
    assert own is not None
    model = ServedModel("spin", tokenizer("qwen-3"), "qwen3", chat_template=SPIN + own)
    server = Server([model], SimulatedServingEngine(tokens_per_step=4), workers=4)
    with Running(server) as r:
        client = openai.OpenAI(
            base_url=f"http://127.0.0.1:{r.port}/v1", api_key="unused", max_retries=0, timeout=30
        )
        errors: list[BaseException] = []

        def hostile() -> None:
            try:
                client.chat.completions.create(
                    model="spin", messages=[{"role": "user", "content": "spin"}]
                )
            except BaseException as exc:
                errors.append(exc)

        threads = [threading.Thread(target=hostile) for _ in range(5)]
        for t in threads:
            t.start()
        time.sleep(0.2)  # all five rendering (four) or queued (one)
        start = time.monotonic()
        ok = client.chat.completions.create(
            model="spin",
            messages=[{"role": "user", "content": "What is 2+2?"}],
            extra_body={"simulated_output": "<think>Two and two.</think>Four."},
        )
        took = time.monotonic() - start
        for t in threads:
            t.join(30)
    assert ok.choices[0].message.content == "Four."
    assert took < 10, took  # behind at most two rounds of 0.5 s renders (was: never)
    assert len(errors) == 5
    for exc in errors:
        assert isinstance(exc, openai.BadRequestError), exc
        message = exc.response.json()["error"]["message"]
        assert "the chat template of model 'spin'" in message
        assert "ran longer than 0.5 s" in message and "--template-timeout" in message


@pytest.mark.slow  # a subprocess server: some 10 s, most of it startup
def test_sigterm_stops_a_server_busy_with_hostile_templates(tmp_path: Path) -> None:
    """`reasonspan serve` in a subprocess: five requests whose rendering spins, then
    SIGTERM; the server exits within about the template timeout (before: its worker threads
    spun for good and it never did)."""
    path = hostile_folder(tmp_path, SPIN)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    argv = [
        sys.executable,
        "-m",
        "reasonspan",
        "serve",
        "--simulated",
        "--model",
        str(path),
        "--parser",
        "qwen3",
        "--port",
        str(port),
        "--template-timeout",
        "1",
    ]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        assert proc.stdout is not None
        deadline = time.monotonic() + 60
        for line in proc.stdout:
            if "serving at" in line or time.monotonic() > deadline:
                break
        url = f"http://127.0.0.1:{port}/v1/chat/completions"
        body = {"model": path.name, "messages": [{"role": "user", "content": "spin"}]}
        codes: list[int] = []

        def hostile() -> None:
            try:
                codes.append(httpx.post(url, json=body, timeout=30).status_code)
            except httpx.HTTPError:
                codes.append(-1)

        threads = [threading.Thread(target=hostile) for _ in range(5)]
        for t in threads:
            t.start()
        time.sleep(0.5)  # the workers are spinning
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=20)
        for t in threads:
            t.join(30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode is not None
    assert all(code in (400, 503, -1) for code in codes), codes
