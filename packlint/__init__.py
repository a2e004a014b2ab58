"""packlint: a linter for sequence-packing mistakes in ML training launch scripts."""

# The one place the version lives: pyproject.toml reads it (dynamic version), `packlint --version`
# prints it, CHANGELOG.md has a section for it, and the release is tagged v<version>.
__version__ = "0.3.16"
