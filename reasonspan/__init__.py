"""reasonspan: split reasoning models' token streams into reasoning and content, on token ids.

tok = await reasonspan.load_tokenizer("path/to/model")
parser = await reasonspan.create_parser("qwen3", tok)
reasoning = parser.is_prompt_in_reasoning(prompt_ids)
d = parser.stream(new_ids, is_currently_reasoning=reasoning)
"""

from reasonspan import architectures  # noqa: F401  (importing it registers the built-in families)
from reasonspan.detection import Detection, detect
from reasonspan.detection.profile import TemplateProfile, install, template_profile
from reasonspan.factory import create_parser, create_parser_sync
from reasonspan.runtime import (
    BatchFinish,
    BatchStepResult,
    BatchText,
    Citation,
    CitationSource,
    InvalidOptionError,
    InvalidTokenError,
    Label,
    MarkerKind,
    MissingMarkerError,
    ParsedReasoningDelta,
    ParseResult,
    ReasoningBatch,
    ReasoningParser,
    ReasoningRuntime,
    ReasoningSpec,
    ReasonspanError,
    RequestFailedError,
    RequestStream,
    RequestUsage,
    StepLogprobs,
    TextSplitter,
    TokenizerLoadError,
    Trim,
    UnknownParserError,
    families,
    get_parser_class,
    list_parsers,
    register,
)
from reasonspan.tokenizer import LoadedTokenizer, load_tokenizer, load_tokenizer_sync

install()  # parsers on a folder with a chat template start where the template leaves them

__version__ = "0.1.0"

__all__ = [
    "BatchFinish",
    "BatchStepResult",
    "BatchText",
    "Citation",
    "CitationSource",
    "Detection",
    "InvalidOptionError",
    "InvalidTokenError",
    "Label",
    "LoadedTokenizer",
    "MarkerKind",
    "MissingMarkerError",
    "ParseResult",
    "ParsedReasoningDelta",
    "ReasoningBatch",
    "ReasoningParser",
    "ReasoningRuntime",
    "ReasoningSpec",
    "ReasonspanError",
    "RequestFailedError",
    "RequestStream",
    "RequestUsage",
    "StepLogprobs",
    "TemplateProfile",
    "TextSplitter",
    "TokenizerLoadError",
    "Trim",
    "UnknownParserError",
    "__version__",
    "create_parser",
    "create_parser_sync",
    "detect",
    "families",
    "get_parser_class",
    "list_parsers",
    "load_tokenizer",
    "load_tokenizer_sync",
    "register",
    "template_profile",
]
