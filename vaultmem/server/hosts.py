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


def token_command(vault: Path, command: str | None = None) -> str:
    """The shell command that prints the vault's token (for configuration that must not hold it)."""
    return f"{shlex.quote(command or vaultmem_command())} token --vault {shlex.quote(str(vault))}"


def claude_code(url: str, token: str | None, vault: Path | None = None) -> str:
    """With no token, the command reads it from ``vaultmem token`` when it is run."""
    header = "Authorization: Bearer "
    if token is not None:
        quoted = shlex.quote(header + token)
    else:
        assert vault is not None
        quoted = f'"{header}$({token_command(vault)})"'
    return f"claude mcp add --transport http {SERVER_NAME} {url} --header {quoted}"


def cursor(url: str, token: str | None) -> str:
    shown = token if token is not None else "<the token: vaultmem token>"
    config = {"mcpServers": {SERVER_NAME: {"url": url, "headers": {"Authorization": f"Bearer {shown}"}}}}
    return json.dumps(config, indent=2)


def codex(url: str) -> str:
    """OpenAI Codex (CLI, IDE extension, app): the token comes from an environment variable."""
    return f'[mcp_servers.{SERVER_NAME}]\nurl = "{url}"\nbearer_token_env_var = "VAULTMEM_TOKEN"'


def banner(url: str, token: str | None, vault: Path, token_file: Path) -> str:
    """What ``vaultmem serve`` prints before it starts answering.

    ``token`` is None when standard output is not a terminal (a log file, a supervisor's journal):
    the token is then never printed, only where it is and the command that prints it, so that no
    log keeps a copy of the secret.
    """
    rule = "-" * 78
    read_it = token_command(vault)
    if token is None:
        shown = "not shown (this output is not a terminal); print it as below"
        codex_env = f"VAULTMEM_TOKEN=$({read_it})"
    else:
        shown = token
        codex_env = f"VAULTMEM_TOKEN={token}"
    return "\n".join(
        [
            rule,
            f"vaultmem is serving {vault}",
            f"  MCP URL:    {url}",
            f"  token:      {shown}",
            f"  token file: {token_file}",
            f"              (print it: {read_it}; replace it: --rotate)",
            rule,
            "Claude Desktop (claude_desktop_config.json; it runs its own stdio process):",
            claude_desktop(vault),
            "",
            "Claude Code:",
            claude_code(url, token, vault),
            "",
            "Cursor (~/.cursor/mcp.json):",
            cursor(url, token),
            "",
            f"OpenAI Codex (~/.codex/config.toml), with {codex_env} in its environment:",
            codex(url),
            rule,
            "Stop with Ctrl-C: pending commits are flushed before it exits.",
            "",
        ]
    )
