"""The vocabulary and the machine: what a family declares (``spec``, ``tool_format``,
``tool_types``), the token labels (``labels``), the errors every runtime layer raises
(``errors``), markers resolved against a tokenizer (``markers``) and the compiled
per-tokenizer ``Machine`` that labels every token (``machine``). Imports nothing else of
the runtime."""
