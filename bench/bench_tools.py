"""The schema tools' speed (issue 3): validate_asset in process, validate_many through STDIO.

validate_asset of a ~20 KB asset against a schema with nested $refs (target ≥ 20,000/s in
process), and a ~1 MiB validate_many batch of 100 assets through a real `mcp-server serve` over
STDIO (target < 50 ms per batch). Medians of repeats.
Usage: python bench/bench_tools.py
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from mcp_server.registry.corpus import load_corpus  # noqa: E402
from mcp_server.registry.schemas import SchemaRegistry  # noqa: E402
from mcp_server.serve.tools import ToolContext  # noqa: E402
from mcp_server.serve.tools.validation_tools import validate_against, validation_tools  # noqa: E402

SCHEMA = {
    "$id": "https://bench.example.test/asset.json",
    "type": "object",
    "required": ["name", "layers"],
    "$defs": {
        "colour": {"type": "string", "pattern": "^#[0-9a-f]{6}$"},
        "point": {
            "type": "object",
            "required": ["x", "y"],
            "properties": {"x": {"type": "number"}, "y": {"type": "number"}, "colour": {"$ref": "#/$defs/colour"}},
        },
        "layer": {
            "type": "object",
            "required": ["id", "points"],
            "properties": {
                "id": {"type": "string"},
                "opacity": {"type": "number", "minimum": 0, "maximum": 1},
                "points": {"type": "array", "items": {"$ref": "#/$defs/point"}},
            },
        },
    },
    "properties": {"name": {"type": "string"}, "layers": {"type": "array", "items": {"$ref": "#/$defs/layer"}}},
}


def asset(points: int) -> dict:
    return {
        "name": "bench",
        "layers": [
            {
                "id": f"l{i}",
                "opacity": 0.5,
                "points": [{"x": j, "y": j * 2.5, "colour": "#a0b1c2"} for j in range(points)],
            }
            for i in range(4)
        ],
    }


def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        schemas = Path(folder) / "schemas"
        schemas.mkdir()
        (schemas / "asset.schema.json").write_text(json.dumps(SCHEMA))
        env = {"SYN_SCHEMAS_DIR": str(schemas)}
        corpus = load_corpus(env, SchemaRegistry())
        doc = asset(125)
        size = len(json.dumps(doc))
        assert validate_against(corpus, doc, "asset")["ok"]
        rates = []
        for _ in range(5):
            n = 5000
            began = time.perf_counter()
            for _ in range(n):
                validate_against(corpus, doc, "asset")
            rates.append(n / (time.perf_counter() - began))
        tool_rates = []
        tool = next(t for t in validation_tools(corpus, 100) if t.name == "validate_asset")
        context = ToolContext(registry=SchemaRegistry(), version=None)

        def through_tool(n: int) -> float:  # a schema tool computes: it answers at once, no coroutine
            began = time.perf_counter()
            for _ in range(n):
                tool.run({"asset": doc, "schema": "asset"}, context)
            return n / (time.perf_counter() - began)

        for _ in range(3):
            tool_rates.append(through_tool(3000))
        print(
            f"validate_asset, {size / 1024:.1f} KB asset, nested $refs: {statistics.median(rates):,.0f}/s in process "
            f"({statistics.median(tool_rates):,.0f}/s through the tool function) (target >= 20,000/s)"
        )

        points = 70
        while True:  # the largest batch of 100 assets that fits the 1 MiB frame limit
            batch = [asset(points) for _ in range(100)]
            frame = json.dumps(
                {"jsonrpc": "2.0", "id": 1, "method": "validate_many", "params": {"assets": batch, "schema": "asset"}}
            ).encode()
            if len(frame) <= 1_048_576:
                break
            points -= 1
        environment = dict(os.environ, PYTHONPATH=str(ROOT), MCP_READY_FILE=str(Path(folder) / "ready"), **env)
        process = subprocess.Popen(
            [sys.executable, "-m", "mcp_server", "serve"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=environment,
            bufsize=0,
        )
        assert process.stdin is not None and process.stdout is not None
        times = []
        for _ in range(21):
            began = time.perf_counter()
            process.stdin.write(frame + b"\n")
            reply = json.loads(process.stdout.readline())
            times.append(time.perf_counter() - began)
        assert reply.get("result", {}).get("ok") and len(reply["result"]["results"]) == 100, str(reply)[:300]
        process.communicate(b"", timeout=30)
        print(
            f"validate_many, 100 assets, {len(frame) / 1048576:.2f} MiB frame, through STDIO: "
            f"median {statistics.median(times) * 1000:.1f} ms per batch (target < 50 ms)"
        )


if __name__ == "__main__":
    main()
