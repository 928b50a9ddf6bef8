"""The catalog's and the mirror's key -> paths lookups behave as a dict of sets."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from vaultmem.vault.multimap import Multimap

ops = st.lists(
    st.tuples(st.booleans(), st.sampled_from("abc"), st.sampled_from(["x", "y", "z"])), max_size=60
)


@given(ops)
def test_a_multimap_answers_as_a_dict_of_sets_after_any_adds_and_discards(
    steps: list[tuple[bool, str, str]],
) -> None:
    multimap, model = Multimap(), dict[str, set[str]]()
    for add, key, value in steps:
        if add:
            multimap.add(key, value)
            model.setdefault(key, set()).add(value)
        else:
            multimap.discard(key, value)
            model.get(key, set()).discard(value)
            if key in model and not model[key]:
                del model[key]
    assert {k: set(multimap.get(k)) for k in multimap} == model
    assert len(multimap) == len(model)
    assert all(multimap.get(k) == () for k in "abc" if k not in model)
