"""The bounds the tools document (page sizes, batch sizes, defaults), for the adapters that declare
them in their schemas and help texts. Each is defined beside the operation it bounds; this module
only gathers them, so an adapter imports the facade, the settings, the errors and these."""

from vaultmem.notes.links import EDGE_TYPES
from vaultmem.operations.crystallize import DEFAULT_GRAPH_LIMIT, MAX_GRAPH_LIMIT, MAX_MEMBERS
from vaultmem.operations.doctor import LOW_SPACE_MIB
from vaultmem.operations.edge_review import DEFAULT_MAX_PROPOSALS, MAX_PROPOSALS
from vaultmem.operations.edge_review import MAX_BATCH as MAX_PROPOSAL_BATCH
from vaultmem.operations.edge_review import MAX_LIST_LIMIT as MAX_QUEUE_LIMIT
from vaultmem.operations.edges import MAX_LINKS, MAX_UNLINKS
from vaultmem.operations.history import DEFAULT_VERSIONS, MAX_VERSIONS
from vaultmem.operations.recall import DEFAULT_NEIGHBOURS, MAX_LIST_LIMIT, MAX_NEIGHBOURS, MAX_SEARCH_LIMIT
from vaultmem.operations.reflect import DEFAULT_WAKE_DAYS, MAX_WAKE_DAYS
from vaultmem.operations.results import THOUGHT_COLUMNS
from vaultmem.operations.retention import MAX_LIMIT as MAX_RETENTION_LIMIT
from vaultmem.operations.retention import MAX_SOURCES
from vaultmem.operations.search import MAX_LIMIT
from vaultmem.operations.status import DEFAULT_FRONTIER_LIMIT, DEFAULT_SLOTS_LIMIT, MAX_FRONTIER_LIMIT
from vaultmem.operations.supersede import MAX_BATCH
from vaultmem.operations.thoughts import MAX_BULK

__all__ = [
    "DEFAULT_FRONTIER_LIMIT", "DEFAULT_GRAPH_LIMIT", "DEFAULT_MAX_PROPOSALS", "DEFAULT_NEIGHBOURS",
    "DEFAULT_SLOTS_LIMIT", "DEFAULT_VERSIONS", "DEFAULT_WAKE_DAYS", "EDGE_TYPES", "LOW_SPACE_MIB",
    "MAX_BATCH", "MAX_BULK", "MAX_FRONTIER_LIMIT", "MAX_GRAPH_LIMIT", "MAX_LIMIT", "MAX_LINKS",
    "MAX_LIST_LIMIT", "MAX_MEMBERS", "MAX_NEIGHBOURS", "MAX_PROPOSALS", "MAX_PROPOSAL_BATCH",
    "MAX_QUEUE_LIMIT", "MAX_RETENTION_LIMIT", "MAX_SEARCH_LIMIT", "MAX_SOURCES", "MAX_UNLINKS",
    "MAX_VERSIONS", "MAX_WAKE_DAYS", "THOUGHT_COLUMNS",
]  # fmt: skip
