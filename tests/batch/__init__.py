"""The continuous batch: its step, lanes, batch text, SSE output path and grammar gate."""
