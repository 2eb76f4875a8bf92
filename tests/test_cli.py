"""The command line: demo, split and bench run end to end on a real tokenizer."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import reasonspan
from reasonspan.cli import main
from tests.support.fixtures import DATA

QWEN3 = str(DATA / "qwen-3" / "tokenizer.json.zip")


def test_split_text(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(
        [
            "split",
            "--tokenizer",
            QWEN3,
            "--parser",
            "qwen3",
            "--text",
            "<think>2+2=4</think>It is 4.",
        ]
    )
    assert code == 0
    out = json.loads(capsys.readouterr().out)
    assert out["reasoning"] == "2+2=4"
    assert out["content"] == "It is 4."
    assert out["reasoning_tokens"] == 5
    assert out["reasoning_ended"] is True


def test_split_ids_with_prompt(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from tests.support.fixtures import tokenizer

    tok = tokenizer("qwen-3")
    ids = tmp_path / "ids.json"
    ids.write_text(json.dumps(tok.encode("It is 4.")))
    code = main(
        [
            "split",
            "--tokenizer",
            QWEN3,
            "--parser",
            "qwen3",
            "--ids",
            str(ids),
            "--prompt-text",
            "<|im_start|>assistant\n<think>\n\n</think>\n\n",
        ]
    )
    assert code == 0
    out = json.loads(capsys.readouterr().out)
    assert (out["reasoning"], out["content"], out["started_in_reasoning"]) == (
        None,
        "It is 4.",
        False,
    )


def test_split_reports_errors(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["split", "--tokenizer", QWEN3, "--parser", "nope", "--text", "x"]) == 2
    assert "unknown reasoning parser 'nope'" in capsys.readouterr().err


def test_demo_runs(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo", "--no-color"]) == 0
    out = capsys.readouterr().out
    assert "reasoning │" in out and "content   │" in out
    assert "| request |" in out


def test_bench_stream_suite(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "bench.json"
    assert main(["bench", "--suite", "stream", "--repeats", "1", "--json", str(target)]) == 0
    data = json.loads(target.read_text())
    cases = {row["case"] for row in data["rows"]}
    assert any("baseline" in c for c in cases) and any("stream()" in c for c in cases)
    assert all(row["ns_per_token"] > 0 for row in data["rows"])


def test_demo_detects_the_parser_of_a_given_tokenizer(capsys: pytest.CaptureFixture[str]) -> None:
    path = str(DATA / "qwen-3.5" / "tokenizer.json.zip")
    assert main(["demo", "--tokenizer", path, "--requests", "2", "--no-color"]) == 0
    assert "| 1 | qwen3 |" in capsys.readouterr().out


def test_demo_says_when_no_parser_fits(capsys: pytest.CaptureFixture[str]) -> None:
    path = str(DATA / "qwen-2.5" / "tokenizer.json.zip")
    assert main(["demo", "--tokenizer", path]) == 2
    assert "pass --parser NAME" in capsys.readouterr().err


def test_bench_batch_suite(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from reasonspan.bench.batch import BASELINE, LOOP, PER_REQUEST, VECTORIZED

    target = tmp_path / "batch.json"
    argv = ["bench", "--suite", "batch", "--sizes", "1,8", "--repeats", "1", "--json", str(target)]
    assert main(argv) == 0
    assert "| path | batch |" in capsys.readouterr().out
    data = json.loads(target.read_text())
    assert "cores=" in data["machine"]
    rows = data["rows"]
    cells = {(r["batch"], r["k"]) for r in rows}
    assert cells == {(1, 1), (8, 1), (1, 4), (8, 4)}
    for n, k in cells:
        here = {r["case"]: r for r in rows if (r["batch"], r["k"]) == (n, k)}
        assert set(here) == {VECTORIZED, PER_REQUEST, LOOP, BASELINE}
        # A note on these rows would mean the path is not the one its label names.
        assert here[VECTORIZED]["note"] == "" and here[PER_REQUEST]["note"] == ""
        assert here[BASELINE]["vs_baseline"] is None
        for r in here.values():
            assert r["tokens"] == n * k and r["steps"] >= 5
            assert r["us_per_call"] > 0 and r["bytes_per_request"] > 0
            assert r["ns_per_token"] == pytest.approx(r["us_per_call"] * 1e3 / (n * k))
            if r is not here[BASELINE]:
                expected = here[BASELINE]["us_per_call"] / r["us_per_call"]
                assert r["vs_baseline"] == pytest.approx(expected)


def test_bench_serve_suite(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "serve.json"
    argv = ["bench", "--suite", "serve", "--sizes", "1,4", "--repeats", "1", "--json", str(target)]
    assert main(argv) == 0
    rows = json.loads(target.read_text())["rows"]
    assert {(r["batch"], "baseline" in r["case"]) for r in rows} == {
        (1, True),
        (1, False),
        (4, True),
        (4, False),
    }
    for r in rows:
        assert r["suite"] == "serve" and r["tokens"] == r["batch"] * r["steps"]
        assert r["ns_per_token"] == pytest.approx(r["us_per_call"] * 1e3 * r["steps"] / r["tokens"])
        assert (r["vs_baseline"] is None) == ("baseline" in r["case"])


def test_bench_tools_suite_compares_equal_lengths(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The tools suite's two transcripts have the same length; the tool-heavy one really
    is calls (parse() finds them, with the offered tools' names), the plain one has none."""
    from reasonspan.bench.tools import PROMPT, TOOLS, transcripts
    from tests.support.fixtures import tokenizer

    tok = tokenizer("qwen-3")
    heavy, plain = transcripts(tok, 600)
    assert len(heavy) == len(plain) == 600
    parser = reasonspan.create_parser_sync("qwen3", tok)
    got = parser.parse(heavy, prompt_token_ids=tok.encode(PROMPT), tools=TOOLS)
    assert len(got.tool_calls) >= 8
    assert {c.name for c in got.tool_calls} == {"get_weather", "search"}
    assert not parser.parse(plain, prompt_token_ids=tok.encode(PROMPT), tools=TOOLS).tool_calls
    target = tmp_path / "tools.json"
    argv = ["bench", "--suite", "tools", "--sizes", "2", "--repeats", "1", "--json", str(target)]
    assert main(argv) == 0
    rows = json.loads(target.read_text())["rows"]
    assert [r["case"].split(",")[0] for r in rows] == ["TextSplitter"] * 2 + [
        "ReasoningRuntime + SSE"
    ] * 5
    whole_rows = [True, False, True, False, False, True, False]  # (rows with no ratio)
    assert [r["vs_baseline"] is None for r in rows] == whole_rows
    streamed = [r for r in rows if "arguments streamed" in r["case"]]
    assert len(streamed) == 2  # each against the whole-call row above it


def test_serve_needs_an_engine_and_a_template(capsys: pytest.CaptureFixture[str]) -> None:
    from tests.support.fixtures import folder

    assert main(["serve", "--model", str(folder("qwen-3"))]) == 2
    assert "pass --simulated" in capsys.readouterr().err
    bare = folder("qwen-3_base_with_openai_gptoss_special_tokens")  # no chat template
    assert main(["serve", "--simulated", "--model", str(bare), "--parser", "openai_gptoss"]) == 2
    assert "has no chat template" in capsys.readouterr().err
    assert main(["serve", "--simulated", "--model", str(folder("qwen-2.5"))]) == 2
    assert "no parser detected" in capsys.readouterr().err


@pytest.mark.parametrize("name", ["qwen-3.5", "qwen-3"])
def test_serve_starts_a_server_an_openai_client_can_use(name: str) -> None:
    """`reasonspan serve --simulated --model PATH` in a subprocess, on a loopback port;
    without --model (qwen-3), the Qwen3 folder the demo extra ships: no download."""
    import socket
    import subprocess
    import sys
    import time

    import openai

    from tests.support.fixtures import folder

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    argv = [sys.executable, "-m", "reasonspan", "serve", "--simulated", "--port", str(port)]
    argv += ["--step-interval", "0"]
    if name != "qwen-3":
        argv += ["--model", str(folder(name))]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        assert proc.stdout is not None
        lines = [proc.stdout.readline() for _ in range(3)]
        assert "parser qwen3" in lines[0]
        assert "building each model's token tables" in lines[1]  # before it listens
        url = f"http://127.0.0.1:{port}/v1"
        assert url in lines[2] and "SIMULATED" in lines[2]
        client = openai.OpenAI(base_url=url, api_key="unused", max_retries=0, timeout=10)
        deadline = time.monotonic() + 30
        while True:
            try:
                models = [m.id for m in client.models.list()]
                break
            except openai.APIConnectionError:
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise
                time.sleep(0.05)
        assert models == [name]
        resp = client.chat.completions.create(
            model=name, messages=[{"role": "user", "content": "hi"}]
        )
        msg = resp.choices[0].message
        assert msg.content and getattr(msg, "reasoning", None)  # the template opened <think>
    finally:
        proc.terminate()
        proc.wait(10)


def test_bench_grammar_suite(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from reasonspan.bench.grammar import FEED, GATE, GATED, PLAIN, UNGATED

    target = tmp_path / "bench.json"
    argv = ["bench", "--suite", "grammar", "--sizes", "4", "--repeats", "1", "--json", str(target)]
    assert main(argv) == 0
    out = capsys.readouterr().out
    for case in (GATED, UNGATED, PLAIN, GATE, FEED):
        assert case in out
    rows = json.loads(target.read_text())["rows"]
    assert {(r["case"], r["batch"]) for r in rows} == {
        (c, 4) for c in (GATED, UNGATED, PLAIN, GATE, FEED)
    }
    assert all(r["us_per_call"] > 0 for r in rows)


@pytest.mark.parametrize(
    "template", ["{{ raise_exception('broken') }}", "{{ undefined_helper() }}", "{% if %}"]
)
def test_serve_refuses_a_template_that_cannot_render(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], template: str
) -> None:
    import shutil

    from tests.support.fixtures import folder

    broken = tmp_path / "broken-model"
    shutil.copytree(folder("qwen-3"), broken)
    (broken / "chat_template.jinja").write_text(template)
    import socket

    with socket.socket() as taken:  # were the check missing, serving would fail, not hang
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = str(taken.getsockname()[1])
        argv = ["serve", "--simulated", "--model", str(broken), "--parser", "qwen3"]
        assert main([*argv, "--port", port]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert err.startswith("reasonspan serve: the chat template of") and "cannot render" in err


def test_serve_resource_options() -> None:
    from reasonspan import serve_cli
    from reasonspan.cli import build_parser
    from reasonspan.serving import app

    assert serve_cli.DEFAULT_MAX_BODY_BYTES == app.DEFAULT_MAX_BODY_BYTES
    args = build_parser().parse_args(
        ["serve", "--model", "m", "--max-body-bytes", "1000", "--limit-concurrency", "8"]
    )
    assert (args.max_body_bytes, args.limit_concurrency, args.timeout_keep_alive) == (1000, 8, 5)
    for bad in (["--max-body-bytes", "0"], ["--limit-concurrency", "x"]):
        with pytest.raises(SystemExit):
            build_parser().parse_args(["serve", "--model", "m", *bad])


def _no_server(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make starting uvicorn a test failure: these commands must stop before it."""
    import uvicorn

    def started(*args: object, **kwargs: object) -> None:
        raise AssertionError("the server started")

    monkeypatch.setattr(uvicorn, "run", started)
    monkeypatch.setattr(uvicorn.Server, "run", started)


def test_serve_refuses_a_parser_that_does_not_fit_at_startup(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from tests.support.fixtures import folder

    _no_server(monkeypatch)
    model = str(folder("qwen-3.5"))
    assert main(["serve", "--simulated", "--model", model, "--parser", "nope"]) == 2
    err = capsys.readouterr().err
    assert "--parser" in err and "unknown reasoning parser 'nope'" in err
    assert len(err.strip().splitlines()) == 1
    # A real parser whose turn marker this (Qwen) vocabulary does not have.
    assert main(["serve", "--simulated", "--model", model, "--parser", "glm47"]) == 2
    assert "needs marker '<|assistant|>'" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "flag"),
    [
        (["serve", "--model", "m", "--tokens-per-step", "0"], "--tokens-per-step"),
        (["serve", "--model", "m", "--step-interval", "-1"], "--step-interval"),
        (["serve", "--model", "m", "--step-interval", "nan"], "--step-interval"),
        (["serve", "--model", "m", "--port", "99999"], "--port"),
        (["serve", "--model", "m", "--port", "0"], "--port"),
        (["demo", "--tokens-per-step", "0"], "--tokens-per-step"),
        (["demo", "--requests", "-3"], "--requests"),
        (["bench", "--repeats", "0"], "--repeats"),
        (["bench", "--repeats", "x"], "--repeats"),
    ],
)
def test_numeric_flags_are_checked_before_anything_runs(
    argv: list[str], flag: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from reasonspan.cli import build_parser

    with pytest.raises(SystemExit) as exit_info:
        build_parser().parse_args(argv)
    assert exit_info.value.code == 2
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert f"argument {flag}:" in last and argv[-1] in last


def test_serve_says_in_one_line_that_the_port_is_taken(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import socket

    from tests.support.fixtures import folder

    _no_server(monkeypatch)
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        argv = ["serve", "--simulated", "--model", str(folder("qwen-3.5")), "--port", str(port)]
        assert main(argv) == 2
    out, err = capsys.readouterr()
    assert "serving at" not in out
    assert err.count("\n") == 1 and f"cannot listen on 127.0.0.1:{port}" in err


def test_serve_exits_130_on_ctrl_c() -> None:
    import signal
    import socket
    import subprocess
    import sys
    import time

    from tests.support.fixtures import folder

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    argv = [sys.executable, "-m", "reasonspan", "serve", "--simulated", "--port", str(port)]
    argv += ["--model", str(folder("qwen-3.5"))]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        assert "serving at" in "".join(proc.stdout.readline() for _ in range(3))
        deadline = time.monotonic() + 30
        while True:  # until it accepts connections: the signal must reach a running server
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert time.monotonic() < deadline and proc.poll() is None
                time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        _out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
    assert proc.returncode == 130
    assert err.strip() == "reasonspan serve: interrupted"


def test_split_names_the_flag_and_the_file_in_its_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = ["split", "--tokenizer", QWEN3, "--parser", "qwen3"]
    assert main([*base, "--text", "x", "--kwargs", "notjson"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("reasonspan split: --kwargs is not valid JSON") and "notjson" in err
    latin1 = tmp_path / "ids.txt"
    latin1.write_bytes(b"151667 \xe9 42\n")
    assert main([*base, "--ids", str(latin1)]) == 2
    err = capsys.readouterr().err
    assert f"--ids {latin1}: not UTF-8 text" in err and "offset 7" in err
    assert main([*base, "--text", "x", "--prompt-ids", str(latin1)]) == 2
    assert f"--prompt-ids {latin1}: not UTF-8" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("model", "family", "start"),
    [("glm-4.7-flash", "glm47", "<think>"), ("minimax-m3", "minimax_m3", "<mm:think>")],
)
def test_bench_times_a_non_qwen_folder_in_its_own_family(
    model: str, family: str, start: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from reasonspan.bench.batch import vectorized_label
    from tests.support.fixtures import folder

    target = tmp_path / "bench.json"
    argv = ["bench", "--tokenizer", str(folder(model)), "--repeats", "1", "--json", str(target)]
    assert main([*argv, "--suite", "stream", "--suite", "batch", "--sizes", "2"]) == 0
    out = capsys.readouterr().out
    assert f"parser: {family} (markers {start!r}" in out
    rows = json.loads(target.read_text())["rows"]
    assert vectorized_label(family) in {r["case"] for r in rows}
    assert all(r["ns_per_token"] > 0 for r in rows)


def test_bench_takes_parser_or_says_to(capsys: pytest.CaptureFixture[str]) -> None:
    from tests.support.fixtures import folder

    qwen25 = str(folder("qwen-2.5"))  # no reasoning markers: nothing is detected
    assert main(["bench", "--tokenizer", qwen25, "--suite", "stream"]) == 2
    err = capsys.readouterr().err
    assert "pass --parser NAME" in err and err.count("\n") == 1
    glm = str(folder("glm-4.7-flash"))
    assert main(["bench", "--tokenizer", glm, "--parser", "qwen3", "--suite", "stream"]) == 2
    assert "needs marker" in capsys.readouterr().err  # the flag is honoured, then checked
    assert main(["bench", "--tokenizer", qwen25, "--parser", "qwen3_instruct"]) == 2
    assert "no reasoning markers" in capsys.readouterr().err


def test_bench_quick_is_every_suite_small() -> None:
    from reasonspan.bench import QUICK, plan_of
    from reasonspan.bench.batch import SIZES as BATCH_SIZES
    from reasonspan.bench.common import QWEN3, Plan
    from reasonspan.bench.serve import SIZES as SERVE_SIZES
    from reasonspan.cli import build_parser

    full = plan_of(build_parser().parse_args(["bench"]), QWEN3)
    quick = plan_of(build_parser().parse_args(["bench", "--quick"]), QWEN3)
    assert full == Plan()  # the full run is unchanged: every suite's own defaults
    assert quick == QUICK
    assert quick.repeats < full.repeats and quick.prompt_tokens < full.prompt_tokens
    assert max(quick.batch_sizes) < max(BATCH_SIZES) and max(quick.serve_sizes) < max(SERVE_SIZES)
    tuned = plan_of(build_parser().parse_args(["bench", "--quick", "--repeats", "7"]), QWEN3)
    assert tuned.repeats == 7 and tuned.batch_sizes == quick.batch_sizes


def test_bench_quick_runs(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "--quick", "--suite", "prompt"]) == 0
    out = capsys.readouterr().out
    assert "--quick" in out and "| prompt | is_prompt_in_reasoning(list) |" in out


@pytest.mark.parametrize(
    "argv",
    [["serve", "--max-model-len", "0"], ["bench", "--suite", "nope"], ["nope"], ["split"]],
)
def test_argument_errors_are_one_line(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    """argparse's errors too are one line on stderr, exit 2 (docs/cli.md's promise, "Errors and exit codes")."""
    with pytest.raises(SystemExit) as exited:
        main(argv)
    err = capsys.readouterr().err
    assert exited.value.code == 2
    assert err.count("\n") == 1 and err.startswith("reasonspan") and "usage:" not in err
