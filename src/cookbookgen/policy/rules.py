"""The policy as data: rules read from the shipped `rules/policy.yaml` plus an optional user file.

I/O: `load_policy` reads the files (through `recipes.load`). Matching is pure.

- A rule's `match` is a dotted glob; `*` matches one key (with shell globs inside it), `**` any
  number of keys, and a rule covers every setting at or under the matched path.
- `value:` limits a rule to settings with exactly that value.
- First matching rule wins; the user's rules come before the shipped ones.
- A policy file is validated as strictly as a manifest: a mapping of `rules` and `clusters` only,
  each rule `match`, `class`, `reason` and optional `value`/`replacement` (a misspelt key, a list or
  an empty file is one located problem, never zero rules).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from functools import cached_property, lru_cache
from importlib import resources
from pathlib import Path
from typing import Annotated, Any, Literal, get_args

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError

from ..errors import CookbookError, schema_messages
from ..recipes.load import Document, parse_yaml, read_yaml_file
from ..recipes.schema import EnvName

PolicyClass = Literal["published", "harness-only", "default-equivalent", "placeholder", "cluster-provided", "prohibited"]
CLASSES: tuple[str, ...] = get_args(PolicyClass)
DROPPED = frozenset({"harness-only", "default-equivalent"})
_NO_VALUE = object()
GLOB_CHARS = frozenset("*?[")    # what makes a pattern part a glob (`fnmatch`); a part without them is a plain key


@dataclass(frozen=True)
class Rule:
    pattern: tuple[str, ...]
    cls: str
    reason: str
    value: Any = _NO_VALUE
    replacement: str | None = None
    source: str = ""

    text: str = field(init=False, repr=False, compare=False)   # the pattern as written, for reports

    def __post_init__(self) -> None:
        object.__setattr__(self, "text", ".".join(self.pattern))

    @property
    def any_value(self) -> bool:
        """The rule has no `value:`: it matches a setting whatever its value."""
        return self.value is _NO_VALUE


@dataclass(frozen=True)
class ClusterEnv:
    name: str
    value: str
    reason: str


@dataclass(frozen=True)
class Policy:
    rules: tuple[Rule, ...]
    clusters: dict[str, tuple[ClusterEnv, ...]] = field(default_factory=dict)

    def first_match(self, path: tuple[str, ...], value: Any) -> Rule | None:
        plain, conditional = _candidates(self, path)
        for i, rule in conditional:
            if (plain is None or i < plain) and type(value) is type(rule.value) and value == rule.value:
                return rule
        return None if plain is None else self.rules[plain]

    @cached_property
    def plain_parts(self) -> tuple[frozenset[str], ...]:
        """Per rule, the parts of its pattern that are plain keys (no `*`, `?`, `[`): a path the rule
        matches has each of them among its keys, so a path without one of them needs no globbing."""
        return tuple(frozenset(p for p in r.pattern if GLOB_CHARS.isdisjoint(p)) for r in self.rules)

    @cached_property
    def prohibited(self) -> tuple[tuple[str, ...], ...]:
        """The patterns of the prohibited rules, each once."""
        return tuple(dict.fromkeys(r.pattern for r in self.rules if r.cls == "prohibited"))

    __hash__ = object.__hash__      # by identity (rules and clusters do not hash), at C speed: `_candidates` is cached by policy


@lru_cache(maxsize=65536)
def _candidates(policy: Policy, path: tuple[str, ...]) -> tuple[int | None, tuple[tuple[int, Rule], ...]]:
    """The first value-free rule matching `path`, and the value-conditioned rules before it that match
    (worked out once per policy and path: the same paths recur in every point)."""
    conditional: list[tuple[int, Rule]] = []
    keys = frozenset(path)
    for i, (rule, plain) in enumerate(zip(policy.rules, policy.plain_parts)):
        if not plain <= keys or not glob_matches(rule.pattern, path):
            continue
        if rule.any_value:
            return i, tuple(conditional)
        conditional.append((i, rule))
    return None, tuple(conditional)


def glob_matches(pattern: tuple[str, ...], path: tuple[str, ...]) -> bool:
    """True when `pattern` matches `path` or one of its prefixes. A plain part (no `*`, `?`, `[`)
    matches only the very key, so it is compared, not globbed; after `**`, only the places that
    hold the next plain part are tried."""
    if not pattern:
        return True
    head, rest = pattern[0], pattern[1:]
    if head == "**":
        if rest and rest[0] != "**" and GLOB_CHARS.isdisjoint(rest[0]):
            return any(key == rest[0] and glob_matches(rest[1:], path[i + 1:]) for i, key in enumerate(path))
        return any(glob_matches(rest, path[i:]) for i in range(len(path) + 1))
    if not path:
        return False
    if GLOB_CHARS.isdisjoint(head):
        return path[0] == head and glob_matches(rest, path[1:])
    return fnmatchcase(path[0], head) and glob_matches(rest, path[1:])


def _not_blank(text: str) -> str:
    if not text.strip():
        raise ValueError("must not be empty")
    return text


def load_policy(user_file: Path | None = None) -> Policy:
    """The shipped rules, with `user_file`'s rules (same format) in front of them."""
    shipped_text = resources.files("cookbookgen").joinpath("rules/policy.yaml").read_text(encoding="utf-8")
    docs = [read_yaml_file(user_file)] if user_file else []
    docs.append(parse_yaml(shipped_text, "cookbookgen/rules/policy.yaml"))
    rules: list[Rule] = []
    clusters: dict[str, tuple[ClusterEnv, ...]] = {}
    for doc in docs:
        spec = _read_policy_file(doc)
        rules += [Rule(tuple(r.match.split(".")), r.cls, r.reason, r.value if "value" in r.model_fields_set else _NO_VALUE,
                       r.replacement, f"{doc.file}:{doc.line_of(('rules', i))}") for i, r in enumerate(spec.rules)]
        for name, cluster in spec.clusters.items():
            clusters.setdefault(name, tuple(ClusterEnv(key, str(item.value), item.reason) for key, item in cluster.worker_env.items()))
    return Policy(tuple(rules), clusters)


class _RuleSpec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    match: Annotated[str, AfterValidator(_not_blank)]
    cls: PolicyClass = Field(alias="class")
    reason: Annotated[str, AfterValidator(_not_blank)]
    value: Any = None                  # absent (not in `model_fields_set`): the rule matches any value
    replacement: str | None = None


class _ClusterEnvSpec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    value: str | int | float | bool
    reason: Annotated[str, AfterValidator(_not_blank)]


class _ClusterSpec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    worker_env: dict[EnvName, _ClusterEnvSpec] = {}


class _PolicyFile(BaseModel):
    """A policy file: a mapping of `rules` and `clusters`, nothing else (a misspelt key would
    otherwise read as no rules, and a `prohibited` setting would be published)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    rules: list[_RuleSpec] = []
    clusters: dict[str, _ClusterSpec] = {}


def _read_policy_file(doc: Document) -> _PolicyFile:
    if not isinstance(doc.data, dict):
        raise doc.error((), "a policy file is a mapping with `rules` and/or `clusters`")
    try:
        return _PolicyFile.model_validate(doc.data)
    except ValidationError as exc:
        raise CookbookError([doc.problem(loc, message) for loc, message in schema_messages(exc.errors(), _PolicyFile)]) from None


@dataclass(frozen=True, slots=True)
class Setting:
    """One leaf setting of an effective recipe and the policy class it got (a plain dataclass: the
    renderer builds one per leaf, so it skips model validation)."""

    path: str
    value: object
    cls: str
    reason: str
    rule: str = ""
    replacement: str | None = None  # what the command shows instead (placeholders)

    def to_json(self) -> dict[str, object]:
        out = {"path": self.path, "value": self.value, "class": self.cls, "reason": self.reason, "rule": self.rule}
        if self.replacement is not None:
            out["shown_as"] = self.replacement
        return out
