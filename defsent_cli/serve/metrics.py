"""The server's metrics in Prometheus' text exposition format (version 0.0.4), kept by hand: counters,
histograms and gauges of a few fixed labels (no client library needed)."""

from __future__ import annotations

import bisect
import threading
from collections.abc import Callable

LATENCY_BUCKETS = (0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
BATCH_BUCKETS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)
#: The paths metrics are labelled with; any other path counts as "other" (no label per unknown URL).
ROUTES = ("/", "/health", "/metrics", "/v1/embeddings", "/v1/search", "/v1/lookup", "/v1/models")


class Histogram:
    def __init__(self, buckets):
        self.buckets = tuple(buckets)
        self.counts = [0] * (len(self.buckets) + 1)
        self.sum = 0.0
        self.count = 0

    def observe(self, value: float) -> None:
        self.counts[bisect.bisect_left(self.buckets, value)] += 1
        self.sum += value
        self.count += 1

    def lines(self, name: str, labels: str = "") -> list[str]:
        out, running = [], 0
        sep = "," if labels else ""
        for bound, n in zip(self.buckets, self.counts, strict=False):
            running += n
            out.append(f'{name}_bucket{{{labels}{sep}le="{bound:g}"}} {running}')
        out.append(f'{name}_bucket{{{labels}{sep}le="+Inf"}} {self.count}')
        tail = f"{{{labels}}}" if labels else ""
        out += [f"{name}_sum{tail} {self.sum:.6f}", f"{name}_count{tail} {self.count}"]
        return out


class Metrics:
    """Requests by route and status, their latency, the batches run, texts and tokens encoded, and gauges read
    when the metrics are rendered (the queue depth, requests in flight)."""

    def __init__(self):
        self.lock = threading.Lock()
        self.requests: dict[tuple[str, int], int] = {}
        self.latency: dict[str, Histogram] = {}
        self.batches = Histogram(BATCH_BUCKETS)
        self.batch_requests = Histogram(BATCH_BUCKETS)
        self.texts = 0
        self.tokens = 0
        self.rejected = 0
        self.in_flight = 0
        self.gauges: dict[str, tuple[str, Callable[[], float]]] = {}

    @staticmethod
    def route(path: str) -> str:
        return path if path in ROUTES else "other"

    def observe_request(self, path: str, status: int, seconds: float) -> None:
        route = self.route(path)
        with self.lock:
            self.requests[route, status] = self.requests.get((route, status), 0) + 1
            self.latency.setdefault(route, Histogram(LATENCY_BUCKETS)).observe(seconds)

    def observe_batch(self, texts: int, requests: int) -> None:
        with self.lock:
            self.batches.observe(texts)
            self.batch_requests.observe(requests)

    def count_texts(self, texts: int, tokens: int) -> None:
        with self.lock:
            self.texts += texts
            self.tokens += tokens

    def gauge(self, name: str, help_text: str, read: Callable[[], float]) -> None:
        self.gauges[name] = (help_text, read)

    def render(self) -> str:
        with self.lock:
            lines = [
                "# HELP defsent_requests_total HTTP requests answered, by route and status code.",
                "# TYPE defsent_requests_total counter",
            ]
            for (route, status), n in sorted(self.requests.items()):
                lines.append(f'defsent_requests_total{{route="{route}",status="{status}"}} {n}')
            lines += [
                "# HELP defsent_request_duration_seconds Time from a request's arrival to its response, by route.",
                "# TYPE defsent_request_duration_seconds histogram",
            ]
            for route, histogram in sorted(self.latency.items()):
                lines += histogram.lines("defsent_request_duration_seconds", f'route="{route}"')
            lines += [
                "# HELP defsent_batch_size_texts Texts per encoded batch (dynamic batching).",
                "# TYPE defsent_batch_size_texts histogram",
                *self.batches.lines("defsent_batch_size_texts"),
                "# HELP defsent_batch_size_requests Requests per encoded batch (dynamic batching).",
                "# TYPE defsent_batch_size_requests histogram",
                *self.batch_requests.lines("defsent_batch_size_requests"),
                "# HELP defsent_texts_total Texts encoded.",
                "# TYPE defsent_texts_total counter",
                f"defsent_texts_total {self.texts}",
                "# HELP defsent_tokens_total Tokens read by the model (special tokens included).",
                "# TYPE defsent_tokens_total counter",
                f"defsent_tokens_total {self.tokens}",
                "# HELP defsent_rejected_total Requests refused because the queue was full (503).",
                "# TYPE defsent_rejected_total counter",
                f"defsent_rejected_total {self.rejected}",
            ]
        for name, (help_text, read) in sorted(self.gauges.items()):
            lines += [f"# HELP {name} {help_text}", f"# TYPE {name} gauge", f"{name} {read():g}"]
        return "\n".join(lines) + "\n"
