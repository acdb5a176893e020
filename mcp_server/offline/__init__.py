"""What checks without a live peer: ``check`` on a recorded session (the gateway's session ledger fed
from a file) and the validation library behind ``mcp_server.validation``. No process, no socket."""
