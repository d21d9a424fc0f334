"""The package version: the one place it is written (pyproject reads it as dynamic metadata),
so `pedrag --version` needs no `importlib.metadata` scan at start-up."""

__version__ = "0.1.0"
