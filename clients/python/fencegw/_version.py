"""The client's version: the repository's VERSION (version_test.go at the
repository's root holds them equal, and pyproject.toml's)."""

__version__ = "0.1.0"
