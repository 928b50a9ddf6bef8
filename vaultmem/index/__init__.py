"""The search index: embedder, LanceDB tables, the in-memory mirror and hybrid search."""

from vaultmem.index._lazy_imports import defer_rest_client

# Before anything here imports LanceDB: skip its unused REST client's import-time cost (~0.45 s).
defer_rest_client()
