"""Tool calls for every family: formats declared beside the reasoning spec, one shared
extractor over the labelled token stream, and one module per body kind.

Importing this package registers the built-in kinds.
"""

from reasonspan.runtime.core.tool_format import (
    CompiledToolFormat,
    ToolFormat,
    body_kind,
    compile_format,
)
from reasonspan.runtime.core.tool_types import NO_TOOLS, ToolCall, Tools, as_tools, dump_arguments
from reasonspan.runtime.toolcalls import apertus_calls as apertus_calls
from reasonspan.runtime.toolcalls import cohere_calls as cohere_calls
from reasonspan.runtime.toolcalls import deepseek_calls as deepseek_calls
from reasonspan.runtime.toolcalls import dsml_calls as dsml_calls
from reasonspan.runtime.toolcalls import gcml_calls as gcml_calls
from reasonspan.runtime.toolcalls import gemma4_calls as gemma4_calls
from reasonspan.runtime.toolcalls import hunyuan_calls as hunyuan_calls
from reasonspan.runtime.toolcalls import ifm_calls as ifm_calls
from reasonspan.runtime.toolcalls import inkling_calls as inkling_calls
from reasonspan.runtime.toolcalls import json_calls as json_calls
from reasonspan.runtime.toolcalls import kimi_calls as kimi_calls
from reasonspan.runtime.toolcalls import kv_calls as kv_calls
from reasonspan.runtime.toolcalls import lfm2_calls as lfm2_calls
from reasonspan.runtime.toolcalls import mistral_calls as mistral_calls
from reasonspan.runtime.toolcalls import olmo3_calls as olmo3_calls
from reasonspan.runtime.toolcalls import partial_apertus as partial_apertus
from reasonspan.runtime.toolcalls import partial_cohere as partial_cohere
from reasonspan.runtime.toolcalls import partial_dsml as partial_dsml
from reasonspan.runtime.toolcalls import partial_gcml as partial_gcml
from reasonspan.runtime.toolcalls import partial_gemma4 as partial_gemma4
from reasonspan.runtime.toolcalls import partial_hunyuan as partial_hunyuan
from reasonspan.runtime.toolcalls import partial_ifm as partial_ifm
from reasonspan.runtime.toolcalls import partial_inkling as partial_inkling
from reasonspan.runtime.toolcalls import partial_json as partial_json
from reasonspan.runtime.toolcalls import partial_kimi_k3 as partial_kimi_k3
from reasonspan.runtime.toolcalls import partial_kv as partial_kv
from reasonspan.runtime.toolcalls import partial_plamo3 as partial_plamo3
from reasonspan.runtime.toolcalls import partial_pythonic as partial_pythonic
from reasonspan.runtime.toolcalls import partial_sections as partial_sections
from reasonspan.runtime.toolcalls import partial_solar as partial_solar
from reasonspan.runtime.toolcalls import partial_steptml as partial_steptml
from reasonspan.runtime.toolcalls import partial_xml as partial_xml
from reasonspan.runtime.toolcalls import partial_xml_nested as partial_xml_nested
from reasonspan.runtime.toolcalls import plamo3_calls as plamo3_calls
from reasonspan.runtime.toolcalls import pythonic_calls as pythonic_calls
from reasonspan.runtime.toolcalls import solar_calls as solar_calls
from reasonspan.runtime.toolcalls import steptml_calls as steptml_calls
from reasonspan.runtime.toolcalls import xlam_calls as xlam_calls
from reasonspan.runtime.toolcalls import xml_calls as xml_calls
from reasonspan.runtime.toolcalls import xml_nested as xml_nested
from reasonspan.runtime.toolcalls import xtml_calls as xtml_calls
from reasonspan.runtime.toolcalls.extract import ToolCallExtractor

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
