"""What redaction costs on hostile input (issue 30 row 1), against named peers in the same run.

Part 1, in process: ``Redactor.redact_text`` (RE2) on a string of N letters with no secret in it, the
e-mail pattern's worst case, against Python's backtracking ``re`` running the patterns the project
had before (the peer: its quadratic e-mail pattern took 43 s of CPU on 128 KiB). The peer runs only
up to ``--peer-max`` bytes (16 KiB by default: beyond, it takes seconds to minutes). Also a frame of
a million small items, redacted whole (``redact``) and as the report's excerpt (``head_of``).
Part 2, a gateway process in front of the SDK upstream: its CPU time (from /proc) for one frame with
a 128 KiB string id and an unknown method (a violation the report and the log redact), against the
same frame with a 1-letter id. Medians and spread (min-max) of the repeats.
Usage: python bench/bench_redaction.py [--quick] [--peer-max BYTES] [--json]
"""

from __future__ import annotations

import json
import os
import re
import select
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from mcp_server.execution.redaction import Redactor  # noqa: E402
from mcp_server.observe.report import EXCERPT_CHARS, head_of  # noqa: E402

# The peer: the patterns as the project ran them on `re` before issue 30 (execution/redaction.py).
PEER_PATTERNS = (
    (r"(?i)\bbearer\s+[A-Za-z0-9\-._~+/]+=*", "Bearer [REDACTED]"),
    (r"(?i)\bbasic\s+[A-Za-z0-9+/]{8,}=*", "Basic [REDACTED]"),
    (
        r"(?i)(\b(?:api[_-]?key|apikey|x-api-key|access[_-]?token|auth[_-]?token|client[_-]?secret|secret)"
        r"[\"']?\s*[:=]\s*[\"']?)[^\s\"',;&}]+",
        r"\g<1>[REDACTED]",
    ),
    (r"(?i)(\b(?:password|passwd|pwd)[\"']?\s*[:=]\s*[\"']?)[^\s\"',;&}]+", r"\g<1>[REDACTED]"),
    (r"\b(?:sk|pk|rk)[-_](?:live[-_]|test[-_])?[A-Za-z0-9_-]{16,}\b", "[REDACTED]"),
    (r"\bAKIA[0-9A-Z]{16}\b", "[REDACTED]"),
    (r"\bgh[pousr]_[A-Za-z0-9]{20,}\b", "[REDACTED]"),
    (r"(?i)(://[^/\s:@]+:)[^/\s@]+@", r"\g<1>[REDACTED]@"),
    (r"[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}", "[REDACTED]"),
)
PEER = [(re.compile(p), r) for p, r in PEER_PATTERNS]


def peer_redact(text: str) -> str:
    for pattern, replacement in PEER:
        text = pattern.sub(replacement, text)
    return text


def cpu(function: Any, *args: Any) -> float:
    start = time.process_time()
    function(*args)
    return time.process_time() - start


def summary(samples: list[float]) -> dict[str, float]:
    return {"median": statistics.median(samples), "min": min(samples), "max": max(samples)}


def in_process(repeats: int, peer_max: int) -> dict[str, Any]:
    redactor = Redactor.build()
    found: dict[str, Any] = {}
    for size in (4 << 10, 16 << 10, 64 << 10, 128 << 10, 1 << 20):
        text = "a" * size
        ours = summary([cpu(redactor.redact_text, text) for _ in range(repeats)])
        entry: dict[str, Any] = {"re2": ours}
        if size <= peer_max:
            theirs = summary([cpu(peer_redact, text) for _ in range(repeats)])
            entry |= {"peer_re": theirs, "ratio": theirs["median"] / max(ours["median"], 1e-9)}
        found[f"{size >> 10} KiB"] = entry
    items = {"items": ["a"] * 250_000}  # a 1 MiB frame of a quarter million strings
    found["250k items, redact whole"] = summary([cpu(redactor.redact, items) for _ in range(repeats)])
    marked = {"items": ["a@"] * 200_000}  # each holds what an e-mail address holds: every string is searched
    found["200k items with '@', redact whole"] = summary([cpu(redactor.redact, marked) for _ in range(repeats)])
    excerpt = [cpu(lambda: redactor.redact_frame(head_of(items, 2 * EXCERPT_CHARS))) for _ in range(repeats)]
    found["250k items, report excerpt"] = summary(excerpt)
    return found


def gateway_cpu(repeats: int) -> dict[str, Any]:
    """CPU seconds the gateway spends on a frame with a 128 KiB id, against a 1-letter id."""
    runs = tempfile.mkdtemp(prefix="bench-redaction-")
    env = {**os.environ, "MCP_RUNS_DIR": runs, "MCP_READY_FILE": str(Path(runs) / "ready"), "PYTHONPATH": str(ROOT)}
    upstream = [sys.executable, str(ROOT / "tests" / "upstreams" / "sdk_server.py")]
    command = [sys.executable, "-m", "mcp_server", "gateway", "--", *upstream]
    with open(Path(runs) / "stderr", "wb") as stderr:
        process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr, env=env)
    assert process.stdin is not None and process.stdout is not None
    pending = bytearray()

    def exchange(frame: dict[str, Any]) -> None:
        nonlocal pending
        process.stdin.write(json.dumps(frame).encode() + b"\n")  # type: ignore[union-attr]
        process.stdin.flush()  # type: ignore[union-attr]
        while b"\n" not in pending:
            select.select([process.stdout], [], [], 60)
            pending += os.read(process.stdout.fileno(), 1 << 20)  # type: ignore[union-attr]
        pending = pending[pending.index(b"\n") + 1 :]

    def used() -> float:
        fields = Path(f"/proc/{process.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    params = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}
    exchange({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params})
    samples: dict[str, list[float]] = {"128 KiB id": [], "1-letter id": []}
    for round_ in range(repeats):
        for label, size in (("128 KiB id", 128 << 10), ("1-letter id", 1)):
            frame = {"jsonrpc": "2.0", "id": "a" * (size - 1) + str(round_ % 10), "method": "no/such/method"}
            before = used()
            for _ in range(50):  # fifty frames: /proc counts CPU in ticks of 10 ms
                exchange(frame)
            samples[label].append((used() - before) / 50)
    process.stdin.close()
    process.wait(60)
    big, small = summary(samples["128 KiB id"]), summary(samples["1-letter id"])
    return {"128 KiB id": big, "1-letter id": small, "added_ms": (big["median"] - small["median"]) * 1000}


def main() -> None:
    quick = "--quick" in sys.argv
    peer_max = int(sys.argv[sys.argv.index("--peer-max") + 1]) if "--peer-max" in sys.argv else 16 << 10
    repeats = 3 if quick else 5
    results = {"in_process": in_process(repeats, peer_max), "gateway": gateway_cpu(repeats)}
    if "--json" in sys.argv:
        print(json.dumps(results, indent=2))
        return
    for label, entry in results["in_process"].items():
        if "re2" in entry:
            line = f"{label:>28}: RE2 {entry['re2']['median'] * 1000:8.2f} ms"
            if "peer_re" in entry:
                line += f"   re (peer) {entry['peer_re']['median'] * 1000:9.1f} ms   ratio {entry['ratio']:7.0f}x"
        else:
            spread = f"(min {entry['min'] * 1000:.2f}, max {entry['max'] * 1000:.2f})"
            line = f"{label:>28}: {entry['median'] * 1000:8.2f} ms {spread}"
        print(line)
    gateway = results["gateway"]
    for label in ("128 KiB id", "1-letter id"):
        entry = gateway[label]
        print(
            f"gateway CPU per frame, {label}: {entry['median'] * 1000:.1f} ms"
            f" (min {entry['min'] * 1000:.1f}, max {entry['max'] * 1000:.1f})"
        )
    print(f"gateway: a 128 KiB id adds {gateway['added_ms']:.1f} ms of CPU per frame")


if __name__ == "__main__":
    main()
