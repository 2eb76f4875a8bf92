"""The server's metrics, written in the Prometheus text format (``GET /metrics``).

Written by hand rather than with ``prometheus_client``: a handful of counters the event
loop updates in place, with no registry, no lock (one loop writes them) and no extra
dependency for a server that may never be scraped. The tests parse the output with
``prometheus_client``'s own text parser.

- ``reasonspan_requests_total{protocol,status}``: finished requests by HTTP status;
- ``reasonspan_requests_running{protocol}``: requests admitted and not yet answered;
- ``reasonspan_tokens_total{channel}``: ``prompt``, ``reasoning`` and ``answer`` tokens
  (answer: every completion token that is not reasoning, tool calls included);
- ``reasonspan_time_to_first_token_seconds{protocol}``: from a streaming request's arrival
  to its first event that carries generated text (a histogram);
- ``reasonspan_step_seconds{quantile}``: the runtime's step time over its recent steps.
"""

from __future__ import annotations

import bisect
from collections import Counter
from collections.abc import Iterable, Sequence

from reasonspan.runtime.wire.openai import Usage

TTFT_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
"""Upper bounds (seconds) of the time-to-first-token histogram; +Inf is implied."""

STEP_QUANTILES = (0.5, 0.9, 0.99)


class Histogram:
    """Cumulative bucket counts, their sum and count, as Prometheus exposes a histogram."""

    def __init__(self, bounds: Sequence[float]) -> None:
        self.bounds = tuple(bounds)
        self.counts = [0] * (len(self.bounds) + 1)
        self.sum = 0.0

    def observe(self, value: float) -> None:
        self.counts[bisect.bisect_left(self.bounds, value)] += 1
        self.sum += value

    def lines(self, name: str, labels: str) -> Iterable[str]:
        total = 0
        for bound, n in zip((*self.bounds, float("inf")), self.counts, strict=True):
            total += n
            le = "+Inf" if bound == float("inf") else repr(bound)
            yield f'{name}_bucket{{{labels},le="{le}"}} {total}'
        yield f"{name}_sum{{{labels}}} {self.sum!r}"
        yield f"{name}_count{{{labels}}} {total}"


class Metrics:
    """What ``/metrics`` reports; the server updates it on its event loop."""

    def __init__(self, protocols: Sequence[str]) -> None:
        self.protocols = tuple(protocols)
        self.requests: Counter[tuple[str, int]] = Counter()
        self.running: Counter[str] = Counter()
        self.tokens: Counter[str] = Counter({"prompt": 0, "reasoning": 0, "answer": 0})
        self.ttft = {p: Histogram(TTFT_BUCKETS) for p in self.protocols}

    def finished(self, protocol: str, status: int) -> None:
        self.requests[protocol, status] += 1

    def usage(self, usage: Usage | None) -> None:
        """Count a finished request's tokens by channel."""
        if usage is None:
            return
        reasoning = usage.completion_tokens_details.reasoning_tokens
        self.tokens["prompt"] += usage.prompt_tokens
        self.tokens["reasoning"] += reasoning
        self.tokens["answer"] += usage.completion_tokens - reasoning

    def render(self, step_ns: Sequence[int]) -> str:
        """The metrics in the Prometheus text format (version 0.0.4)."""
        out = [
            "# HELP reasonspan_requests_total Requests answered, by protocol and HTTP status.",
            "# TYPE reasonspan_requests_total counter",
        ]
        for (protocol, status), n in sorted(self.requests.items()):
            out.append(f'reasonspan_requests_total{{protocol="{protocol}",status="{status}"}} {n}')
        out += [
            "# HELP reasonspan_requests_running Requests admitted and not yet answered.",
            "# TYPE reasonspan_requests_running gauge",
        ]
        for protocol in self.protocols:
            n = self.running[protocol]
            out.append(f'reasonspan_requests_running{{protocol="{protocol}"}} {n}')
        out += [
            "# HELP reasonspan_tokens_total Tokens of finished requests, by channel.",
            "# TYPE reasonspan_tokens_total counter",
        ]
        for channel, n in sorted(self.tokens.items()):
            out.append(f'reasonspan_tokens_total{{channel="{channel}"}} {n}')
        name = "reasonspan_time_to_first_token_seconds"
        out += [
            f"# HELP {name} From a streaming request's arrival to its first generated text.",
            f"# TYPE {name} histogram",
        ]
        for protocol, hist in self.ttft.items():
            out.extend(hist.lines(name, f'protocol="{protocol}"'))
        out += [
            "# HELP reasonspan_step_seconds The runtime's step time over its recent steps.",
            "# TYPE reasonspan_step_seconds summary",
        ]
        ordered = sorted(step_ns)
        for q in STEP_QUANTILES:
            value = ordered[min(len(ordered) - 1, int(q * len(ordered)))] / 1e9 if ordered else 0
            out.append(f'reasonspan_step_seconds{{quantile="{q}"}} {value!r}')
        out.append(f"reasonspan_step_seconds_sum {sum(ordered) / 1e9!r}")
        out.append(f"reasonspan_step_seconds_count {len(ordered)}")
        return "\n".join(out) + "\n"
