"""Names held as one deflated blob (``offload_core.deflated_names``, shared
by the filesystem driver's sort and the listing planning keeps): given
back exactly, in order, whatever text they are; a NUL, which would split a
name, refused naming it."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from offload_core.deflated_names import deflated_names, inflated_names
from offload_core.errors import InvalidKeyError

_NAMES = st.text(st.characters(exclude_characters="\0", codec=None, exclude_categories=()))


@settings(max_examples=300, deadline=None)
@given(names=st.lists(_NAMES, min_size=1, max_size=40))
def test_names_come_back_as_they_were_given(names: list[str]) -> None:
    assert list(inflated_names(deflated_names(names))) == names


def test_long_runs_inflate_across_chunks() -> None:
    names = [f"{n:08x}-{'é' * (n % 50)}\udcff" for n in range(5_000)]
    assert list(inflated_names(deflated_names(names))) == names


def test_a_name_holding_a_nul_is_refused_naming_it() -> None:
    with pytest.raises(InvalidKeyError, match=r"'b\\x00c' holds a NUL byte"):
        deflated_names(["a", "b\0c", "d"])
