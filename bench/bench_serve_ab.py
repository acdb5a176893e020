"""`mcp-server serve` over STDIO from this checkout against another's (A/B), in one run.

Each round starts a server from each checkout in turn (A then B, then B then A…, so both see the
same load) with the defaults a user gets (event log on), pipes the mixed STDIO corpus through it
(`bench_spine.serve_frames`: pings and `validate_asset` calls of 50 B to 20 KB, one writer thread,
every reply read) and reads: frames/s, the time from spawning the process to its ready file, and
its peak RSS after the run; and CPU time per frame, which a busy machine's stolen core does not
inflate: the server's own, and the server's with its log writer process (the whole run's less a run
without frames). Prints each side's medians with their spread and the ratios.
Targets (issue 19): B/A >= 2 against the commit before the per-frame rebuild, >= 50,000 frames/s,
ready in <= 150 ms, RSS <= 40 MiB.
Usage: python bench/bench_serve_ab.py OTHER_CHECKOUT [--rounds N] [--frames N]
"""

from __future__ import annotations

import argparse
import resource
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from bench_spine import cpu_seconds, peak_rss_mib, pipelined, serve_frames, start_serve  # noqa: E402

SIZES = [50, 200, 1000, 5000, 20000]


def one(root: Path, frames: list[bytes]) -> tuple[float, float, float, float, float]:
    """frames/s, the server's CPU µs per frame, seconds to ready, peak RSS in MiB of one server from
    ``root``; and the CPU seconds of its whole run, its log writer's included."""
    began = _children_cpu()
    process, to_ready = start_serve(root)
    try:
        cpu = cpu_seconds(process)
        rate = pipelined(process, frames) if frames else 0.0
        cpu = cpu_seconds(process) - cpu
        rss = peak_rss_mib(process)
    finally:
        process.communicate(b"", timeout=60)
    return rate, 1e6 * cpu / max(len(frames), 1), to_ready, rss, _children_cpu() - began


def _children_cpu() -> float:
    """CPU seconds of every process this one has waited for (a server, and the log writer it waited for)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def spread(values: list[float], unit: str, scale: float = 1.0) -> str:
    middle, low, high = (scale * statistics.median(values), scale * min(values), scale * max(values))
    return f"{middle:,.1f} {unit} (min {low:,.1f}, max {high:,.1f})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("other", type=Path, help="the checkout to compare with (A); this one is B")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--frames", type=int, default=20000)
    args = parser.parse_args()
    frames = serve_frames(args.frames, SIZES)
    sides: dict[str, list[tuple[float, ...]]] = {"A": [], "B": []}
    one(ROOT, frames[:200])  # warm-up: bytecode written, files in the page cache
    one(args.other, frames[:200])
    for round_ in range(args.rounds):
        order = [("A", args.other), ("B", ROOT)]
        for name, root in order if round_ % 2 == 0 else reversed(order):
            idle = one(root, [])[4]  # a run without frames: start-up and stop alone
            rate, cpu, ready, rss, whole = one(root, frames)
            sides[name].append((rate, cpu, ready, rss, 1e6 * (whole - idle) / len(frames)))
    for name, root in (("A", args.other), ("B", ROOT)):
        rates, cpu, ready, rss, whole = (list(column) for column in zip(*sides[name], strict=True))
        print(f"{name} {root}")
        print(f"  frames/s {spread(rates, '')}")
        print(f"  CPU per frame: server {spread(cpu, 'µs')}; server and log writer {spread(whole, 'µs')}")
        print(f"  ready {spread(ready, 'ms', 1000)}; peak RSS {spread(rss, 'MiB')}")
    for label, column, flip in (
        ("frames/s", 0, False),
        ("server CPU, A/B", 1, True),
        ("server + writer CPU, A/B", 4, True),
    ):
        ratios = [
            (a[column] / b[column]) if flip else (b[column] / a[column])
            for a, b in zip(sides["A"], sides["B"], strict=True)
        ]
        print(f"B/A {label}: median {statistics.median(ratios):.2f} (min {min(ratios):.2f}, max {max(ratios):.2f})")
    print(f"over {args.rounds} rounds of {len(frames)} frames")


if __name__ == "__main__":
    main()
