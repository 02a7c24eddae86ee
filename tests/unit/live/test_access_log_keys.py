"""The emulator's access log never writes a key that came in a request path (issue 33
item 1): clients put keys in paths (``/v2/<key>``, ``/v1/lb/<key>/status``), and a path
was logged as sent."""

from __future__ import annotations

from sim.core.pseudonyms import pseudonym
from sim.live.access import AccessLog, Exchange

KEY = "prod-3f9c1e77aa0b4d2c"


def _line(path: str, what: str = "-", methods=frozenset()) -> str:
    log = AccessLog(None)
    log.methods = frozenset(methods)
    ex = Exchange({"method": "GET", "path": path, "headers": [(b"x-api-key", KEY.encode())]},
                  None)
    ex.what = what
    return log.line(ex)


def test_a_key_in_a_path_is_written_as_its_pseudonym():
    for path, shown in ((f"/v2/{KEY}", f"/v2/{pseudonym(KEY)}"),
                        (f"/v1/lb/{KEY}/status", f"/v1/lb/{pseudonym(KEY)}/status"),
                        (f"/{KEY}", f"/{pseudonym(KEY)}"),
                        (f"/admin/{KEY}", f"/admin/{pseudonym(KEY)}")):
        line = _line(path, what=path if path.startswith("/admin/") else "-")
        assert KEY not in line, line
        assert f" GET {shown} " in line, line


def test_served_paths_are_written_as_sent():
    for path in ("/", "/v1/size", "/healthz", "/admin/window", "/pending-txs",
                 "/v1/monitoring/unhealthy/ws"):
        assert f" GET {path} " in _line(path)


def test_an_unknown_json_rpc_method_is_written_as_its_pseudonym():
    line = _line("/", what=KEY, methods={"svc_call"})
    assert KEY not in line and f" {pseudonym(KEY)} " in line
    assert " svc_call " in _line("/", what="svc_call", methods={"svc_call"})


def test_a_host_that_is_not_served_is_written_as_its_pseudonym():
    log = AccessLog(None)

    def line(host: str) -> str:
        ex = Exchange({"method": "POST", "path": "/", "headers": [(b"host", host.encode())]},
                      None)
        return log.line(ex)
    assert f" {pseudonym(KEY + '.rpc.localhost')} POST / " in line(f"{KEY}.rpc.localhost:8443")
    assert KEY not in line(f"{KEY}.rpc.localhost")
    for served in ("rpc.localhost", "search.localhost", "127.0.0.1", "localhost", "[::1]"):
        assert f" {served} POST / " in line(served + ":8443")
