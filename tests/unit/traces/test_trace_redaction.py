"""Key redaction: redact_text, the registry, and the post-write scan."""

from __future__ import annotations

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sim.core.pseudonyms import pseudonym
from sim.traces.canonical import finalize
from sim.traces.redaction import (
    KeyRegistry,
    KeySurvived,
    bearer_token,
    redact_text,
    scan_trace,
    split_url,
)
from sim.traces.schema import SCHEMA, TraceWriter

K1 = "3f9a2c71d04e4b8e9a6c15f2b7d08e43"
K2 = "a81c5e0f9b2d47c6813e7f0a5c9d2b64"

hex_keys = st.text(alphabet="0123456789abcdef", min_size=32, max_size=64)


def test_every_occurrence_is_replaced_by_the_pseudonym():
    text = f"GET /v1/{K1}/info?apiKey={K1}&x={K2}"
    out = redact_text(text, [K1, K2])
    assert K1 not in out and K2 not in out
    assert out == f"GET /v1/{pseudonym(K1)}/info?apiKey={pseudonym(K1)}&x={pseudonym(K2)}"


def test_tokens_shaped_like_a_seen_key_are_replaced_too():
    unseen = "0b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e"  # 32 hex like K1, never registered
    out = redact_text(f"/v1/{unseen}/x", [K1])
    assert unseen not in out and pseudonym(unseen) in out
    # shorter or longer hex runs (a 16-hex hash, a 40-hex address) are not key-shaped
    text = "hash 0123456789abcdef addr 0x" + "ab" * 20
    assert redact_text(text, [K1]) == text


def test_a_key_written_after_the_pseudonym_prefix_is_still_replaced():
    out = redact_text("key-" + K1, [K1])
    assert K1 not in out and redact_text(out, [K1]) == out


def test_pseudonyms_and_plain_text_are_left_alone():
    text = f"{pseudonym(K1)} svc_call POST /v1/size"
    assert redact_text(text, [K1]) == text
    assert redact_text("anything", []) == "anything"


@settings(max_examples=200, deadline=None)
@given(st.lists(hex_keys, min_size=1, max_size=3), st.lists(
    st.one_of(st.text(max_size=12), hex_keys, st.sampled_from(["key-", "?api_key=", "/"])),
    max_size=8))
def test_redaction_is_idempotent_and_complete(keys, pieces):
    text = "".join(pieces + keys)
    once = redact_text(text, keys)
    assert redact_text(once, keys) == once
    for key in keys:
        assert key not in once
    assert not KeyRegistry(keys).leaks(once)


def test_url_and_header_helpers():
    scheme, host, path, keys = split_url(f"wss://Streams.EU-west-1.example.io/pending-txs"
                                         f"?APIKEY={K1}&Key={K2}&other=1")
    assert (scheme, host, path) == ("wss", "streams.eu-west-1.example.io", "/pending-txs")
    assert keys == [K1, K2]
    assert bearer_token(f"Bearer {K1}") == K1
    assert bearer_token(f"bearer   {K1} ") == K1
    assert bearer_token(f"Basic {K1}") is None


def _write(tmp_path, cols, registry, metadata_name="x.csv"):
    writer = TraceWriter(tmp_path / "t.parquet", chunk_rows=10)
    writer.write(finalize(cols, registry))
    writer.close(metadata_name)
    return writer


def _cols(method="svc_call", key=K1):
    return {"time_ns": [1_714_564_800_000_000_000], "api": ["rpc"], "method": [method],
            "key": [key]}


def test_scan_passes_a_clean_file(tmp_path):
    registry = KeyRegistry()
    writer = _write(tmp_path, _cols(), registry)
    assert K1 in registry
    scan_trace(str(writer.tmp), registry, label="out.parquet")
    writer.discard()


def test_scan_finds_a_key_that_slipped_into_a_text_field(tmp_path):
    registry = KeyRegistry()
    writer = _write(tmp_path, _cols(method=f"GET /v1/{K2}", key=None), registry)
    registry.add(K2)  # seen only after the text was written
    with pytest.raises(KeySurvived) as info:
        scan_trace(str(writer.tmp), registry, label="out.parquet")
    assert info.value.field == "method" and K2 not in str(info.value)
    writer.discard()


def test_scan_finds_a_key_in_the_metadata_and_in_raw_bytes(tmp_path):
    registry = KeyRegistry([K1])
    writer = _write(tmp_path, _cols(key=None), registry, metadata_name=f"trace-{K1}.csv")
    with pytest.raises(KeySurvived) as info:
        scan_trace(str(writer.tmp), registry, label="out.parquet")
    assert info.value.field == "metadata"
    writer.discard()


def test_scan_rejects_a_raw_key_column(tmp_path):
    """A file written around finalize (no pseudonyms) is caught by the key check."""
    import pyarrow.parquet as pq

    table = pa.table({name: pa.nulls(1, field.type) for name, field in zip(
        SCHEMA.names, SCHEMA, strict=True)})
    table = table.set_column(0, "time_ns", pa.array([1], pa.int64()))
    for name, value in (("api", "rpc"), ("method", "svc_call"), ("key", K1)):
        i = SCHEMA.get_field_index(name)
        table = table.set_column(i, name, pa.array([value]).dictionary_encode())
    path = tmp_path / "raw.parquet"
    pq.write_table(table, path)
    with pytest.raises(KeySurvived) as info:
        scan_trace(str(path), KeyRegistry(), label="raw.parquet")
    assert info.value.field == "key"
