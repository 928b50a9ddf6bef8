"""The third part of the graph tools, over the same lookup, tokens and pipeline as the others:
placement (``memory_status action=propose``), ``edge_review``, ``retention_review`` and
``memory_crystallize``."""

from __future__ import annotations

from vaultmem.config import Settings
from vaultmem.graph.crystallize import AutoClusterSettings, Crystallize
from vaultmem.graph.edge_review import EdgeReview
from vaultmem.graph.lookup import Lookup
from vaultmem.graph.placement import PlacementEngine
from vaultmem.graph.primers import Primers
from vaultmem.graph.proposals import ProposalQueue
from vaultmem.graph.retention import Retention, RetentionSettings
from vaultmem.graph.service import GraphStore
from vaultmem.graph.supersede import Supersede
from vaultmem.index.fusion import RelevanceCalibration

#: The review queue's file in the state directory (derived state; see graph/proposals.py).
QUEUE_FILE = "edge_review.json"


class Review:
    """Placement, the edge review queue, retention review and clusters."""

    def __init__(
        self,
        settings: Settings,
        lookup: Lookup,
        store: GraphStore,
        supersede: Supersede,
        primers: Primers,
        calibration: RelevanceCalibration,
    ) -> None:
        self.lookup = lookup
        self.placement = PlacementEngine(lookup, calibration)
        queue = ProposalQueue(settings.state_dir / QUEUE_FILE)
        self.edge_review = EdgeReview(lookup, self.placement, queue, store.tokens)
        self.retention = Retention(
            lookup,
            store,
            supersede,
            RetentionSettings(
                settings.retention_min_age_days,
                settings.retention_importance_floor,
                settings.retention_page_size,
            ),
            primers.hits_of,
            self.project_id,
            self.project_named,
        )
        self.crystallize = Crystallize(
            lookup,
            store,
            AutoClusterSettings(
                settings.auto_cluster_min_similarity,
                settings.auto_cluster_min_cluster_size,
                settings.auto_cluster_max_clusters,
            ),
        )

    def project_id(self, name: str | None) -> str | None:
        """The id of the registered project called ``name`` (None for no project or an unknown one)."""
        if name is None:
            return None
        service = self.lookup.service
        project = service.projects.by_name(service.contract(), name)
        return project.id if project is not None else None

    def project_named(self, project_id: str) -> str | None:
        """The name of the registered project with this id, or None."""
        service = self.lookup.service
        wanted = project_id.strip().lower()
        found = next(
            (p for p in service.projects.projects(service.contract()) if p.id.lower() == wanted), None
        )
        return found.name if found is not None else None
