"""The in-process chain of this checkout against another's, in alternating runs of one session (A/B).

Each round runs `bench_spine.run_chain` (the seeded session of `bench/corpus.py`) in a fresh
process per checkout, A then B then B then A…, so both see the same load. Prints each side's
median frames/s with its spread, and the median of the rounds' B/A ratios.
Usage: python bench/bench_chain_ab.py OTHER_CHECKOUT [--rounds N] [--frames N]
(the other checkout needs its compiled extension: build it, or copy `mcp_server/_rows*.so`).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

RUN = """
import sys
root = sys.argv[1]
sys.path[:0] = [root, root + "/bench"]
from bench_spine import run_chain
from corpus import build
from mcp_server.registry.schemas import SchemaRegistry
frames, tools = build(int(sys.argv[2]))
registry = SchemaRegistry()
run_chain(frames, tools, registry)  # warm-up
print(max(run_chain(frames, tools, registry)[0] for _ in range(3)))
"""


def rate(checkout: Path, frames: int) -> float:
    output = subprocess.run([sys.executable, "-c", RUN, str(checkout), str(frames)], capture_output=True, check=True)
    return float(output.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("other", type=Path, help="the checkout to compare with (A); this one is B")
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--frames", type=int, default=4000)
    args = parser.parse_args()
    a_rates: list[float] = []
    b_rates: list[float] = []
    for round_ in range(args.rounds):
        order = [(args.other, a_rates), (ROOT, b_rates)]
        for checkout, rates in order if round_ % 2 == 0 else reversed(order):
            rates.append(rate(checkout, args.frames))
    ratios = [b / a for a, b in zip(a_rates, b_rates, strict=True)]
    for label, rates in (("A " + str(args.other), a_rates), ("B " + str(ROOT), b_rates)):
        spread = f"min {min(rates):,.0f}, max {max(rates):,.0f}"
        print(f"{label}: median {statistics.median(rates):,.0f} frames/s ({spread})")
    print(
        f"B/A: median {statistics.median(ratios):.3f} (min {min(ratios):.3f}, max {max(ratios):.3f}) "
        f"over {args.rounds} rounds of {args.frames} frames"
    )


if __name__ == "__main__":
    main()
