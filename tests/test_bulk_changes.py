"""Bulk changes as one operation: restore_many and update_many write one group of events, undone as a
whole; a bad id, field or status refuses them all and changes nothing."""

from __future__ import annotations

import pytest

from memory_core import NotFoundError, StateError, ValidationError


@pytest.fixture
def three(bank):
    ids = [bank.add(t, namespace="alice") for t in ("Likes tea", "Plays chess", "Reads novels")]
    return bank, ids


def test_restore_many_is_one_operation_undone_as_a_whole(three):
    bank, ids = three
    bank.forget_many(ids)
    group = bank.restore_many(ids)
    assert {bank.get(i).status for i in ids} == {"active"}
    events = [e for e in bank.events(limit=10) if e.group_id == group]
    assert sorted(e.memory_id for e in events) == sorted(ids) and {e.action for e in events} == {"restore"}
    bank.undo_group(group)
    assert {bank.get(i).status for i in ids} == {"archived"}
    assert bank.restore_many([]) is None


def test_update_many_sets_the_same_fields_and_undoes_as_one(three):
    bank, ids = three
    group = bank.update_many(ids[:2], importance=0.9, category="preference")
    assert [(bank.get(i).importance, bank.get(i).category) for i in ids] == [
        (0.9, "preference"), (0.9, "preference"), (0.5, "other")]
    bank.undo_group(group)
    assert {bank.get(i).importance for i in ids} == {0.5} and {bank.get(i).category for i in ids} == {"other"}


@pytest.mark.parametrize("call, error", [
    (lambda b, ids: b.update_many(ids, text="same for all"), ValidationError),
    (lambda b, ids: b.update_many(ids, importance=3.0), ValidationError),
    (lambda b, ids: b.update_many(ids), ValidationError),
    (lambda b, ids: b.update_many([*ids, 10**9], importance=0.9), NotFoundError),
    (lambda b, ids: b.restore_many(ids), StateError),  # active memories: nothing to restore
    (lambda b, ids: b.restore_many("1,2"), ValidationError),
])
def test_a_bad_bulk_change_refuses_all_and_changes_nothing(three, call, error):
    bank, ids = three
    seq = bank.stats()["change_seq"]
    with pytest.raises(error):
        call(bank, ids)
    assert bank.stats()["change_seq"] == seq
    assert {bank.get(i).importance for i in ids} == {0.5}
