"""Exact fit of the linear cost model where the trace records the CU billed.

An admitted request with a recorded ``cu`` is one equation ``cu = S @ theta`` (its
settled cost); least squares over all of them gives every price the settled costs
touch -- RPC method prices, the sizing base and price of gas, the connect cost. The
profiles' gas caps only enter *reservations*, never the bill: they are left to the
decision fit. A price is reported fitted only if the equations identify it (full rank
on the columns that touch it).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .costs import CostModel
from .recorded import Recorded


@dataclass(frozen=True)
class ExactFit:
    """Least-squares prices, with their standard errors and the residuals."""

    values: dict[str, float]
    std_errors: dict[str, float]
    rows: int
    rms_residual_cu: float
    max_abs_residual_cu: float
    not_identified: tuple[str, ...]


def fit_exact(rec: Recorded, model: CostModel) -> ExactFit | None:
    """Fit the prices the billed ``cu`` identifies; None when no row records ``cu``."""
    rows = (~np.isnan(rec.cu)) & (rec.observed == "ok")
    if not rows.any() or not model.names:
        return None
    S, y = model.S[rows], rec.cu[rows]
    touched = np.flatnonzero((S != 0).any(axis=0))
    if touched.size == 0:
        return None
    A = S[:, touched]
    coef, _, rank, _ = np.linalg.lstsq(A, y, rcond=None)
    names = [model.names[j] for j in touched]
    if rank < len(touched):
        # Keep only the columns with a unique solution: those outside the null space.
        _, sv, vt = np.linalg.svd(A, full_matrices=False)
        null = vt[rank:]
        identified = np.abs(null).max(axis=0) < 1e-9 if len(null) else np.ones(len(names), bool)
    else:
        identified = np.ones(len(names), dtype=bool)
    resid = y - A @ coef
    dof = max(1, len(y) - rank)
    sigma2 = float(resid @ resid) / dof
    try:
        cov = sigma2 * np.linalg.pinv(A.T @ A)
        se = np.sqrt(np.clip(np.diag(cov), 0, None))
    except np.linalg.LinAlgError:
        se = np.full(len(names), np.nan)
    values = {nm: float(c) for nm, c, ok in zip(names, coef, identified, strict=True) if ok}
    errors = {nm: float(e) for nm, e, ok in zip(names, se, identified, strict=True) if ok}
    missing = tuple(nm for nm, ok in zip(names, identified, strict=True) if not ok)
    return ExactFit(values, errors, int(rows.sum()), float(np.sqrt(np.mean(resid ** 2))),
                    float(np.abs(resid).max()), missing)
