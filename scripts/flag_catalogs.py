#!/usr/bin/env python3
"""Write the flag catalog of an engine release: every command-line flag its server parser accepts.

    python scripts/flag_catalogs.py sglang 0.5.23 [0.5.22 ...]    # pip download, then read with `ast`
    python scripts/flag_catalogs.py sglang 0.5.23 --package FILE   # a wheel or sdist already on disk
    python scripts/flag_catalogs.py releases                       # the release dates table (PyPI)

The package is downloaded with `pip download <pkg>==<ver> --no-deps` into a temporary folder and read
as text: nothing of it is imported (SGLang needs torch). The parser is rebuilt as SGLang's
`prepare_server_args` builds it:
- `ServerArgs.add_cli_args` in `srt/server_args.py`: its `parser.add_argument(...)` calls (the only
  source up to 0.5.1x);
- `add_cli_args_from_dataclass(parser, ServerArgs)`: one flag per field annotated `A[T, "help"]` or
  `A[T, Arg(...)]`, of `ServerArgs` itself or of the namespace classes (`_NS_PATH`) under
  `srt/arg_groups/fields/` that newer releases assemble it from; the flag's shape follows that
  function's rules (custom action, Literal -> choices, list -> nargs '+', bool -> store_true, else one value);
- argparse's own `-h/--help`.
Names of constants (choice lists) are looked up in the module-level assignments of the files read;
a value that is not a literal there (a plugin registry, an f-string) is recorded as unknown (`null`).

`releases` writes `src/cookbookgen/flags/releases.yaml`: each final (and post) release of every engine, or
every release where the engine publishes release candidates as its releases (TensorRT-LLM), with the
day its first file reached PyPI (the package's published release history,
`https://pypi.org/pypi/<package>/json`), and that release's PyPI page as the source.

Output: `src/cookbookgen/flags/catalogs/<engine>-<version>.json`, keys sorted, one flag per line,
with the package file name and sha256 it came from. Running it again on the same package writes the
same bytes.
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import json
import re
import subprocess
import sys
import tempfile
import zipfile
import tarfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

CATALOGS = Path(__file__).resolve().parent.parent / "src" / "cookbookgen" / "flags" / "catalogs"
RELEASES = CATALOGS.parent / "releases.yaml"
# engine -> its PyPI package; the Dynamo wrappers of each engine are catalogs of the ai-dynamo package
PACKAGES = {"sglang": "sglang", "ai-dynamo": "ai-dynamo", "dynamo-vllm": "ai-dynamo", "dynamo-trtllm": "ai-dynamo",
            "dynamo-frontend": "ai-dynamo", "vllm": "vllm"}
# engine -> (PyPI package, the oldest release the table lists, whether its release candidates are releases)
RELEASE_HISTORY = {"sglang": ("sglang", "0.5.0", False), "ai-dynamo": ("ai-dynamo", "1.0.0", False),
                   "vllm": ("vllm", "0.20.0", False), "tensorrt-llm": ("tensorrt-llm", "1.2.0", True)}
PEP440 = re.compile(r"^(\d+(?:\.\d+)*)(?:(a|b|rc)(\d+))?(?:\.post(\d+))?(?:\.dev(\d+))?$")
SERVER_ARGS = "sglang/srt/server_args.py"
FIELDS_DIR = "sglang/srt/arg_groups/"
# The parser of `python3 -m dynamo.sglang` reads these groups first (`parse_known_args`) and hands the
# rest to SGLang's own parser; the helpers' module holds the constants they use.
DYNAMO_GROUPS = ("dynamo/common/configuration/groups/runtime_args.py", "dynamo/sglang/backend_args.py")
DYNAMO_HELPERS = "dynamo/common/configuration/utils.py"
# The same for `python3 -m dynamo.vllm` and `python3 -m dynamo.trtllm` (whose parser also takes any
# `--trtllm.<group>.<key> value`: an engine option, `prefixes` in the catalog).
WRAPPER_GROUPS = {"ai-dynamo": DYNAMO_GROUPS,
                  "dynamo-vllm": (DYNAMO_GROUPS[0], "dynamo/vllm/backend_args.py"),
                  "dynamo-trtllm": (DYNAMO_GROUPS[0], "dynamo/trtllm/backend_args.py"),
                  # `python3 -m dynamo.frontend`: its own group and the router groups it adds (those a release has)
                  "dynamo-frontend": ("dynamo/frontend/frontend_args.py", "dynamo/common/configuration/groups/router_args.py",
                                      "dynamo/common/configuration/groups/kv_router_args.py",
                                      "dynamo/common/configuration/groups/ais_perf_args.py")}
WRAPPER_PREFIXES = {"dynamo-trtllm": ["--trtllm."]}
# The module that builds the wrapper's parser: `allow_abbrev=False` there means no abbreviation is its own.
WRAPPER_MAIN = {"ai-dynamo": "dynamo/sglang/args.py", "dynamo-vllm": "dynamo/vllm/args.py", "dynamo-trtllm": "dynamo/trtllm/args.py",
                "dynamo-frontend": "dynamo/frontend/main.py"}
UNKNOWN = object()   # a value the reader cannot state without running the code

# argparse's own actions that take no value; every other action takes `nargs` (default: one value).
NO_VALUE_ACTIONS = {"store_true", "store_false", "store_const", "append_const", "count", "help", "version"}
DEPRECATED_HELP = re.compile(r"^\s*[\[(]?\s*deprecated\b", re.IGNORECASE)
REPLACEMENT = re.compile(r"\b(?:use|alias for|replaced by|in favou?r of)\s+(--[A-Za-z0-9][\w-]*(?:\{[\w,]+\})?(?:=[\w{},<>-]+| <[\w-]+>)?)",
                         re.IGNORECASE)


@dataclass
class Flag:
    names: list[str]
    nargs: int | str = 1
    choices: list[str] | None = None
    deprecated: bool = False
    replacement: str | None = None
    refused: str | None = None      # the parser stops with this message (a retired flag)
    obsolete: list[str] = field(default_factory=list)   # aliases kept for an old name (Dynamo's `obsolete_flag`)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"nargs": self.nargs}
        if len(self.names) > 1:
            out["aliases"] = self.names[1:]
        if self.obsolete:
            out["obsolete"] = self.obsolete
        if self.choices is not None:
            out["choices"] = self.choices
        if self.deprecated:
            out["deprecated"] = True
        if self.replacement:
            out["replacement"] = self.replacement
        if self.refused:
            out["refused"] = self.refused
        return out


@dataclass
class Sources:
    """The package's Python files that build the parser, parsed, plus the constants they define."""

    trees: dict[str, ast.Module]
    constants: dict[str, ast.expr] = field(default_factory=dict)   # module-level name -> its value's expression
    action_nargs: dict[str, int | str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for tree in self.trees.values():
            for node in tree.body:
                if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                    self.constants.setdefault(node.targets[0].id, node.value)
                elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
                    self.constants.setdefault(node.target.id, node.value)
                elif isinstance(node, ast.ClassDef):
                    nargs = _action_class_nargs(node)
                    if nargs is not None:
                        self.action_nargs[node.name] = nargs


def _action_class_nargs(cls: ast.ClassDef) -> int | str | None:
    """For a subclass of argparse.Action: the `nargs` its `__init__` defaults to (None: one value)."""
    if not any(ast.unparse(b).endswith("Action") for b in cls.bases):
        return None
    for node in cls.body:
        if isinstance(node, ast.FunctionDef) and node.name == "__init__":
            args = node.args.args[len(node.args.args) - len(node.args.defaults):]
            for arg, default in zip(args, node.args.defaults):
                if arg.arg == "nargs" and isinstance(default, ast.Constant):
                    return _nargs(default.value)
    return 1


def _nargs(value: Any) -> int | str:
    return 1 if value is None else value


def evaluate(node: ast.expr | None, src: Sources, local: dict[str, ast.expr] | None = None, depth: int = 0) -> Any:
    """The value of a literal expression, following names to their assignment; UNKNOWN otherwise."""
    if node is None or depth > 20:
        return UNKNOWN

    def again(n: ast.expr | None) -> Any:
        return evaluate(n, src, local, depth + 1)

    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        items = [again(e) for e in node.elts]
        return UNKNOWN if any(i is UNKNOWN for i in items) else items
    if isinstance(node, ast.Dict):
        keys = [again(k) for k in node.keys if k is not None]
        return UNKNOWN if any(k is UNKNOWN for k in keys) or None in node.keys else dict(zip(keys, map(again, node.values)))
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.BitOr)):
        left, right = again(node.left), again(node.right)
        if isinstance(left, list) and isinstance(right, list):
            return left + right if isinstance(node.op, ast.Add) else sorted(set(left) | set(right), key=str)
        if isinstance(left, str) and isinstance(right, str) and isinstance(node.op, ast.Add):
            return left + right
        return UNKNOWN
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        value = again(node.operand)
        return -value if isinstance(value, (int, float)) else UNKNOWN
    if isinstance(node, ast.Name):
        if local and node.id in local:
            return again(local[node.id])
        if node.id in src.constants:
            return again(src.constants[node.id])
        return UNKNOWN
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("list", "tuple", "set", "sorted") \
            and len(node.args) == 1 and not node.keywords:
        value = again(node.args[0])
        return list(value) if isinstance(value, (list, dict)) else UNKNOWN
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "keys" and not node.args:
        value = again(node.func.value)
        return list(value) if isinstance(value, dict) else UNKNOWN
    return UNKNOWN


def _choices(value: Any) -> list[str] | None:
    if value is UNKNOWN or not isinstance(value, list):
        return None
    return sorted({str(v) for v in value})


def _deprecation(flag: Flag, action: str, kwargs: dict[str, Any], help_text: Any) -> None:
    text = help_text if isinstance(help_text, str) else ""
    if "Deprecated" in action or DEPRECATED_HELP.search(text):
        flag.deprecated = True
        new_flag = kwargs.get("new_flag")
        found = REPLACEMENT.search(text)
        flag.replacement = new_flag if isinstance(new_flag, str) else found.group(1) if found else None
    message = kwargs.get("error_message")
    if action == "DeprecatedAction" and message is not None:
        flag.refused = message if isinstance(message, str) else "the parser refuses this flag"


def flag_from_call(call: ast.Call, src: Sources, local: dict[str, ast.expr]) -> Flag | None:
    """One `parser.add_argument("--x", ...)` call."""
    names = [a.value for a in call.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
    if not names or not names[0].startswith("-"):
        return None
    kwargs = {k.arg: k.value for k in call.keywords if k.arg}
    values = {k: evaluate(v, src, local) for k, v in kwargs.items() if k != "action"}
    action = ast.unparse(kwargs["action"]).split(".")[-1].strip("'\"") if "action" in kwargs else "store"
    flag = Flag(names)
    _shape(flag, action, values, src)
    if "choices" in kwargs:
        flag.choices = _choices(values["choices"])
    _deprecation(flag, action, values, values.get("help"))
    return flag


def _shape(flag: Flag, action: str, kwargs: dict[str, Any], src: Sources) -> None:
    """The names and `nargs` an action gives the flag (BooleanOptionalAction adds `--no-` names)."""
    if action == "BooleanOptionalAction":
        flag.names += ["--no-" + n[2:] for n in flag.names if n.startswith("--")]
        flag.nargs = 0
    elif action in NO_VALUE_ACTIONS:
        flag.nargs = 0
    elif "nargs" in kwargs:
        flag.nargs = _nargs(kwargs["nargs"]) if kwargs["nargs"] is not UNKNOWN else "*"
    else:
        flag.nargs = src.action_nargs.get(action, 1)


def _annotated(node: ast.expr) -> tuple[ast.expr, list[ast.expr]] | None:
    """`A[T, meta, ...]` / `Annotated[T, ...]` -> (T, [meta, ...])."""
    if isinstance(node, ast.Subscript) and ast.unparse(node.value).split(".")[-1] in ("A", "Annotated") \
            and isinstance(node.slice, ast.Tuple) and node.slice.elts:
        return node.slice.elts[0], node.slice.elts[1:]
    return None


def _unwrap_optional(node: ast.expr) -> ast.expr:
    if isinstance(node, ast.Subscript) and ast.unparse(node.value).split(".")[-1] == "Optional":
        return node.slice
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        sides = [s for s in (node.left, node.right) if ast.unparse(s) != "None"]
        return sides[0] if len(sides) == 1 else node
    if isinstance(node, ast.Subscript) and ast.unparse(node.value).split(".")[-1] == "Union" and isinstance(node.slice, ast.Tuple):
        sides = [s for s in node.slice.elts if ast.unparse(s) != "None"]
        return sides[0] if len(sides) == 1 else node
    return node


def flag_from_field(stmt: ast.AnnAssign, src: Sources) -> Flag | None:
    """One annotated field, as `add_cli_args_from_dataclass` registers it."""
    found = _annotated(stmt.annotation) if isinstance(stmt.target, ast.Name) else None
    if found is None:
        return None
    type_node, metas = found
    meta: dict[str, ast.expr] | None = None
    for m in metas:
        if isinstance(m, ast.Call) and ast.unparse(m.func).split(".")[-1] == "Arg":
            meta = {k.arg: k.value for k in m.keywords if k.arg}
            break
        if isinstance(m, (ast.JoinedStr, ast.BinOp)) or (isinstance(m, ast.Constant) and isinstance(m.value, str)):
            meta = {"help": m}
            break
    if meta is None or evaluate(meta.get("no_cli"), src) is True:
        return None
    name = stmt.target.id  # type: ignore[union-attr]
    cli_name = evaluate(meta.get("cli_name"), src)
    aliases = evaluate(meta.get("aliases"), src)
    flag = Flag([cli_name if isinstance(cli_name, str) else "--" + name.replace("_", "-")] + (aliases if isinstance(aliases, list) else []))
    given_choices = evaluate(meta.get("choices"), src) if "choices" in meta else None
    given_nargs = evaluate(meta.get("nargs"), src) if "nargs" in meta else None
    inner = _unwrap_optional(type_node)
    head = ast.unparse(inner.value if isinstance(inner, ast.Subscript) else inner).split(".")[-1]
    if "action" in meta:
        action = ast.unparse(meta["action"]).split(".")[-1].strip("'\"")
        extra = evaluate(meta.get("action_kwargs"), src) if "action_kwargs" in meta else {}
        extra = extra if isinstance(extra, dict) else {}
        _shape(flag, action, extra, src)
        if "choices" in extra:
            flag.choices = _choices(extra["choices"])
        _deprecation(flag, action, extra, evaluate(meta.get("help"), src))
        return flag
    if head == "Literal" and isinstance(inner, ast.Subscript):
        literal = evaluate(inner.slice if isinstance(inner.slice, ast.Tuple) else ast.Tuple([inner.slice]), src)
        flag.choices = _choices(given_choices if given_choices is not None else literal)
    elif head in ("List", "list") and "type_parser" not in meta:
        flag.nargs = given_nargs if isinstance(given_nargs, (str, int)) else "+"
        flag.choices = _choices(given_choices) if given_choices else None
    elif head == "bool":
        flag.nargs = 0
    else:
        flag.choices = _choices(given_choices) if given_choices else None
        flag.nargs = _nargs(given_nargs) if isinstance(given_nargs, (str, int)) else 1
    _deprecation(flag, "", {}, evaluate(meta.get("help"), src))
    return flag


def _is_field_class(cls: ast.ClassDef) -> bool:
    return cls.name == "ServerArgs" or any(
        isinstance(s, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "_NS_PATH" for t in s.targets) for s in cls.body)


def flag_from_helper(call: ast.Call, src: Sources) -> Flag | None:
    """Dynamo's `add_argument(group, flag_name=..., obsolete_flag=..., deprecated=Deprecated(...))` and
    `add_negatable_bool_argument(...)` (which adds `--no-<name>`)."""
    kwargs = {k.arg: k.value for k in call.keywords if k.arg}
    values = {k: evaluate(v, src) for k, v in kwargs.items() if k != "action"}
    name, obsolete = values.get("flag_name"), values.get("obsolete_flag")
    if not isinstance(name, str):
        return None
    flag = Flag([name] + ([obsolete] if isinstance(obsolete, str) else []))
    negatable = ast.unparse(call.func) == "add_negatable_bool_argument"
    action = "BooleanOptionalAction" if negatable else ast.unparse(kwargs["action"]).split(".")[-1].strip("'\"") if "action" in kwargs else "store"
    _shape(flag, action, values, src)
    if isinstance(obsolete, str):      # the old name, and its `--no-` form when the flag is negatable
        flag.obsolete = [n for n in flag.names if n.removeprefix("--no-").removeprefix("--") == obsolete.removeprefix("--")]
    if "choices" in kwargs:
        flag.choices = _choices(values["choices"])
    deprecated = kwargs.get("deprecated")
    if not isinstance(deprecated, ast.Call):      # a help text that starts "DEPRECATED: use --new"
        _deprecation(flag, action, {}, values.get("help"))
    if isinstance(deprecated, ast.Call):
        flag.deprecated = True      # `Deprecated(replacement, remove_in=...)` names the replacement; a helper's call does not here
        given = {k.arg: evaluate(k.value, src) for k in deprecated.keywords if k.arg}
        own = ast.unparse(deprecated.func).split(".")[-1] == "Deprecated"
        replacement = given.get("replacement", evaluate(deprecated.args[0], src) if deprecated.args and own else None)
        flag.replacement = replacement if isinstance(replacement, str) else None
    return flag


def read_dynamo_parser(src: Sources, groups: tuple[str, ...] = DYNAMO_GROUPS) -> list[Flag]:
    """A Dynamo wrapper's own flags: every registration in its groups' `add_arguments`."""
    flags: list[Flag] = []
    for path in groups:
        if path not in src.trees:
            if path == groups[0]:
                sys.exit(f"flag_catalogs: the package has no {path}")
            continue
        for func in ast.walk(src.trees[path]):
            if not (isinstance(func, ast.FunctionDef) and func.name == "add_arguments"):
                continue
            for call in ast.walk(func):
                if not isinstance(call, ast.Call):
                    continue
                if isinstance(call.func, ast.Name) and call.func.id in ("add_argument", "add_negatable_bool_argument"):
                    flag = flag_from_helper(call, src)
                elif isinstance(call.func, ast.Attribute) and call.func.attr == "add_argument":
                    flag = flag_from_call(call, src, {})
                else:
                    continue
                if flag is not None:
                    flags.append(flag)
    flags.append(Flag(["-h", "--help"], nargs=0))
    return flags


def read_parser(src: Sources) -> list[Flag]:
    """Every flag of the SGLang server parser, in registration order (fields, then add_cli_args)."""
    flags: list[Flag] = []
    for path in sorted(src.trees):
        for cls in ast.walk(src.trees[path]):
            if isinstance(cls, ast.ClassDef) and _is_field_class(cls):
                flags += [f for s in cls.body if isinstance(s, ast.AnnAssign) and (f := flag_from_field(s, src))]
    for func in ast.walk(src.trees[SERVER_ARGS]):
            if isinstance(func, ast.FunctionDef) and func.name == "add_cli_args":
                local = {t.id: s.value for s in ast.walk(func) if isinstance(s, ast.Assign)
                         for t in s.targets if isinstance(t, ast.Name)}
                for call in ast.walk(func):
                    if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr == "add_argument":
                        flag = flag_from_call(call, src, local)
                        if flag is not None:
                            flags.append(flag)
    flags.append(Flag(["-h", "--help"], nargs=0))
    return flags


# --- vLLM: `vllm serve` ----------------------------------------------------------------------------
# `make_arg_parser` (entrypoints/openai/cli_args.py) registers `model_tag`, a few plain flags, one flag per
# field of `FrontendArgs`, then `AsyncEngineArgs.add_cli_args` (engine/arg_utils.py): `group.add_argument(
# "--name", **x_kwargs["field"], ...)` where `x_kwargs = get_kwargs(SomeConfig)` shapes the flag from the
# field's type as `_compute_kwargs` does (a config dataclass: one JSON value; `bool | str | None`: an
# optional value; bool: `--x/--no-x`; Literal: choices, `"None"` added when optional, none when `str` is
# also allowed; tuple/list/set: `+` values; else one value). A kwargs entry the code rewrites (its type,
# choices or nargs) loses its choices. The parser is vLLM's FlexibleArgumentParser: `--a_b` reads as
# `--a-b` and `--json-flag.key value` sets one key of a JSON flag (`parser` in the catalog).
VLLM_FILES = ("vllm/engine/arg_utils.py", "vllm/entrypoints/openai/cli_args.py", "vllm/entrypoints/common/cli_args.py")  # the latter moved
VLLM_CONFIG_DIR = "vllm/config/"
VLLM_PARSER = {"underscores": True, "dotted": True}


@dataclass
class Fields:
    """Every class body's annotated fields (name -> annotation), its bases, and the module-level type aliases."""

    classes: dict[str, tuple[list[str], dict[str, ast.expr]]] = field(default_factory=dict)
    aliases: dict[str, ast.expr] = field(default_factory=dict)

    def add(self, tree: ast.Module) -> None:
        for node in tree.body:
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                self.aliases.setdefault(node.targets[0].id, node.value)
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None \
                    and ast.unparse(node.annotation).endswith("TypeAlias"):
                self.aliases.setdefault(node.target.id, node.value)
            elif isinstance(node, ast.ClassDef):
                own = {s.target.id: s.annotation for s in node.body if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)
                       and "ClassVar" not in ast.unparse(s.annotation)}
                self.classes.setdefault(node.name, ([ast.unparse(b).split(".")[-1] for b in node.bases], own))

    def of(self, name: str, depth: int = 0) -> dict[str, ast.expr]:
        """The fields of a class with those of its bases (bases first, as `dataclasses.fields` orders them)."""
        if name not in self.classes or depth > 10:
            return {}
        bases, own = self.classes[name]
        out: dict[str, ast.expr] = {}
        for base in bases:
            out.update(self.of(base, depth + 1))
        out.update(own)
        return out


def type_atoms(node: ast.expr | None, f: Fields, depth: int = 0) -> list[tuple[str, Any]]:
    """The type hints of an annotation, flattened as `get_type_hints` does: (kind, detail) per member."""
    if node is None or depth > 15:
        return [("other", None)]
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        try:
            return type_atoms(ast.parse(node.value, mode="eval").body, f, depth + 1)
        except SyntaxError:
            return [("other", None)]
    if isinstance(node, ast.Constant) and node.value is None:
        return [("none", None)]
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        return type_atoms(node.left, f, depth + 1) + type_atoms(node.right, f, depth + 1)
    head = ast.unparse(node.value if isinstance(node, ast.Subscript) else node).split(".")[-1]
    if isinstance(node, ast.Subscript):
        args = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        if head == "Annotated":
            return type_atoms(args[0], f, depth + 1)
        if head in ("Optional",):
            return type_atoms(args[0], f, depth + 1) + [("none", None)]
        if head == "Union":
            return [a for arg in args for a in type_atoms(arg, f, depth + 1)]
        if head == "Literal":
            values: list[Any] = []
            for arg in args:
                if isinstance(arg, ast.Constant):
                    values.append(arg.value)
                else:
                    values += [v for kind, vs in type_atoms(arg, f, depth + 1) if kind == "literal" for v in vs]
            return [("literal", values)]
        if head in ("list", "List", "set", "Set", "tuple", "Tuple"):
            kind = "tuple" if head.lower() == "tuple" else "list"
            ellipsis = any(isinstance(a, ast.Constant) and a.value is Ellipsis for a in args)
            return [(kind, (type_atoms(args[0], f, depth + 1), len(args), ellipsis))]
        if head in ("dict", "Dict", "Mapping"):
            return [("dict", None)]
        return type_atoms(node.value, f, depth + 1)
    simple = {"bool": "bool", "str": "str", "int": "int", "float": "float", "None": "none", "dict": "dict", "list": "list"}
    if head in simple:
        return [(simple[head], (([("other", None)], 1, True) if head == "list" else None))]
    if head in f.aliases and depth < 15:
        return type_atoms(f.aliases[head], f, depth + 1)
    if head in f.classes:
        return [("dataclass", head)]
    return [("other", head)]


def flag_from_type(names: list[str], atoms: list[tuple[str, Any]]) -> Flag:
    """The flag `_compute_kwargs` makes of a field with these type hints."""
    kinds = {k for k, _ in atoms}
    optional = "none" in kinds
    literal = [v for k, vs in atoms if k == "literal" for v in vs]
    flag = Flag(list(names))
    if "dataclass" in kinds:
        return flag
    if kinds == {"bool", "str", "none"}:
        flag.nargs = "?"
    elif "bool" in kinds:
        _shape(flag, "BooleanOptionalAction", {}, Sources({}))
    elif literal:
        if "str" not in kinds:
            flag.choices = sorted({str(v) for v in literal} | ({"None"} if optional else set()))
    elif kinds & {"tuple", "list"}:
        kind, (elem, count, ellipsis) = next((k, d) for k, d in atoms if k in ("tuple", "list"))
        flag.nargs = count if kind == "tuple" and not ellipsis else "+"
        values = [v for k, vs in elem if k == "literal" for v in vs]
        if values and not any(k == "str" for k, _ in elem):
            flag.choices = sorted({str(v) for v in values} | ({"None"} if optional else set()))
    return flag


def read_vllm_parser(src: Sources) -> list[Flag]:
    """Every flag of `vllm serve` (see the comment above)."""
    fields = Fields()
    for tree in src.trees.values():
        fields.add(tree)
    funcs = [f for path in VLLM_FILES if path in src.trees for f in ast.walk(src.trees[path]) if isinstance(f, ast.FunctionDef)]
    # the frontend class `make_arg_parser` registers, and what its `_customize_cli_kwargs` overrides rewrite
    called = [ast.unparse(c.func.value) for f in funcs if f.name == "make_arg_parser" for c in ast.walk(f)
              if isinstance(c, ast.Call) and isinstance(c.func, ast.Attribute) and c.func.attr == "add_cli_args"]
    frontend = next((c for c in called if c in fields.classes and c != "AsyncEngineArgs"), "")
    custom: dict[tuple[str, str], set[str]] = {}
    for f in funcs:
        if f.name == "_customize_cli_kwargs":
            for key, keys in _rewritten(f)[2].items():
                custom.setdefault(key, set()).update(keys)
    flags: list[Flag] = [Flag(["-h", "--help"], nargs=0)]
    for f in funcs:
        if f.name in ("add_cli_args", "make_arg_parser"):
            flags += _vllm_function(f, src, fields, frontend, custom)
    return flags


def _rewritten(func: ast.FunctionDef) -> tuple[dict[str, str], dict[str, tuple[str, str]], dict[tuple[str, str], set[str]]]:
    """A function's `x = get_kwargs(Config)` names, its aliases of one entry, and the entries' keys it rewrites."""
    kwargs_of: dict[str, str] = {}
    alias: dict[str, tuple[str, str]] = {}
    rewritten: dict[tuple[str, str], set[str]] = {}
    for node in ast.walk(func):
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target, value = node.targets[0], node.value
            if isinstance(target, ast.Name) and isinstance(value, ast.Call) and ast.unparse(value.func).endswith("get_kwargs") and value.args:
                kwargs_of[target.id] = ast.unparse(value.args[0]).split(".")[-1]
            elif isinstance(target, ast.Name) and isinstance(value, ast.Subscript) and isinstance(value.value, ast.Name) \
                    and isinstance(value.slice, ast.Constant):
                alias[target.id] = (value.value.id, str(value.slice.value))
            elif isinstance(target, ast.Name) and isinstance(value, ast.Subscript) and isinstance(value.value, ast.Call) \
                    and ast.unparse(value.value.func).endswith("get_kwargs") and isinstance(value.slice, ast.Constant):
                kwargs_of["(" + target.id] = ast.unparse(value.value.args[0]).split(".")[-1]     # x = get_kwargs(C)["field"]
                alias[target.id] = ("(" + target.id, str(value.slice.value))
        targets = node.targets if isinstance(node, (ast.Assign, ast.Delete)) else [node.target] if isinstance(node, ast.AugAssign) else []
        for t in targets:
            where = _kwargs_key(t, alias)
            if where is not None:
                rewritten.setdefault(where[:2], set()).add(where[2])
    return kwargs_of, alias, rewritten


def _vllm_function(func: ast.FunctionDef, src: Sources, fields: Fields, frontend: str,
                   custom: dict[tuple[str, str], set[str]]) -> list[Flag]:
    kwargs_of, alias, rewritten = _rewritten(func)
    out: list[Flag] = []
    for call in ast.walk(func):
        if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr == "add_argument"):
            continue
        spread = next((k.value for k in call.keywords if k.arg is None), None)
        given_extra: dict[str, ast.expr] = {}
        if isinstance(spread, ast.Dict):      # **{**x_kwargs["field"], "default": None}
            given_extra = {str(k.value): v for k, v in zip(spread.keys, spread.values) if isinstance(k, ast.Constant)}
            spread = next((v for k, v in zip(spread.keys, spread.values) if k is None), None)
        if spread is None:
            flag = flag_from_call(call, src, {})
            if flag is not None:
                out.append(flag)
            continue
        if isinstance(spread, ast.Name) and spread.id == "value":      # FrontendArgs: a flag per field
            for name, annotation in fields.of(frontend).items():
                flag = flag_from_type(["--" + name.replace("_", "-")], type_atoms(annotation, fields))
                _rewrites(flag, custom.get(("frontend_kwargs", name), set()))
                out.append(flag)
            continue
        where = _kwargs_key(spread, alias, whole=True)
        names = [a.value for a in call.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
        if where is None or where[0] not in kwargs_of or not names:
            print(f"flag_catalogs: not read: {ast.unparse(call)[:120]}", file=sys.stderr)
            continue
        annotation = fields.of(kwargs_of[where[0]]).get(where[1])
        flag = flag_from_type(names, type_atoms(annotation, fields))
        _rewrites(flag, rewritten.get(where[:2], set()))
        given = {**given_extra, **{k.arg: k.value for k in call.keywords if k.arg}}
        given.pop("default", None)
        if given:
            values = {k: evaluate(v, src) for k, v in given.items() if k != "action"}
            if "action" in given or "nargs" in given:
                action = ast.unparse(given["action"]).split(".")[-1].strip("'\"") if "action" in given else "store"
                flag.names = names
                _shape(flag, action, values, src)
            if "choices" in given:
                flag.choices = _choices(values["choices"])
            _deprecation(flag, "", values, values.get("help"))
            if values.get("deprecated") is True:
                flag.deprecated = True
        out.append(flag)
    return out


def _kwargs_key(node: ast.expr, alias: dict[str, tuple[str, str]], whole: bool = False) -> tuple[str, str, str] | None:
    """`x_kwargs["field"]["key"]` (or `alias["key"]`) -> (x_kwargs, field, key); `whole`: `x_kwargs["field"]` -> (.., "")."""
    if whole:
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and isinstance(node.slice, ast.Constant):
            return node.value.id, str(node.slice.value), ""
        if isinstance(node, ast.Name) and node.id in alias:
            return (*alias[node.id], "")
        return None
    if not (isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant)):
        return None
    inner = node.value
    if isinstance(inner, ast.Name) and inner.id in alias:
        return (*alias[inner.id], str(node.slice.value))
    if isinstance(inner, ast.Subscript) and isinstance(inner.value, ast.Name) and isinstance(inner.slice, ast.Constant):
        return inner.value.id, str(inner.slice.value), str(node.slice.value)
    return None


def _rewrites(flag: Flag, keys: set[str]) -> None:
    """The code rewrites these kwargs of the flag: a new type or choices leaves its choices unknown; its
    nargs deleted (the only rewrite of nargs vLLM makes) leaves one value."""
    if keys & {"type", "choices", "metavar"}:
        flag.choices = None
    if "nargs" in keys:
        flag.nargs = 1


def _wanted(engine: str, name: str) -> bool:
    if engine in WRAPPER_GROUPS:
        return name in WRAPPER_GROUPS[engine] or name in (DYNAMO_HELPERS, WRAPPER_MAIN[engine])
    if engine == "vllm":
        return name in VLLM_FILES or (name.startswith(VLLM_CONFIG_DIR) and name.endswith(".py"))
    return name == SERVER_ARGS or (name.startswith(FIELDS_DIR) and name.endswith(".py"))


READERS = {"sglang": (SERVER_ARGS, read_parser), "vllm": (VLLM_FILES[0], read_vllm_parser),
           **{e: (g[0], lambda src, g=g: read_dynamo_parser(src, g)) for e, g in WRAPPER_GROUPS.items()}}


def read_package(engine: str, archive: Path) -> Sources:
    """The parser's sources of a wheel or sdist, parsed (no file of it is imported or run)."""
    texts: dict[str, str] = {}
    if archive.suffix == ".whl":
        with zipfile.ZipFile(archive) as z:
            texts = {n: z.read(n).decode() for n in z.namelist() if _wanted(engine, n)}
    else:
        with tarfile.open(archive) as t:
            for member in t.getmembers():
                inner = member.name.split("/", 1)[-1].removeprefix("python/")
                if member.isfile() and _wanted(engine, inner):
                    texts[inner] = t.extractfile(member).read().decode()  # type: ignore[union-attr]
    if READERS[engine][0] not in texts:
        sys.exit(f"flag_catalogs: {archive.name} has no {READERS[engine][0]}")
    return Sources({name: ast.parse(text, name) for name, text in texts.items()})


def _abbreviates(tree: ast.Module | None) -> bool:
    """Whether the `argparse.ArgumentParser(...)` that module builds takes abbreviations (argparse's default)."""
    calls = [c for c in ast.walk(tree) if isinstance(c, ast.Call) and ast.unparse(c.func).endswith("argparse.ArgumentParser")] if tree else []
    return not any(k.arg == "allow_abbrev" and isinstance(k.value, ast.Constant) and k.value.value is False for c in calls[:1] for k in c.keywords)


def catalog(engine: str, version: str, archive: Path) -> str:
    sources = read_package(engine, archive)
    flags = READERS[engine][1](sources)
    by_name = {f.names[0]: f for f in flags}   # a field declared twice in a class body is one field: the last
    lines = [f" {json.dumps(name)}: {json.dumps(flag.to_json(), sort_keys=True)}" for name, flag in sorted(by_name.items())]
    head: dict[str, Any] = {"engine": engine, "version": version, "package": archive.name,
                            "sha256": hashlib.sha256(archive.read_bytes()).hexdigest(), "actions": len(by_name)}
    if engine == "vllm":
        head["parser"] = VLLM_PARSER
    if engine in WRAPPER_PREFIXES:
        head["prefixes"] = WRAPPER_PREFIXES[engine]
    if engine in WRAPPER_MAIN and not _abbreviates(sources.trees.get(WRAPPER_MAIN[engine])):
        head["parser"] = {"abbrev": False}
    return json.dumps(head, sort_keys=True)[:-1] + ', "flags": {\n' + ",\n".join(lines) + "\n}}\n"


# vLLM publishes wheels only for Linux x86_64/aarch64 (the source distribution needs torch to build):
# ask pip for the x86_64 wheel whatever machine runs this.
WHEEL_ONLY = ["--only-binary", ":all:", "--python-version", "3.12", *[a for p in ("manylinux_2_35_x86_64", "manylinux_2_31_x86_64", "manylinux_2_24_x86_64",
              "manylinux_2_28_x86_64", "manylinux1_x86_64") for a in ("--platform", p)]]


def download(package: str, version: str, into: Path) -> Path:
    extra = WHEEL_ONLY if package == "vllm" else []
    subprocess.run([sys.executable, "-m", "pip", "download", f"{package}=={version}", "--no-deps", "-q", *extra, "-d", str(into)], check=True)
    found = sorted(p for p in into.iterdir() if p.suffix in (".whl", ".gz"))
    if not found:
        sys.exit(f"flag_catalogs: pip downloaded nothing for {package}=={version}")
    return found[0]


def release_table(histories: dict[str, dict[str, Any]]) -> str:
    """`releases.yaml` from each engine's PyPI JSON document (`releases`: version -> its files)."""
    lines = ["# Release dates: the day the first file of each release reached PyPI (the engines' published release",
             "# history). Written by `python scripts/flag_catalogs.py releases`; do not edit by hand.",
             "# A nightly or dev build of a date is checked against the last release on or before it and the first after",
             "# (the engines tag their releases from the main branch); a release can be cut days before it reaches PyPI, so a",
             "# flag those two refuse but the release after takes is only a warning."]
    for engine, doc in histories.items():
        package, oldest, candidates = RELEASE_HISTORY[engine]
        rows = []
        for version, files in doc["releases"].items():
            parts = PEP440.match(version)
            if not files or parts is None or parts.group(5) or (parts.group(2) and not candidates):
                continue
            if tuple(map(int, parts.group(1).split("."))) < tuple(map(int, oldest.split("."))):
                continue
            rows.append((min(f["upload_time"] for f in files)[:10], version))
        lines.append(f"{engine}:")
        lines += [f"  - {{version: '{v}', date: {d}, source: 'https://pypi.org/project/{package}/{v}/'}}" for d, v in sorted(rows)]
    return "\n".join(lines) + "\n"


def pypi_history(package: str) -> dict[str, Any]:
    from urllib.request import urlopen

    with urlopen(f"https://pypi.org/pypi/{package}/json", timeout=120) as response:   # noqa: S310 (a fixed https URL)
        return dict(json.load(response))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("engine", choices=sorted(PACKAGES) + ["releases"])
    parser.add_argument("versions", nargs="*")
    parser.add_argument("--package", type=Path, help="read this wheel/sdist instead of downloading (one version only)")
    parser.add_argument("--out", type=Path, default=CATALOGS, help=f"output folder (default: {CATALOGS})")
    args = parser.parse_args(argv)
    if args.engine == "releases":
        RELEASES.write_text(release_table({e: pypi_history(p) for e, (p, _, _) in RELEASE_HISTORY.items()}))
        print(f"{RELEASES}: from PyPI")
        return 0
    if args.package and len(args.versions) != 1:
        parser.error("--package goes with exactly one version")
    args.out.mkdir(parents=True, exist_ok=True)
    for version in args.versions:
        with tempfile.TemporaryDirectory() as tmp:
            archive = args.package or download(PACKAGES[args.engine], version, Path(tmp))
            target = args.out / f"{args.engine}-{version}.json"
            target.write_text(catalog(args.engine, version, archive))
            print(f"{target}: from {archive.name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
