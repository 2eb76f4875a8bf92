"""The serving layer: what an OpenAI-compatible server needs around the runtime.

- ``templates``: the model's own chat template (:func:`render_chat`, :func:`render_prompt_ids`);
- ``protocol``: the chat-completions request (msgspec) and OpenAI-style 400 errors that
  name the field (:func:`parse_request`, :class:`RequestError`);
- ``sse``: a request's chunks as server-sent-event bytes, ``[DONE]`` last (:func:`sse_stream`);
- ``engine``: the engine interface of the reference server and the SIMULATED engine
  (import it from ``reasonspan.serving.engine``: it reads the demo's scripts, which render
  prompts through this package);
- ``app``: the reference starlette server (``reasonspan serve``); it imports the ``server``
  extra, so it is not imported here.

Non-streaming answers come from ``await stream.collect()`` on the runtime's streams.
"""

from reasonspan.serving.protocol import ChatCompletionRequest, Message, RequestError, parse_request
from reasonspan.serving.sse import DONE, chunk_events, sse_event, sse_stream
from reasonspan.serving.templates import (
    ChatTemplateError,
    chat_template_of,
    render_chat,
    render_prompt_ids,
)

__all__ = [
    "DONE",
    "ChatCompletionRequest",
    "ChatTemplateError",
    "Message",
    "RequestError",
    "chat_template_of",
    "chunk_events",
    "parse_request",
    "render_chat",
    "render_prompt_ids",
    "sse_event",
    "sse_stream",
]
