"""Tool calls for every family: formats declared beside the reasoning spec, one shared
extractor over the labelled token stream, and one module per body kind.

Importing this package registers the built-in kinds.
"""

from . import deepseek_calls as deepseek_calls
from . import dsml_calls as dsml_calls
from . import gemma4_calls as gemma4_calls
from . import json_calls as json_calls
from . import kimi_calls as kimi_calls
from . import kv_calls as kv_calls
from . import mistral_calls as mistral_calls
from . import pythonic_calls as pythonic_calls
from . import xml_calls as xml_calls
from . import xml_nested as xml_nested
from . import xtml_calls as xtml_calls
from .extract import ToolCallExtractor
from .format import CompiledToolFormat, ToolFormat, body_kind, compile_format
from .types import NO_TOOLS, ToolCall, Tools, as_tools, dump_arguments

__all__ = [
    "NO_TOOLS",
    "CompiledToolFormat",
    "ToolCall",
    "ToolCallExtractor",
    "ToolFormat",
    "Tools",
    "as_tools",
    "body_kind",
    "compile_format",
    "dump_arguments",
]
