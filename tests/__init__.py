"""reasonspan's tests, by layer: ``runtime/`` (one request's parser, text, tool calls and
the machine under it), ``batch/`` (the continuous batch and its output path),
``serving/`` (the reference server, its protocol and templates), ``toolcalls/``,
``families/`` (each family's cases), and at the top the tests of the top layer (CLI,
detection, docs) and of the architecture; ``support/`` holds the shared helpers."""
