"""The contract, the state machine, text splitting and the registry."""

from reasonspan.runtime.batch.errors import (
    BatchTokenError,
    DuplicateRequestError,
    InvalidStepError,
    RequestFailedError,
    RequestFinishedError,
    UnknownRequestError,
)
from reasonspan.runtime.batch.result import BatchStepResult
from reasonspan.runtime.batch.step import NO_BUDGET, ReasoningBatch
from reasonspan.runtime.batch.text import BatchText, UnknownTextRequestError
from reasonspan.runtime.batch.types import FAILED, HELD, BatchFinish, RequestUsage
from reasonspan.runtime.core.errors import (
    InvalidOptionError,
    InvalidTokenError,
    MissingMarkerError,
    ReasonspanError,
    TokenizerLoadError,
    UnknownParserError,
)
from reasonspan.runtime.core.labels import Label
from reasonspan.runtime.core.machine import Machine
from reasonspan.runtime.core.markers import compile_machine
from reasonspan.runtime.core.spec import MarkerKind, ReasoningSpec, Trim
from reasonspan.runtime.parser.contract import ReasoningParser
from reasonspan.runtime.parser.registry import (
    build_parser,
    build_parser_sync,
    families,
    get_parser_class,
    list_parsers,
    register,
)
from reasonspan.runtime.parser.splitter import TextSplitter
from reasonspan.runtime.stream.logprobs import StepLogprobs
from reasonspan.runtime.stream.runtime import (
    ReasoningRuntime,
    RequestCancelledError,
    RequestNotOpenError,
    RequestStream,
    RequestTokenError,
)
from reasonspan.runtime.text.citations import Citation, CitationSource
from reasonspan.runtime.text.decoding import LabelledDecoder
from reasonspan.runtime.text.formatters import TextFormatter, TrimFormatter
from reasonspan.runtime.text.results import ParsedReasoningDelta, ParseResult

__all__ = [
    "FAILED",
    "HELD",
    "NO_BUDGET",
    "BatchFinish",
    "BatchStepResult",
    "BatchText",
    "BatchTokenError",
    "Citation",
    "CitationSource",
    "DuplicateRequestError",
    "InvalidOptionError",
    "InvalidStepError",
    "InvalidTokenError",
    "Label",
    "LabelledDecoder",
    "Machine",
    "MarkerKind",
    "MissingMarkerError",
    "ParseResult",
    "ParsedReasoningDelta",
    "ReasoningBatch",
    "ReasoningParser",
    "ReasoningRuntime",
    "ReasoningSpec",
    "ReasonspanError",
    "RequestCancelledError",
    "RequestFailedError",
    "RequestFinishedError",
    "RequestNotOpenError",
    "RequestStream",
    "RequestTokenError",
    "RequestUsage",
    "StepLogprobs",
    "TextFormatter",
    "TextSplitter",
    "TokenizerLoadError",
    "Trim",
    "TrimFormatter",
    "UnknownParserError",
    "UnknownRequestError",
    "UnknownTextRequestError",
    "build_parser",
    "build_parser_sync",
    "compile_machine",
    "families",
    "get_parser_class",
    "list_parsers",
    "register",
]
