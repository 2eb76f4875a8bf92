"""Kind ``steptml``: Step-3's tool-call section with StepTML invocations.

Inside ``<｜tool_calls_begin｜>`` … ``<｜tool_calls_end｜>`` (the format's region), each call
is written between ``<｜tool_call_begin｜>`` and ``<｜tool_call_end｜>`` as::

    function<｜tool_sep｜><steptml:invoke name="NAME">
    <steptml:parameter name="KEY">VALUE</steptml:parameter>
    …
    </steptml:invoke>

Facts from the engines' readers (Step-3's own chat template is not in the corpus checked):
vLLM's ``step3`` tool parser and SGLang's ``Step3Detector`` skip a call whose type is not
``function``, read each parameter's raw text stripped of surrounding whitespace, and type
it from the offered tool's schema (:func:`.values.typed_value` here). Calls are read with
:mod:`.sections`: one that does not read is dropped and its siblings kept, as both engines
keep the calls their expressions match.

A value ends at the first ``</steptml:parameter>`` followed (after whitespace) by the next
parameter or the invocation's close, so that tag written inside a value is text; a body
whose structure breaks otherwise is not a call.
"""

from __future__ import annotations

import re
from typing import Any

from reasonspan.runtime.core.tool_format import body_kind
from reasonspan.runtime.core.tool_types import ToolCall, Tools, checked_call
from reasonspan.runtime.toolcalls.sections import ReadCall, read_section, skip_space
from reasonspan.runtime.toolcalls.values import typed_value

CALL_BEGIN = "<｜tool_call_begin｜>"
CALL_END = "<｜tool_call_end｜>"
SEP = "<｜tool_sep｜>"
# The invoke and parameter tags, shared with the streamed reader (partial_steptml).
INVOKE = re.compile(r'<steptml:invoke name="([^"\n]+)">')
INVOKE_END = "</steptml:invoke>"
PARAM = re.compile(r'<steptml:parameter name="([^"\n]+)">')
PARAM_END = "</steptml:parameter>"


def _value_end(text: str, start: int) -> int:
    """Where the value beginning at ``start`` ends (module doc), or -1."""
    at = text.find(PARAM_END, start)
    while at >= 0:
        j = skip_space(text, at + len(PARAM_END))
        if text.startswith(INVOKE_END, j) or PARAM.match(text, j):
            return at
        at = text.find(PARAM_END, at + 1)
    return -1


def _invocation(text: str, i: int, tools: Tools) -> tuple[ToolCall, int] | None:
    """The ``<steptml:invoke>`` element at ``text[i]`` (after whitespace) as a call, and
    the offset after its close."""
    invoke = INVOKE.match(text, skip_space(text, i))
    if invoke is None:
        return None
    name = invoke.group(1).strip()
    args: dict[str, Any] = {}
    j = invoke.end()
    while True:
        j = skip_space(text, j)
        if text.startswith(INVOKE_END, j):
            call = checked_call(name, args) if name else None
            return None if call is None else (call, j + len(INVOKE_END))
        param = PARAM.match(text, j)
        end = -1 if param is None else _value_end(text, param.end())
        if param is None or end < 0:
            return None
        key = param.group(1).strip()
        value = text[param.end() : end].strip()
        args[key] = typed_value(value, tools.property_schema(name, key))
        j = end + len(PARAM_END)


def _reader(tools: Tools) -> ReadCall:
    def read_call(text: str, i: int) -> tuple[ToolCall, int] | None:
        sep = text.find(SEP, i)
        if sep < 0 or text[i:sep].strip() != "function":
            return None
        return _invocation(text, sep + len(SEP), tools)

    return read_call


@body_kind("steptml", markers=(CALL_BEGIN, CALL_END, SEP, INVOKE_END, PARAM_END))
def parse_steptml(body: str, tools: Tools) -> list[ToolCall] | None:
    return read_section(body, CALL_BEGIN, CALL_END, _reader(tools))
