"""Real traffic in: browser, proxy and Polly HARs and JSON-RPC request logs recorded
against other providers (issue 14), and the import's empty/typed-input rules (issue 7).

Fixtures under tests/fixtures/ follow the public formats (Chrome DevTools and Polly.JS
HAR exports, go-ethereum's rpc/testdata request shapes); the rest are built here. Every
expected value is counted by hand from the fixture, not taken from the importer.
"""

from __future__ import annotations

import base64
import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner
from scenarios import write_scenario
from whole_demand import whole_demand

from sim.core.errors import CapsimError
from sim.core.pseudonyms import pseudonym
from sim.traces.canonical import finalize
from sim.traces.importers import import_trace
from sim.traces.redaction import KeyRegistry, KeySurvived, scan_trace
from sim.traces.stats import render_stats, trace_stats

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
T0 = 1_714_564_800_000_000_000
CALL = [{"to": "0x" + "cd" * 20, "data": "0x70a08231"}, "latest"]


def read(path) -> list[dict]:
    return pq.read_table(path).to_pylist()


def rpc(method="eth_call", ident=1, params=CALL):
    body = {"jsonrpc": "2.0", "id": ident, "method": method}
    if params is not None:
        body["params"] = params
    return body


def entry(method, url, body=None, headers=(), status=200, reply=None, **extra):
    req = {"method": method, "url": url, "headers": [{"name": n, "value": v}
                                                     for n, v in headers]}
    if body is not None:
        req["postData"] = {"mimeType": "application/json", "text": json.dumps(body)}
    content = {} if reply is None else {"text": json.dumps(reply)}
    return {"startedDateTime": "2024-05-01T12:00:00.000Z", "time": 12.5, "request": req,
            "response": {"status": status, "content": content}, **extra}


def write_har(tmp_path, entries, name="t.har", creator="WebInspector") -> Path:
    src = tmp_path / name
    src.write_text(json.dumps({"log": {"version": "1.2", "creator": {"name": creator},
                                       "entries": entries}}))
    return src


def raw_bytes_hold(path: Path, secret: str) -> bool:
    return secret.encode() in path.read_bytes()


# -- credentials wherever they hide --------------------------------------------------------

HEX32 = "9aa3d95b3bc440fa88ea12eaa4456161"
ALCHEMY = "Zx8_Qm3-Lk7Vt2Rw9Yp4Hn6Bc1Df5Gs0"  # 32 URL-safe characters
LB = "a1b2c3d4e5f6a7b8c9d0e1f2"
QN = "3f0d2c9e8b7a6f5e4d3c2b1a0f9e8d7c6b5a4f3e"  # 40 hex, a QuickNode-style token
TOKEN = "tok_9Qw2Er4Ty6Ui8Op0As3Df5Gh"
BASIC_SECRET = "sk_live_4Rt8Vz3Bn6Yc1DfQm2Lk"

# (form, url, headers, the key the row must carry)
CREDENTIAL_FORMS = [
    ("path /v1/lb/<key>", f"https://eth.lb-provider.example/v1/lb/{LB}", (), LB),
    ("path /v3/<32 hex>", f"https://mainnet.infura-like.example/v3/{HEX32}", (), HEX32),
    ("path /v2/<key>", f"https://eth-mainnet.alchemy-like.example/v2/{ALCHEMY}", (), ALCHEMY),
    ("path /<token>/", f"https://x.quiknode-like.example/{QN}/", (), QN),
    ("query access_token", f"https://rpc.example.net/?access_token={TOKEN}", (), TOKEN),
    ("query x-api-key", f"https://rpc.example.net/?x-api-key={TOKEN}", (), TOKEN),
    ("query apikey", f"https://rpc.example.net/?apikey={TOKEN}", (), TOKEN),
    ("userinfo user:key", f"https://user:{TOKEN}@rpc.example.net/", (), TOKEN),
    ("userinfo key only", f"https://{TOKEN}@rpc.example.net/", (), TOKEN),
    ("Authorization Bearer", "https://rpc.example.net/", (("Authorization",
                                                          f"Bearer {TOKEN}"),), TOKEN),
    ("Authorization Basic", "https://rpc.example.net/", (("authorization", "Basic " +
     base64.b64encode(f"project-77:{BASIC_SECRET}".encode()).decode()),), BASIC_SECRET),
    ("X-Api-Key header", "https://rpc.example.net/", (("x-api-key", TOKEN),), TOKEN),
]


@pytest.mark.parametrize(("form", "url", "headers", "key"), CREDENTIAL_FORMS,
                         ids=[f[0] for f in CREDENTIAL_FORMS])
def test_each_credential_form_becomes_the_key_pseudonym_and_never_survives(
        tmp_path, form, url, headers, key):
    src = write_har(tmp_path, [entry("POST", url, rpc(), headers)])
    out = tmp_path / "o.parquet"
    report = import_trace(src, out)
    (row,) = read(out)
    # content decides: a JSON-RPC body is RPC traffic wherever it was sent
    assert (row["api"], row["method"]) == ("rpc", "eth_call")
    assert row["key"] == pseudonym(key)
    assert report.distinct_keys == 1
    assert not raw_bytes_hold(out, key)
    assert key not in report.render()


def test_the_path_key_of_the_issue_no_longer_becomes_a_search_method(tmp_path):
    """Before: POST https://HOST/v1/lb/<key> was stored as method "POST /v1/lb/<key>",
    api search. Now the JSON-RPC body makes it RPC, and a non-RPC request to that host is
    counted by host; mapped to search, the key segment is {key}."""
    url = f"https://eth.lb-provider.example/v1/lb/{LB}"
    entries = [entry("POST", url, rpc("eth_blockNumber", params=[])),
               entry("GET", url + "/status")]
    src = write_har(tmp_path, entries)
    out = tmp_path / "o.parquet"
    report = import_trace(src, out)
    assert [(r["api"], r["method"]) for r in read(out)] == [("rpc", "eth_blockNumber")]
    # the host was learned as RPC from content, so the GET is no service request
    assert report.ignored == {"entries that are not service requests": 1}
    report = import_trace(src, out, host_map=["eth.lb-provider.example=search"])
    methods = [r["method"] for r in read(out)]
    assert methods == ["eth_blockNumber", "GET /v1/lb/{key}/status"]
    assert not raw_bytes_hold(out, LB)


def test_stored_methods_never_hold_a_path_segment_of_an_unrecognised_host(tmp_path):
    secretish = "u7Yt5Re3Wq1Zx9Cv8Bn6Ml4Kj2"
    entries = [entry("GET", f"https://cdn.other.example/v1/assets/{secretish}/x.js"),
               entry("POST", "https://cdn.other.example/v1/size", {"not": "sizing"}),
               entry("POST", "https://rpc.example.net/", rpc())]
    src = write_har(tmp_path, entries)
    out = tmp_path / "o.parquet"
    report = import_trace(src, out)
    assert [r["method"] for r in read(out)] == ["eth_call"]
    assert report.unmapped_hosts == {"cdn.other.example": 2}
    assert not raw_bytes_hold(out, secretish)


def test_chain_data_in_a_search_path_is_not_taken_for_a_key(tmp_path):
    tx = "0x" + "5e" * 32
    entries = [entry("GET", f"https://search.example-chain.io/v1/tx/{tx}",
                     headers=(("X-Api-Key", TOKEN),))]
    src = write_har(tmp_path, entries)
    out = tmp_path / "o.parquet"
    import_trace(src, out, host_map=["search.example-chain.io=search"])
    (row,) = read(out)
    assert (row["method"], row["key"]) == (f"GET /v1/tx/{tx}", pseudonym(TOKEN))


def test_the_post_write_scan_checks_opaque_url_tokens_that_are_not_keys(tmp_path):
    token = "ses_5Hj7Kl9Mn2Bv4Cx6Zq8Wr1Ty"
    # a canonical table written without knowing the token (so it is still there)
    table = finalize({"time_ns": [T0], "api": ["search"], "method": [f"GET /v1/x/{token}"],
                      "key": [None]}, KeyRegistry())
    pq.write_table(table, tmp_path / "t.parquet")
    registry = KeyRegistry()
    registry.add(token, counted=False)  # seen in a URL, not used as a row's key
    assert len(registry) == 0 and token in registry.keys
    with pytest.raises(KeySurvived):
        scan_trace(str(tmp_path / "t.parquet"), registry, label="t.parquet")


def test_a_query_token_that_is_not_key_named_is_still_redacted_and_scanned(tmp_path):
    token = "ses_5Hj7Kl9Mn2Bv4Cx6Zq8Wr1Ty"
    url = f"https://search.example-chain.io/v1/usage/{token}?session={token}"
    entries = [entry("GET", url, headers=(("X-Api-Key", TOKEN),))]
    src = write_har(tmp_path, entries)
    out = tmp_path / "o.parquet"
    import_trace(src, out, host_map=["search.example-chain.io=search"])
    (row,) = read(out)
    assert row["method"] == "GET /v1/usage/{key}" and row["key"] == pseudonym(TOKEN)
    assert not raw_bytes_hold(out, token)


# -- classification by content, then host, then path ------------------------------------

def test_analytics_beacons_under_v1_are_not_search_rows(tmp_path):
    """Two beacons of a news site's HAR used to become `search GET /v1/beacons/*`."""
    entries = [entry("GET", "https://stats.news.example/v1/beacons/pageview"),
               entry("GET", "https://stats.news.example/v1/beacons/scroll"),
               entry("GET", "https://www.news.example/article/1")]
    src = write_har(tmp_path, entries)
    with pytest.raises(CapsimError) as info:
        import_trace(src, tmp_path / "o.parquet")
    msg = info.value.render()
    assert msg.startswith(f"{src}: nothing to import: 3 entries: 3 entries to hosts not "
                          "recognised or mapped (top: stats.news.example 2, www.news.example 1)")
    assert "--allow-empty" in msg and not (tmp_path / "o.parquet").exists()


def test_host_map_globs_ignore_and_order(tmp_path):
    entries = [entry("GET", "https://a.cdn.example/v1/x"),
               entry("GET", "https://b.cdn.example/v1/y"),
               entry("GET", "https://api.svc.example/v1/usage"),
               entry("POST", "https://api.svc.example/v1/size", {"items": []})]
    src = write_har(tmp_path, entries)
    out = tmp_path / "o.parquet"
    report = import_trace(src, out, on_invalid="skip",
                          host_map=["*.cdn.example=ignore", "api.svc.example=search"])
    assert [r["method"] for r in read(out)] == ["GET /v1/usage"]
    assert report.ignored == {"entries to hosts mapped to ignore": 2}
    assert report.skipped_by_reason == {"body": 1}  # a sizing POST with a bad body
    assert report.unmapped_hosts == {}


@pytest.mark.parametrize("spec", ["rpc.example.net", "rpc.example.net=graphql", "=rpc",
                                  "a b=rpc"])
def test_a_bad_host_map_is_a_user_error(tmp_path, spec):
    src = write_har(tmp_path, [entry("POST", "https://rpc.example.net/", rpc())])
    with pytest.raises(CapsimError) as info:
        import_trace(src, tmp_path / "o.parquet", host_map=[spec])
    assert info.value.field == "--host-map"


def test_a_post_to_an_rpc_host_that_is_not_json_rpc_is_invalid_and_located(tmp_path):
    entries = [entry("POST", "https://rpc.example.net/", rpc()),
               entry("POST", "https://rpc.example.net/", {"query": "{ block }"})]
    src = write_har(tmp_path, entries)
    with pytest.raises(CapsimError) as info:
        import_trace(src, tmp_path / "o.parquet")
    assert info.value.field == "log.entries[1].request.postData.text"
    assert f"{src}: log.entries[1].request.postData.text: expected a JSON-RPC" in \
        info.value.render()


# -- JSON-RPC as clients send it -------------------------------------------------------------

SHAPES = [
    ("string id", rpc(ident="a-1"), [("eth_call", False)], {"id a string": 1}),
    ("null id", rpc(ident=None), [("eth_call", False)], {"id null": 1}),
    ("notification", {"jsonrpc": "2.0", "method": "eth_call", "params": CALL},
     [("eth_call", True)], {"notification (no id)": 1}),
    ("missing params", rpc("eth_blockNumber", params=None), [("eth_blockNumber", False)],
     {"params missing": 1}),
    ("object params", rpc("eth_getLogs", params={"fromBlock": "0x1"}),
     [("eth_getLogs", False)], {"params an object": 1}),
    ("batch mixing them", [rpc(ident=1), {"jsonrpc": "2.0", "method": "eth_subscribe"},
                           rpc("eth_chainId", ident="c", params=[])],
     [("eth_call", False), ("eth_subscribe", True), ("eth_chainId", False)],
     {"notification (no id)": 1, "params missing": 1, "id a string": 1}),
]


@pytest.mark.parametrize(("shape", "body", "rows", "deviations"), SHAPES,
                         ids=[s[0] for s in SHAPES])
@pytest.mark.parametrize("fmt", ["har", "rpc-log"])
def test_each_json_rpc_shape_is_kept_and_its_deviation_counted(
        tmp_path, fmt, shape, body, rows, deviations):
    if fmt == "har":
        src = write_har(tmp_path, [entry("POST", "https://rpc.example.net/", body)])
    else:
        src = tmp_path / "t.log"
        src.write_text(f"2024-05-01T12:00:00Z key={TOKEN} {json.dumps(body)}\n")
    out = tmp_path / "o.parquet"
    report = import_trace(src, out, fmt=fmt)
    got = read(out)
    assert [(r["method"], bool(r["notification"])) for r in got] == rows
    assert report.deviations == deviations
    assert "deviations from the spec's envelope (kept)" in report.render()


def test_a_bad_element_of_a_batch_is_located_inside_the_body(tmp_path):
    body = [rpc(ident=1), {"jsonrpc": "2.0", "id": [1], "method": "eth_call"}]
    src = write_har(tmp_path, [entry("POST", "https://rpc.example.net/", body)])
    with pytest.raises(CapsimError) as info:
        import_trace(src, tmp_path / "o.parquet")
    assert info.value.field == "log.entries[0].request.postData.text[1].id"


def test_a_notification_gets_no_reply_status_in_a_batch(tmp_path):
    body = [rpc(ident=1), {"jsonrpc": "2.0", "method": "eth_subscribe", "params": []}]
    reply = [{"jsonrpc": "2.0", "id": 1, "error": {"code": -32005, "message": "slow"}},
             {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": "x"}}]
    src = write_har(tmp_path, [entry("POST", "https://rpc.example.net/", body, reply=reply)])
    import_trace(src, tmp_path / "o.parquet")
    assert [(r["method"], r["status"]) for r in read(tmp_path / "o.parquet")] == [
        ("eth_call", -32005), ("eth_subscribe", 200)]


def test_go_ethereum_style_request_log():
    """tests/fixtures/geth-style-requests.log: 8 request lines (one a comment), shapes
    from go-ethereum's rpc/testdata: 11 calls, 4 of them notifications."""
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "o.parquet"
        report = import_trace(FIXTURES / "geth-style-requests.log", out)
        rows = read(out)
    assert report.format == "rpc-log" and report.rows == 11 and report.skipped == 0
    assert Counter(r["method"] for r in rows) == {
        "test_echo": 7, "test_echoWithCtx": 1, "rpc_modules": 1, "eth_subscribe": 1,
        "eth_unsubscribe": 1}
    assert sum(bool(r["notification"]) for r in rows) == 4
    assert report.deviations == {"id a string": 2, "id null": 1, "notification (no id)": 4,
                                 "params an object": 1, "params missing": 2}
    assert report.ignored == {"comment lines": 1}


# -- browser and proxy HARs ------------------------------------------------------------------

def test_chrome_har_of_a_dapp_talking_to_a_provider(tmp_path):
    """tests/fixtures/provider-chrome.har (Chrome DevTools export): 12 entries."""
    out = tmp_path / "o.parquet"
    report = import_trace(FIXTURES / "provider-chrome.har", out)
    rows = read(out)
    # 5 JSON-RPC POSTs, one a batch of 3: 7 RPC rows; one streams websocket handshake
    assert Counter((r["api"], r["method"]) for r in rows) == {
        ("rpc", "eth_blockNumber"): 3, ("rpc", "eth_call"): 3, ("rpc", "eth_getLogs"): 1,
        ("streams", "new-blocks"): 1}
    assert {r["key"] for r in rows if r["api"] == "rpc"} == {pseudonym(
        "9aa3d95b3bc440fa88ea12eaa4456161")}
    assert [r["status"] for r in rows if r["api"] == "rpc"].count(-32005) == 1
    assert report.ignored == {"CORS preflight (OPTIONS) entries": 1,
                              "entries to hosts not recognised or mapped": 4,
                              "websocket entries to other paths": 1}
    assert report.unmapped_hosts == {"analytics.news-site.example": 3,
                                     "app.example-dapp.io": 1}
    assert not raw_bytes_hold(out, "9aa3d95b3bc440fa88ea12eaa4456161")
    assert not raw_bytes_hold(out, "5c1e2f0a9b8d7c6e5f4a3b2c1d0e9f8a")  # beacon uid


def test_firefox_har_websocket_entries(tmp_path):
    """Firefox exports handshakes as GETs with status 101 (no _resourceType); a stream
    path on a host that matches is a handshake, elsewhere it is counted."""
    key = ("X-Api-Key", TOKEN)
    entries = [
        entry("POST", "https://rpc.eu-west-1.example-chain.io/", rpc("svc_call"), (key,)),
        entry("GET", "wss://streams.eu-west-1.example-chain.io/pending-txs", status=101),
        entry("GET", "wss://chat.elsewhere.example/pending-txs", status=101),
        entry("GET", "wss://streams.eu-west-1.example-chain.io/socket.io/", status=101,
              _resourceType="websocket", _webSocketMessages=[]),
    ]
    src = write_har(tmp_path, entries, creator="Firefox")
    out = tmp_path / "o.parquet"
    report = import_trace(src, out)
    assert [(r["api"], r["method"]) for r in read(out)] == [
        ("rpc", "svc_call"), ("streams", "pending-txs")]
    assert report.ignored == {"websocket entries to hosts not recognised or mapped": 1,
                              "websocket entries to other paths": 1}
    assert report.unmapped_hosts == {"chat.elsewhere.example": 1}
    # mapping the host makes it count; mapping it elsewhere does not
    import_trace(src, out, host_map=["chat.elsewhere.example=streams"])
    assert [r["method"] for r in read(out)][-1] == "pending-txs"
    report = import_trace(src, out, host_map=["streams.*=rpc"])
    assert [r["method"] for r in read(out)] == ["svc_call"]


def test_polly_recording_with_basic_auth(tmp_path):
    """tests/fixtures/polly-provider.har: Polly.JS recording, Basic credentials."""
    out = tmp_path / "o.parquet"
    report = import_trace(FIXTURES / "polly-provider.har", out)
    rows = read(out)
    assert [r["method"] for r in rows] == ["eth_chainId", "eth_getBalance", "eth_call"]
    assert {r["key"] for r in rows} == {pseudonym("pk_live_7Hq2Xw9Lm4Rt8Vz3Bn6Yc1Df")}
    assert report.deviations == {"id a string": 1}
    data = out.read_bytes()
    assert b"pk_live_7Hq2Xw9Lm4Rt8Vz3Bn6Yc1Df" not in data and b"project-1234" not in data


def test_proxy_har_with_userinfo_and_ports(tmp_path):
    """Charles / mitmproxy exports keep the full URL: userinfo, port, query."""
    entries = [entry("POST", f"https://u:{TOKEN}@rpc.example.net:8443/?cid=1", rpc()),
               entry("CONNECT", "https://rpc.example.net:8443")]
    src = write_har(tmp_path, entries, creator="Charles Proxy")
    out = tmp_path / "o.parquet"
    report = import_trace(src, out)
    assert [(r["method"], r["key"]) for r in read(out)] == [("eth_call", pseudonym(TOKEN))]
    assert report.ignored == {"entries that are not service requests": 1}


def test_trace_stats_shows_methods_as_recorded(tmp_path):
    out = tmp_path / "o.parquet"
    import_trace(FIXTURES / "geth-style-requests.log", out)
    stats = trace_stats(out)
    assert stats["counts"]["method"]["test_echo"] == 7 and stats["notifications"] == 4
    text = render_stats(stats)
    assert "by method: test_echo 7" in text
    assert "JSON-RPC notifications (no reply expected): 4 rows" in text
    assert "priced at default_method_cu" in text


# -- issue 7: empty imports, types, the CSV traceback --------------------------------------

EMPTY = [("empty.jsonl", "jsonl", ""), ("empty.log", "rpc-log", ""),
         ("header.csv", "csv", "time_ns,api,method\n"), ("empty.har", "har",
                                                          '{"log": {"entries": []}}')]


@pytest.mark.parametrize(("name", "fmt", "text"), EMPTY, ids=[e[0] for e in EMPTY])
def test_an_import_that_keeps_nothing_is_an_error_unless_allowed(tmp_path, name, fmt, text):
    from sim.cli.trace import trace
    src = tmp_path / name
    src.write_text(text)
    out = tmp_path / "o.parquet"
    res = CliRunner().invoke(trace, ["import", str(src), "--format", fmt, "--out", str(out)])
    assert res.exit_code == 2 and str(src) in res.output and "nothing to import" in res.output
    assert not out.exists()
    res = CliRunner().invoke(trace, ["import", str(src), "--format", fmt, "--out", str(out),
                                     "--allow-empty"])
    assert res.exit_code == 0 and pq.read_metadata(out).num_rows == 0


def test_the_empty_error_gives_reasons_by_count(tmp_path):
    src = tmp_path / "t.log"
    src.write_text("# only comments\n\n2024-05-01T12:00:00Z {\"jsonrpc\": \"1.0\"}\n")
    with pytest.raises(CapsimError) as info:
        import_trace(src, tmp_path / "o.parquet", fmt="rpc-log", on_invalid="skip")
    assert info.value.message.startswith(
        "nothing to import: 3 lines: 1 blank lines, 1 comment lines, 1 invalid (body)")


def test_parquet_time_ns_stored_as_strings_is_refused(tmp_path):
    table = pa.table({"time_ns": [str(T0)], "api": ["rpc"], "method": ["svc_call"]})
    pq.write_table(table, tmp_path / "s.parquet")
    with pytest.raises(CapsimError) as info:
        import_trace(tmp_path / "s.parquet", tmp_path / "o.parquet")
    assert info.value.field == "time_ns" and "integer or timestamp" in info.value.message
    # and the other way round: a number where text belongs
    table = pa.table({"time_ns": [T0], "api": ["rpc"], "method": [7]})
    pq.write_table(table, tmp_path / "n.parquet")
    with pytest.raises(CapsimError) as info:
        import_trace(tmp_path / "n.parquet", tmp_path / "o.parquet")
    assert info.value.field == "method"


def test_jsonl_values_must_have_their_columns_json_type(tmp_path):
    src = tmp_path / "t.jsonl"
    src.write_text(json.dumps({"time_ns": T0, "api": "rpc", "method": "svc_call"}) + "\n"
                   + json.dumps({"time_ns": str(T0), "api": "rpc", "method": "svc_call"})
                   + "\n" + json.dumps({"time_ns": T0, "api": "rpc", "method": 5}) + "\n")
    report = import_trace(src, tmp_path / "o.parquet", on_invalid="skip")
    assert report.rows == 1 and report.skipped_by_reason == {"time": 1, "method": 1}


def test_a_csv_row_with_a_wrong_field_count_and_a_bad_byte_prints_no_traceback(tmp_path):
    src = tmp_path / "bad.csv"
    src.write_bytes(b"time_ns,api,method\n" + f"{T0},rpc,svc_call\n".encode() * 3
                    + f"{T0},rpc,svc_".encode() + b"\xff,extra\n")
    res = subprocess.run([sys.executable, "-c", "from sim.cli.main import main; main()", "trace",
                          "import", str(src), "--out", str(tmp_path / "o.parquet")],
                         capture_output=True, text=True, check=False)
    assert res.returncode == 2
    assert res.stderr.strip() == f"capsim: error: {src}:5: line: expected UTF-8 text"


# -- replaying imported provider traffic through method_map ----------------------------------

METHOD_MAP = {"eth_call": "svc_call", "eth_blockNumber": "svc_pendingBlock", "*": "svc_call"}


def _provider_scenario(tmp_path, method_map) -> Path:
    trace = tmp_path / "provider.parquet"
    import_trace(FIXTURES / "provider-chrome.har", trace)
    pairs = ", ".join(f'"{k}" = "{v}"' for k, v in method_map.items())
    return write_scenario(tmp_path, filename="move.toml", name="move-from-provider",
                          tables='[[regions]]\nname = "eu"\nrtt_ms = 10\n', sources=f"""
[[sources]]
name = "provider"
key = "k"
trace = "provider.parquet"
replay = {{ method_map = {{ {pairs} }} }}
""")


def test_method_map_renames_recorded_methods_before_replay(tmp_path):
    from sim.config.resolved import load
    from sim.workload.demand import build_plan

    plan = build_plan(load(str(_provider_scenario(tmp_path, METHOD_MAP))))
    d = whole_demand(plan)
    names = Counter(plan.tables.methods[m] for m in d.method)
    # the fixture's 7 RPC rows: eth_call 3, eth_blockNumber 3, eth_getLogs 1 (via "*")
    assert names == {"svc_call": 4, "svc_pendingBlock": 3}
    mapped = next(n for n in plan.notes if "mapped by replay.method_map" in n)
    assert "eth_call -> svc_call 3 row(s)" in mapped
    assert "eth_blockNumber -> svc_pendingBlock 3 row(s)" in mapped
    assert 'eth_getLogs -> svc_call (via "*") 1 row(s)' in mapped
    # CU follows the mapped method's price: 3 x svc_pendingBlock + 4 x svc_call
    from sim.config.pricing import Pricing, default_pricing_table
    rpc = Pricing.model_validate(default_pricing_table()).rpc
    assert d.reserve.sum() == pytest.approx(
        4 * rpc.cost("svc_call") + 3 * rpc.cost("svc_pendingBlock"))


def test_without_a_method_map_recorded_methods_are_listed_with_their_price(tmp_path):
    from sim.config.resolved import load
    from sim.workload.demand import build_plan

    plan = build_plan(load(str(_provider_scenario(tmp_path, {}))))
    kept = next(n for n in plan.notes if "replayed as recorded" in n)
    assert "eth_blockNumber" in kept and "eth_call" in kept and "eth_getLogs" in kept


def test_a_method_map_target_the_scenario_does_not_know_is_a_user_error(tmp_path):
    from sim.config.resolved import load
    from sim.workload.demand import build_plan

    scenario = _provider_scenario(tmp_path, {"eth_call": "svc_cal"})
    with pytest.raises(CapsimError) as info:
        build_plan(load(str(scenario)))
    assert info.value.field == "sources[0].replay.method_map.eth_call"


def test_capsim_run_replays_provider_traffic_through_method_map(tmp_path):
    from sim.cli.main import main

    scenario = _provider_scenario(tmp_path, METHOD_MAP)
    out = tmp_path / "report"
    res = CliRunner().invoke(main, ["run", str(scenario), "--out", str(out), "-q"])
    assert res.exit_code == 0, res.output
    summary = json.loads((out / "summary.json").read_text())
    (tier,) = summary["tiers"]
    assert tier["tier"] == "RPC"
    notes = "\n".join(summary["notes"])
    assert 'eth_getLogs -> svc_call (via "*") 1 row(s)' in notes
    assert "1 websocket handshake row(s) of the trace not replayed" in notes
    assert "eth_call -> svc_call" in (out / "report.md").read_text()
