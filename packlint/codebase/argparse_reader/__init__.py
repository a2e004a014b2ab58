"""The flag schema of a program, read statically (see interpreter.py)."""

from packlint.codebase.argparse_reader.interpreter import read_schema

__all__ = ["read_schema"]
