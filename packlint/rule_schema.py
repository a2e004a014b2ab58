"""The schema of a rule table file, as pydantic models. Imported only when the table is compiled
(packlint.rule_table.compile_table, on a cache miss): a warm start never imports pydantic. Its
defaults flow into the compiled table, so this module is part of the table cache's key."""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from packlint.rule_table import SINCE_PATTERN, VERSIONS_PATTERN


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ExampleSpec(Strict):
    kind: Literal["bad", "good"]
    script: str = Field(min_length=1)
    title: str | None = None
    env: dict[str, str] = {}
    args: list[str] = []
    # a small code base the example launches (relative path -> Python source), written beside the
    # script when the example runs (issue 10: rules over the launched code)
    code: dict[str, str] = {}


class RelatedSpec(Strict):
    at: str
    message: str


class OverrideSpec(Strict):
    when: str
    severity: Literal["error", "warning", "info"] | None = None
    message: str | None = None
    help: str | None = None


class FixSpecModel(Strict):
    kind: Literal[
        "insert_before",
        "insert_after",
        "insert_line_before",
        "insert_line_after",
        "replace",
        "replace_prefix",
        "delete",
        # config files (docs/fixes.md "Fixes in config files"): edits of a YAML/JSON setting
        "set_key",
        "replace_value",
        "delete_key",
    ]
    at: str | None = None
    to: str | None = None
    text: str = ""
    applicability: Literal["safe", "unsafe"]
    title: str = Field(min_length=1)
    when: str | None = None
    expect: str | None = None
    refuse_if_read: bool = True
    # set_key: the dotted key to set (a sibling of the reported setting, or under the document's root);
    # set_key / replace_value: the value, in YAML flow syntax (`true`, `1`, `"auto"`, `bfd`), typed by
    # the file's loader
    key: str | None = None
    value: str | None = None

    @model_validator(mode="after")
    def _config_fields(self) -> FixSpecModel:
        config = self.kind in ("set_key", "replace_value", "delete_key")
        if config and self.text:
            raise ValueError(f"kind {self.kind!r} takes `value` (and `key`), not `text`")
        if not config and (self.key is not None or self.value is not None):
            raise ValueError(f"kind {self.kind!r} takes `text`, not `key` / `value` (those are for config-file kinds)")
        if self.kind == "set_key" and (not self.key or self.value is None):
            raise ValueError("kind 'set_key' needs `key` and `value`")
        if self.kind == "replace_value" and self.value is None:
            raise ValueError("kind 'replace_value' needs `value`")
        if self.kind == "delete_key" and self.value is not None:
            raise ValueError("kind 'delete_key' takes no `value`")
        if self.key is not None and not re.fullmatch(r"[A-Za-z0-9_\-]+(\.[A-Za-z0-9_\-]+)*", self.key):
            raise ValueError(f"`key` {self.key!r} is not a dotted key (name.name...)")
        return self


class RuleSpec(Strict):
    code: str = Field(pattern=r"^[A-Z][A-Z0-9]{0,7}[0-9]{3}$")
    name: str = Field(pattern=r"^[a-z][a-z0-9]*(-[a-z0-9]+)*$")
    severity: Literal["error", "warning", "info"]
    # the packlint release that first ships the rule ("0.2.0"); required in rules/*.toml
    since: str | None = Field(default=None, pattern=SINCE_PATTERN)
    summary: str = Field(min_length=1)
    message: str = Field(min_length=1)
    help: str | None = None
    when: str = Field(min_length=1)
    scope: Literal["launch", "script"] = "launch"
    for_each: str | None = None
    report_at: str = "launch"
    related: list[RelatedSpec] = []
    undecided: Literal["info", "ignore"] = "info"
    exclusive: bool = False
    # the program versions the constraint exists in (e.g. "core>=0.8"); see version_applies
    versions: str | None = Field(default=None, pattern=VERSIONS_PATTERN)
    override: list[OverrideSpec] = []
    explanation: str = Field(min_length=1)
    references: list[str] = []
    example: list[ExampleSpec] = []
    fix: FixSpecModel | None = None

    @field_validator("summary")
    @classmethod
    def _one_line(cls, v: str) -> str:
        if "\n" in v.strip():
            raise ValueError("must be one line")
        return v.strip()

    @field_validator("example")
    @classmethod
    def _bad_and_good(cls, v: list) -> list:
        kinds = {e.kind for e in v}
        if kinds != {"bad", "good"}:
            raise ValueError("needs at least one 'bad' and one 'good' example")
        return v


class PredicateSpec(Strict):
    params: list[str] = []
    expr: str


class DefaultSpec(Strict):
    flags: list[str] = Field(min_length=1)
    value: str | int | None = None


class TableSpec(Strict):
    variables: dict[str, list[str] | str | int] = {}
    defaults: dict[str, DefaultSpec] = {}
    predicates: dict[str, str | PredicateSpec] = {}
    rule: list[RuleSpec] = []
