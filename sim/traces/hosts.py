"""``--host-map HOST=rpc|search|streams|ignore``: which API a recorded host serves.

Recorded traffic names real hosts (a provider's ``mainnet.example.io``, analytics
beacons, the page's own assets); the interface spec only names ``{rpc_url}``,
``{search_url}`` and ``{streams_url}``. A :class:`HostMap` holds the user's mapping,
in the order given (the first matching pattern wins); patterns are host names with
shell-style globs (``*.example.io``), matched case-insensitively without the port.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable
from dataclasses import dataclass

from ..core.errors import CapsimError
from ..core.vocabulary import RPC, SEARCH, STREAMS

IGNORE = "ignore"
TARGETS = (RPC, SEARCH, STREAMS, IGNORE)
_PATTERN_RE = re.compile(r"[a-z0-9*?\[\]._\-]{1,253}")


@dataclass(frozen=True)
class HostMap:
    """Ordered ``(glob, target)`` pairs; :meth:`target` looks a host up."""

    rules: tuple[tuple[str, str], ...] = ()

    @classmethod
    def parse(cls, specs: Iterable[str]) -> HostMap:
        """From ``HOST=TARGET`` strings; :class:`CapsimError` names ``--host-map``."""
        rules = []
        for spec in specs:
            host, eq, target = spec.partition("=")
            host, target = host.strip().lower(), target.strip().lower()
            if not eq or not _PATTERN_RE.fullmatch(host):
                raise CapsimError("expected HOST=rpc|search|streams|ignore (HOST a host name, "
                                  "globs * ? [] allowed)", field="--host-map")
            if target not in TARGETS:
                raise CapsimError(f"expected one of {', '.join(TARGETS)} after '='",
                                  field="--host-map")
            rules.append((host, target))
        return cls(tuple(rules))

    def target(self, host: str) -> str | None:
        """The API (or ``ignore``) for ``host``; None when no pattern matches."""
        host = host.lower()
        for pattern, target in self.rules:
            if fnmatch.fnmatchcase(host, pattern):
                return target
        return None
