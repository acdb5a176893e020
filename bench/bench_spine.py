"""The pipeline's speed against its peers, all from one run (issue 2 §8).

Prints frames/s and p50/p99 per frame for: the in-process chain, `orjson.loads` alone (the
floor), the official SDK parsing the same frames, and a real `mcp-server serve` over STDIO; and
the start-up compile of every bundled schema. Medians of repeats; ratios are same-run.
Usage: python bench/bench_spine.py [--quick] [--json]
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import orjson

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from corpus import VERSION, CorpusTools, build  # noqa: E402

from mcp_server.chain.compose import build_chain  # noqa: E402
from mcp_server.core.errors import Rejection  # noqa: E402
from mcp_server.core.session import Session  # noqa: E402
from mcp_server.core.types import REQUEST, Direction, Frame  # noqa: E402
from mcp_server.registry.schemas import SchemaRegistry  # noqa: E402


def percentiles(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return ordered[len(ordered) // 2], ordered[int(len(ordered) * 0.99)]


def run_chain(frames: list, tools: list[dict], registry: SchemaRegistry, events=None) -> tuple[float, list[float]]:
    """The verdict path as a gateway runs it on a recorded session: each frame through its direction's
    compiled chain, a request expected (so its response is checked against its result type) and
    settled by its reply, the version committed by the initialize result, and (with ``events``) the
    frame's row in the log."""
    schemas = CorpusTools(registry, tools)
    both = (Direction.CLIENT_TO_SERVER, Direction.SERVER_TO_CLIENT)
    chains = {d: build_chain(registry, d, tools=schemas) for d in both}
    session = Session()
    latencies: list[float] = []
    client, server = chains[Direction.CLIENT_TO_SERVER].check, chains[Direction.SERVER_TO_CLIENT].check
    log_frame, log_refused = (events.frame, events.refused) if events is not None else (None, None)

    async def drive() -> float:  # inside an event loop, as every server and gateway runs the chain
        began = time.perf_counter()
        for item in frames:
            direction = Direction.CLIENT_TO_SERVER if item.client else Direction.SERVER_TO_CLIENT
            start = time.perf_counter()
            frame = Frame(raw=item.raw, transport="bench", session=session, direction=direction)
            try:
                message = (client if item.client else server)(frame)
            except Rejection as rejection:
                session.answered(direction, rejection.message)
                if log_refused is not None:
                    log_refused(frame, rejection, None, start)
            else:
                if message.kind is REQUEST and message.id is not None:
                    session.expect(direction, message.id, message.method, message.tool)
                else:
                    session.answered(direction, message)  # a reply settles the request it answers
                    if message.method == "initialize":
                        session.negotiate(VERSION)
                if log_frame is not None:
                    log_frame(frame, message, None, start, "relay")
            latencies.append(time.perf_counter() - start)
        return len(frames) / (time.perf_counter() - began)

    return asyncio.run(drive()), latencies


def run_orjson(frames: list) -> tuple[float, list[float]]:
    latencies = []
    loads = orjson.loads
    began = time.perf_counter()
    for item in frames:
        start = time.perf_counter()
        with contextlib.suppress(orjson.JSONDecodeError):
            loads(item.raw)
        latencies.append(time.perf_counter() - start)
    return len(frames) / (time.perf_counter() - began), latencies


def run_validate_floor(frames: list, tools: list[dict], registry: SchemaRegistry) -> tuple[float, list[float]]:
    """The two Rust calls every validating pipeline makes, with no pipeline around them: parse,
    then the compiled validator of the frame's method (and of the tool's input or output)."""
    protocol = registry.protocol(VERSION)
    schemas = CorpusTools(registry, tools)
    client, server = Direction.CLIENT_TO_SERVER, Direction.SERVER_TO_CLIENT
    latencies = []
    loads = orjson.loads
    began = time.perf_counter()
    for item in frames:
        start = time.perf_counter()
        try:
            document = loads(item.raw)
        except orjson.JSONDecodeError:
            document = None
        if isinstance(document, dict) and item.method:
            direction = client if item.client else server
            if "method" in document:
                validator = (
                    protocol.request_validator(direction, item.method)
                    if "id" in document
                    else protocol.notification_validator(direction, item.method)
                )
                if validator is not None and validator.is_valid(document) and item.method == "tools/call":
                    params = document.get("params") or {}
                    tool = schemas.io(params.get("name", ""))
                    if tool is not None:
                        tool.input.is_valid(params.get("arguments", {}))
            elif isinstance(document.get("result"), dict):
                validator = protocol.result_validator(item.method)
                if validator is not None:
                    validator.is_valid(document)  # the whole frame: envelope and result type
        latencies.append(time.perf_counter() - start)
    return len(frames) / (time.perf_counter() - began), latencies


def run_sdk(frames: list) -> tuple[float, list[float]]:
    from mcp_types import jsonrpc, methods

    adapter = jsonrpc.jsonrpc_message_adapter
    latencies = []
    began = time.perf_counter()
    for item in frames:
        start = time.perf_counter()
        try:
            message = adapter.validate_json(item.raw)
            data = message.model_dump(by_alias=True, exclude_none=True)
            if "method" in data:
                if "id" in data:
                    check = methods.validate_client_request if item.client else methods.validate_server_request
                else:
                    check = (
                        methods.validate_client_notification if item.client else methods.validate_server_notification
                    )
                check(data["method"], VERSION, data.get("params"))
            elif "result" in data and item.method:
                (methods.validate_server_result if not item.client else methods.validate_client_result)(
                    item.method, VERSION, data["result"]
                )
        except Exception:  # the SDK raises pydantic, Key and Value errors for invalid frames
            pass
        latencies.append(time.perf_counter() - start)
    return len(frames) / (time.perf_counter() - began), latencies


_CHUNK = 1 << 16


def serve_frames(n: int, size_mix: list[int]) -> list[bytes]:
    """The mixed STDIO corpus: pings and ``validate_asset`` calls with text of ``size_mix`` bytes, alternating."""
    frames = []
    for index in range(n):
        if index % 2:
            frames.append(b'{"jsonrpc":"2.0","id":%d,"method":"ping"}\n' % index)
        else:
            text = "x" * size_mix[index % len(size_mix)]
            arguments = {"schema": "TextContent", "asset": {"type": "text", "text": text}}
            call = {
                "jsonrpc": "2.0",
                "id": index,
                "method": "tools/call",
                "params": {"name": "validate_asset", "arguments": arguments},
            }
            frames.append(json.dumps(call).encode() + b"\n")
    return frames


def start_serve(root: Path = ROOT) -> tuple[subprocess.Popen[bytes], float]:
    """``mcp-server serve`` over STDIO from the checkout at ``root``, initialized; and the seconds
    from spawning it to its ready file."""
    ready = Path(tempfile.gettempdir()) / f"bench-{os.getpid()}.ready"
    ready.unlink(missing_ok=True)
    env = dict(
        os.environ,
        PYTHONPATH=str(root),
        MCP_READY_FILE=str(ready),
        MCP_RUNS_DIR=str(Path(tempfile.gettempdir()) / f"bench-runs-{os.getpid()}"),
    )
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # as installed: modules load from bytecode, not compiled each start
    began = time.perf_counter()
    process = subprocess.Popen(
        [sys.executable, "-m", "mcp_server", "serve"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
        bufsize=0,
        cwd=root,  # ``-m`` looks in the working directory first: it must be the checkout measured
    )
    while not ready.exists():  # a bench, not a test: polling the file is the measurement
        if process.poll() is not None:
            raise RuntimeError(f"mcp-server serve from {root} exited with {process.returncode}")
        time.sleep(0.0005)
    to_ready = time.perf_counter() - began
    assert process.stdin is not None and process.stdout is not None
    client = {"name": "b", "version": "1"}
    initialize = {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {"protocolVersion": VERSION, "capabilities": {}, "clientInfo": client},
    }
    process.stdin.write(json.dumps(initialize).encode() + b"\n")
    process.stdout.readline()
    process.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
    return process, to_ready


def pipelined(process: subprocess.Popen[bytes], frames: list[bytes]) -> float:
    """Frames/s of ``frames`` written by one thread while this one reads every reply. The client
    spends its time in system calls (one write of all the frames, reads of 1 MiB counted in C): on
    two cores it leaves the server, and the server's log writer, the CPU they need."""
    assert process.stdin is not None and process.stdout is not None
    data, out = b"".join(frames), process.stdout.fileno()
    sink = process.stdin

    def write() -> None:
        sink.write(data)  # a raw pipe: one call, every byte written before it returns
        sink.flush()

    began = time.perf_counter()
    writer = threading.Thread(target=write)
    writer.start()
    replies = 0
    while replies < len(frames):
        chunk = os.read(out, 1 << 20)
        if not chunk:
            raise RuntimeError("the server closed its output early")
        replies += chunk.count(b"\n")
    elapsed = time.perf_counter() - began
    writer.join()
    return len(frames) / elapsed


def cpu_seconds(process: subprocess.Popen[bytes]) -> float:
    """The process's CPU time so far (user + system), from ``/proc``."""
    fields = Path(f"/proc/{process.pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def peak_rss_mib(process: subprocess.Popen[bytes]) -> float:
    """The process's peak resident set so far (``VmHWM``), in MiB."""
    for line in Path(f"/proc/{process.pid}/status").read_text().splitlines():
        if line.startswith("VmHWM"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmHWM")


def run_stdio(n: int, size_mix: list[int]) -> tuple[float, tuple[float, float]]:
    process, _ = start_serve()
    rate = pipelined(process, serve_frames(n, size_mix))
    assert process.stdin is not None and process.stdout is not None
    reader = os.fdopen(process.stdout.fileno(), "rb", buffering=_CHUNK, closefd=False)  # every reply was read
    latencies = []
    for index in range(2000):
        start = time.perf_counter()
        process.stdin.write(b'{"jsonrpc":"2.0","id":"p%d","method":"ping"}\n' % index)
        reader.readline()
        latencies.append(time.perf_counter() - start)
    process.communicate(b"", timeout=30)
    return rate, percentiles(latencies)


STARTUP = """
import os, time, sys
sys.path.insert(0, sys.argv[1])
def rss():
    for line in open('/proc/self/status'):
        if line.startswith('VmRSS'):
            return int(line.split()[1]) / 1024
import jsonschema_rs, orjson
from mcp_server.registry.schemas import SchemaRegistry
before = rss(); began = time.perf_counter()
SchemaRegistry()
print((time.perf_counter() - began) * 1000, rss() - before)
"""


def run_startup() -> tuple[float, float]:
    samples = []
    for _ in range(5):
        output = subprocess.run([sys.executable, "-c", STARTUP, str(ROOT)], capture_output=True, check=True).stdout
        samples.append(tuple(float(x) for x in output.split()))
    return statistics.median(s[0] for s in samples), statistics.median(s[1] for s in samples)


def main() -> None:
    quick = "--quick" in sys.argv
    repeats = 3 if quick else 5
    frames, tools = build(1000 if quick else 4000)
    registry = SchemaRegistry()
    results: dict[str, list] = {"chain": [], "orjson": [], "floor": [], "sdk": []}
    lat: dict[str, list[float]] = {"chain": [], "orjson": [], "floor": [], "sdk": []}
    for _ in range(repeats):
        for name, runner in (
            ("chain", lambda: run_chain(frames, tools, registry)),
            ("orjson", lambda: run_orjson(frames)),
            ("floor", lambda: run_validate_floor(frames, tools, registry)),
            ("sdk", lambda: run_sdk(frames)),
        ):
            rate, latencies = runner()
            results[name].append(rate)
            lat[name] = latencies
    stdio_rates, stdio_pcts = [], []
    for _ in range(3 if not quick else 1):
        rate, pcts = run_stdio(5000 if quick else 20000, [50, 200, 1000, 5000, 20000])
        stdio_rates.append(rate)
        stdio_pcts.append(pcts)
    compile_ms, compile_mib = run_startup()
    med = {name: statistics.median(rates) for name, rates in results.items()}
    total_bytes = sum(len(f.raw) for f in frames)
    print(
        f"corpus: {len(frames)} frames at {VERSION}, {total_bytes / 1e6:.1f} MB, "
        f"{sum(not f.valid for f in frames)} invalid; medians of {repeats} runs"
    )
    print(f"{'':28}{'frames/s':>12}{'p50 µs':>10}{'p99 µs':>10}")
    for name, label in (
        ("chain", "in-process chain"),
        ("orjson", "orjson.loads (floor)"),
        ("floor", "parse + validators alone"),
        ("sdk", "official SDK parsing"),
    ):
        p50, p99 = percentiles(lat[name])
        print(f"{label:28}{med[name]:12.0f}{p50 * 1e6:10.1f}{p99 * 1e6:10.1f}")
    stdio_rate = statistics.median(stdio_rates)
    p50, p99 = stdio_pcts[len(stdio_pcts) // 2]
    print(
        f"{'mcp-server serve over STDIO':28}{stdio_rate:12.0f}{p50 * 1e6:10.1f}{p99 * 1e6:10.1f}"
        "  (pipelined; p50/p99: ping round trips)"
    )
    print(f"chain / orjson floor: {med['chain'] / med['orjson']:.2f} (target >= 0.6)")
    print(
        f"parse + validators alone / orjson floor: {med['floor'] / med['orjson']:.2f} "
        "(the ceiling of any chain that validates)"
    )
    print(f"chain / parse + validators alone: {med['chain'] / med['floor']:.2f}")
    print(f"chain / official SDK: {med['chain'] / med['sdk']:.1f}x (target >= 5)")
    print(f"STDIO process: {stdio_rate:.0f} frames/s (target >= 20,000)")
    print(
        f"start-up compile of all bundled schemas: {compile_ms:.0f} ms, {compile_mib:.1f} MiB RSS"
        " (targets <= 100 ms, <= 15 MiB)"
    )
    if "--json" in sys.argv:
        print(
            json.dumps(
                {
                    "chain": med["chain"],
                    "orjson": med["orjson"],
                    "floor": med["floor"],
                    "sdk": med["sdk"],
                    "stdio": stdio_rate,
                    "compile_ms": compile_ms,
                    "compile_mib": compile_mib,
                }
            )
        )


if __name__ == "__main__":
    main()
