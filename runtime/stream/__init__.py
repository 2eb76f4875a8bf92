"""Async per-request streams over the batch: the runtime (``runtime``), what a new request
gets besides its slot (``admission``), one request's record and chunk stream
(``request``), an engine loop on another thread (``threads``), the batch-wide SSE output
path (``sse_path``) and its event templates (``sse_templates``), stop strings (``stops``)
and the simulated engine (``simulation``)."""
