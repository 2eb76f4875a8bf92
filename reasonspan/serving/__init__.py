"""The serving layer: what an OpenAI-compatible server needs around the runtime.

``templates`` renders conversations with the model's own chat template. Request and
response handling, SSE encoding and the reference server are added beside it (see
ARCHITECTURE.md); HTTP pieces import their optional extra only where they are used.
"""

from .templates import ChatTemplateError, chat_template_of, render_chat, render_prompt_ids

__all__ = ["ChatTemplateError", "chat_template_of", "render_chat", "render_prompt_ids"]
