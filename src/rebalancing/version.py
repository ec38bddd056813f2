"""The package's version, in one place: pyproject.toml reads it (a dynamic version), the package
re-exports it as `rebalancing.__version__`, and `rebalancing --version` prints it. What each
version added is in CHANGELOG.md."""

__version__ = "0.2.0"
