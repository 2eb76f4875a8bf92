"""The contract, the state machine, text splitting and the registry."""

from .batch import NO_BUDGET, ReasoningBatch
from .batch_errors import (
    BatchTokenError,
    DuplicateRequestError,
    InvalidStepError,
    RequestFailedError,
    RequestFinishedError,
    UnknownRequestError,
)
from .batch_result import BatchStepResult
from .batch_text import BatchText, UnknownTextRequestError
from .batch_types import FAILED, HELD, BatchFinish, RequestUsage
from .citations import Citation, CitationSource
from .decoding import LabelledDecoder
from .errors import (
    InvalidOptionError,
    InvalidTokenError,
    MissingMarkerError,
    ReasonspanError,
    TokenizerLoadError,
    UnknownParserError,
)
from .formatters import TextFormatter, TrimFormatter
from .labels import Label
from .machine import Machine
from .markers import compile_machine
from .parser import ReasoningParser
from .registry import (
    create_parser,
    create_parser_sync,
    families,
    get_parser_class,
    list_parsers,
    register,
)
from .results import ParsedReasoningDelta, ParseResult
from .spec import MarkerKind, ReasoningSpec, Trim
from .streams import (
    ReasoningRuntime,
    RequestCancelledError,
    RequestNotOpenError,
    RequestStream,
    RequestTokenError,
)
from .text import TextSplitter

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
    "TextFormatter",
    "TextSplitter",
    "TokenizerLoadError",
    "Trim",
    "TrimFormatter",
    "UnknownParserError",
    "UnknownRequestError",
    "UnknownTextRequestError",
    "compile_machine",
    "create_parser",
    "create_parser_sync",
    "families",
    "get_parser_class",
    "list_parsers",
    "register",
]
