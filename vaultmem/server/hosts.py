"""Copy-paste configuration for the MCP hosts people use, printed by ``vaultmem serve``.

Kept in one place so that the banner, ``docs/hosts.md`` and the tests agree.
"""

from __future__ import annotations

import json
import shlex
import shutil
import sys
from pathlib import Path

SERVER_NAME = "vaultmem"


def vaultmem_command() -> str:
    """The absolute path of the ``vaultmem`` executable (hosts that spawn it need a full path)."""
    here = Path(sys.argv[0])
    if here.name == "vaultmem" and here.exists():
        return str(here.resolve())
    found = shutil.which("vaultmem")
    return str(Path(found).resolve()) if found else "vaultmem"


def claude_desktop(vault: Path, command: str | None = None) -> str:
    """Claude Desktop spawns local servers: run ``vaultmem mcp`` (stdio) on the same vault."""
    config = {
        "mcpServers": {
            SERVER_NAME: {"command": command or vaultmem_command(), "args": ["mcp", "--vault", str(vault)]}
        }
    }
    return json.dumps(config, indent=2)


def claude_code(url: str, token: str) -> str:
    return (
        f"claude mcp add --transport http {SERVER_NAME} {url} "
        f"--header {shlex.quote('Authorization: Bearer ' + token)}"
    )


def cursor(url: str, token: str) -> str:
    config = {"mcpServers": {SERVER_NAME: {"url": url, "headers": {"Authorization": f"Bearer {token}"}}}}
    return json.dumps(config, indent=2)


def codex(url: str) -> str:
    """OpenAI Codex (CLI, IDE extension, app): the token comes from an environment variable."""
    return f'[mcp_servers.{SERVER_NAME}]\nurl = "{url}"\nbearer_token_env_var = "VAULTMEM_TOKEN"'


def banner(url: str, token: str, vault: Path, token_file: Path) -> str:
    """What ``vaultmem serve`` prints before it starts answering."""
    rule = "-" * 78
    return "\n".join(
        [
            rule,
            f"vaultmem is serving {vault}",
            f"  MCP URL:    {url}",
            f"  token:      {token}",
            f"  token file: {token_file}   (print it: vaultmem token; replace it: --rotate)",
            rule,
            "Claude Desktop (claude_desktop_config.json; it runs its own stdio process):",
            claude_desktop(vault),
            "",
            "Claude Code:",
            claude_code(url, token),
            "",
            "Cursor (~/.cursor/mcp.json):",
            cursor(url, token),
            "",
            f"OpenAI Codex (~/.codex/config.toml), with VAULTMEM_TOKEN={token} in its environment:",
            codex(url),
            rule,
            "Stop with Ctrl-C: pending commits are flushed before it exits.",
            "",
        ]
    )
