"""Where a job's independent runs execute: in this process, a local process pool, or Dask.

Every executor has one verb, :meth:`Executor.as_completed`: submit ``fn(item)`` for each
item and yield ``(item, result)`` as each finishes, in completion order, so the caller
can write each result as it arrives (a lost worker or a kill costs only unfinished
runs). The results are the same whichever executor runs them: each run is a pure
function of its :class:`~sim.jobs.sweep_plan.RunSpec`.

Dask is optional (``pip install capsim[dask]``): :class:`DaskExecutor` imports
``distributed`` only when made. Its workers need capsim (same version) installed, and
scenario files' traces and ``--keep-records`` folders reachable at the same paths.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, wait
from typing import Any

from ..core.errors import CapsimError
from ..core.workers import process_pool


class Executor:
    """Runs ``fn`` over items; subclasses implement :meth:`as_completed`."""

    workers: int = 1

    def as_completed(self, fn: Callable[[Any], Any], items: Iterable[Any]
                     ) -> Iterator[tuple[Any, Any]]:
        """Yield ``(item, fn(item))`` for every item, as each finishes."""
        raise NotImplementedError

    def close(self) -> None:
        """Release the workers (a no-op for executors that hold none)."""

    def __enter__(self) -> Executor:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class SequentialExecutor(Executor):
    """Every run in this process, one after another (``--jobs 1``)."""

    def as_completed(self, fn, items):
        for item in items:
            yield item, fn(item)


class LocalPoolExecutor(Executor):
    """A local process pool of ``jobs`` workers (``--jobs N``).

    At most ``2 * jobs`` runs are queued at a time, so a long sweep does not hold every
    pending run's arguments in the pool's queue.
    """

    def __init__(self, jobs: int) -> None:
        self.workers = jobs
        self._pool = process_pool(jobs)  # workers end with this process

    def as_completed(self, fn, items):
        pending: dict = {}
        queue = iter(items)
        limit = 2 * self.workers
        while True:
            for item in queue:
                pending[self._pool.submit(fn, item)] = item
                if len(pending) >= limit:
                    break
            if not pending:
                return
            done, _ = wait(pending, return_when=FIRST_COMPLETED)
            for future in done:
                yield pending.pop(future), future.result()

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)


class DaskExecutor(Executor):
    """Runs on Dask distributed: an existing scheduler (``address``) or a
    ``LocalCluster`` of ``local_workers`` processes started (and closed) here."""

    def __init__(self, address: str | None = None, local_workers: int | None = None) -> None:
        try:
            from distributed import Client, LocalCluster
        except ImportError:
            raise CapsimError("Dask is not installed: pip install 'capsim[dask]'",
                              field="--dask-scheduler" if address else "--dask-local") from None
        self._cluster = None
        if address is not None:
            try:
                self._client = Client(address, timeout="20s")
            except OSError as err:
                raise CapsimError(f"cannot reach the Dask scheduler ({type(err).__name__})",
                                  field="--dask-scheduler") from None
            except (ValueError, TypeError) as err:  # distributed parses the address
                raise CapsimError(f"not a scheduler address ({err}); expected one such as "
                                  "tcp://HOST:8786", field="--dask-scheduler") from None
        else:
            self._cluster = LocalCluster(n_workers=int(local_workers or 1), processes=True,
                                         threads_per_worker=1, dashboard_address=None)
            self._client = Client(self._cluster)
        self.workers = max(1, len(self._client.scheduler_info().get("workers", {})))

    def as_completed(self, fn, items):
        from distributed import as_completed

        items = list(items)
        if not items:
            return
        # pure=False: a run is cheap to describe but must really run (no key reuse).
        futures = {self._client.submit(fn, item, pure=False): item for item in items}
        for future, result in as_completed(futures, with_results=True):
            yield futures.pop(future), result

    def close(self) -> None:
        self._client.close()
        if self._cluster is not None:
            self._cluster.close()


def make_executor(jobs: int = 1, dask_scheduler: str | None = None,
                  dask_local: int | None = None) -> Executor:
    """The executor the CLI options ask for (at most one of them)."""
    given = sum(x is not None for x in (dask_scheduler, dask_local)) + (jobs > 1)
    if given > 1:
        raise CapsimError("expected at most one of --jobs N, --dask-scheduler, --dask-local",
                          field="--jobs")
    if dask_scheduler is not None or dask_local is not None:
        return DaskExecutor(dask_scheduler, dask_local)
    if jobs > 1:
        return LocalPoolExecutor(jobs)
    return SequentialExecutor()
