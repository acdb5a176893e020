# mcp-server: multi-stage build, runs as a non-root user. Default: `serve` over STDIO;
# MCP_ENDPOINT=socket or http selects the others. Over HTTP only loopback Host/Origin values are
# accepted unless MCP_ALLOWED_HOSTS names the host clients use to reach the container.
# Over HTTP the image listens on every address (MCP_HTTP_HOST=0.0.0.0), so it refuses to start
# unless it checks who calls: MCP_AUTH=tokens:FILE (bearer tokens, one a line, e.g. a mounted
# secret) or MCP_AUTH=jwt:ISSUER_URL (and MCP_AUTH_RESOURCE, the public URL of /mcp), or, knowingly,
# MCP_ALLOW_UNAUTHENTICATED=1 (docs/authentication.md). /health stays open for the orchestrator.
FROM python:3.11-slim AS build
# A pure-Python package: no compiler in either stage; the build maps the top-level schemas/ inside it.
WORKDIR /src
COPY pyproject.toml README.md ./
COPY mcp_server ./mcp_server
COPY schemas ./schemas
RUN python -m venv /opt/venv && /opt/venv/bin/pip install --no-cache-dir /src

FROM python:3.11-slim
RUN useradd --create-home --uid 10001 mcp
COPY --from=build /opt/venv /opt/venv
ENV PATH=/opt/venv/bin:$PATH \
    MCP_READY_FILE=/tmp/mcp.ready \
    MCP_ENDPOINT=stdio \
    MCP_SOCKET_PATH=/tmp/mcp.sock \
    MCP_HTTP_HOST=0.0.0.0 \
    MCP_HTTP_PORT=8000
USER mcp
WORKDIR /home/mcp
EXPOSE 8000
ENTRYPOINT ["mcp-server"]
CMD ["serve"]
