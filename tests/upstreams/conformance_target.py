"""The fixtures the official conformance suite's server scenarios call, written with the `mcp` SDK.

`test_*` tools, `test://` resources, `test_*` prompts, sampling, elicitation, progress, logging,
completion and subscriptions, as each scenario's description asks. Served over STDIO (behind
`mcp-server gateway`) or, with `--http PORT`, over Streamable HTTP (the direct baseline). With
`--http PORT --standalone` its sampling and elicitation requests name no request of the client's:
they go on the session's GET stream, as a server that leaves `related_request_id` out sends them.
Both protocol eras by default; `--era legacy` serves only the `initialize` handshake (2025-11-25 and
earlier), `--era modern` only the 2026-07-28 per-request envelope (see `eras.py`).
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import os
import sys
import warnings
from typing import Annotated, Any

import anyio
from eras import ERAS, http_app, serve_stdio  # run as a script: its own folder is on the path
from mcp import types
from mcp.server.mcpserver import Context, MCPServer, Resolve, Sample
from mcp.server.mcpserver.prompts.base import Message, Prompt, UserMessage
from mcp.server.request_state import RequestStateSecurity
from mcp.shared.exceptions import MCPDeprecationWarning

warnings.simplefilter("ignore", MCPDeprecationWarning)  # sampling, logging, roots: still in the suite

# A 1x1 red PNG and a 44-byte silent WAV header with one sample: the smallest valid media.
PNG = base64.b64encode(
    bytes.fromhex(
        "89504e470d0a1a0a0000000d4948445200000001000000010802000000907753de"
        "0000000c4944415408d763f8cfc0000003010100c9fe92ef0000000049454e44ae426082"
    )
).decode()
WAV = base64.b64encode(
    b"RIFF"
    + (38).to_bytes(4, "little")
    + b"WAVEfmt "
    + (16).to_bytes(4, "little")
    + (1).to_bytes(2, "little")
    + (1).to_bytes(2, "little")
    + (8000).to_bytes(4, "little")
    + (8000).to_bytes(4, "little")
    + (1).to_bytes(2, "little")
    + (8).to_bytes(2, "little")
    + b"data"
    + (2).to_bytes(4, "little")
    + b"\x80\x80"
).decode()


def _options() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="The conformance suite's server fixtures.")
    parser.add_argument("--http", type=int, metavar="PORT", help="Streamable HTTP at /mcp (default: STDIO)")
    parser.add_argument("--standalone", action="store_true", help="server requests on the session's GET stream")
    parser.add_argument("--era", choices=ERAS, help="serve one protocol era only (default: both)")
    parser.add_argument(
        "--state-key", metavar="KEY", help="seals requestState; replicas share it (default: a key of its own)"
    )
    return parser.parse_args()


OPTIONS = _options()
server = MCPServer(
    "conformance-target",
    version="1.0.0",
    request_state_security=RequestStateSecurity(keys=[OPTIONS.state_key]) if OPTIONS.state_key else None,
)
RELATED = not OPTIONS.standalone  # server requests on the calling request's own stream
subscribed: set[str] = set()
changing: set[asyncio.Task[None]] = set()


def text(value: str) -> types.TextContent:
    return types.TextContent(type="text", text=value)


@server.tool()
def test_simple_text() -> list[types.ContentBlock]:
    """Returns simple text."""
    return [text("This is a simple text response for testing.")]


@server.tool()
def test_image_content() -> list[types.ContentBlock]:
    """Returns an image."""
    return [types.ImageContent(type="image", data=PNG, mime_type="image/png")]


@server.tool()
def test_audio_content() -> list[types.ContentBlock]:
    """Returns audio."""
    return [types.AudioContent(type="audio", data=WAV, mime_type="audio/wav")]


def _resource(uri: str, mime: str, body: str) -> types.EmbeddedResource:
    return types.EmbeddedResource(
        type="resource", resource=types.TextResourceContents(uri=uri, mime_type=mime, text=body)
    )


@server.tool()
def test_embedded_resource() -> list[types.ContentBlock]:
    """Returns an embedded resource."""
    return [_resource("test://embedded-resource", "text/plain", "This is an embedded resource content.")]


@server.tool()
def test_multiple_content_types() -> list[types.ContentBlock]:
    """Returns text, an image and a resource."""
    return [
        text("Multiple content types test:"),
        types.ImageContent(type="image", data=PNG, mime_type="image/png"),
        _resource("test://mixed-content-resource", "application/json", '{"test":"data","value":123}'),
    ]


@server.tool()
async def test_tool_with_logging(ctx: Context) -> str:
    """Sends three log messages while it runs."""
    await ctx.info("Tool execution started")
    await asyncio.sleep(0.05)
    await ctx.info("Tool processing data")
    await asyncio.sleep(0.05)
    await ctx.info("Tool execution completed")
    return "Logging tool completed"


@server.tool()
async def test_tool_with_progress(ctx: Context) -> str:
    """Reports progress 0, 50 and 100 of 100."""
    for step in (0, 50, 100):
        await ctx.report_progress(step, 100)
        if step < 100:
            await asyncio.sleep(0.05)
    return "Progress tool completed"


@server.tool()
def test_error_handling() -> str:
    """Always fails."""
    raise ValueError("This tool intentionally returns an error for testing")


@server.tool()
async def test_sampling(prompt: str, ctx: Context) -> str:
    """Asks the client's model."""
    result = await ctx.session.create_message(
        [types.SamplingMessage(role="user", content=text(prompt))], max_tokens=100, related_request_id=_related(ctx)
    )
    content = result.content if not isinstance(result.content, list) else result.content[0]
    return f"LLM response: {getattr(content, 'text', '')}"


def _related(ctx: Context) -> Any:
    """The request a server request belongs to (``None``: the session's GET stream carries it)."""
    return ctx.request_id if RELATED else None


async def _elicit(ctx: Context, message: str, schema: dict[str, Any]) -> types.ElicitResult:
    return await ctx.session.elicit_form(message, schema, related_request_id=_related(ctx))  # type: ignore[arg-type]


@server.tool()
async def test_elicitation(message: str, ctx: Context) -> str:
    """Asks the user."""
    schema = {
        "type": "object",
        "properties": {
            "username": {"type": "string", "description": "User's response"},
            "email": {"type": "string", "description": "User's email address"},
        },
        "required": ["username", "email"],
    }
    result = await _elicit(ctx, message, schema)
    return f"User response: action={result.action}, content={json.dumps(result.content)}"


@server.tool()
async def test_elicitation_sep1034_defaults(ctx: Context) -> str:
    """Asks the user, with a default for every primitive type."""
    schema = {
        "type": "object",
        "properties": {
            "name": {"type": "string", "default": "John Doe"},
            "age": {"type": "integer", "default": 30},
            "score": {"type": "number", "default": 95.5},
            "status": {"type": "string", "enum": ["active", "inactive", "pending"], "default": "active"},
            "verified": {"type": "boolean", "default": True},
        },
    }
    result = await _elicit(ctx, "Please review your profile", schema)
    return f"Elicitation completed: action={result.action}, content={json.dumps(result.content)}"


@server.tool()
async def test_elicitation_sep1330_enums(ctx: Context) -> str:
    """Asks the user, with every enum form."""
    options = ["option1", "option2", "option3"]
    schema = {
        "type": "object",
        "properties": {
            "untitledSingle": {"type": "string", "enum": options},
            "titledSingle": {
                "type": "string",
                "oneOf": [
                    {"const": "value1", "title": "First Option"},
                    {"const": "value2", "title": "Second Option"},
                    {"const": "value3", "title": "Third Option"},
                ],
            },
            "legacyEnum": {
                "type": "string",
                "enum": ["opt1", "opt2", "opt3"],
                "enumNames": ["Option One", "Option Two", "Option Three"],
            },
            "untitledMulti": {"type": "array", "items": {"type": "string", "enum": options}},
            "titledMulti": {
                "type": "array",
                "items": {
                    "anyOf": [
                        {"const": "value1", "title": "First Choice"},
                        {"const": "value2", "title": "Second Choice"},
                        {"const": "value3", "title": "Third Choice"},
                    ]
                },
            },
        },
    }
    result = await _elicit(ctx, "Pick some options", schema)
    return f"Elicitation completed: action={result.action}, content={json.dumps(result.content)}"


@server.tool()
async def test_reconnection(ctx: Context) -> str:
    """Closes its SSE stream mid-call (where the transport has one), then answers."""
    await ctx.close_sse_stream()
    await asyncio.sleep(0.1)
    return "Reconnection test completed"


# -- 2026-07-28: multi round-trip requests (SEP-2322), the pre-release line's scenarios ----------


def _ask_name(message: str = "What is your name?", key: str = "name") -> types.ElicitRequest:
    schema = {"type": "object", "properties": {key: {"type": "string"}}, "required": [key]}
    return types.ElicitRequest(params=types.ElicitRequestFormParams(message=message, requested_schema=schema))


def _sample(text_: str, max_tokens: int) -> types.CreateMessageRequest:
    message = types.SamplingMessage(role="user", content=text(text_))
    return types.CreateMessageRequest(
        params=types.CreateMessageRequestParams(messages=[message], max_tokens=max_tokens)
    )


def _needs(requests: dict[str, Any], state: str | None = None) -> types.InputRequiredResult:
    return types.InputRequiredResult(input_requests=requests, request_state=state)


def _answer(responses: Any, key: str) -> Any:
    answer = responses.get(key) if isinstance(responses, dict) else None
    return answer.model_dump(by_alias=True, exclude_none=True) if hasattr(answer, "model_dump") else answer


def _greeted_after_asking(ctx: Context) -> Any:
    """An InputRequiredResult asking the user's name, then (its answer in the retry) a greeting."""
    responses = ctx.input_responses
    if not responses or "user_name" not in responses:
        return _needs({"user_name": _ask_name()})
    content = (_answer(responses, "user_name") or {}).get("content") or {}
    return [text(f"Hello, {content.get('name', 'stranger')}!")]


@server.tool()
def test_input_required_result_elicitation(ctx: Context) -> Any:
    """Asks for a name, then greets."""
    return _greeted_after_asking(ctx)


@server.tool()
def test_input_required_result_sampling(ctx: Context) -> Any:
    """Asks the client's model, then answers with its reply."""
    responses = ctx.input_responses
    if not responses or "capital_question" not in responses:
        return _needs({"capital_question": _sample("What is the capital of France?", 100)})
    reply = _answer(responses, "capital_question") or {}
    return [text(f"The model said: {(reply.get('content') or {}).get('text', '')}")]


@server.tool()
def test_input_required_result_list_roots(ctx: Context) -> Any:
    """Asks for the client's roots, then lists them."""
    responses = ctx.input_responses
    if not responses or "client_roots" not in responses:
        return _needs({"client_roots": types.ListRootsRequest()})
    roots = (_answer(responses, "client_roots") or {}).get("roots") or []
    return [text("Roots: " + ", ".join(str(root.get("uri")) for root in roots))]


@server.tool()
def test_input_required_result_request_state(ctx: Context) -> Any:
    """Asks for a confirmation with state, then checks the state came back."""
    responses = ctx.input_responses
    if not responses or "confirm" not in responses:
        schema = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}
        confirm = types.ElicitRequest(
            params=types.ElicitRequestFormParams(message="Please confirm", requested_schema=schema)
        )
        return _needs({"confirm": confirm}, "round-1")
    return [text("state-ok" if ctx.request_state == "round-1" else "state-missing")]


@server.tool()
def test_input_required_result_multiple_inputs(ctx: Context) -> Any:
    """Asks for three things at once."""
    responses = ctx.input_responses or {}
    wanted = {
        "user_name": _ask_name(),
        "greeting": _sample("Generate a greeting", 50),
        "client_roots": types.ListRootsRequest(),
    }
    missing = {key: request for key, request in wanted.items() if key not in responses}
    if missing:
        return _needs(missing, "multiple")
    return [text("All inputs received: " + ", ".join(sorted(wanted)))]


@server.tool()
def test_input_required_result_multi_round(ctx: Context) -> Any:
    """Two rounds of questions, the state evolving."""
    responses = ctx.input_responses or {}
    if ctx.request_state == "round-2" and "step2" in responses:
        return [text("Multi-round complete")]
    if ctx.request_state == "round-1" and "step1" in responses:
        return _needs({"step2": _ask_name("Step 2: What is your favorite color?", "color")}, "round-2")
    return _needs({"step1": _ask_name("Step 1: What is your name?")}, "round-1")


@server.tool()
def test_input_required_result_tampered_state(ctx: Context) -> Any:
    """State the SDK seals; a tampered one never reaches here."""
    if not ctx.input_responses:
        return _needs({"confirm": _ask_name("Confirm your name")}, "sealed")
    return [text("state accepted")]


@server.tool()
def test_streaming_elicitation(ctx: Context) -> Any:
    """Asks the user on its response stream the 2026-07-28 way: an InputRequiredResult, never a
    request of its own (SEP-2575's server-stateless scenario), then greets."""
    return _greeted_after_asking(ctx)


@server.tool()
async def test_logging_tool(ctx: Context) -> str:
    """Logs at three levels; on 2026-07-28 only what the request's `_meta` logLevel asks for is sent
    (the SDK's rule; none without it: SEP-2575's server-stateless scenario)."""
    await ctx.debug("Logging tool: debug")
    await ctx.info("Logging tool: info")
    await ctx.warning("Logging tool: warning")
    return "Logging tool completed"


def _ask_model() -> Sample:
    return Sample([types.SamplingMessage(role="user", content=text("Say hello"))], max_tokens=20)


@server.tool()
def test_missing_capability(reply: Annotated[types.CreateMessageResult, Resolve(_ask_model)]) -> str:
    """Needs the client's model: a client that declared no sampling gets -32021 (SEP-2575)."""
    return f"The model said: {getattr(reply.content, 'text', '')}"


@server.tool()
def test_input_required_result_capabilities(ctx: Context) -> Any:
    """Asks only for what the client declared it can answer, then confirms."""
    if ctx.input_responses:
        return [text("Inputs received: " + ", ".join(sorted(ctx.input_responses)))]
    declared = ctx.client_capabilities
    wanted: dict[str, Any] = {}
    if declared is not None and declared.sampling is not None:
        wanted["capital_question"] = _sample("What is the capital of France?", 100)
    if declared is not None and declared.elicitation is not None:
        wanted["user_name"] = _ask_name()
    if declared is not None and declared.roots is not None:
        wanted["client_roots"] = types.ListRootsRequest()
    return _needs(wanted) if wanted else [text("Nothing to ask: the client declared no capability to answer")]


@server.prompt()
def test_input_required_result_prompt(ctx: Context) -> Any:
    """Asks what context to use, then renders with it (SEP-2322 on a non-tool request)."""
    responses = ctx.input_responses
    if not responses or "user_context" not in responses:
        schema = {"type": "object", "properties": {"context": {"type": "string"}}, "required": ["context"]}
        ask = types.ElicitRequest(
            params=types.ElicitRequestFormParams(message="What context should the prompt use?", requested_schema=schema)
        )
        return _needs({"user_context": ask})
    content = (_answer(responses, "user_context") or {}).get("content") or {}
    return [UserMessage(f"Prompt with context: {content.get('context', '')}")]


def _changing_tool() -> str:
    """Comes and goes with `test_trigger_tool_change`."""
    return "here for now"


def _changing_prompt() -> list[Message]:
    """Comes and goes with `test_trigger_prompt_change`."""
    return [UserMessage("here for now")]


# Each change is undone before the call returns: the lists stay the same between calls, so replicas
# of the target list alike and a scenario comparing two tools/list answers sees no change of ours.


@server.tool()
async def test_trigger_tool_change(ctx: Context) -> str:
    """Adds a tool and removes it, saying each time that the list changed."""
    server.add_tool(_changing_tool, name="test_changing_tool")
    await ctx.notify_tools_changed()
    server.remove_tool("test_changing_tool")
    await ctx.notify_tools_changed()
    return "tool list changed twice"


@server.tool()
async def test_trigger_prompt_change(ctx: Context) -> str:
    """Adds a prompt and removes it, saying each time that the list changed."""
    server.add_prompt(Prompt.from_function(_changing_prompt, name="test_changing_prompt"))
    await ctx.notify_prompts_changed()
    server.remove_prompt("test_changing_prompt")
    await ctx.notify_prompts_changed()
    return "prompt list changed twice"


@server.resource("test://static-text", mime_type="text/plain", description="A static text resource")
def static_text() -> str:
    return "This is the content of the static text resource."


@server.resource("test://static-binary", mime_type="image/png", description="A static binary resource")
def static_binary() -> bytes:
    return base64.b64decode(PNG)


@server.resource("test://watched-resource", mime_type="text/plain", description="A resource to subscribe to")
def watched_resource() -> str:
    return "Watched resource content."


@server.resource("test://template/{id}/data", mime_type="application/json", description="A templated resource")
def template_data(id: str) -> str:
    return json.dumps({"id": id, "templateTest": True, "data": f"Data for ID: {id}"}, separators=(",", ":"))


@server.prompt()
def test_simple_prompt() -> list[Message]:
    """A prompt without arguments."""
    return [UserMessage("This is a simple prompt for testing.")]


@server.prompt()
def test_prompt_with_arguments(arg1: str, arg2: str) -> list[Message]:
    """A prompt with two arguments."""
    return [UserMessage(f"Prompt with arguments: arg1='{arg1}', arg2='{arg2}'")]


@server.prompt()
def test_prompt_with_embedded_resource(resourceUri: str) -> list[Message]:
    """A prompt that embeds a resource."""
    embedded = types.EmbeddedResource(
        type="resource",
        resource=types.TextResourceContents(
            uri=resourceUri, mime_type="text/plain", text="Embedded resource content for testing."
        ),
    )
    return [UserMessage(content=embedded), UserMessage("Please process the embedded resource above.")]


@server.prompt()
def test_prompt_with_image() -> list[Message]:
    """A prompt with an image."""
    image = types.ImageContent(type="image", data=PNG, mime_type="image/png")
    return [UserMessage(content=image), UserMessage("Please analyze the image above.")]


@server.completion()
async def complete(
    ref: types.PromptReference | types.ResourceTemplateReference,
    argument: types.CompletionArgument,
    context: types.CompletionContext | None,
) -> types.Completion:
    candidates = ["paris", "park", "party"]
    values = [value for value in candidates if value.startswith(argument.value)]
    return types.Completion(values=values, total=len(values), has_more=False)


async def _subscribe(ctx: Any, params: types.SubscribeRequestParams) -> types.EmptyResult:
    """Subscribe; the resource then changes once, after the reply (a message of no request)."""
    subscribed.add(str(params.uri))

    async def change_later() -> None:
        await asyncio.sleep(0.05)
        if str(params.uri) in subscribed:
            await ctx.session.send_resource_updated(params.uri)

    changing.add(asyncio.ensure_future(change_later()))
    changing.difference_update({task for task in changing if task.done()})
    return types.EmptyResult()


async def _unsubscribe(ctx: Any, params: types.UnsubscribeRequestParams) -> types.EmptyResult:
    subscribed.discard(str(params.uri))
    return types.EmptyResult()


async def _set_level(ctx: Any, params: types.SetLevelRequestParams) -> types.EmptyResult:
    return types.EmptyResult()


lowlevel = server._lowlevel_server  # the SDK's MCPServer has no decorator for these three
lowlevel.add_request_handler("resources/subscribe", types.SubscribeRequestParams, _subscribe)
lowlevel.add_request_handler("resources/unsubscribe", types.UnsubscribeRequestParams, _unsubscribe)
lowlevel.add_request_handler("logging/setLevel", types.SetLevelRequestParams, _set_level)


def main() -> None:
    if OPTIONS.http is None:
        if OPTIONS.era is None:
            server.run("stdio")
        else:
            anyio.run(serve_stdio, lowlevel, OPTIONS.era)
        # Done at the end of its input: exit at once (the interpreter's teardown, 0.3 s of CPU,
        # outlasts the gateway's wait for its upstream on a loaded machine).
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)
    import uvicorn

    app = server.streamable_http_app()
    served = app if OPTIONS.era is None else http_app(app, OPTIONS.era)
    uvicorn.run(served, host="127.0.0.1", port=OPTIONS.http, log_level="warning")


if __name__ == "__main__":
    main()
