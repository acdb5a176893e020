"""What the policy stage costs per frame (issue 6): the in-process chain with a 100-rule policy
against the same chain without one, in the same run, over the seeded corpus of bench_spine.

Prints the p50 per frame of each, the p50 added in µs and the ratio; medians of repeats. The two
chains take the frames in turn, so both see the same machine load. Usage: [--quick] [--json]
"""

from __future__ import annotations

import contextlib
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from bench_spine import percentiles  # noqa: E402
from corpus import CorpusTools, build  # noqa: E402

from mcp_server.chain.compose import build_chain  # noqa: E402
from mcp_server.chain.policy_check import PolicyCheck  # noqa: E402
from mcp_server.core.errors import Rejection  # noqa: E402
from mcp_server.core.session import Session  # noqa: E402
from mcp_server.core.types import Direction, Frame  # noqa: E402
from mcp_server.execution.policy import Policy  # noqa: E402
from mcp_server.registry.schemas import SchemaRegistry  # noqa: E402


def hundred_rules() -> Policy:
    """100 rules, none of which denies the corpus's traffic (a denial would skip the schema check)."""
    document = {
        "methods": {"deny": [f"x-vendor-{i}/*" for i in range(25)] + ["sampling/createMessage"]},
        "tools": {"allow": ["tool_*"], "deny": [f"blocked_{i}_*" for i in range(25)]},
        "outbound": {"domains": [f"*.api{i}.example.test" for i in range(10)], "methods": ["GET", "POST"]},
        "limits": {"client_to_server_bytes": 1 << 20, "server_to_client_bytes": 1 << 20},
        "tool": [{"match": f"other_{i}", "timeout_seconds": 5} for i in range(33)]
        + [{"match": "tool_*", "max_argument_bytes": 1 << 20, "timeout_seconds": 10}],
    }
    policy = Policy.from_document(document)
    assert policy.rule_count == 100, policy.rule_count
    return policy


def run(frames: list, tools: list[dict], registry: SchemaRegistry, policy: Policy) -> tuple[list[float], list[float]]:
    """Both chains over the corpus, frame by frame in turn (order alternating), each with its own
    session: per-frame latencies measured in the same moments, so machine noise hits both alike."""
    schemas = CorpusTools(registry, tools)
    both = (Direction.CLIENT_TO_SERVER, Direction.SERVER_TO_CLIENT)
    plain = {d: build_chain(registry, d, tools=schemas).check for d in both}
    governed = {d: build_chain(registry, d, tools=schemas, policy=PolicyCheck(policy, d)).check for d in both}
    sessions = (Session(), Session())
    without: list[float] = []
    with_policy: list[float] = []
    clock = time.perf_counter
    for index, item in enumerate(frames):
        direction = Direction.CLIENT_TO_SERVER if item.client else Direction.SERVER_TO_CLIENT
        order = ((plain, 0, without), (governed, 1, with_policy))
        for chains, which, latencies in order if index % 2 == 0 else order[::-1]:
            frame = Frame(raw=item.raw, transport="bench", session=sessions[which], direction=direction)
            start = clock()
            with contextlib.suppress(Rejection):
                chains[direction](frame)
            latencies.append(clock() - start)
    return without, with_policy


def main() -> None:
    quick = "--quick" in sys.argv
    repeats = 3 if quick else 7
    frames, tools = build(1000 if quick else 4000)
    registry = SchemaRegistry()
    policy = hundred_rules()
    run(frames, tools, registry, policy)  # warm: compile every validator once
    p50s: dict[str, list[float]] = {"without": [], "with": []}
    for _ in range(repeats):
        without_run, with_run = run(frames, tools, registry, policy)
        p50s["without"].append(percentiles(without_run)[0] * 1e6)
        p50s["with"].append(percentiles(with_run)[0] * 1e6)
    without, with_policy = statistics.median(p50s["without"]), statistics.median(p50s["with"])
    figures = {
        "frames": len(frames),
        "rules": policy.rule_count,
        "repeats": repeats,
        "p50_us_without_policy": round(without, 2),
        "p50_us_with_policy": round(with_policy, 2),
        "p50_added_us": round(with_policy - without, 2),
        "ratio": round(with_policy / without, 3),
    }
    if "--json" in sys.argv:
        print(json.dumps(figures))
        return
    print(f"policy stage: {len(frames)} frames, {policy.rule_count} rules, medians of {repeats} same-run repeats")
    print(f"  chain without policy  p50 {without:7.2f} µs/frame")
    print(f"  chain with policy     p50 {with_policy:7.2f} µs/frame")
    added = with_policy - without
    print(f"  added by the policy   p50 {added:+7.2f} µs/frame (ratio {with_policy / without:.3f}, budget 5 µs)")


if __name__ == "__main__":
    main()
