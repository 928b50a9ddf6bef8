"""vaultmem: a local memory for AI agents, kept as Markdown notes in a git-tracked vault."""

__version__ = "0.1.0"
