"""The one error type capsim raises for a user's mistake.

A :class:`CapsimError` says *where* (file, line or row, field) and *what was expected*;
the CLI prints it on one line and exits with :data:`USAGE_EXIT_CODE`, never with a
traceback. Messages never contain secret values (API keys): callers pass the field's
name and the expectation, not the offending value, for any field that may hold a key.
"""

from __future__ import annotations

from pathlib import Path

USAGE_EXIT_CODE = 2


class CapsimError(Exception):
    """A user-facing error with a location.

    Parameters
    ----------
    message:
        What was wrong and what was expected.
    file:
        The file the user handed in, if any.
    line:
        1-based line number (text formats) or row number (tabular formats).
    field:
        The key path (``sources[2].arrival.rate``) or column name.
    """

    def __init__(
        self,
        message: str,
        *,
        file: str | None = None,
        line: int | None = None,
        field: str | None = None,
    ) -> None:
        self.message = message
        self.file = file
        self.line = line
        self.field = field
        super().__init__(self.render())

    @classmethod
    def from_validation(cls, err, file: str | None, suffix: str = "") -> CapsimError:
        """The first error of a pydantic ``ValidationError`` as a CapsimError naming the
        file and the field's dotted path (``suffix`` is appended to the message)."""
        first = err.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        return cls(first["msg"] + suffix, file=file, field=where or None)

    def render(self) -> str:
        """``file:line: field: message`` with the parts that are known."""
        where = []
        if self.file is not None:
            where.append(str(self.file) + (f":{self.line}" if self.line is not None else ""))
        elif self.line is not None:
            where.append(f"line {self.line}")
        if self.field:
            where.append(self.field)
        return ": ".join([*where, self.message])


def read_user_text(path: str | Path, missing: str = "no such file") -> str:
    """The UTF-8 text of a file the user named, as stored (no newline translation).

    A :class:`CapsimError` naming the file when it is not there (``missing`` says what was
    expected) or cannot be read or decoded.
    """
    try:
        return Path(path).read_bytes().decode("utf-8")
    except FileNotFoundError:
        raise CapsimError(missing, file=str(path)) from None
    except (OSError, UnicodeDecodeError) as err:
        raise CapsimError(f"cannot read it ({type(err).__name__})", file=str(path)) from None
