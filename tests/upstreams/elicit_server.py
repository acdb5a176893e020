"""An MCP server written with the official `mcp` SDK whose tool asks its client for settings.

`configure` elicits a form with a fractional default (`ratio`, 3.14: a `number`, which
`ElicitResult`'s content allows, schema.ts and the errata list say; ADR 41) and a `label` the tool
takes even empty: a client that answers an empty field with `null` answers what `ElicitResult`
does not allow (`string | number | boolean | string[]`). The tool says what came back: the
accepted settings, or the error its elicitation got instead.
"""

from __future__ import annotations

from mcp.server.mcpserver import Context, MCPServer
from mcp.shared.exceptions import MCPError
from pydantic import BaseModel

server = MCPServer("elicit-upstream")


class Settings(BaseModel):
    ratio: float = 3.14
    label: str | None = "default"


class Outcome(BaseModel):
    ratio: float | None = None
    error_code: int | None = None
    rule: str | None = None


@server.tool()
async def configure(ctx: Context) -> Outcome:
    """Ask the client's user for the settings; report what the elicitation returned."""
    try:
        answer = await ctx.elicit("Settings?", schema=Settings)
    except MCPError as exc:
        data = exc.error.data if isinstance(exc.error.data, dict) else {}
        return Outcome(error_code=exc.error.code, rule=data.get("rule"))
    return Outcome(ratio=answer.data.ratio if answer.action == "accept" else None)


if __name__ == "__main__":
    server.run("stdio")
