"""Output-format declarations as published, for the ``declared`` family's fixtures and tests.

Each is copied from its source verbatim (Python literals as written there):

- ``SMOLLM_SCHEMA``, ``COHERE_SCHEMA``: huggingface/transformers
  ``tests/utils/test_chat_parsing_utils.py`` at commit
  cdd6f90311f6c0f489e54efedaec6f6ead7985cf (``smollm_schema``, ``cohere_schema``).
- ``GEMMA4_SCHEMA``: huggingface/transformers ``src/transformers/models/gemma4/
  convert_gemma4_weights.py`` (``_RESPONSE_SCHEMA``, written into the converted checkpoint's
  tokenizer config with ``--include_response_schema``).
- ``GEMMA4_TEMPLATE``, ``QWEN35_TEMPLATE``: the transformers 5.23.0 wheel (PyPI),
  ``transformers/cli/serving/utils.py``, ``_RESPONSE_TEMPLATE_FALLBACKS`` (the ``gemma4`` and
  the ``qwen3_5``… entries; comments left out).
"""

from __future__ import annotations

from typing import Any

SMOLLM_SCHEMA: dict[str, Any] = {
    "x-regex": r"(?:<think>\n?(?P<thinking>.+?)\n?</think>)?\s*(?:<tool_call>(?P<tool_calls>.+?)</tool_call>)?\s*(?P<content>.+?)?\s*(?:<\|im_end\|>|$)",
    "type": "object",
    "properties": {
        "role": {"const": "assistant"},
        "content": {"type": "string"},
        "thinking": {"type": "string"},
        "tool_calls": {
            "x-parser": "json",
            "x-parser-args": {"transform": "[{type: 'function', function: @}]"},
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "type": {"const": "function"},
                    "function": {
                        "type": "object",
                        "properties": {
                            "name": {"type": "string"},
                            "arguments": {
                                "type": "object",
                                "additionalProperties": {},
                            },
                        },
                    },
                },
            },
        },
    },
}

COHERE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "role": {"const": "assistant"},
        "content": {
            "type": "string",
            "x-regex": r"<\|START_RESPONSE\|>(.*?)(?:<\|END_RESPONSE\|>|$)",
        },
        "thinking": {
            "type": "string",
            "x-regex": r"<\|START_THINKING\|>(.*?)(?:<\|END_THINKING\|>|$)",
        },
        "tool_calls": {
            "x-regex": r"<\|START_ACTION\|>(.*?)(?:<\|END_ACTION\|>|$)",
            "x-parser": "json",
            "x-parser-args": {
                "transform": "[*].{type: 'function', function: {name: tool_name, arguments: parameters}}"
            },
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "type": {"const": "function"},
                    "function": {
                        "type": "object",
                        "properties": {
                            "name": {"type": "string"},
                            "arguments": {
                                "type": "object",
                                "additionalProperties": {},
                            },
                        },
                    },
                },
            },
        },
    },
}

GEMMA4_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "role": {"const": "assistant"},
        "thinking": {
            "type": "string",
        },
        "content": {
            "type": "string",
        },
        "tool_calls": {
            "x-regex-iterator": r"<\|tool_call>(.*?)<tool_call\|>",
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "type": {"const": "function"},
                    "function": {
                        "type": "object",
                        "x-regex": r"call\:(?P<name>\w+)(?P<arguments>\{.*\})",
                        "properties": {
                            "name": {
                                "type": "string",
                            },
                            "arguments": {
                                "type": "object",
                                "x-parser": "gemma4-tool-call",
                                "additionalProperties": {},
                            },
                        },
                    },
                },
            },
        },
    },
    "x-regex": r"(\<\|channel\>thought\n(?P<thinking>.*?)\<channel\|\>)?(?P<tool_calls>\<\|tool_call\>.*\<tool_call\|\>)?(?P<content>(?:(?!\<turn\|\>)(?!\<\|tool_response\>).)+)?(?:\<turn\|\>|\<\|tool_response\>)?",
}

GEMMA4_TEMPLATE: dict[str, Any] = {
    "defaults": {"role": "assistant"},
    "start_anchor": ["<|turn>model\n", "<tool_response|>"],
    "fields": {
        "reasoning_content": {
            "open": "<|channel>thought\n",
            "close": "<channel|>",
            "content": "text",
        },
        "tool_calls": {
            "open_pattern": r"<\|tool_call>call:(?P<name>\w+)",
            "close": "<tool_call|>",
            "repeats": True,
            "content": "json",
            "content_args": {
                "unquoted_keys": True,
                "string_delims": [['<|"|>', '<|"|>']],
            },
            "transform": {
                "type": "function",
                "function": {"name": "{name}", "arguments": "{content}"},
            },
        },
        "content": {
            "close": ["<turn|>", "<|tool_response>", "<eos>"],
            "content": "text",
        },
    },
}

QWEN35_TEMPLATE: dict[str, Any] = {
    "defaults": {"role": "assistant"},
    "start_anchor": "<|im_start|>assistant\n",
    "fields": {
        "reasoning_content": {
            "open": "<think>",
            "close": "</think>",
            "content": "text",
        },
        "tool_calls": {
            "open_pattern": r"\s*<tool_call>\s*<function=(?P<name>[^>\n]+)>",
            "close_pattern": r"</function>\s*</tool_call>",
            "repeats": True,
            "content": "xml-inline",
            "content_args": {
                "tag_pattern": r"<parameter=(?P<key>[^>\n]+)>\s*(?P<value>.*?)\s*</parameter>",
            },
            "transform": {
                "type": "function",
                "function": {"name": "{name}", "arguments": "{content}"},
            },
        },
        "content": {
            "close_pattern": r"\s*(?:<\|im_end\|>|<\|endoftext\|>)",
            "content": "text",
        },
    },
}

DECLARED_FIXTURES: dict[str, tuple[str, str, dict[str, Any]]] = {
    # Qwen3's tokenizer and chat template, with SmolLM3's response_schema (same markers).
    "qwen-3_base_with_declared_response_schema": ("qwen-3", "response_schema", SMOLLM_SCHEMA),
}
"""Fixture folder name -> (base fixture, tokenizer_config.json key, declaration)."""
