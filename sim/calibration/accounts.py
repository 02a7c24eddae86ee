"""Several accounts in one log: which keys share which budget.

A proxy's or gateway's log mixes the keys of several accounts; each account's keys share
that account's window budget (its tier's), different accounts' do not, and every account
pays the same price list. The user says which keys belong to which account in a TOML
file (``capsim calibrate --accounts FILE``)::

    [[account]]
    name = "search-team"
    tier = "All 3 APIs"
    keys = ["key-3f9a2c71d04e4b8e", "sk_live_..."]   # pseudonyms or keys in clear

The calibration then keeps each account's decisions apart (:func:`separated_times`:
each account's rows are moved by whole days, so no window holds two accounts' CU and the
windows' phase and the UTC days stay where they were) and replays each account against
its own tier (:func:`replay_accounts`); one price list is identified from every
account's decisions jointly.

Without a mapping, :func:`shared_budget_conflicts` looks for keys whose traffic
contradicts one shared budget, from the decisions alone (no price, no phase): a key
throttled while another key, later in the same window and at the same cost with no
settlement in between, is still admitted. Keys are only ever named by pseudonym.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields, replace
from pathlib import Path

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..config.loader import parse_toml
from ..config.pricing import Pricing
from ..config.scenario import LimiterSettings
from ..config.tiers import Tier, find_tier
from ..core.errors import CapsimError
from ..core.pseudonyms import pseudonym
from ..core.vocabulary import WINDOW_S
from .costs import CostModel
from .recorded import Recorded

DAY_S = 86_400.0


class _AccountEntry(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str = Field(min_length=1, max_length=100)
    tier: str = Field(min_length=1)
    keys: list[str] = Field(min_length=1, max_length=100_000)


class _AccountsFile(BaseModel):
    model_config = ConfigDict(extra="forbid")
    account: list[_AccountEntry] = Field(min_length=1, max_length=1000)


@dataclass(frozen=True)
class Account:
    """One account: its name, its tier and its keys (pseudonyms)."""

    name: str
    tier: Tier
    keys: tuple[str, ...]


def load_accounts(path: str | Path) -> list[Account]:
    """The accounts of a mapping file (module doc); a :class:`CapsimError` naming the
    file and field for a malformed one. Keys are turned into pseudonyms at once."""
    file = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise CapsimError("no such file", file=file, field="--accounts") from None
    except (OSError, UnicodeDecodeError) as err:
        why = getattr(err, "strerror", None) or type(err).__name__
        raise CapsimError(f"cannot read it ({why})", file=file, field="--accounts") from None
    try:
        raw = parse_toml(text, file=file)
    except Exception as err:  # tomllib.TOMLDecodeError: the message has no key in it
        if isinstance(err, CapsimError):
            raise
        raise CapsimError(f"not valid TOML ({err}); expected [[account]] tables with name, "
                          "tier and keys", file=file) from None
    try:
        parsed = _AccountsFile.model_validate(raw)
    except ValidationError as err:
        raise CapsimError.from_validation(err, file) from None
    out: list[Account] = []
    owner: dict[str, str] = {}
    for i, entry in enumerate(parsed.account):
        try:
            tier = find_tier(entry.tier)
        except CapsimError as err:
            raise CapsimError(err.message, file=file, field=f"account[{i}].tier") from None
        if any(a.name == entry.name for a in out):
            raise CapsimError(f"account {entry.name!r} is listed twice; expected one "
                              "[[account]] per account", file=file, field=f"account[{i}].name")
        keys = tuple(dict.fromkeys(pseudonym(k.strip()) for k in entry.keys))
        for k in keys:
            if k in owner and owner[k] != entry.name:
                raise CapsimError(f"key {k} is listed under accounts {owner[k]!r} and "
                                  f"{entry.name!r}; expected each key in one account",
                                  file=file, field=f"account[{i}].keys")
            owner[k] = entry.name
        out.append(Account(entry.name, tier, keys))
    return out


def account_of_rows(keys: np.ndarray, accounts: list[Account], file: str | None
                    ) -> np.ndarray:
    """Each row's account (an index into ``accounts``); a :class:`CapsimError` naming
    the keys (pseudonyms) of the trace that no account lists."""
    index = {k: a for a, acc in enumerate(accounts) for k in acc.keys}
    acct = np.array([index.get(str(k), -1) for k in keys], dtype=np.int64)
    if (acct < 0).any():
        missing = sorted({str(k) for k in keys[acct < 0]})
        shown = ", ".join(missing[:5]) + (f" and {len(missing) - 5} more"
                                          if len(missing) > 5 else "")
        raise CapsimError(f"{len(missing)} key(s) of the trace belong to no account: "
                          f"{shown} ({int((acct < 0).sum()):,} rows); expected every key "
                          "of the trace under one [[account]] (its pseudonym, as "
                          "`capsim trace import` wrote it, or the key itself)",
                          file=file, field="keys")
    return acct


def subset(rec: Recorded, mask: np.ndarray) -> Recorded:
    """The rows of ``rec`` where ``mask`` holds (times and base unchanged)."""
    changes = {}
    for f in fields(rec):
        v = getattr(rec, f.name)
        if isinstance(v, np.ndarray) and len(v) == len(mask):
            changes[f.name] = v[mask]
        elif f.name == "profiles":
            changes[f.name] = [p for p, m in zip(v, mask, strict=True) if m]
    return replace(rec, **changes)


def separated_times(rec: Recorded, acct: np.ndarray) -> np.ndarray:
    """Each row's time moved by its account's index times a whole number of days longer
    than the trace (with its replies): no window and no UTC day holds two accounts'
    events, and each window's phase on the UTC clock is unchanged (a day is 7,200
    windows)."""
    if not len(rec):
        return rec.t_s.copy()
    lat = np.nan_to_num(rec.latency_s, nan=0.0)
    span = float(np.max(rec.t_s + lat)) + 2 * WINDOW_S
    offset = DAY_S * math.ceil(span / DAY_S)
    return rec.t_s + acct * offset


def replay_accounts(rec: Recorded, costs, accounts: list[Account], acct: np.ndarray,
                    pricing: Pricing, settings: LimiterSettings) -> np.ndarray:
    """The predicted class of every row, each account replayed on its own (its tier,
    its window budget, its websocket slots and daily allowance)."""
    from .replay import Costs, replay

    out = np.full(len(rec), "", dtype=object)
    for a, account in enumerate(accounts):
        m = acct == a
        if not m.any():
            continue
        c = Costs(costs.reserve[m], costs.settle[m], costs.connect_cu)
        out[m] = replay(subset(rec, m), c, account.tier, pricing, settings)
    return out


# -- without a mapping: keys whose traffic contradicts one shared budget -----------------


@dataclass(frozen=True)
class Conflict:
    """Key ``throttled`` was refused in ``windows`` windows while key ``admitted``, later
    in the same window at the same cost, was still admitted (``of``: the windows where
    ``throttled`` was refused with ``admitted``'s decisions after it)."""

    throttled: str
    admitted: str
    windows: int
    of: int


MIN_WINDOWS = 3
"""Windows of contradiction a pair of keys needs before it is named: one mislabelled
row makes one window look contradictory, not several."""

MIN_SHARE = 0.1
"""...and at least this share of the windows where one key was refused with both keys'
decisions after it (a mislabelled throttle is followed by its own key's admissions as
much as the other's, so it hardly counts)."""


def shared_budget_conflicts(rec: Recorded, model: CostModel, phases: int = 24
                            ) -> list[Conflict]:
    """Pairs of keys whose decisions one shared budget does not explain, at every window
    phase (``phases`` spread over 12 s): in a window, after a throttle of key A, the
    decisions of the identical reservation that follow it (at least 3 of A's own and 3
    of key B's) admit B's more than 50 points more often than A's. Under one budget a
    refused request means the window is full for that cost, and the room a refund (a
    sizing request settling below its reservation) makes later is open to A's requests
    and B's alike; a mislabelled row does it once. Under two accounts, A's window is
    full while B's is not, window after window (:data:`MIN_WINDOWS`,
    :data:`MIN_SHARE`). A screen from the decisions alone, reading no price. Empty when
    the trace has fewer than two keys."""
    if rec.key is None or not model.names:
        return []
    keys = rec.key
    billed = (model.R != 0).any(axis=1)
    dec = np.flatnonzero(rec.compared & billed & np.isin(rec.observed, ("ok", "throttled")))
    if len(np.unique(keys[dec])) < 2:
        return []
    typ = np.unique(model.R[dec], axis=0, return_inverse=True)[1].ravel()
    t = rec.t_s[dec]
    adm = rec.observed[dec] == "ok"
    k = keys[dec]
    names, kc = np.unique(k, return_inverse=True)
    n_keys = len(names)
    best: dict[tuple[int, int], tuple[int, int]] = {}
    for p in np.arange(phases) * WINDOW_S / phases:
        w = np.floor((rec.utc_day_offset_s + t - p) / WINDOW_S).astype(np.int64)
        o = np.lexsort((t, typ, w))
        ws, ts, ks, ad = w[o], t[o], kc[o], adm[o]
        new_group = np.ones(len(o), bool)
        new_group[1:] = (ws[1:] != ws[:-1]) | (typ[o][1:] != typ[o][:-1])
        g_start = np.maximum.accumulate(np.where(new_group, np.arange(len(o)), 0))
        g_id = np.cumsum(new_group) - 1
        g_end = np.append(np.flatnonzero(new_group)[1:], len(o))[g_id]
        thr = np.flatnonzero(~ad)
        # the decisions after each throttle in its group (time ties with the throttle
        # excluded): positions [lo, hi)
        lo = np.array([g_start[i] + np.searchsorted(ts[g_start[i]:g_end[i]], ts[i], "right")
                       for i in thr], np.int64)
        hi = g_end[thr]
        n_all = np.zeros((n_keys, len(thr)), np.int64)
        n_adm = np.zeros((n_keys, len(thr)), np.int64)
        for b in range(n_keys):
            mine = ks == b
            c_all = np.concatenate([[0], np.cumsum(mine)])
            c_adm = np.concatenate([[0], np.cumsum(mine & ad)])
            n_all[b] = c_all[hi] - c_all[lo]
            n_adm[b] = c_adm[hi] - c_adm[lo]
        own = ks[thr]
        own_all = n_all[own, np.arange(len(thr))]
        own_frac = n_adm[own, np.arange(len(thr))] / np.maximum(own_all, 1)
        for b in range(n_keys):
            frac = n_adm[b] / np.maximum(n_all[b], 1)
            for a in range(n_keys):
                if a == b:
                    continue
                sel = (own == a) & (n_all[b] >= 3) & (own_all >= 3)
                seen = set(ws[thr][sel].tolist())
                bad = set(ws[thr][sel & (n_adm[b] >= 3) & (frac - own_frac > 0.5)].tolist())
                old = best.get((a, b))
                got = (len(bad), len(seen))
                best[(a, b)] = got if old is None else (min(old[0], got[0]),
                                                        max(old[1], got[1]))
    best = {(str(names[a]), str(names[b])): v for (a, b), v in best.items()}
    out = [Conflict(a, b, n, of) for (a, b), (n, of) in sorted(best.items())
           if n >= MIN_WINDOWS and of and n / of >= MIN_SHARE]
    return sorted(out, key=lambda c: (-c.windows, c.throttled, c.admitted))


def conflicts_note(conflicts: list[Conflict]) -> str:
    """The verdict's note naming the keys (pseudonyms) whose traffic contradicts one
    shared budget."""
    keys = sorted({c.throttled for c in conflicts} | {c.admitted for c in conflicts})
    pairs = "; ".join(f"{c.throttled} refused while {c.admitted} was admitted after it at "
                      f"the same cost in {c.windows} of {c.of} windows"
                      for c in conflicts[:6])
    more = f" (and {len(conflicts) - 6} more pairs)" if len(conflicts) > 6 else ""
    return (f"the decisions cannot fit one account: the traffic of keys {', '.join(keys)} "
            f"contradicts a shared budget ({pairs}{more}); no price was fitted. If the log "
            "mixes several accounts, say which keys belong to which, and each account's "
            "tier, with --accounts FILE")
