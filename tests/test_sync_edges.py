"""The edge graph is derived from the vault's typed links (design.md: "Typed links")."""

from __future__ import annotations

import shutil
import sys
import threading
from pathlib import Path

from layers import parts, sync_path

from vaultmem.config import Settings
from vaultmem.index.embedder import FakeEmbedder
from vaultmem.memory import Memory
from vaultmem.notes.links import edge_id
from vaultmem.operations.doctor import diagnose

A = """---
id: 01a20000-0000-7000-8000-00000000000a
title: Cache policy
supports: ["[[ttl-defaults]]", "[[no-such-note]]"]
related: "[[memory/semantic/ttl-defaults]]"
---
Cache responses for five minutes.
"""
B = """---
id: 01a20000-0000-7000-8000-00000000000b
title: TTL defaults
---
The default TTL is 300 seconds.
"""
A_ID = "01a20000-0000-7000-8000-00000000000a"
B_ID = "01a20000-0000-7000-8000-00000000000b"


def open_runtime(vault: Path) -> Memory:
    runtime = Memory(Settings.resolve(vault, durable=False), embedder=FakeEmbedder())
    runtime.reconcile()
    return runtime


def test_typed_links_become_edges_with_ids_that_survive_a_rebuild(vault: Path) -> None:
    (vault / "memory" / "semantic" / "cache-policy.md").write_text(A, encoding="utf-8")
    (vault / "memory" / "semantic" / "ttl-defaults.md").write_text(B, encoding="utf-8")
    runtime = open_runtime(vault)
    edges = parts(runtime).graph.edges_of(A_ID)
    assert sorted((e.type, e.source_id, e.target_id) for e in edges) == [
        ("related", A_ID, B_ID),
        ("supports", A_ID, B_ID),
    ]
    ids = sorted(e.id for e in edges)
    assert edge_id(A_ID, "supports", B_ID) in ids
    runtime.close()
    shutil.rmtree(vault / ".vaultmem" / "index")
    rebuilt = open_runtime(vault)
    assert sorted(e.id for e in parts(rebuilt).graph.edges_of(B_ID)) == ids
    rebuilt.close()


def test_removing_a_link_by_hand_removes_the_edge(vault: Path) -> None:
    path = vault / "memory" / "semantic" / "cache-policy.md"
    path.write_text(A, encoding="utf-8")
    (vault / "memory" / "semantic" / "ttl-defaults.md").write_text(B, encoding="utf-8")
    runtime = open_runtime(vault)
    path.write_text(A.replace('supports: ["[[ttl-defaults]]", "[[no-such-note]]"]\n', ""), encoding="utf-8")
    assert sync_path(runtime, "memory/semantic/cache-policy.md") == "indexed"
    assert [e.type for e in parts(runtime).graph.edges_of(A_ID)] == ["related"]
    runtime.close()


def test_a_dangling_link_is_no_edge_and_doctor_reports_it(vault: Path) -> None:
    (vault / "memory" / "semantic" / "cache-policy.md").write_text(A, encoding="utf-8")
    (vault / "memory" / "semantic" / "ttl-defaults.md").write_text(B, encoding="utf-8")
    runtime = open_runtime(vault)
    assert all(e.target_id == B_ID for e in parts(runtime).graph.edges_of(A_ID))
    report = diagnose(
        parts(runtime).layout, parts(runtime).catalog, parts(runtime).index, parts(runtime).repo
    )
    assert report.dangling_links == [
        {"path": "memory/semantic/cache-policy.md", "property": "supports", "target": "no-such-note"}
    ]
    runtime.close()


def test_a_conflict_copys_links_do_not_replace_its_originals_edges(vault: Path) -> None:
    """A sync client's copy carries the original's id; its typed links are its own edges."""
    folder = vault / "memory" / "semantic"
    (folder / "cache-policy.md").write_text(A, encoding="utf-8")
    (folder / "ttl-defaults.md").write_text(B, encoding="utf-8")
    copy = A.replace('supports: ["[[ttl-defaults]]", "[[no-such-note]]"]\n', "").replace(
        'related: "[[memory/semantic/ttl-defaults]]"', 'contradicts: "[[ttl-defaults]]"'
    )
    (folder / "cache-policy (Ann's conflicted copy 2026-01-01).md").write_text(copy, encoding="utf-8")
    linking = B.replace(B_ID, "01a20000-0000-7000-8000-00000000000c").replace(
        "title: TTL defaults",
        'title: Review\nreferences: "[[cache-policy (Ann\'s conflicted copy 2026-01-01)]]"',
    )
    (folder / "review.md").write_text(linking, encoding="utf-8")
    runtime = open_runtime(vault)
    try:
        assert sorted(e.type for e in parts(runtime).graph.edges_of(A_ID) if e.source_id == A_ID) == [
            "related",
            "supports",
        ]
        into_b = {(e.type, e.source_id) for e in parts(runtime).graph.edges_of(B_ID)}
        assert ("contradicts", A_ID) not in into_b
        assert any(t == "contradicts" and s != A_ID for t, s in into_b)  # the copy's, under its own id
        out_of_review = parts(runtime).graph.edges_of("01a20000-0000-7000-8000-00000000000c")
        targets = {e.target_id for e in out_of_review if e.type == "references"}
        assert targets and A_ID not in targets  # a link to the copy names the copy, not its original
    finally:
        runtime.close()


def test_a_reader_never_sees_a_note_without_its_edges_while_a_rename_re_resolves_them(vault: Path) -> None:
    """A rename re-resolves the links that name the renamed note (the notes naming it get their
    edges recomputed). A graph read on another thread meanwhile (an agent's recall `get` while the
    watcher handles the rename) sees the edges before or after, never none: the test the
    rename-outside-Obsidian end-to-end test (test_link_resolution.py) caught only now and then."""
    semantic = vault / "memory" / "semantic"
    linked = A.replace(  # as vaultmem writes a link: the target's id recorded beside its name
        "title: Cache policy\n",
        "title: Cache policy\nlink_targets:\n"
        f"  supports/ttl-defaults: {B_ID}\n  related/memory/semantic/ttl-defaults: {B_ID}\n",
    )
    (semantic / "cache-policy.md").write_text(linked, encoding="utf-8")
    (semantic / "ttl-defaults.md").write_text(B, encoding="utf-8")
    runtime = open_runtime(vault)
    graph = parts(runtime).graph
    assert len(graph.outgoing(A_ID)) == 2
    seen: list[int] = []
    stop = threading.Event()

    def read() -> None:
        while not stop.is_set():
            seen.append(len(graph.outgoing(A_ID)))

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as the interpreter can
    reader = threading.Thread(target=read)
    reader.start()
    try:
        names = ["ttl-defaults.md", "ttl-moved.md"]
        for turn in range(40):
            old, new = names[turn % 2], names[(turn + 1) % 2]
            (semantic / old).rename(semantic / new)
            for rel in (f"memory/semantic/{new}", f"memory/semantic/{old}"):
                sync_path(runtime, rel)
    finally:
        stop.set()
        reader.join()
        sys.setswitchinterval(interval)
        runtime.close()
    assert seen and set(seen) == {2}, sorted(set(seen))
