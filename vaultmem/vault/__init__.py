"""The vault on disk: its layout, atomic file writes, git history and the cross-process lock."""
