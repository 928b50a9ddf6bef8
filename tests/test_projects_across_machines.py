"""A project registered from two machines that share the vault (issue 17): each machine has its own
checkout of the project's code, so each registers its own path. Through the MCP tools (an in-process
server on each machine's open vault) and ``Memory.sync()``, as a daemon runs it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from upkeep_wire import LocalWire

from tests.sync_harness import Cluster, Machine
from vaultmem.config import Settings
from vaultmem.memory import Memory


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    made = Cluster(tmp_path)
    yield made
    made.close()


def wire_of(machine: Machine) -> tuple[Memory, LocalWire]:
    settings = Settings.resolve(machine.root, durable=False, sync_interval=0, sync_debounce=0)
    memory = Memory(settings, clock=machine.clock, index=False, background_commits=False)
    machine.services.append(memory)
    return memory, LocalWire(memory)


def resolved(wire: LocalWire, cwd: Path) -> str | None:
    item = wire.ok("memory_manage", action="resolve", cwd=str(cwd))["item"]
    return None if item is None else str(item["name"])


def test_the_second_machine_registering_its_checkout_keeps_the_first_machines(
    cluster: Cluster, tmp_path: Path
) -> None:
    laptop, desk = cluster.first("laptop"), cluster.clone("desk")
    (here, on_laptop), (there, on_desk) = wire_of(laptop), wire_of(desk)
    laptop_code, desk_code = tmp_path / "laptop-code" / "shop", tmp_path / "desk-code" / "shop"
    project = on_laptop.ok("memory_manage", action="create", name="Shop", local_path=str(laptop_code))["item"]
    assert here.sync().ok and there.sync().ok
    assert resolved(on_desk, desk_code) is None  # the desk's checkout is elsewhere
    message, _ = on_desk.error("memory_manage", action="create", name="Shop", local_path=str(desk_code))
    assert "already exists" in message  # the one way left: add the desk's path to the project
    on_desk.ok("memory_manage", action="update", project_id=project["id"], local_path=str(desk_code))
    assert there.sync().ok and here.sync().ok

    for wire in (on_laptop, on_desk):  # either machine's checkout is the project, on both machines
        assert resolved(wire, desk_code / "src") == "Shop"
        assert resolved(wire, laptop_code / "src") == "Shop"  # was no project once the desk's sync came
    capture = here.capture("The shop checkout needs node 20.", cwd=str(laptop_code))
    assert capture["success"]
    (note,) = [p for p in laptop.root.rglob("*.md") if "node 20" in p.read_text(encoding="utf-8")]
    assert "\nproject: Shop\n" in note.read_text(encoding="utf-8")
