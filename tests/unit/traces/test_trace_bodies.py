"""Request-body validation against spec 2.1-2.4: one bad case per rule, path named."""

from __future__ import annotations

import copy
import json
from collections import Counter

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sim.traces.bodies import (
    BodyError,
    canonical_hash,
    parse_json,
    validate_rpc_envelope,
    validate_rpc_payload,
    validate_sizing_body,
)

SECRET = "5f1c0a9e7b3d46a2b8c4e0f1a2b3c4d5"  # a key-like value: must never be echoed
ADDR = "0x" + "ab" * 20


def call(**over):
    obj = {"from": ADDR, "to": "0x" + "cd" * 20, "value": "0x0", "input": "0xa9059cbb"}
    obj.update(over)
    return obj


def sizing(n_items=2):
    profiles = ["fast", "deep", "standard"]
    return {
        "state": {"hash": "0x" + "11" * 32, "request": call()},
        "blockNumber": "0x12a05f2",
        "items": [{"range": {"from": "1000", "to": "250000.5"},
                   "settings": {"profile": profiles[i % 3]},
                   "request": call(input=[{"kind": "hex", "data": "0xdeadbeef"},
                                          {"kind": "amount", "codec": "uint256"}])}
                  for i in range(n_items)],
    }


def envelope(**over):
    obj = {"jsonrpc": "2.0", "id": 7, "method": "svc_call", "params": [{"to": ADDR}, "latest"]}
    obj.update(over)
    return obj


def test_valid_bodies_give_method_items_and_profiles():
    assert validate_rpc_envelope(envelope()).method == "svc_call"
    pending = validate_rpc_envelope(envelope(method="svc_pendingBlock", params=[]))
    assert pending.method == "svc_pendingBlock"
    batch = validate_rpc_payload([envelope(), envelope(id=8.0, method="svc_pendingBlock",
                                                       params=[])])
    assert [c.method for c in batch] == ["svc_call", "svc_pendingBlock"]
    body = sizing(3)
    result = validate_sizing_body(body)
    assert (result.items, result.profiles) == (3, ("fast", "deep", "standard"))
    body["items"][0]["request"]["input"] = "0x"  # a plain hex string is fine in items too
    assert validate_sizing_body(body).items == 3
    assert validate_sizing_body({**sizing(0)}).items == 0


def _set(obj, path, value):
    """Set (or delete, value=...) the element at a dotted/indexed path."""
    parts = path.replace("[", ".").replace("]", "").split(".")
    target = obj
    for p in parts[:-1]:
        target = target[int(p)] if p.isdigit() else target[p]
    last = int(parts[-1]) if parts[-1].isdigit() else parts[-1]
    if value is Ellipsis:
        del target[last]
    else:
        target[last] = value


RPC_CASES = [
    ("jsonrpc", Ellipsis, "jsonrpc", "missing"),
    ("jsonrpc", "1.0", "jsonrpc", '"2.0"'),
    # JSON-RPC 2.0 ids are numbers, strings or null (a missing id is a notification,
    # see test_jsonrpc_as_clients_send_it); other JSON types are errors
    ("id", True, "id", "number, a string or null"),
    ("id", [SECRET], "id", "number, a string or null"),
    ("id", {"k": SECRET}, "id", "number, a string or null"),
    ("method", Ellipsis, "method", "missing"),
    ("method", 12, "method", "string"),
    ("method", "", "method", "string"),
    # params may be missing or an object (JSON-RPC 2.0 by-name); scalars are errors
    ("params", SECRET, "params", "array or an object"),
    ("params", 5, "params", "array or an object"),
]


@pytest.mark.parametrize(("where", "value", "path", "expect"), RPC_CASES)
def test_rpc_envelope_rules(where, value, path, expect):
    body = envelope()
    _set(body, where, value)
    with pytest.raises(BodyError) as info:
        validate_rpc_payload(body)
    assert info.value.path == path
    assert expect in info.value.expected
    assert SECRET not in str(info.value)


def test_rpc_batch_rules():
    with pytest.raises(BodyError, match="non-empty"):
        validate_rpc_payload([])
    bad = envelope(params="latest")
    with pytest.raises(BodyError) as info:
        validate_rpc_payload([envelope(), bad])
    assert info.value.path == "[1].params"
    with pytest.raises(BodyError) as info:
        validate_rpc_payload([envelope(), SECRET])
    assert info.value.path == "[1]" and SECRET not in str(info.value)
    with pytest.raises(BodyError) as info:
        validate_rpc_payload(SECRET)
    assert info.value.path == "body"


SIZING_CASES = [
    # 2.1 top level
    ("state", Ellipsis, "state", "missing"),
    ("state", SECRET, "state", "object"),
    ("state.hash", "0x" + "11" * 31, "state.hash", "32-byte"),
    ("state.hash", "11" * 32, "state.hash", "32-byte"),
    ("state.request", Ellipsis, "state.request", "missing"),
    ("blockNumber", "0x012a", "blockNumber", "leading zeros"),
    ("blockNumber", "19600000", "blockNumber", "hex quantity"),
    ("blockNumber", 19600000, "blockNumber", "hex quantity"),
    ("items", {"0": 1}, "items", "array"),
    ("items", Ellipsis, "items", "missing"),
    # item
    ("items[1].range", Ellipsis, "items[1].range", "missing"),
    ("items[1].range.from", "0x10", "items[1].range.from", "decimal"),
    ("items[0].range.to", 250000, "items[0].range.to", "decimal"),
    ("items[0].range.to", Ellipsis, "items[0].range.to", "missing"),
    ("items[0].settings", "fast", "items[0].settings", "object"),
    ("items[0].settings.profile", Ellipsis, "items[0].settings.profile", "missing"),
    ("items[0].settings.profile", 3, "items[0].settings.profile", "profile"),
    ("items[0].settings.profile", "fast,deep", "items[0].settings.profile", "commas"),
    ("items[1].request", Ellipsis, "items[1].request", "missing"),
    # 2.2 call object (in an item and in state.request)
    ("items[1].request.to", "0x" + "cd" * 19, "items[1].request.to", "20-byte hex address"),
    ("items[1].request.from", SECRET, "items[1].request.from", "20-byte hex address"),
    ("state.request.to", Ellipsis, "state.request.to", "missing"),
    ("items[0].request.value", "0x", "items[0].request.value", "hex quantity"),
    ("items[0].request.value", "0x00", "items[0].request.value", "leading zeros"),
    ("state.request.input", "0xabc", "state.request.input", "even number"),
    ("state.request.input", [{"kind": "hex", "data": "0x00"}], "state.request.input",
     "hex bytes"),
    ("items[0].request.input", 5, "items[0].request.input", "segments"),
    # 2.3 input segments
    ("items[0].request.input[0].kind", "bytes", "items[0].request.input[0].kind",
     '"hex" or "amount"'),
    ("items[0].request.input[0].data", "0xdeadbee", "items[0].request.input[0].data",
     "even number"),
    ("items[0].request.input[0].data", "deadbeef", "items[0].request.input[0].data", "0x"),
    ("items[0].request.input[0].data", Ellipsis, "items[0].request.input[0].data", "missing"),
    ("items[1].request.input[1].codec", Ellipsis, "items[1].request.input[1].codec",
     "missing"),
    ("items[1].request.input[1].codec", "", "items[1].request.input[1].codec", "codec"),
    ("items[1].request.input[1]", SECRET, "items[1].request.input[1]", "object"),
]


@pytest.mark.parametrize(("where", "value", "path", "expect"), SIZING_CASES)
def test_sizing_body_rules(where, value, path, expect):
    body = sizing(2)
    _set(body, where, value)
    with pytest.raises(BodyError) as info:
        validate_sizing_body(body)
    assert info.value.path == path
    assert expect in info.value.expected
    assert SECRET not in str(info.value)


def test_the_error_names_the_path_before_the_expectation():
    body = sizing(3)
    body["items"][2]["request"]["to"] = "0x1234"
    with pytest.raises(BodyError) as info:
        validate_sizing_body(body)
    assert str(info.value) == "items[2].request.to: expected 0x-prefixed 20-byte hex address"


def test_json_parsing_is_strict():
    with pytest.raises(BodyError):
        parse_json('{"jsonrpc": "2.0", "id": NaN, "method": "x", "params": []}')
    with pytest.raises(BodyError):
        parse_json("{" * 100_000)
    assert parse_json(json.dumps(envelope())) == envelope()


def test_body_hash_recognises_the_same_request():
    a = validate_rpc_envelope(envelope(id=1))
    b = validate_rpc_envelope(envelope(id=1001))  # a client retry renumbers the id
    c = validate_rpc_envelope(envelope(params=["latest"]))
    assert a.body_hash == b.body_hash != c.body_hash
    assert len(a.body_hash) == 16 and int(a.body_hash, 16) >= 0
    body = sizing(2)
    reordered = json.loads(json.dumps(body, sort_keys=True))
    assert validate_sizing_body(body).body_hash == validate_sizing_body(reordered).body_hash
    changed = copy.deepcopy(body)
    changed["blockNumber"] = "0x12a05f3"
    assert validate_sizing_body(changed).body_hash != validate_sizing_body(body).body_hash
    assert canonical_hash({"b": 1, "a": 2}) == canonical_hash({"a": 2, "b": 1})


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(
        st.sampled_from(["jsonrpc", "id", "method", "params", "state", "hash", "request",
                         "blockNumber", "items", "range", "from", "to", "settings", "profile",
                         "value", "input", "kind", "data", "codec", "x"]), inner, max_size=6),
    max_leaves=20)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(json_values)
def test_validators_raise_only_body_errors(value):
    for validate in (validate_rpc_payload, validate_sizing_body):
        try:
            validate(value)
        except BodyError as err:
            assert isinstance(err.expected, str) and err.expected


@pytest.mark.parametrize(("over", "deviation", "ident"), [
    ({"id": "a1"}, "id a string", "a1"),
    ({"id": None}, "id null", None),
    ({"id": Ellipsis}, "notification (no id)", None),
    ({"params": Ellipsis}, "params missing", 7),
    ({"params": {"to": ADDR}}, "params an object", 7),
])
def test_jsonrpc_as_clients_send_it(over, deviation, ident):
    body = envelope()
    for k, v in over.items():
        _set(body, k, v)
    deviations = Counter()
    (got,) = validate_rpc_payload(body, deviations)
    assert deviations == Counter({deviation: 1})
    assert (got.method, got.id, got.notification) == ("svc_call", ident, "id" not in body)


def test_a_batch_mixing_calls_and_notifications_keeps_each_and_counts_deviations():
    note = envelope(method="eth_subscribe")
    del note["id"]
    no_params = envelope(id="x", method="eth_blockNumber")
    del no_params["params"]
    deviations = Counter()
    calls = validate_rpc_payload([envelope(), note, no_params], deviations)
    assert [(c.method, c.notification) for c in calls] == [
        ("svc_call", False), ("eth_subscribe", True), ("eth_blockNumber", False)]
    assert deviations == Counter({"notification (no id)": 1, "id a string": 1,
                                  "params missing": 1})
    # a missing params hashes like an empty one (the same request to the server)
    empty = envelope(id="x", method="eth_blockNumber", params=[])
    assert validate_rpc_envelope(empty).body_hash == calls[2].body_hash
