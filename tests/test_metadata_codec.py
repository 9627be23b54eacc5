from hypothesis import given
from hypothesis import strategies as st

from offload_core.metadata_codec import decode_header_value, encode_header_value


@given(st.text(st.characters(codec="utf-8", exclude_characters="\x00")))
def test_every_string_round_trips_through_ascii(value: str) -> None:
    encoded = encode_header_value(value)
    assert encoded.isascii() and encoded.isprintable()
    assert decode_header_value(encoded) == value


def test_plain_ascii_is_stored_as_is() -> None:
    assert encode_header_value("tenant/ns/persistent/topic") == "tenant/ns/persistent/topic"
    assert encode_header_value("1") == "1"
    assert encode_header_value("héllo") == "=?UTF-8?B?aMOpbGxv?="
    assert decode_header_value(encode_header_value("=?UTF-8?B?looks encoded?=")) == "=?UTF-8?B?looks encoded?="
