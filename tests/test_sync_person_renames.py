"""A note without an ``id`` key renamed on one machine keeps answering, on the other machine too, the
id it was answered under before (reliability row 69, across a sync round)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.sync_harness import Cluster
from vaultmem.notes.ids import derived_id

KETTLE = "# Kettle\n\nkettlemarker: descale it monthly with citric acid.\n"


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    made = Cluster(tmp_path)
    yield made
    for machine in made.machines:
        machine.close()


def test_a_note_renamed_on_one_machine_answers_its_old_id_on_the_other_after_a_sync_round(
    cluster: Cluster,
) -> None:
    laptop = cluster.first("laptop")
    desktop = cluster.clone("desktop")
    laptop.write("notes/Kettle.md", KETTLE)
    laptop.service().sync()
    here = desktop.service()
    here.sync()
    old = derived_id("notes/Kettle.md")
    assert here.recall_get(old).item.id == old  # type: ignore[union-attr]
    (laptop.root / "notes/Appliances").mkdir()
    os.rename(laptop.root / "notes/Kettle.md", laptop.root / "notes/Appliances/Kettle.md")
    laptop.service().sync()
    report = here.sync()  # the desktop's daemon: the merge writes the file anew at its new name
    assert {c.path for c in report.incoming} == {"notes/Kettle.md", "notes/Appliances/Kettle.md"}
    got = here.recall_get(old).item
    assert got.id == derived_id("notes/Appliances/Kettle.md")  # type: ignore[union-attr]
    assert "descale it monthly" in got.content  # type: ignore[union-attr]
    desktop.close()
    assert desktop.service().recall_get(old).item.id == got.id  # type: ignore[union-attr]  # restarted
