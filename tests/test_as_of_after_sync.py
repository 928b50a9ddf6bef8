"""``as_of`` on a machine whose sync round fast-forwarded onto the other machine's merge of its own
commits (issue 17 with issue 18, item 3), through the facade a daemon serves: ``Memory.sync()`` and
``memory_search`` with ``as_of`` on an open vault with its index.

The desk made the merge, so the merge's first parent is the desk's commit; the laptop's next round
fast-forwards to it. Read down the first-parent chain, the laptop's own write left its past and the
desk's memory took its place (and the laptop's store was read again from git at every such round).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import git
from tests.sync_harness import Cluster, Machine
from vaultmem.config import Settings
from vaultmem.index.embedder import FakeEmbedder
from vaultmem.memory import Memory, SearchRequest


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    made = Cluster(tmp_path)
    yield made
    made.close()


def opened(machine: Machine, *, index: bool = False) -> Memory:
    settings = Settings.resolve(machine.root, durable=False, sync_interval=0, sync_debounce=0)
    memory = Memory(
        settings, clock=machine.clock, index=index, embedder=FakeEmbedder() if index else None,
        background_commits=False,
    )  # fmt: skip
    machine.services.append(memory)
    return memory


def found(memory: Memory, as_of: str) -> set[str]:
    return {hit["id"] for hit in memory.search(SearchRequest("deploy", as_of=as_of))["results"]}


def test_a_fast_forward_onto_the_other_machines_merge_keeps_this_machines_own_past(cluster: Cluster) -> None:
    laptop, desk = cluster.first("laptop"), cluster.clone("desk")
    here, there = opened(laptop, index=True), opened(desk)
    desk_id = there.append("The desk deploy runs on Fridays.", "reference")["id"]
    desk_commit = git(desk.root, "rev-parse", "HEAD").strip()
    laptop_id = here.append("The laptop deploy key rotates monthly.", "reference")["id"]
    own = git(laptop.root, "rev-parse", "HEAD").strip()  # the laptop's write, as the laptop held it
    assert found(here, own) == {laptop_id}  # read before the sync: the store is kept current after
    assert here.sync().ok  # pushes the laptop's write
    assert there.sync().merge_commit  # the desk merges it: first parent the desk's own commit
    report = here.sync()
    assert report.ok and report.fast_forward and report.merge_commit is None

    # The laptop's own commit is the laptop's memory then: its note, not the desk's, which it had not
    # seen (down the first-parent chain the commit was off the line, and the desk's note was found).
    assert found(here, own) == {laptop_id}
    # The desk's commit came in with the fast-forward: as of it, the vault once it had arrived.
    assert found(here, desk_commit) == {laptop_id, desk_id}
    assert found(here, git(laptop.root, "rev-parse", "HEAD").strip()) == {laptop_id, desk_id}
    # A process started afresh reads the same line from git.
    here.close()
    again = opened(laptop, index=True)
    assert found(again, own) == {laptop_id}
    assert found(again, desk_commit) == {laptop_id, desk_id}
