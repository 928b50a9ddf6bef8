"""Keeping the index in step with the vault: the index listener, reconcile and the file watcher."""
