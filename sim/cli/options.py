"""What every ``capsim`` command shares: its options, declared once, and its one way of
reporting a user's mistake.

Options: :func:`set_option`, :func:`tier_option`, :func:`jobs_option`,
:func:`size_options`, :func:`force_option`; each has one help text, with a ``what``
argument where the command's own words matter (``--tier``: "Simulate only this tier" or
"Baseline only this tier").

Errors: :func:`report_errors` is the one handler. A
:class:`~sim.core.errors.CapsimError` prints ``capsim: error: <file>:<line>: <field>:
<message>`` on stderr and exits with code 2, with no traceback; so do click's usage
errors (an unknown option, a value of the wrong type: ``capsim: error: <click's message>
(see `capsim CMD --help`)``) and the few failures
that are not the user's mistake in the input but still need no traceback (a worker
process killed, memory exhausted, a file or folder the machine refuses to read or
write -- an ``OSError`` naming it: permissions, a full or read-only disk -- and an input
nested too deeply to read). Every command runs
under it: :class:`~sim.cli.main.CapsimGroup` wraps each invocation, and commands that
can be invoked on their own (in tests) are wrapped by :func:`handled`.

Light on purpose (click only): ``capsim --help`` imports this module.
"""

from __future__ import annotations

import errno
import functools
import math
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import click

from ..core.errors import USAGE_EXIT_CODE, CapsimError
from ..core.limits import JOBS_PER_CPU, MIN_MAX_JOBS, max_jobs

PREFIX = "capsim: error: "


class FiniteFloatRange(click.FloatRange):
    """A click ``FloatRange`` that also refuses ``nan`` and ``inf`` (``FloatRange``
    lets ``nan`` through every bound: each comparison with it is false)."""

    def convert(self, value, param, ctx):
        number = click.FLOAT.convert(value, param, ctx)
        if not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number; expected {self._describe_range()}",
                      param, ctx)
        return super().convert(number, param, ctx)


def set_option(help_text: str = "Override a scenario value, e.g. --set duration=600 "
                                 "--set sources[0].arrival.rate=40 (value parsed as TOML).",
               ) -> Callable:
    """``--set KEY.PATH=VALUE`` (repeatable), into the ``overrides`` parameter."""
    return click.option("--set", "overrides", multiple=True, metavar="KEY.PATH=VALUE",
                        help=help_text)


def tier_option(what: str = "Simulate only this tier",
                default: str = "the scenario's tiers") -> Callable:
    """``--tier NAME`` (repeatable), into the ``tiers`` parameter."""
    return click.option("--tier", "tiers", multiple=True, metavar="NAME",
                        help=f"{what} (repeatable); default: {default}.")


def bounded_processes(ctx, param, value: int | None) -> int | None:
    """A click callback: a count of worker processes (``--jobs``, ``--dask-local``)
    within :func:`~sim.core.limits.max_jobs` (a typo must not start a thousand)."""
    if value is not None and value > max_jobs():
        raise CapsimError(f"{value} worker processes asked for; expected at most "
                          f"{max_jobs()} ({JOBS_PER_CPU} per CPU of this machine, at least "
                          f"{MIN_MAX_JOBS}): more workers than CPUs only share them, each "
                          "with its own memory", field=param.opts[0])
    return value


def jobs_option(what: str = "Tiers simulated in parallel worker processes.") -> Callable:
    """``--jobs N`` (default 1; at most :func:`~sim.core.limits.max_jobs`)."""
    return click.option("--jobs", type=click.IntRange(min=1), default=1, show_default=True,
                        callback=bounded_processes,
                        help=f"{what} At most {JOBS_PER_CPU} per CPU (at least "
                             f"{MIN_MAX_JOBS}).")


def dask_options(what: str = "this job's runs") -> Callable:
    """``--dask-scheduler ADDRESS`` / ``--dask-local N``: ``what`` runs on a Dask cluster
    (:func:`sim.jobs.executors.make_executor`; at most one of them and ``--jobs N > 1``)."""
    def wrap(f):
        f = click.option("--dask-local", type=click.IntRange(min=1), metavar="N",
                         callback=bounded_processes,
                         help=f"Start a local Dask cluster of N worker processes for {what} "
                              "(bounded as --jobs).")(f)
        return click.option("--dask-scheduler", metavar="ADDRESS",
                            help=f"Run {what} on an existing Dask cluster, e.g. "
                                 "tcp://host:8786 (workers need capsim installed: pip "
                                 "install 'capsim[dask]').")(f)
    return wrap


def size_options(f):
    """``--max-requests N``: the run-size limit, checked before any demand is drawn."""
    return click.option("--max-requests", type=click.IntRange(min=1), metavar="N",
                        help="Refuse a run expected to simulate more than N requests per "
                             "tier (HTTP requests, websocket handshakes and deliveries); "
                             "default: the scenario's max_requests, else only the memory "
                             "and temporary-disk checks.")(f)


def force_option(f):
    """``--force``: overwrite an output file that is not capsim's own output of its kind."""
    return click.option("--force", is_flag=True,
                        help="Overwrite output files even if they are not capsim's own "
                             "output of the same kind.")(f)


def _message(err: BaseException) -> str | None:
    """The one-line message of a failure that gets no traceback, or None."""
    from concurrent.futures.process import BrokenProcessPool

    if isinstance(err, CapsimError):
        return err.render()
    if isinstance(err, click.ClickException):  # a usage error: unknown option, bad value
        where = err.ctx.command_path if getattr(err, "ctx", None) else "capsim"
        return f"{err.format_message().rstrip('.')} (see `{where} --help`)"
    if isinstance(err, BrokenProcessPool):
        return ("a worker process ended abruptly (killed, or out of memory); nothing was "
                "written. Run again, with fewer --jobs or a smaller scenario")
    if isinstance(err, MemoryError):
        return ("out of memory; nothing was written. Use a smaller scenario (shorter "
                "duration, lower load), fewer --jobs, or --max-requests to be stopped "
                "before a run that does not fit")
    if isinstance(err, OSError) and err.filename and err.errno in _FILE_ERRNOS:
        # A file or folder the machine refused (permissions, a full or read-only disk,
        # a file where a folder is needed): the user's to fix, never a traceback.
        return (f"{err.filename}: cannot read or write it ({err.strerror}); check the "
                "path and its permissions, or the free disk space")
    if isinstance(err, RecursionError):
        return ("an input is nested too deeply to read (arrays or tables hundreds of "
                "levels deep); expected one nested a few levels")
    return None


_FILE_ERRNOS = frozenset({errno.EACCES, errno.EPERM, errno.ENOTDIR, errno.EISDIR,
                          errno.ENOSPC, errno.EROFS, errno.EDQUOT, errno.ENAMETOOLONG,
                          errno.ENOENT, errno.EEXIST, errno.ELOOP, errno.EFBIG})


@contextmanager
def report_errors() -> Iterator[None]:
    """Turn a user's mistake (see the module docstring) into one line and exit code 2."""
    try:
        yield
    except click.exceptions.Exit:
        raise
    except Exception as err:  # noqa: BLE001 - only the ones _message knows are caught
        message = _message(err)
        if message is None:
            raise
        click.echo(PREFIX + message, err=True)
        raise click.exceptions.Exit(USAGE_EXIT_CODE) from None


quiet_option = click.option(
    "--quiet", "-q", is_flag=True,
    help="No progress bar (it is shown only on a terminal anyway); the results are printed.")
"""``-q``: the one progress display (sim/cli/progress.py) stays off."""


def handled(command: click.Command) -> click.Command:
    """``command`` reporting errors as :func:`report_errors` when invoked on its own."""
    invoke = command.invoke

    @functools.wraps(invoke)
    def wrapped(ctx):
        with report_errors():
            return invoke(ctx)
    command.invoke = wrapped
    return command
