"""The OpenAI wire: chunk and completion Structs (``openai``), tool calls as OpenAI
``tool_calls`` messages (``call_messages``) and the SSE encoding of chunks (``sse``).
Below the parser, because a parser's text API returns tool-call messages."""
