"""Checkpoint-declared formats: a model's own reasoning and tool-call declaration compiled
into a ``ReasoningSpec`` (``compile``), their regular expressions read as marker text
(``regex``)."""
