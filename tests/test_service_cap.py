"""The daily write cap and the filing contract the vault carries."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
from conftest import (
    FakeClock,
    OpenService,
    git_status,
    head,
    note_files,
    set_cap,
    snapshot,
    write_vault_contract,
)
from layers import parts

from vaultmem.errors import CapReached, ContractError
from vaultmem.memory import Memory


def _fill(service: Memory, n: int, prefix: str = "memory") -> None:
    for i in range(n):
        service.append(f"{prefix} number {i}", "reference")


def test_the_cap_refuses_a_new_append_naming_count_cap_and_file(
    vault: Path, open_service: OpenService
) -> None:
    contract = set_cap(vault, 3)
    service = open_service()
    _fill(service, 3)
    with pytest.raises(CapReached) as info:
        service.append("one too many", "reference")
    message = str(info.value)
    assert "3 memories already written today (2026-03-14 UTC)" in message
    assert "daily cap is 3" in message and "thresholds.daily_write_cap" in message
    assert str(contract) in message
    assert len(note_files(vault)) == 3


def test_the_cap_refuses_a_new_capture_as_the_document_shows(vault: Path, open_service: OpenService) -> None:
    """Seed: "{success: false, error: "capture refused: N memories already written today ... daily cap
    is 200 ..."}, naming the count, the cap, and the file that raises it."."""
    contract = set_cap(vault, 2)
    service = open_service()
    _fill(service, 2)
    result = service.capture("a new thought")
    assert result["success"] is False
    assert result["error"].startswith("capture refused: 2 memories already written today")
    assert "daily cap is 2" in result["error"]
    assert str(contract) in result["error"]


def test_the_shipped_cap_is_200(service: Memory) -> None:
    assert parts(service).contract().daily_write_cap == 200


def test_the_cap_is_counted_from_the_vault_and_survives_a_restart(
    vault: Path, open_service: OpenService
) -> None:
    set_cap(vault, 3)
    first = open_service()
    _fill(first, 3)
    first.close()
    second = open_service()
    with pytest.raises(CapReached):
        second.append("after the restart", "reference")


def test_notes_written_by_hand_today_count_too(vault: Path, open_service: OpenService) -> None:
    set_cap(vault, 2)
    for i in range(2):
        (vault / "memory" / "semantic" / f"hand-{i}.md").write_text(
            f"---\ncreated: '2026-03-14T01:00:00Z'\n---\nhand {i}\n", encoding="utf-8"
        )
    service = open_service()
    with pytest.raises(CapReached, match="2 memories already written today"):
        service.append("agent write", "reference")


def test_a_new_utc_day_opens_the_gate(vault: Path, open_service: OpenService, clock: FakeClock) -> None:
    set_cap(vault, 2)
    service = open_service()
    _fill(service, 2)
    clock.set(dt.datetime(2026, 3, 15, 0, 0, 1, tzinfo=dt.UTC))
    assert service.append("a new day", "reference")["deduplicated"] is False


def test_a_clock_jumping_back_never_resets_the_count(
    vault: Path, open_service: OpenService, clock: FakeClock
) -> None:
    set_cap(vault, 2)
    service = open_service()
    _fill(service, 2)
    clock.advance(days=-1)
    with pytest.raises(CapReached):
        service.append("yesterday, again", "reference")
    clock.advance(days=-30)
    assert service.capture("a month ago")["success"] is False


def test_the_day_is_a_utc_day_whatever_zone_the_clock_reports(
    vault: Path, open_service: OpenService, clock: FakeClock
) -> None:
    set_cap(vault, 2)
    service = open_service()
    _fill(service, 2)  # 2026-03-14 09:30 UTC
    # 23:30 on the 14th in UTC is already the 15th in Sydney: still the same UTC day.
    clock.set(dt.datetime(2026, 3, 15, 10, 30, tzinfo=dt.timezone(dt.timedelta(hours=11))))
    with pytest.raises(CapReached, match=r"\(2026-03-14 UTC\)"):
        service.append("late evening", "reference")


def test_an_exact_repeat_still_reinforces_with_the_gate_shut(vault: Path, open_service: OpenService) -> None:
    """Seed: "an exact repeat still reinforces a twin already home even with the gate shut"."""
    set_cap(vault, 2)
    service = open_service()
    appended = service.append("repeat me", "reference", idempotency_key="k1")
    captured = service.capture("repeat me too")
    assert service.append("repeat me", "reference") == {**appended, "deduplicated": True}
    assert service.capture("repeat me too") == {**captured, "deduplicated": True}
    assert service.append("other text", "fix", idempotency_key="k1") == {**appended, "deduplicated": True}
    with pytest.raises(CapReached):
        service.append("but a new memory waits for tomorrow", "reference")


def test_the_vaults_own_contract_wins_over_the_shipped_one(vault: Path, open_service: OpenService) -> None:
    write_vault_contract(vault, lambda t: t.replace("capture: {dir: memory/episodic", "capture: {dir: inbox"))
    service = open_service()
    result = service.capture("routed by the vault's contract")
    assert service.note(result["id"]).path.startswith("inbox/")
    assert parts(service).contract().path == vault / "filing.yaml"


def test_a_contract_edit_is_picked_up_without_a_restart(vault: Path, service: Memory) -> None:
    service.append("before the edit", "reference")
    set_cap(vault, 1)
    with pytest.raises(CapReached, match="daily cap is 1"):
        service.append("after the edit", "reference")


@pytest.mark.parametrize(
    ("edit", "problem"),
    [
        (lambda t: t.replace("daily_write_cap: 200", "daily_write_cap: lots"), "daily_write_cap"),
        (lambda t: t.replace("low_confidence: 0.5", "low_confidence: 7"), "low_confidence"),
        (lambda t: t.replace("  rule: convention\n", "  rule: commandment\n"), "aliases/rule"),
        (lambda t: t.replace("memory/semantic,", "../outside,", 1), "kinds/preference/dir"),
        (lambda t: t + "\nunknown_section: 1\n", "unknown_section"),
        (lambda t: t.replace("kinds:", "kinds: [", 1), "not valid YAML"),
        (lambda t: "- a list\n- not a mapping\n", "mapping"),
    ],
)
def test_an_invalid_contract_stops_writes_and_leaves_the_vault_untouched(
    vault: Path, service: Memory, edit, problem: str
) -> None:
    contract = write_vault_contract(vault, edit, commit=False)
    before, before_head = snapshot(vault), head(vault)
    with pytest.raises(ContractError) as info:
        service.append("a memory", "reference")
    message = str(info.value)
    assert str(contract) in message and problem in message
    result = service.capture("a capture")
    assert result["success"] is False and str(contract) in result["error"]
    assert snapshot(vault) == before
    assert head(vault) == before_head
    assert git_status(vault).split() == ["M", "filing.yaml"]


def test_fixing_the_contract_lets_writes_resume(vault: Path, service: Memory) -> None:
    broken = write_vault_contract(vault, lambda t: t.replace("daily_write_cap: 200", "daily_write_cap: -1"))
    with pytest.raises(ContractError):
        service.append("refused", "reference")
    broken.write_text(broken.read_text("utf-8").replace("daily_write_cap: -1", "daily_write_cap: 200"))
    assert service.append("accepted", "reference")["deduplicated"] is False


def test_an_invalid_contract_stops_a_new_service_from_writing(vault: Path, open_service: OpenService) -> None:
    write_vault_contract(vault, lambda t: t.replace("version: 2", "version: two"))
    service = open_service()  # opening is fine: reads and history still work
    with pytest.raises(ContractError, match="version"):
        service.append("refused", "reference")
