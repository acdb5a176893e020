"""`mcp-server check` throughput against its floor, `orjson.loads` of each line alone, on one capture.

Builds a ~100 MB NDJSON capture from the bench corpus (bench/corpus.py: the handshake once, then
its frames repeated with fresh ids, ~5 % of them invalid), times `check_capture` over it in
process and a bare `orjson.loads` loop over the same file, in turn. Prints MB/s for both (medians of
5 runs) and the ratio, with each run's own ratio (median and spread; targets: >= 50 MB/s, ratio
>= 0.55 since the per-frame rebuild). The capture is written to a temporary directory and removed
afterwards.
Usage: python bench/bench_check.py [--quick] [--json]   (--quick: a 10 MB capture)
"""

from __future__ import annotations

import contextlib
import json
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

import orjson

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from corpus import build  # noqa: E402

from mcp_server.offline.check import check_capture  # noqa: E402
from mcp_server.registry.schemas import SchemaRegistry  # noqa: E402

REPEATS = 5
HANDSHAKE = 5  # initialize, its result, notifications/initialized, tools/list, its result
_ID = re.compile(rb'"(id|progressToken)":(\d+)')


def write_capture(path: Path, target_bytes: int) -> tuple[int, int]:
    """The corpus frames, repeated with fresh ids until ``target_bytes``; (bytes, frames) written."""
    frames, _ = build()
    head, body = [f.raw for f in frames[:HANDSHAKE]], [f.raw for f in frames[HANDSHAKE:]]
    written = count = 0
    with path.open("wb") as out:
        for raw in head:
            out.write(raw + b"\n")
            written += len(raw) + 1
            count += 1
        round_ = 0
        while written < target_bytes:
            offset = round_ * 1_000_000

            def fresh(match: re.Match[bytes], offset: int = offset) -> bytes:
                return b'"%s":%d' % (match.group(1), int(match.group(2)) + offset)

            for raw in body:
                line = _ID.sub(fresh, raw, count=2) + b"\n"
                out.write(line)
                written += len(line)
                count += 1
                if written >= target_bytes:
                    break
            round_ += 1
    return written, count


def time_check(path: Path, registry: SchemaRegistry) -> tuple[float, int]:
    began = time.perf_counter()
    report = check_capture(path, registry=registry)
    return time.perf_counter() - began, report.total


def time_orjson(path: Path) -> float:
    loads = orjson.loads
    began = time.perf_counter()
    with path.open("rb", buffering=1 << 20) as handle:
        for line in handle:
            with contextlib.suppress(orjson.JSONDecodeError):
                loads(line)
    return time.perf_counter() - began


def main(argv: list[str]) -> int:
    quick = "--quick" in argv
    target = (10 if quick else 100) * 1_000_000
    registry = SchemaRegistry()
    with tempfile.TemporaryDirectory(prefix="bench-check-") as folder:
        path = Path(folder) / "capture.ndjson"
        size, frames = write_capture(path, target)
        megabytes = size / 1e6
        check_runs, loads_runs = [], []
        violations = 0
        for _ in range(REPEATS):
            elapsed, violations = time_check(path, registry)
            check_runs.append(elapsed)
            loads_runs.append(time_orjson(path))
    check_s, loads_s = statistics.median(check_runs), statistics.median(loads_runs)
    rounds = sorted(loads / check for check, loads in zip(check_runs, loads_runs, strict=True))  # same round
    result = {
        "capture_mb": round(megabytes, 1),
        "frames": frames,
        "violations_found": violations,
        "check_mb_per_s": round(megabytes / check_s, 1),
        "orjson_loads_mb_per_s": round(megabytes / loads_s, 1),
        "ratio": round(loads_s / check_s, 3),
        "ratio_rounds": {
            "median": round(statistics.median(rounds), 3),
            "low": round(rounds[0], 3),
            "high": round(rounds[-1], 3),
        },
        "targets": {"check_mb_per_s": 50, "ratio": 0.55},
    }
    if "--json" in argv:
        print(json.dumps(result, indent=2))
    else:
        print(f"capture: {result['capture_mb']} MB, {frames} frames, {violations} violations found")
        print(f"mcp-server check : {result['check_mb_per_s']:8.1f} MB/s   (median of {REPEATS})")
        print(f"orjson.loads only: {result['orjson_loads_mb_per_s']:8.1f} MB/s   (median of {REPEATS})")
        print(f"ratio check/loads: {result['ratio']:.3f}   (targets: >= 50 MB/s, ratio >= 0.55)")
        spread = result["ratio_rounds"]
        print(f"ratio per round  : median {spread['median']:.3f} ({spread['low']:.3f}-{spread['high']:.3f})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
