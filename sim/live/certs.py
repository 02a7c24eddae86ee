"""The emulator's certificate authority and server certificate, kept in ``--cert-dir``.

The server certificate names every hostname the emulator serves, each in full:
``search.localhost``, ``rpc.localhost``, ``streams.localhost``, the same three under
each of the scenario's regions (``rpc.eu-west.localhost``: a wildcard ``*.localhost``
would cover one label only, RFC 6125 6.4.3), ``localhost`` and the loopback addresses.

The CA (``ca.pem``) is made once per folder and reused on every start with the same
``--cert-dir`` while it is sound (:mod:`.ca`: name-constrained to ``localhost`` and
loopback, a year's validity, its private key kept in the user's configuration folder,
never beside the certificates), so a client -- or the system's trust store -- needs to
trust it once a year; the server certificate is reused too while it names the same
hostnames and is not about to expire (and is reissued by the same CA when the
scenario's regions change). A CA made by an earlier capsim (no name constraints, valid
until 3000, its key ``ca.key`` beside it) is replaced, and its key removed.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from ..core.atomic import AtomicFile
from ..core.errors import CapsimError
from . import ca as ca_mod

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
    says whether the CA was already in the folder; ``notes``, what changed there that
    the user should know (a CA replaced, a key moved out)."""

    ca_path: Path
    cert_path: Path
    key_path: Path
    reused: bool = False
    notes: tuple[str, ...] = ()


def _names_of(pem: bytes) -> tuple[set[str], dt.datetime, object] | None:
    from cryptography import x509

    try:
        cert = x509.load_pem_x509_certificate(pem)
        san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except (ValueError, x509.ExtensionNotFound):
        return None
    names = {str(n) for n in san.get_values_for_type(x509.DNSName)}
    names |= {str(a) for a in san.get_values_for_type(x509.IPAddress)}
    return names, cert.not_valid_after_utc, cert


def _write(path: Path, data: bytes, private: bool = False, option: str = "--cert-dir") -> None:
    with AtomicFile(path, option, mode=0o600 if private else None) as f:
        f.write_bytes(data)
        f.commit()


def _signed_by(cert, ca) -> bool:
    try:
        cert.verify_directly_issued_by(ca)
    except Exception:  # noqa: BLE001 - a bad signature, another key type: not ours
        return False
    return True


def _store_key(authority) -> None:
    store = ca_mod.key_store()
    try:
        store.mkdir(parents=True, exist_ok=True, mode=0o700)
        store.chmod(0o700)
    except OSError as err:
        raise CapsimError(f"cannot create the CA key folder: {err.strerror}",
                          file=str(store)) from None
    _write(ca_mod.key_path(authority.cert), authority.key_pem(), private=True, option=None)


def make_certificate(folder: str | Path, names: Iterable[str] | None = None) -> Certificate:
    """The CA and server certificate under ``folder`` (created if needed), for ``names``
    (default: :func:`hostnames` without regions); reuses what the folder holds while it
    is sound (:mod:`.ca`), else makes a new CA and says why in ``notes``."""
    folder = Path(folder)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise CapsimError(f"cannot create the certificate folder: {err.strerror}",
                          file=str(folder), field="--cert-dir") from None
    wanted = [*(names if names is not None else hostnames()), *_ADDRESSES]
    paths = Certificate(folder / "ca.pem", folder / "server.pem", folder / "server.key")
    beside = folder / "ca.key"  # where capsim kept the CA key before: never again
    notes: list[str] = []
    try:
        authority, why = None, None
        if paths.ca_path.exists():
            try:
                authority = ca_mod.load_authority(paths.ca_path.read_bytes())
            except ValueError:
                raise CapsimError("expected the PEM CA certificate `capsim serve` wrote "
                                  "(remove ca.pem to make a new CA)",
                                  file=str(paths.ca_path), field="--cert-dir") from None
            why = ca_mod.is_sound(authority.cert)
        have = _names_of(paths.cert_path.read_bytes()) \
            if paths.cert_path.exists() and paths.key_path.exists() else None
        soon = dt.datetime.now(dt.UTC) + dt.timedelta(days=ca_mod.RENEW_DAYS)
        leaf_ok = (authority is not None and have is not None and have[0] == set(wanted)
                   and have[1] > soon and _signed_by(have[2], authority.cert))
        if authority is not None and why is None and authority.key is None and not leaf_ok:
            why = f"its private key is not in {ca_mod.key_store()}"
        reused = authority is not None and why is None
        if not reused:
            authority = ca_mod.new_authority()
            _store_key(authority)
            _write(paths.ca_path, authority.cert_pem())
            if why is not None:
                notes.append(f"replaced the CA in {folder} ({why}): trust the new "
                             f"ca.pem, and remove the old CA from any trust store it is in")
            leaf_ok = False
        if beside.exists():
            beside.unlink()
            notes.append(f"removed ca.key from {folder}: the CA's private key is kept in "
                         f"{ca_mod.key_store()} now, not beside the certificates")
        if not leaf_ok:
            chain, key = ca_mod.issue(authority, wanted)
            _write(paths.key_path, key, private=True)
            _write(paths.cert_path, chain)
    except OSError as err:
        raise CapsimError(f"cannot write the certificates: {err.strerror}",
                          file=str(folder), field="--cert-dir") from None
    return Certificate(paths.ca_path, paths.cert_path, paths.key_path, reused, tuple(notes))
