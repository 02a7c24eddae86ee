"""Pseudonyms for API keys.

A key is replaced by ``key-`` plus the first 16 hex digits of HMAC-SHA256 over the key,
so per-key attribution survives while the key itself never reaches a report or a log.

The HMAC secret is ``CAPSIM_PSEUDONYM_SECRET`` when that is set (share it within a team
whose traces must agree). Otherwise it is a random 256-bit secret created once per user
in ``$XDG_CONFIG_HOME/capsim/pseudonym-secret`` (``~/.config/capsim/...`` without
``XDG_CONFIG_HOME``): readable by its owner only (mode 0600), created atomically, so
one user's pseudonyms are stable across runs while nobody without the file can confirm
a guessed key against a report.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import re
import secrets
import stat
from functools import lru_cache
from pathlib import Path

from .errors import CapsimError

ENV_VAR = "CAPSIM_PSEUDONYM_SECRET"
SECRET_FILE_NAME = "pseudonym-secret"
FROM_ENV = "environment variable"
FROM_FILE = "per-user secret file"
PSEUDONYM_RE = re.compile(r"^key-[0-9a-f]{16}$")
_SECRET_RE = re.compile(r"^[0-9a-f]{64}$")


def secret_file() -> Path:
    """Where the per-user secret lives (whether or not it exists yet)."""
    base = os.environ.get("XDG_CONFIG_HOME")
    root = Path(base) if base and Path(base).is_absolute() else Path.home() / ".config"
    return root / "capsim" / SECRET_FILE_NAME


def secret_kind() -> str:
    """Which kind of secret is in force: :data:`FROM_ENV` or :data:`FROM_FILE`."""
    return FROM_ENV if os.environ.get(ENV_VAR) else FROM_FILE


def pseudonym_secret() -> bytes:
    """The HMAC secret in force for this process."""
    env = os.environ.get(ENV_VAR)
    if env:
        return env.encode("utf-8")
    return _file_secret(str(secret_file()))


@lru_cache(maxsize=4)
def _file_secret(path_text: str) -> bytes:
    path = Path(path_text)
    if not path.exists():
        _create(path)
    try:
        info = path.stat()
        text = path.read_text("ascii").strip()
    except (OSError, UnicodeDecodeError) as err:
        raise CapsimError(f"cannot read the pseudonym secret: {getattr(err, 'strerror', err)}; "
                          f"or set {ENV_VAR}", file=path_text) from None
    if info.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise CapsimError("the pseudonym secret is readable by other users; expected mode "
                          "0600 (chmod 600 it, or delete it to create a new one)",
                          file=path_text)
    if not _SECRET_RE.match(text):
        raise CapsimError("expected 64 hex digits in the pseudonym secret file; delete it to "
                          "create a new one (pseudonyms will change)", file=path_text)
    return text.encode("ascii")


def _create(path: Path) -> None:
    """Write a new random secret without ever exposing a partial or shared file.

    The secret goes to a private temporary file that is then hard-linked to its final
    name: the link fails if another process created the file first, and then that
    process's secret is used, so concurrent first runs agree.
    """
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            with os.fdopen(fd, "w", encoding="ascii") as fh:
                fh.write(secrets.token_hex(32) + "\n")
                fh.flush()
                os.fsync(fh.fileno())
            try:
                os.link(tmp, path)
            except FileExistsError:
                pass
            except OSError:  # a file system without hard links: rename, unless taken
                if not path.exists():
                    os.replace(tmp, path)
        finally:
            tmp.unlink(missing_ok=True)
    except OSError as err:
        raise CapsimError(f"cannot create the pseudonym secret: {err.strerror}; set {ENV_VAR} "
                          "instead", file=str(path)) from None


def pseudonym(key: str, secret: bytes | None = None) -> str:
    """The pseudonym of ``key``; an existing pseudonym is returned unchanged (idempotent)."""
    if PSEUDONYM_RE.match(key):
        return key
    mac = hmac.new(secret or pseudonym_secret(), key.encode("utf-8"), hashlib.sha256)
    return "key-" + mac.hexdigest()[:16]


_VERSION_SEGMENT = re.compile(r"^v[0-9]{1,2}$")


def masked_path(path: str, words: frozenset[str] = frozenset()) -> str:
    """A URL path as it may be written or printed: every segment that is neither one of
    ``words`` nor a version (``v1``, ``v2``) replaced by its pseudonym.

    Clients put keys in paths (``/v2/<key>``, ``/v1/lb/<key>/status``) and a path is
    logged as sent, so only segments known not to be keys are kept.
    """
    segments = path.split("/")
    return "/".join(s if not s or s in words or _VERSION_SEGMENT.match(s) else pseudonym(s)
                    for s in segments)
