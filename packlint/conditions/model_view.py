"""The condition functions' accessors over the launch model: packlint.model_view (one module for every
consumer; kept here under its first name for the functions that import it from the conditions)."""

from __future__ import annotations

from packlint.model_view import (
    SECTIONS,
    config_files,
    config_settings,
    parallel_size,
    section_unknown,
    variant_config,
)

__all__ = ["SECTIONS", "config_files", "config_settings", "parallel_size", "section_unknown", "variant_config"]
