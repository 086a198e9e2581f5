"""Stage 1 of the diff (read): read the artifacts `cookbookgen diff` compares: the only module of the diff stage that touches disk.

Cookbook inputs (`read_cookbook`):
- a cookbook manifest (`cookbook.yaml`): its points as `pipeline` renders them from the manifest's own
  checkout (the one case where the published side is our renderer's output);
- an AgentX module (`.jsx`, or `.json` with `cells[].routers`): decoded as the SGLang cookbook
  explorer does; for each cell the submitted router with each point's measured KV tier is compared,
  every other router / tier combination is a `derived` variant;
- a cookbook JSON: the cookbook data the site build exports (`pages[].cells[].points[]` with each
  point's `deployment.blocks`), or `render --format json` output (one point, a list, or `{points: [...]}`);
- a built site directory: the commands in its HTML code blocks (read back with an HTML parser; see
  `site.py`), paired through the site's `cookbook.json`.
Logs (`read_logs`): every `ServerArgs(...)` line of the worker logs under a directory, and every
srt-slurm resolved `config*.yaml`.
"""

from __future__ import annotations

import re

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..cells.assemble import load_configs, workspace_for
from ..cells.manifest import read_manifest, source_root
from ..errors import CookbookError
from ..policy.rules import Policy, load_policy
from ..recipes.load import MAX_INPUT_BYTES, parse_json, read_text_file
from ..recipes.workspace import Workspace
from ..render.model import Block
from .model import Finding, Published, PublishedPoint, Source, Variant, whole

if TYPE_CHECKING:  # the AgentX decoder, HTML reader and log parsers load only for those inputs
    from ..agentx.decode import Decoder
    from ..cells.cache import RenderCache
    from ..cells.model import Cookbook as CookbookModel
    from .logs import RoleSettings, ServerArgsDict

Json = dict[str, Any]
_BLOCK_KEYS = set(Block.model_fields)


MANIFEST_KIND = "rendered cookbook manifest"


@dataclass(frozen=True)
class Cookbook:
    """A published cookbook and the checkout it names (a manifest's `source`), if any; for a manifest
    also the policy it renders with (the diff checks with the same one)."""

    source: Source
    checkout: Path | None = None
    policy_file: Path | None = None
    policy: Policy | None = None


def read_cookbook(path: Path, policy: Policy | None = None, workspaces: dict[Path, Workspace] | None = None,
                  cache: RenderCache | None = None) -> Cookbook:
    """Read the cookbook at `path`. A manifest's points are rendered config by config as the diff asks
    for them, through `workspaces` (checkout root -> Workspace, shared with the check so the checkout
    is read once) and `cache` (`cells.cache`)."""
    if path.is_dir():
        return Cookbook(whole(read_site(path)))
    if not path.exists():
        raise CookbookError.at(str(path), 0, "", "the file does not exist")
    if path.suffix in (".yaml", ".yml"):
        return _manifest(path, policy, workspaces, cache)
    text = _text(path)
    if path.suffix == ".jsx":
        from ..agentx.module import read_module_text

        return Cookbook(whole(published_from_module(read_module_text(text, str(path)), str(path))))
    if path.suffix == ".json":
        return Cookbook(whole(published_from_json(_json(text, str(path)), str(path))))
    raise CookbookError.at(str(path), 0, "", "unknown cookbook format: expected a manifest (.yaml), an AgentX module (.jsx/.json), a cookbook JSON or a site directory")


def _text(path: Path) -> str:
    return read_text_file(path, str(path), MAX_INPUT_BYTES)


def _json(text: str, file: str) -> Any:
    data, end = parse_json(text, file)
    if text[end:].strip():
        raise CookbookError.at(file, text.count("\n", 0, end) + 1, "", "invalid JSON: Extra data")
    return data


def _manifest(path: Path, policy: Policy | None, workspaces: dict[Path, Workspace] | None, cache: RenderCache | None) -> Cookbook:
    manifest, doc = read_manifest(path)
    policy_file = path.parent / manifest.policy if manifest.policy else None
    used = policy if policy is not None else load_policy(policy_file)
    root = source_root(path, manifest, doc)
    ws = workspace_for(root, workspaces)

    def points(config: str) -> Published:
        # without a cache the cells are the diff's alone: it reads their points, not what their pages show
        cookbook = load_configs(manifest, doc, ws, used, cache, {config}, summaries=cache is not None)
        return published_from_cookbook(cookbook, str(path), MANIFEST_KIND)
    configs = tuple(dict.fromkeys(source.key for spec in manifest.pages for source in spec.configs))
    return Cookbook(Source(str(path), MANIFEST_KIND, configs, points, rendered_here=True), root, policy_file, used)


def published_from_cookbook(cookbook: CookbookModel, file: str, kind: str) -> Published:
    """The points of a cookbook model, as `published_from_cookbook_json` reads its JSON dump (the
    blocks are taken as they are instead of through JSON; `tests/test_diff.py` pins the equality)."""
    points: list[PublishedPoint] = []
    variants: list[Variant] = []
    for page in cookbook.pages:
        for cell in page.cells:
            for point in cell.points:
                dep = point.deployment
                points.append(PublishedPoint(
                    config=cell.config_key, cell=cell.id, concs=tuple(point.concs), blocks=tuple(dep.blocks),
                    point_id=point.id, override=point.override, recipe=point.recipe,
                    image=cell.image or dep.image, commit=cell.provenance.commit))
            variants.extend(Variant(cell.config_key, cell.id, str(v.point), str(v.router), str(v.kv)) for v in cell.variants)
    return Published(file, kind, tuple(points), tuple(variants))


# --- JSON shapes ---------------------------------------------------------------------------------------

def published_from_json(data: Any, file: str) -> Published:
    if isinstance(data, dict) and isinstance(data.get("cells"), list) and any(isinstance(c, dict) and "routers" in c for c in data["cells"]):
        from ..agentx.module import check_module

        return published_from_module(check_module(data, file), file)
    if isinstance(data, dict) and isinstance(data.get("pages"), list):
        return published_from_cookbook_json(data, file, "cookbook JSON")
    items = data if isinstance(data, list) else data.get("points") if isinstance(data, dict) and "points" in data else [data]
    if not isinstance(items, list) or not all(isinstance(i, dict) and isinstance(i.get("blocks"), list) for i in items):
        raise CookbookError.at(file, 0, "", "unknown JSON: expected an AgentX module, a cookbook JSON (pages) or render --format json output (blocks)")
    return Published(file, "render JSON", tuple(_render_point(i, n, file) for n, i in enumerate(items)))


def _render_point(doc: Json, n: int, file: str) -> PublishedPoint:
    where = f"[{n}]"
    config = doc.get("config")
    if not isinstance(config, str):
        raise CookbookError.at(file, 0, f"{where}.config", "every point needs its config key")
    selector = str(doc.get("recipe") or "").partition(":")[2] or None
    return PublishedPoint(config=config, cell=config, concs=tuple(int(c) for c in doc.get("concurrencies") or ()),
                          blocks=blocks_from_json(doc["blocks"], file, f"{where}.blocks"), point_id=doc.get("point"),
                          override=selector, image=doc.get("image"))


def published_from_cookbook_json(data: Json, file: str, kind: str) -> Published:
    """Cookbook data: the site's `cookbook.json` (points carry `blocks`, `concurrencies`, `derived_variants`)
    or the cookbook model as JSON (points carry `deployment.blocks`, `concs`, cells `variants`)."""
    points: list[PublishedPoint] = []
    variants: list[Variant] = []
    for p, page in enumerate(data.get("pages") or []):
        for c, cell in enumerate(page.get("cells") or []):
            where = f"pages[{p}].cells[{c}]"
            points.extend(_cell_points(cell, file, where))
            for v in cell.get("variants") or cell.get("derived_variants") or []:
                variants.append(Variant(cell["config_key"], cell["id"], str(v.get("point") or v.get("from_point")),
                                        str(v.get("router")), str(v.get("kv"))))
    refused = tuple((str(r.get("config")), r.get("point") if isinstance(r.get("point"), str) else None, str(r.get("reason")))
                    for r in data.get("refused") or [] if isinstance(r, dict))
    return Published(file, kind, tuple(points), tuple(variants), refused=refused)


def _cell_points(cell: Json, file: str, where: str) -> list[PublishedPoint]:
    if not isinstance(cell.get("config_key"), str) or not isinstance(cell.get("id"), str):
        raise CookbookError.at(file, 0, where, "a cell needs `id` and `config_key`")
    out = []
    for i, point in enumerate(cell.get("points") or []):
        dep = point.get("deployment") or point
        concs = point.get("concs") if "concs" in point else point.get("concurrencies")
        out.append(PublishedPoint(
            config=cell["config_key"], cell=cell["id"], concs=tuple(int(c) for c in concs or ()),
            blocks=blocks_from_json(dep.get("blocks") or [], file, f"{where}.points[{i}].blocks"),
            point_id=point.get("id"), override=point.get("override"), recipe=point.get("recipe"),
            image=cell.get("image") or dep.get("image"), commit=(cell.get("provenance") or {}).get("commit"),
            title=cell.get("label") if isinstance(cell.get("label"), str) else None))
    return out


def blocks_from_json(items: list[Any], file: str, where: str) -> tuple[Block, ...]:
    out = []
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            raise CookbookError.at(file, 0, f"{where}[{i}]", "a block must be an object")
        fields = {k: v for k, v in item.items() if k in _BLOCK_KEYS}
        fields.setdefault("title", str(item.get("kind", "")))
        try:
            out.append(Block.model_validate(fields))
        except ValueError as exc:
            raise CookbookError.at(file, 0, f"{where}[{i}]", f"bad block: {str(exc).splitlines()[0]}") from None
    return tuple(out)


# --- AgentX modules ------------------------------------------------------------------------------------

def published_from_module(module: Json, file: str) -> Published:
    """Measured points (submitted router, the point's measured KV tier) and every derived variant."""
    from ..agentx.decode import Decoder

    dec = Decoder(module, file)
    points: list[PublishedPoint] = []
    variants: list[Variant] = []
    for ci, cell in enumerate(module["cells"]):
        with dec.guard(f"cells[{ci}]"):
            points += _module_cell(dec, ci, cell, variants)
    return Published(file, "AgentX module", tuple(points), tuple(variants))


def _module_cell(dec: "Decoder", ci: int, cell: Json, variants: list[Variant]) -> list[PublishedPoint]:
    """The measured points of one cell; its derived variants go to `variants`."""
    from ..agentx.decode import kv_tiers, point_kv, routers_of, status_of

    _check_texts(dec, f"cells[{ci}]", cell, required=("configKey", "submitted"), optional=("image", "ckpt"))
    points: list[PublishedPoint] = []
    for pi, point in enumerate(cell.get("points") or []):
        _check_texts(dec, f"cells[{ci}].points[{pi}]", point, required=(), optional=("override", "recipe"))
        label = f"c{point['concs'][0]}"
        for router in routers_of(cell):
            for kv in kv_tiers(cell, point):
                if status_of(cell, point, router, kv) == "derived":
                    variants.append(Variant(cell["configKey"], cell["id"], label, router, kv))
        blocks = dec.decode_point(ci, pi, cell["submitted"], None)
        commit, recipe = _provenance(dec, f"cells[{ci}].points[{pi}]", cell.get("prov") or {}, point)
        points.append(PublishedPoint(
            config=cell["configKey"], cell=cell["id"], concs=tuple(point.get("concs") or ()), blocks=tuple(blocks),
            override=point.get("override"), recipe=recipe,
            image=cell.get("image"), router=cell["submitted"], kv=point_kv(point),
            item=point.get("item"), gpus=cell.get("gpus"), title=cell.get("label"),
            install=tuple(cell["routers"]["dynamo"].get("install") or ()) if cell["submitted"] == "dynamo" and "dynamo" in cell["routers"] else None,
            commit=commit, hardware=cell.get("hw") if isinstance(cell.get("hw"), str) else None))
    return points


_BLOB_URL = re.compile(r"https://github\.com/[^/]+/[^/]+/blob/(?P<sha>[0-9a-f]{7,40})/(?P<path>[^?#]+)")


def _provenance(dec: "Decoder", where: str, prov: Json, point: Json) -> tuple[str | None, str | None]:
    """The commit and recipe a point cites: the cell's `prov` (v2), else the point's own `sha` and
    `recipeUrl` (v1: a GitHub blob URL at that commit); a `recipe` on the point names its own file."""
    commit, recipe = prov.get("sha") or point.get("sha"), point.get("recipe") or prov.get("recipe")
    url = point.get("recipeUrl")
    if url is not None:
        found = _BLOB_URL.fullmatch(url) if isinstance(url, str) else None
        if found is None:
            raise dec.fail(f"{where}.recipeUrl", f"expected a GitHub blob URL (https://github.com/OWNER/REPO/blob/SHA/PATH), received {url!r}")
        if commit and not (commit.startswith(found["sha"]) or found["sha"].startswith(commit)):
            raise dec.fail(f"{where}.recipeUrl", f"names commit {found['sha']} but the point cites {commit}")
        commit, recipe = commit or found["sha"], recipe or found["path"]
    return (str(commit) if commit else None), recipe


def _check_texts(dec: "Decoder", where: str, item: Json, required: tuple[str, ...], optional: tuple[str, ...]) -> None:
    """The fields a published point keeps as text (config key, router, image, model, recipe)."""
    for key in (*required, *optional):
        value = item.get(key)
        if (value is None and key in required) or (value is not None and not isinstance(value, str)):
            raise dec.fail(f"{where}.{key}", f"must be a string (received {value!r})")


# --- a built site -----------------------------------------------------------------------------------

def read_site(site: Path) -> Published:
    """The site's `cookbook.json` for pairing and topology, with each block's command as its HTML shows it;
    and a mismatch wherever another copyable form of a point (its "Copy all" script, its `launch-*.sh`,
    its `cookbook.json` blocks) says other commands than its page."""
    from .site import page_codes, read_site_blocks

    found = sorted(site.rglob("cookbook.json"), key=lambda p: (len(p.parts), str(p)))
    if not found:
        raise CookbookError.at(str(site), 0, "", "no cookbook.json in the site: the site build exports it next to the pages")
    data = _json(_text(found[0]), str(found[0]))
    base = published_from_json(data, str(found[0]))
    html = {p: _text(p) for p in sorted(site.rglob("*.html"))}
    codes, by_id = page_codes(html)
    points, notes = read_site_blocks(base.points, codes)
    findings = _copy_forms(data, found[0].parent, points, base.points, by_id) if isinstance(data, dict) else []
    return Published(str(site), "site", points, base.variants, notes, tuple(findings), base.refused)


def _copy_forms(data: Json, root: Path, shown: tuple[PublishedPoint, ...], listed: tuple[PublishedPoint, ...],
                by_id: dict[str, str]) -> list[Finding]:
    """Each run of cookbook.json that names its launch script (`anchor`, `script`): its Copy-all script, the
    script file and (for a measured point) its cookbook.json blocks, each against the commands its page shows."""
    from .site import copy_findings, script_blocks

    pages = {(p.cell, p.point_id): p for p in shown}
    own = {(p.cell, p.point_id): p for p in listed}
    out: list[Finding] = []
    for page in data.get("pages") or []:
        for cell in page.get("cells") or []:
            runs = [(r, str(r.get("id")), True) for r in cell.get("points") or []]
            runs += [(v, f"derived {v.get('router')}/{v.get('kv')} of {v.get('from_point')}", False) for v in cell.get("derived_variants") or []]
            for run, point, measured in runs:     # a derived variant's page shows no Copy-all block, only its script
                if not isinstance(run.get("anchor"), str) or not isinstance(run.get("script"), str):
                    continue
                shown_point = pages.get((cell.get("id"), point))
                blocks = shown_point.blocks if shown_point else blocks_from_json(run.get("blocks") or [], "cookbook.json", point)
                config = str(cell.get("config_key"))
                copy_all = by_id.get(f"{run['anchor']}-all")
                if measured or copy_all is not None:
                    out += copy_findings(config, point, blocks, f"Copy all of {run['anchor']}", None if copy_all is None else script_blocks(copy_all))
                script = _site_file(root, run["script"])
                out += copy_findings(config, point, blocks, run["script"], None if script is None else script_blocks(script))
                if shown_point is not None and own.get((cell.get("id"), point)) is not shown_point:
                    listed_blocks = own[(cell.get("id"), point)].blocks
                    out += copy_findings(config, point, blocks, "cookbook.json", {i: _block_fields(b) for i, b in enumerate(listed_blocks)})
    return out


def _site_file(root: Path, name: str) -> str | None:
    """A file of the site named by cookbook.json (None when absent); a name that leaves the site is refused."""
    path = (root / name).resolve()
    if root.resolve() not in path.parents:
        raise CookbookError.at(str(root / "cookbook.json"), 0, "script", f"names {name!r}, outside the site")
    return _text(path) if path.is_file() else None


def _block_fields(block: Block) -> dict[str, object]:
    return {"cmd": block.cmd, "args": block.args, "env": block.env, "preamble": block.preamble, "files": block.files}


# --- logs ----------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class RunLogs:
    server_args: tuple[tuple[str, int, ServerArgsDict], ...]
    configs: tuple[tuple[str, dict[str, RoleSettings]], ...]


def read_logs(directory: Path) -> RunLogs:
    from .logs import read_server_args_log_file, read_srtslurm_config_file

    if not directory.is_dir():
        raise CookbookError.at(str(directory), 0, "--logs", "not a directory")
    lines: list[tuple[str, int, ServerArgsDict]] = []
    configs: list[tuple[str, dict[str, RoleSettings]]] = []
    for path in sorted(p for p in directory.rglob("*") if p.is_file()):
        shown = str(path.relative_to(directory))
        if path.suffix in (".yaml", ".yml") and path.name.startswith("config"):
            configs.append((shown, read_srtslurm_config_file(path, shown)))
        elif path.suffix not in (".yaml", ".yml", ".json") and _mentions_server_args(path):
            lines.extend((shown, n, args) for n, args in read_server_args_log_file(path, shown))
    if not lines and not configs:
        raise CookbookError.at(str(directory), 0, "--logs", "no `server_args=ServerArgs(...)` line and no srt-slurm config*.yaml under it")
    return RunLogs(tuple(lines), tuple(configs))


def _mentions_server_args(path: Path, marker: bytes = b"ServerArgs(") -> bool:
    """Whether the file holds the marker, read in 1 MiB chunks that overlap by the marker's length."""
    tail = b""
    try:
        with path.open("rb") as handle:
            for chunk in iter(lambda: handle.read(1 << 20), b""):
                if marker in tail + chunk:
                    return True
                tail = chunk[-len(marker):]
    except OSError as exc:
        raise CookbookError.at(str(path), 0, "", f"cannot read: {exc.strerror or exc}") from None
    return False
