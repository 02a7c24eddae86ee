"""The emulator's certificate authority: short-lived, name-constrained, its key kept apart.

A CA a developer is asked to trust -- in a client, or system-wide -- can vouch for any
site it has a key to sign for. This one is made so that trusting it risks little:

* **name constraints** (RFC 5280 4.2.1.10, critical): it can only vouch for
  ``localhost`` and names under it (``rpc.localhost``), ``127.0.0.0/8`` and ``::1`` --
  a certificate it signed for any other name fails verification in every client that
  checks constraints (OpenSSL, so Python and curl, browsers, Go, Node);
* **bounded validity**: :data:`CA_VALID_DAYS` for the CA, :data:`LEAF_VALID_DAYS` for the
  server certificate (reissued before it expires);
* **its private key is not beside the certificates**: ``--cert-dir`` holds what clients
  read (``ca.pem``, ``server.pem``, ``server.key``); the CA's key lives in the user's
  configuration folder, ``$XDG_CONFIG_HOME/capsim/emulator-ca/<fingerprint>.key``
  (folder 0700, file 0600), found by the CA certificate's SHA-256 fingerprint.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import os
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

CA_VALID_DAYS = 365
LEAF_VALID_DAYS = 90
RENEW_DAYS = 7
"""A certificate expiring within this many days is replaced at start."""

PERMITTED_DNS = ("localhost",)
PERMITTED_IPS = ("127.0.0.0/8", "::1/128")


def key_store() -> Path:
    """The folder of the CA keys (whether or not it exists yet)."""
    base = os.environ.get("XDG_CONFIG_HOME")
    root = Path(base) if base and Path(base).is_absolute() else Path.home() / ".config"
    return root / "capsim" / "emulator-ca"


def fingerprint(cert: x509.Certificate) -> str:
    return cert.fingerprint(hashes.SHA256()).hex()


def key_path(cert: x509.Certificate) -> Path:
    """Where the private key of the CA ``cert`` is kept."""
    return key_store() / f"{fingerprint(cert)[:32]}.key"


@dataclass(frozen=True)
class Authority:
    cert: x509.Certificate
    key: ec.EllipticCurvePrivateKey | None
    """``None`` when the key is not in the key store (the CA can sign nothing)."""

    def cert_pem(self) -> bytes:
        return self.cert.public_bytes(serialization.Encoding.PEM)

    def key_pem(self) -> bytes:
        assert self.key is not None
        return self.key.private_bytes(serialization.Encoding.PEM,
                                      serialization.PrivateFormat.PKCS8,
                                      serialization.NoEncryption())


def _now() -> dt.datetime:
    return dt.datetime.now(dt.UTC).replace(microsecond=0)


def new_authority(organization: str = "capsim emulator") -> Authority:
    """A new CA (see the module docstring)."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, organization),
                      x509.NameAttribute(NameOID.COMMON_NAME, "capsim emulator local CA")])
    now = _now()
    constraints = x509.NameConstraints(
        permitted_subtrees=[*(x509.DNSName(d) for d in PERMITTED_DNS),
                            *(x509.IPAddress(ipaddress.ip_network(n)) for n in PERMITTED_IPS)],
        excluded_subtrees=None)
    cert = (x509.CertificateBuilder()
            .subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(hours=1))
            .not_valid_after(now + dt.timedelta(days=CA_VALID_DAYS))
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .add_extension(x509.KeyUsage(
                digital_signature=True, key_cert_sign=True, crl_sign=True,
                content_commitment=False, key_encipherment=False, data_encipherment=False,
                key_agreement=False, encipher_only=False, decipher_only=False), critical=True)
            .add_extension(constraints, critical=True)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()),
                           critical=False)
            .sign(key, hashes.SHA256()))
    return Authority(cert, key)


def load_authority(pem: bytes) -> Authority:
    """The CA of ``pem`` with its key from the key store if there (``ValueError`` if
    ``pem`` is not a certificate)."""
    cert = x509.load_pem_x509_certificate(pem)
    path = key_path(cert)
    key = None
    if path.exists():
        loaded = serialization.load_pem_private_key(path.read_bytes(), password=None)
        if isinstance(loaded, ec.EllipticCurvePrivateKey) and \
                loaded.public_key().public_numbers() == cert.public_key().public_numbers():
            key = loaded
    return Authority(cert, key)


def is_sound(cert: x509.Certificate) -> str | None:
    """``None`` if ``cert`` is a CA this module would make (constrained, valid for at most
    :data:`CA_VALID_DAYS` days and for more than :data:`RENEW_DAYS` days yet); else why not."""
    try:
        cert.extensions.get_extension_for_class(x509.NameConstraints)
    except x509.ExtensionNotFound:
        return "it has no name constraints"
    span = cert.not_valid_after_utc - cert.not_valid_before_utc
    if span > dt.timedelta(days=CA_VALID_DAYS + 1):
        return f"it is valid for {span.days} days"
    if cert.not_valid_after_utc < _now() + dt.timedelta(days=RENEW_DAYS):
        return "it expires within a week"
    return None


def issue(ca: Authority, names: list[str]) -> tuple[bytes, bytes]:
    """A server certificate for ``names`` (DNS names and IP addresses) signed by ``ca``:
    ``(chain PEM, key PEM)``; valid :data:`LEAF_VALID_DAYS` days, never past the CA."""
    assert ca.key is not None
    key = ec.generate_private_key(ec.SECP256R1())
    sans: list[x509.GeneralName] = []
    for n in names:
        try:
            sans.append(x509.IPAddress(ipaddress.ip_address(n)))
        except ValueError:
            sans.append(x509.DNSName(n))
    now = _now()
    until = min(now + dt.timedelta(days=LEAF_VALID_DAYS), ca.cert.not_valid_after_utc)
    ski = ca.cert.extensions.get_extension_for_class(x509.SubjectKeyIdentifier).value
    cert = (x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME,
                                                        "capsim emulator")]))
            .issuer_name(ca.cert.subject).public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(hours=1)).not_valid_after(until)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.SubjectAlternativeName(sans), critical=False)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]),
                           critical=False)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_subject_key_identifier(ski),
                           critical=False)
            .sign(ca.key, hashes.SHA256()))
    key_pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption())
    return cert.public_bytes(serialization.Encoding.PEM) + ca.cert_pem(), key_pem
