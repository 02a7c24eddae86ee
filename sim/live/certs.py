"""A self-signed certificate authority and a server certificate, made at start.

The certificate covers the emulator's three hostnames (and their wildcard, so that
``search.eu-west.localhost`` style names also verify), ``localhost`` and the loopback
addresses. The CA file is what a client trusts (``curl --cacert``, ``httpx`` ``verify``).
"""

from __future__ import annotations

import ssl
from dataclasses import dataclass
from pathlib import Path

HOSTNAMES = {"search": "search.localhost", "rpc": "rpc.localhost",
             "streams": "streams.localhost"}
"""The hostname of each API on the emulator (told apart by TLS SNI and ``Host``)."""

_NAMES = (*HOSTNAMES.values(), "*.localhost", "localhost", "127.0.0.1", "::1")


@dataclass(frozen=True)
class Certificate:
    """Paths of the PEM files: the CA to trust, the server's chain and key."""

    ca_path: Path
    cert_path: Path
    key_path: Path

    def client_context(self) -> ssl.SSLContext:
        """A client TLS context trusting this CA (hostnames checked as usual)."""
        return ssl.create_default_context(cafile=str(self.ca_path))


def make_certificate(folder: str | Path) -> Certificate:
    """Create a fresh CA and server certificate under ``folder`` (created if needed)."""
    import trustme

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    ca = trustme.CA(organization_name="capsim emulator")
    server = ca.issue_cert(*_NAMES)
    paths = Certificate(folder / "ca.pem", folder / "server.pem", folder / "server.key")
    ca.cert_pem.write_to_path(str(paths.ca_path))
    server.private_key_pem.write_to_path(str(paths.key_path))
    with open(paths.cert_path, "wb") as fh:
        for blob in server.cert_chain_pems:
            fh.write(blob.bytes())
    paths.key_path.chmod(0o600)
    return paths
