"""HAR entries streamed from the file (ijson) give what loading the file whole gave: the
same rows, the same report and the same errors, at ``log.entries[N]`` locations."""

from __future__ import annotations

import json
from pathlib import Path

import ijson
import pyarrow.parquet as pq
import pytest

from sim.core.errors import CapsimError
from sim.traces import formats_har
from sim.traces.importers import import_trace

ROOT = Path(__file__).resolve().parents[3]
HARS = [ROOT / "workloads" / "traces" / "sample.har", ROOT / "tests" / "fixtures" /
        "provider-chrome.har", ROOT / "tests" / "fixtures" / "polly-provider.har"]
KEY = "3f9a2c71d04e4b8e9a6c15f2b7d08e43"


def _whole(monkeypatch):
    """Make the streaming parser refuse every file, so each is read whole (json.load)."""
    def refuse(path, file=None):
        raise ijson.JSONError("refused")

    monkeypatch.setattr(formats_har, "_has_entries", refuse)


def _import(src, out, **kw):
    try:
        report = import_trace(src, out, **kw)
    except CapsimError as err:
        return err.render()
    table = pq.read_table(out)
    return (table.replace_schema_metadata(None), table.schema.metadata, report.rows,
            report.skipped_by_reason, report.skipped_examples, report.ignored,
            report.deviations, report.unmapped_hosts, report.distinct_keys)


def _entry(i: int, **over) -> dict:
    body = {"jsonrpc": "2.0", "id": i, "method": "eth_call", "params": []}
    entry = {"startedDateTime": f"2024-05-01T12:00:{i % 60:02d}.000Z", "time": 12.5,
             "request": {"method": "POST", "url": f"https://rpc.eu-west-1.example.com/v1/{KEY}",
                         "headers": [{"name": "Content-Type", "value": "application/json"}],
                         "postData": {"mimeType": "application/json", "text": json.dumps(body)}},
             "response": {"status": 200, "headers": [],
                          "content": {"text": json.dumps({"jsonrpc": "2.0", "id": i,
                                                          "result": "0x1"})}}}
    entry.update(over)
    return entry


def _write(path: Path, entries: list, text: str | None = None) -> Path:
    path.write_text(text if text is not None else json.dumps(
        {"log": {"version": "1.2", "creator": {"name": "t"}, "pages": [],
                 "entries": entries}}))
    return path


CRAFTED = {
    "entries": [_entry(i) for i in range(30)],
    "bad entries": [_entry(0), _entry(1, request=5), _entry(2, startedDateTime="never"),
                    7, _entry(4, response={"status": 434, "headers": [], "content": {}})],
}


@pytest.mark.parametrize("on_invalid", ["error", "skip"])
@pytest.mark.parametrize("name", [p.name for p in HARS] + list(CRAFTED))
def test_streamed_har_imports_as_the_whole_file(tmp_path, monkeypatch, name, on_invalid):
    src = next((p for p in HARS if p.name == name), None)
    if src is None:
        src = _write(tmp_path / "t.har", CRAFTED[name])
    streamed = _import(src, tmp_path / "a.parquet", on_invalid=on_invalid, chunk_rows=7)
    _whole(monkeypatch)
    whole = _import(src, tmp_path / "b.parquet", on_invalid=on_invalid, chunk_rows=7)
    if isinstance(whole, str):
        assert streamed == whole.replace("b.parquet", "a.parquet")
        return
    assert streamed[0].equals(whole[0])
    assert streamed[1:] == whole[1:]


def test_error_locations_name_the_entry(tmp_path):
    src = _write(tmp_path / "t.har", [_entry(0), _entry(1), _entry(2, startedDateTime="x")])
    with pytest.raises(CapsimError) as err:
        import_trace(src, tmp_path / "t.parquet")
    assert err.value.field.startswith("log.entries[2].")


@pytest.mark.parametrize("text, message", [
    ('{"log": {"entries": [', "expected a JSON document"),
    ('{"log": {"entries": []}} trailing', "expected a JSON document"),
    ('{"log": {"pages": []}}', "expected an array"),
    ('[1, 2]', "expected an array"),
])
def test_not_har_files_are_refused_as_before(tmp_path, text, message):
    src = _write(tmp_path / "t.har", [], text)
    with pytest.raises(CapsimError, match=message):
        import_trace(src, tmp_path / "t.parquet")


def test_json_the_streaming_parser_refuses_is_read_whole_up_to_a_size(tmp_path, monkeypatch):
    """NaN is JSON to json.load, not to ijson: such a file is read whole, as before; past
    WHOLE_BYTES it is refused without being loaded."""
    text = json.dumps({"log": {"entries": [_entry(0, time=float("nan")), _entry(1)]}})
    src = _write(tmp_path / "t.har", [], text)
    assert import_trace(src, tmp_path / "a.parquet").rows == 2
    monkeypatch.setattr(formats_har, "WHOLE_BYTES", 100)

    def no_load(*a):
        raise AssertionError("loaded whole")

    monkeypatch.setattr(formats_har, "load_har", no_load)
    with pytest.raises(CapsimError, match="expected a JSON document"):
        import_trace(src, tmp_path / "b.parquet")


def test_entries_are_parsed_one_at_a_time(tmp_path, monkeypatch):
    """Each pass holds one entry: the parser yields entries while the file is read."""
    src = _write(tmp_path / "t.har", [_entry(i) for i in range(200)])
    seen = []
    stream = formats_har._stream_entries

    def spy(path):
        for entry in stream(path):
            seen.append(entry["request"]["postData"]["text"])
            yield entry

    monkeypatch.setattr(formats_har, "_stream_entries", spy)
    assert import_trace(src, tmp_path / "t.parquet").rows == 200
    assert len(seen) == 400  # two passes, entry by entry


def test_learning_skips_no_host_it_could_still_learn():
    """The first pass reads no body of a host already known to serve every API the entry
    could show; a sizing POST to a host learned as RPC must still teach it Search. Fails
    if the skip drops a lesson (the learned hosts differ from learning every entry)."""
    from sim.traces.hosts import HostMap
    from sim.traces.problems import Problems

    rpc = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "eth_call", "params": []})
    sizing = json.dumps({"state": {}, "items": []})

    def post(url, text):
        return {"request": {"method": "POST", "url": url, "postData": {"text": text}}}

    entries = [post("https://a.example/", rpc), post("https://a.example/", rpc),
               post("https://a.example/v1/size", sizing), post("https://a.example/v1/size",
                                                                rpc),
               post("https://b.example/v1/size", sizing), post("https://b.example/", rpc),
               post("https://c.example/", "not json")]
    ctx = formats_har.HarContext(HostMap(), Problems("x.har"))
    ctx.learn(entries)
    every: dict[str, set[str]] = {}
    for entry in entries:
        found = formats_har.learn_host(entry)
        if found:
            every.setdefault(found[0], set()).add(found[1])
    assert ctx.learned == every == {"a.example": {"rpc", "search"},
                                    "b.example": {"search", "rpc"}}


def test_a_document_nested_past_any_har_is_refused_in_flat_memory(tmp_path):
    """A 'HAR' nested 100,000 arrays deep (a user's JSON-RPC body saved as .json): the
    import is refused with one line naming the file, and never reaches ijson's prefixed
    parser, whose prefixes grew with the square of the depth (23 GB, then the OOM killer).
    A HAR is a handful of levels deep; the limit is MAX_DEPTH."""
    import resource

    depth = 100_000
    path = tmp_path / "deep.json"
    path.write_text('{"jsonrpc":"2.0","id":1,"params":' + "[" * depth + "]" * depth + "}")
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    vm_kb = next(int(line.split()[1]) for line in Path("/proc/self/status").read_text()
                 .splitlines() if line.startswith("VmSize:"))
    # 2 GiB more than this process maps now: a MemoryError, not the machine's OOM killer
    resource.setrlimit(resource.RLIMIT_AS, ((vm_kb << 10) + (2 << 30), hard))
    try:
        with pytest.raises(CapsimError, match="nested more than"):
            formats_har._has_entries(str(path), "deep.json")
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
    assert depth > formats_har.MAX_DEPTH
