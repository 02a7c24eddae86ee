"""The emulator's certificate authority and server certificate, kept in ``--cert-dir``.

The server certificate names every hostname the emulator serves, each in full:
``search.localhost``, ``rpc.localhost``, ``streams.localhost``, the same three under
each of the scenario's regions (``rpc.eu-west.localhost``: a wildcard ``*.localhost``
would cover one label only, RFC 6125 6.4.3), ``localhost`` and the loopback addresses.

The CA (``ca.pem``, its key ``ca.key``) is made once per folder and reused on every
start with the same ``--cert-dir``, so a client -- or the system's trust store -- needs
to trust it once; the server certificate is reused too while it names the same
hostnames (and is reissued by the same CA when the scenario's regions change).
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from ..core.atomic import AtomicFile
from ..core.errors import CapsimError

HOSTNAMES = {"search": "search.localhost", "rpc": "rpc.localhost",
             "streams": "streams.localhost"}
"""The hostname of each API on the emulator (told apart by TLS SNI and ``Host``)."""

_LABEL = re.compile(r"^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$")
_ADDRESSES = ("localhost", "127.0.0.1", "::1")


def region_label(region: str) -> str | None:
    """The DNS label of a region name (``None`` if it cannot be one)."""
    label = region.strip().lower()
    return label if _LABEL.match(label) else None


def hostnames(regions: Iterable[str] = ()) -> list[str]:
    """Every hostname served: the three APIs, and the three under each region."""
    names = list(HOSTNAMES.values())
    for region in regions:
        label = region_label(region)
        if label is None or label == "default":
            continue
        names.extend(f"{api}.{label}.localhost" for api in HOSTNAMES)
    return list(dict.fromkeys(names))


@dataclass(frozen=True)
class Certificate:
    """Paths of the PEM files: the CA to trust, the server's chain and key; ``reused``
    says whether the CA was already in the folder."""

    ca_path: Path
    cert_path: Path
    key_path: Path
    reused: bool = False



def _names_of(pem: bytes) -> tuple[set[str], dt.datetime] | None:
    from cryptography import x509

    try:
        cert = x509.load_pem_x509_certificate(pem)
        san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except (ValueError, x509.ExtensionNotFound):
        return None
    names = {str(n) for n in san.get_values_for_type(x509.DNSName)}
    names |= {str(a) for a in san.get_values_for_type(x509.IPAddress)}
    return names, cert.not_valid_after_utc


def _write(path: Path, data: bytes, private: bool = False) -> None:
    with AtomicFile(path, "--cert-dir", mode=0o600 if private else None) as f:
        f.write_bytes(data)
        f.commit()


def make_certificate(folder: str | Path, names: Iterable[str] | None = None) -> Certificate:
    """The CA and server certificate under ``folder`` (created if needed), for ``names``
    (default: :func:`hostnames` without regions); reuses what the folder holds."""
    import trustme

    folder = Path(folder)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise CapsimError(f"cannot create the certificate folder: {err.strerror}",
                          file=str(folder), field="--cert-dir") from None
    wanted = [*(names if names is not None else hostnames()), *_ADDRESSES]
    paths = Certificate(folder / "ca.pem", folder / "server.pem", folder / "server.key")
    ca_key = folder / "ca.key"
    reused = paths.ca_path.exists() and ca_key.exists()
    try:
        if reused:
            try:
                ca = trustme.CA.from_pem(paths.ca_path.read_bytes(), ca_key.read_bytes())
            except ValueError:
                raise CapsimError("expected the PEM CA certificate and key `capsim serve` "
                                  "wrote (remove ca.pem and ca.key to make a new CA)",
                                  file=str(paths.ca_path), field="--cert-dir") from None
        else:
            ca = trustme.CA(organization_name="capsim emulator")
            _write(ca_key, ca.private_key_pem.bytes(), private=True)
            _write(paths.ca_path, ca.cert_pem.bytes())
        if reused and paths.cert_path.exists() and paths.key_path.exists():
            have = _names_of(paths.cert_path.read_bytes())
            soon = dt.datetime.now(dt.UTC) + dt.timedelta(days=1)
            if have is not None and have[0] == set(wanted) and have[1] > soon:
                return Certificate(paths.ca_path, paths.cert_path, paths.key_path, True)
        server = ca.issue_cert(*wanted)
        _write(paths.key_path, server.private_key_pem.bytes(), private=True)
        _write(paths.cert_path, b"".join(blob.bytes() for blob in server.cert_chain_pems))
    except OSError as err:
        raise CapsimError(f"cannot write the certificates: {err.strerror}",
                          file=str(folder), field="--cert-dir") from None
    return Certificate(paths.ca_path, paths.cert_path, paths.key_path, reused)
