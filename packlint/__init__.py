"""packlint: a linter for sequence-packing mistakes in ML training launch scripts."""

__version__ = "0.1.0"
