"""What the policy stage costs per frame (issue 6): the in-process chain with a 100-rule policy
against the same chain without one, in the same run, over the seeded corpus of bench_spine.

Prints the p50 per frame of each, the p50 added in µs and the ratio; medians of repeats,
the two chains interleaved. Usage: python bench/bench_policy.py [--quick] [--json]
"""

from __future__ import annotations

import asyncio
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from bench_spine import CorpusTools, percentiles  # noqa: E402
from corpus import VERSION, build  # noqa: E402

from mcp_server.chain import build_chain  # noqa: E402
from mcp_server.policy import Policy, policy_stage  # noqa: E402
from mcp_server.registry import SchemaRegistry  # noqa: E402
from mcp_server.types import Direction, Frame, Reply, Session  # noqa: E402


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


def run(frames: list, tools: list[dict], registry: SchemaRegistry, policy: Policy | None) -> list[float]:
    async def terminal(frame: Frame) -> Reply | None:
        message = frame.message
        if message is not None and message.kind.value == "request" and message.id is not None and message.method:
            tool = (message.params or {}).get("name") if message.method == "tools/call" else None
            frame.session.expect_reply(frame.direction, message.id, message.method, tool)
        if message is not None and message.method == "initialize" and frame.direction is Direction.SERVER_TO_CLIENT:
            frame.session.protocol_version = VERSION
        return None

    stage = None if policy is None else policy_stage(policy)
    chain = build_chain(terminal, registry=registry, tools=CorpusTools(registry, tools), policy=stage)
    session = Session()
    latencies: list[float] = []

    async def drive() -> None:
        for item in frames:
            direction = Direction.CLIENT_TO_SERVER if item.client else Direction.SERVER_TO_CLIENT
            start = time.perf_counter()
            await chain(Frame(raw=item.raw, transport="bench", session=session, direction=direction))
            latencies.append(time.perf_counter() - start)

    asyncio.run(drive())
    return latencies


def main() -> None:
    quick = "--quick" in sys.argv
    repeats = 3 if quick else 7
    frames, tools = build(1000 if quick else 4000)
    registry = SchemaRegistry()
    policy = hundred_rules()
    run(frames, tools, registry, policy)  # warm: compile every validator once
    p50s: dict[str, list[float]] = {"without": [], "with": []}
    for _ in range(repeats):
        for name, chosen in (("without", None), ("with", policy)):
            p50s[name].append(percentiles(run(frames, tools, registry, chosen))[0] * 1e6)
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
