"""MCP adapter: the memory tools, defined once and served over HTTP (``vaultmem serve``) or stdio
(``vaultmem mcp``)."""

from vaultmem.mcp.tools import SERVER_INSTRUCTIONS, TOOL_NAMES, build_mcp_server

__all__ = ["SERVER_INSTRUCTIONS", "TOOL_NAMES", "build_mcp_server"]
