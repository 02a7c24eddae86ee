"""capsim's version: the one place it is written (the package face and the CLI read it)."""

__version__ = "0.1.0"
