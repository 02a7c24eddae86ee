"""Pseudonyms for API keys.

A key is replaced by ``key-`` plus the first 16 hex digits of HMAC-SHA256 over the key,
so per-key attribution survives while the key itself never reaches a report or a log.
The HMAC secret comes from ``CAPSIM_PSEUDONYM_SECRET`` when set (use it when traces
leave your machine); otherwise a fixed project salt is used, which still never reveals
a high-entropy key but lets anyone with the key recompute its pseudonym.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import re

_DEFAULT_SECRET = b"capsim-pseudonym-v1"
PSEUDONYM_RE = re.compile(r"^key-[0-9a-f]{16}$")


def pseudonym_secret() -> bytes:
    """The HMAC secret in force for this process."""
    env = os.environ.get("CAPSIM_PSEUDONYM_SECRET")
    return env.encode("utf-8") if env else _DEFAULT_SECRET


def pseudonym(key: str, secret: bytes | None = None) -> str:
    """The pseudonym of ``key``; an existing pseudonym is returned unchanged (idempotent)."""
    if PSEUDONYM_RE.match(key):
        return key
    mac = hmac.new(secret or pseudonym_secret(), key.encode("utf-8"), hashlib.sha256)
    return "key-" + mac.hexdigest()[:16]
