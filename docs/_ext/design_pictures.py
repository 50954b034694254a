"""The two pictures of docs/how_it_works.rst, drawn by the docs build (docs/conf.py's
``setup`` calls :func:`write_pictures` when the builder starts).

This module owns:

* ``GROUPS``, the one table of the package's layer groups, bottom (the kernel) to top (the
  package face), each matched by path patterns relative to the package folder, so a module
  that moves into ``ndgrad/numpy/`` or ``ndgrad/scipy/`` lands in its box with no edit here;
* the walk (:func:`package_imports`): every module of the package and the modules of the
  package it imports (module-level, function-local and ``importlib`` with a constant name,
  ``if TYPE_CHECKING`` blocks left out), read with :mod:`ast` as tests/core/test_layers.py
  reads them (no module of the package is imported);
* :func:`assign` (each module's group), :func:`group_edges` (imports between groups, counted
  as importing module -> imported module pairs) and :func:`upward` (those pointing up the
  stack: there should be none);
* the drawings, with matplotlib's object API (no pyplot, no backend state): the layers
  (:func:`draw_layers`, computed from the walk) and the two level patterns
  (:func:`draw_levels`, a schematic), both as SVG with their text kept as text.

tests/test_docs_pictures.py imports this file by path and checks the table, the edges and
the drawings.
"""

from __future__ import annotations

import ast
import importlib.util
import re
import textwrap
from pathlib import Path

# -- the one table ----------------------------------------------------------------------------
# (group name, what it is, path patterns relative to the package folder), bottom to top: a
# group may import only the groups before it. ``*`` matches within one folder, ``**`` any
# depth. A module belongs to the group of its most specific matching pattern (the one with the
# most literal characters): ``core/data_level.py`` is a level base although ``core/*.py``
# matches it too. A tie, or no match, is an error that the test reports.
GROUPS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("kernel", "core: state, Tensor, graph, apply, engine",
     ("core/*.py",)),
    ("ops", "core/ops: the registry and every op",
     ("core/ops/**",)),
    ("level bases", "the two level patterns' bases",
     ("core/data_level.py", "core/wrapper_level.py")),
    # Below the transforms: NumPy's namespaces are the ops re-exported, and a transform may
    # use one (functional/custom.py runs ndgrad.linalg). _linalg_scipy is ndgrad.linalg's
    # part from scipy.linalg.
    ("NumPy mirror", "NumPy's namespaces and protocols",
     ("numpy/**", "numpy_protocols.py", "array_api.py", "without_derivative.py",
      "_index_tricks.py", "fft.py", "linalg.py", "_linalg_scipy.py")),
    ("forward_ad", "dual levels and tangents",
     ("forward_ad/**",)),
    ("functional", "the transforms: grad, vmap, jet, sparsity ...",
     ("functional/**",)),
    ("checks", "gradcheck and the test strategies",
     ("checks/**",)),
    ("facades", "torch's names: autograd, utils, func, cuda",
     ("autograd/**", "utils/**", "func.py", "cuda.py")),
    ("SciPy mirror", "SciPy's namespaces",
     ("scipy/**", "special.py", "stats.py", "integrate.py", "interpolate.py", "ndimage.py",
      "optimize.py", "signal/**", "sparse/**")),
    ("face", "the package: import ndgrad",
     ("__init__.py", "_stubs.py")),
)
ORDER = [name for name, _, _ in GROUPS]


def _pattern_regex(pattern: str) -> re.Pattern[str]:
    out, i = [], 0
    while i < len(pattern):
        if pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return re.compile("".join(out) + r"\Z")


def _specificity(pattern: str) -> int:
    return len(pattern.replace("*", ""))


def groups_of(rel: str, table=GROUPS) -> list[str]:
    """The groups of a module at ``rel`` (a path relative to the package folder, with ``/``):
    those whose most specific matching pattern is the most specific of all; one, for a
    module the table places."""
    best: dict[str, int] = {}
    for name, _, patterns in table:
        for p in patterns:
            if _pattern_regex(p).match(rel):
                best[name] = max(best.get(name, -1), _specificity(p))
    top = max(best.values(), default=None)
    return [name for name, s in best.items() if s == top]


# -- the walk ---------------------------------------------------------------------------------
def package_root() -> Path:
    """The folder of the ``ndgrad`` that Python finds (the docs build puts the working tree
    first on its path), found without importing it."""
    spec = importlib.util.find_spec("ndgrad")
    return Path(next(iter(spec.submodule_search_locations)))


def _module_name(path, root):
    rel = path.relative_to(root.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _absolute(name, level, package):
    """The absolute module a relative ``from`` (or ``importlib``) names from ``package``."""
    if not level:
        return name or ""
    base = package.split(".")
    base = base[:len(base) - level + 1]
    return ".".join(base + ([name] if name else []))


def _is_type_checking(test):
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


class Imports:
    """The imports of every module under ``root`` (a package folder) of its own package
    (``paths``: {module: file}; ``imports``: {module: the modules it imports}), as the
    pictures and tests/core/test_layers.py read them:
    ``edges`` {module: {imported module: [(file:line, kind)]}}, kind ``module`` (run when the
    module is imported), ``local`` (inside a function) or ``importlib`` (``import_module`` /
    ``__import__`` of a constant name); ``face``: the file:line of each import of the package
    itself (``import ndgrad``, ``import ndgrad.x`` without ``as``, ``from ndgrad import f`` or
    ``from .. import f`` where f is not a module); ``dynamic``: {(module, function): file:line}
    of each importlib call whose name is not a constant. Imports under ``if TYPE_CHECKING`` do
    not run and are left out."""

    def __init__(self, root: Path):
        self.root = root
        self.top = root.name
        self.paths = {_module_name(p, root): p for p in sorted(root.rglob("*.py"))}
        self.edges = {m: {} for m in self.paths}
        self.face = []
        self.dynamic = {}
        for module, path in self.paths.items():
            package = module if path.name == "__init__.py" else module.rpartition(".")[0]
            self._walk(ast.parse(path.read_text(encoding="utf-8")), module, package, path, (),
                       False)
        # {module: set of modules of the package it imports}, through imports of every kind
        self.imports: dict[str, set[str]] = {m: set(deps) for m, deps in self.edges.items()}

    def _add(self, module, target, where, kind):
        while target not in self.paths and "." in target:
            target = target.rpartition(".")[0]  # ``import a.b.f``: f is a name in a.b
        if target in self.paths and target != module:
            self.edges[module].setdefault(target, []).append((where, kind))

    def _walk(self, node, module, package, path, scope, local):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child.test):
                children = child.orelse
            else:
                children = [child]
            for c in children:
                self._visit(c, module, package, path, scope, local)

    def _visit(self, node, module, package, path, scope, local):
        where = f"{path.relative_to(self.root.parent)}:{getattr(node, 'lineno', '?')}"
        kind = "local" if local else "module"
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == self.top:
                    if alias.name == self.top or alias.asname is None:
                        self.face.append(where)
                    self._add(module, alias.name, where, kind)
        elif isinstance(node, ast.ImportFrom):
            target = _absolute(node.module, node.level, package)
            if target.split(".")[0] == self.top:
                for alias in node.names:
                    sub = f"{target}.{alias.name}"
                    if sub in self.paths:
                        self._add(module, sub, where, kind)
                    else:
                        if target == self.top:
                            self.face.append(where)
                        self._add(module, target, where, kind)
        elif isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
            if name in ("import_module", "__import__"):
                arg = node.args[0] if node.args else None
                if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                    level = len(arg.value) - len(arg.value.lstrip("."))
                    target = _absolute(arg.value.lstrip(".") or None, level, package)
                    if target.split(".")[0] == self.top:
                        if target == self.top:
                            self.face.append(where)
                        self._add(module, target, where, "importlib")
                else:
                    self.dynamic[(module, ".".join(scope))] = where
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            scope = scope + (node.name,)
        local = local or isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
        self._walk(node, module, package, path, scope, local)

    def rel(self, module: str) -> str:
        """The module's file relative to the package folder, with ``/``."""
        return self.paths[module].relative_to(self.root).as_posix()

    def graph(self, kinds=("module", "local", "importlib"), allowed=()):
        """{module: imported modules}, through imports of ``kinds``, without the ``allowed``
        edges."""
        return {m: {t for t, sites in deps.items() if (m, t) not in allowed
                    and any(k in kinds for _, k in sites)}
                for m, deps in self.edges.items()}


def package_imports(root: Path | None = None) -> Imports:
    return Imports(root or package_root())


def assign(walk: Imports, table=GROUPS) -> dict[str, list[str]]:
    """{module: its groups} for every module of the walk (one group each, where the table
    places every module)."""
    return {m: groups_of(walk.rel(m), table) for m in walk.paths}


def members(walk: Imports, table=GROUPS) -> dict[str, list[str]]:
    """{group: its modules, a module after the modules of its group that it imports}; the
    modules the table does not place (or places twice) under ``"?"``."""
    groups = assign(walk, table)
    out: dict[str, list[str]] = {name: [] for name, _, _ in table}
    for m, gs in groups.items():
        out.setdefault(gs[0] if len(gs) == 1 else "?", []).append(m)
    for mods in out.values():
        depth = _depths({m: walk.imports[m] & set(mods) for m in mods})
        mods.sort(key=lambda m: (depth[m], m))
    return out


def _depths(graph: dict[str, set[str]]) -> dict[str, int]:
    """The length of the longest import chain below each module (0: imports none of them); a
    cycle is cut where it closes."""
    depth: dict[str, int] = {}

    def visit(m, seen):
        if m not in depth:
            depth[m] = 0
            deps = [visit(d, seen | {m}) + 1 for d in graph[m] if d not in seen]
            depth[m] = max(deps, default=0)
        return depth[m]

    for m in sorted(graph):
        visit(m, frozenset())
    return depth


def group_edges(walk: Imports, table=GROUPS) -> dict[tuple[str, str], int]:
    """{(importing group, imported group): the number of (module, imported module) pairs},
    between different groups of modules the table places."""
    groups = assign(walk, table)
    edges: dict[tuple[str, str], int] = {}
    for m, targets in walk.imports.items():
        for t in targets:
            if len(groups[m]) == 1 and len(groups[t]) == 1 and groups[m] != groups[t]:
                key = (groups[m][0], groups[t][0])
                edges[key] = edges.get(key, 0) + 1
    return edges


def upward(edges: dict[tuple[str, str], int], table=GROUPS) -> list[tuple[str, str]]:
    """The edges that point up the table's order (a group importing one above it)."""
    rank = {name: i for i, (name, _, _) in enumerate(table)}
    return sorted((a, b) for a, b in edges if rank[b] > rank[a])


# -- drawing ------------------------------------------------------------------------------------
FONT = 8.0              # points
LINE = FONT * 1.45 / 72  # inches per text line
BOX_W = 3.75            # inches: the boxes' width
WRAP = 58               # characters per line of a box's module list
LANE0, LANE_DX = 0.24, 0.235  # the first import lane's distance from the boxes, between lanes
EDGE, FILL, UP = "#3b5b8c", "#eef3fb", "#d62728"
LANE_COLORS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
               "#bcbd22", "#17becf", "#393b79", "#637939")
_RC = {"svg.fonttype": "none", "svg.hashsalt": "ndgrad-docs", "font.family": "DejaVu Sans",
       "font.size": FONT}


def _short_names(walk: Imports, modules: list[str]) -> list[str]:
    """Each module's file relative to the folder its group's files share, without ``.py``."""
    rels = [walk.rel(m) for m in modules]
    folders = [r.rpartition("/")[0] for r in rels]
    common = folders[0] if folders and len(set(folders)) == 1 else ""
    if not common and folders:
        parts = [f.split("/") for f in folders]
        common = "/".join(p for p, *rest in zip(*parts) if all(r == p for r in rest))
        common = common if all(f.startswith(common) for f in folders) else ""
    cut = len(common) + 1 if common else 0
    return [r[cut:].removesuffix(".py") for r in rels]


def _save(fig, path: Path) -> None:
    """Write ``fig`` as SVG to ``path``, only where the text changes (an unchanged picture
    leaves Sphinx nothing to copy again)."""
    import io

    buffer = io.StringIO()
    fig.savefig(buffer, format="svg", metadata={"Date": None})
    text = buffer.getvalue()
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists() or path.read_text(encoding="utf-8") != text:
        path.write_text(text, encoding="utf-8")


def draw_layers(path: Path, root: Path | None = None, table=GROUPS) -> dict:
    """Draw the package's layer groups as stacked boxes (the table's first at the bottom),
    each listing its modules, and the imports between groups as arrows, each with its count
    of (module, imported module) pairs; an import that points up is drawn in red. Saved as
    SVG at ``path``. Returns what it drew: ``members``, ``edges``, ``upward``."""
    import matplotlib
    from matplotlib.figure import Figure
    from matplotlib.patches import FancyArrowPatch, FancyBboxPatch

    walk = package_imports(root)
    groups = members(walk, table)
    edges = group_edges(walk, table)
    up = upward(edges, table)
    names = [name for name, _, _ in table] + (["?"] if groups.get("?") else [])
    about = {name: what for name, what, _ in table} | {
        "?": "modules the table places in no group, or in two"}
    rank = {name: i for i, name in enumerate(names)}
    incoming = {name: sorted({a for a, b in edges if b == name}, key=rank.get)
                for name in names}

    lines = {}
    for name in names:
        mods = groups.get(name, [])
        text = ", ".join(_short_names(walk, mods)) if mods else "(none)"
        count = f"{len(mods)} module{'' if len(mods) == 1 else 's'}"
        lines[name] = textwrap.wrap(f"{count}: {text}", WRAP)
    gap, pad = 0.22, 0.07
    heights = {name: max(2 * pad + (1 + len(lines[name])) * LINE,
                         0.2 + (len(incoming[name]) + 1) * 0.12) for name in names}
    sources = [name for name in names if any(a == name for a, _ in edges)]
    lane = {name: BOX_W + LANE0 + LANE_DX * i for i, name in enumerate(sources)}
    width = BOX_W + LANE0 + LANE_DX * max(len(sources), 1) + 0.25
    foot = 0.6
    height = foot + sum(heights.values()) + gap * (len(names) - 1) + 0.1

    with matplotlib.rc_context(_RC):
        fig = Figure(figsize=(width, height))
        ax = fig.add_axes((0, 0, 1, 1))
        ax.set_xlim(0, width)
        ax.set_ylim(0, height)
        ax.axis("off")
        bottom, y = {}, foot
        for name in names:
            bottom[name] = y
            h = heights[name]
            bad = name == "?"
            ax.add_patch(FancyBboxPatch((0.1, y), BOX_W - 0.1, h,
                                        boxstyle="round,pad=0,rounding_size=0.05",
                                        fc="#fde0dd" if bad else FILL,
                                        ec=UP if bad else EDGE, lw=1))
            top = y + h - pad
            ax.text(0.2, top, name, va="top", ha="left", weight="bold",
                    color=UP if bad else EDGE)
            ax.text(0.2 + 0.075 * len(name) + 0.15, top, about[name], va="top", ha="left",
                    style="italic", color="#333333")
            ax.text(0.2, top - LINE, "\n".join(lines[name]), va="top", ha="left",
                    linespacing=1.45, color="#111111")
            y += h + gap
        for src in sources:
            color = LANE_COLORS[rank[src] % len(LANE_COLORS)]
            x = lane[src]
            ys = bottom[src] + heights[src] - 0.1  # the stub leaves beside the title
            ax.plot([BOX_W, x], [ys, ys], color=color, lw=1.2, solid_capstyle="butt")
            ax.plot([x], [ys], marker="o", ms=3, color=color)
            for (a, b), count in sorted(edges.items(), key=lambda kv: rank[kv[0][1]]):
                if a != src:
                    continue
                into = incoming[b]
                # into the box below its own stub, the higher importers higher
                yt = bottom[b] + (heights[b] - 0.2) * (into.index(a) + 1) / (len(into) + 1)
                c = UP if (a, b) in up else color
                ax.plot([x, x], [ys, yt], color=c, lw=1.2 if c == UP else 1,
                        zorder=3 if c == UP else 2)
                ax.add_patch(FancyArrowPatch((x, yt), (BOX_W, yt), arrowstyle="-|>",
                                             mutation_scale=7, color=c, lw=1,
                                             shrinkA=0, shrinkB=0, zorder=3))
                ax.text(x - 0.04, yt + 0.015, str(count), ha="right", va="bottom",
                        fontsize=FONT - 1.5, color=c, zorder=4)
        total = sum(len(v) for v in groups.values())
        note = (f"{total} modules in {len(table)} groups. An arrow goes from a group to a "
                f"group it imports,\nwith its count of (module, imported module) pairs: "
                f"{sum(edges.values())} imports between groups,\n"
                f"{sum(edges[e] for e in up)} of them pointing up (drawn red)")
        ax.text(0.1, foot / 2, note, ha="left", va="center", color=UP if up else "#333333",
                linespacing=1.45)
        _save(fig, path)
    return {"members": groups, "edges": edges, "upward": up}


def _box(ax, x, y, w, h, text, fc=FILL, ec=EDGE, **kw):
    """A rounded box with its lower left corner at (x, y) and ``text`` centred in it."""
    from matplotlib.patches import FancyBboxPatch

    ax.add_patch(FancyBboxPatch((x, y), w, h, boxstyle="round,pad=0,rounding_size=0.06",
                                fc=fc, ec=ec, lw=1))
    ax.text(x + w / 2, y + h / 2, text, ha="center", va="center", linespacing=1.35, **kw)


def _arrow(ax, start, end, color=EDGE, style="-|>", **kw):
    from matplotlib.patches import FancyArrowPatch

    ax.add_patch(FancyArrowPatch(start, end, arrowstyle=style, mutation_scale=9, color=color,
                                 lw=1, shrinkA=0, shrinkB=0, **kw))


LEVEL_KINDS = ("wrapper level", "data level")


def draw_levels(path: Path) -> None:
    """Draw the two level patterns (a schematic, not computed): one op call ``apply(op, x)``
    handed to the deepest visible level among its inputs; on the left a wrapper level (its
    value a WrapperTensor holding the value one level down and its level: unwrap, run below,
    wrap), on the right a data level (a plain Tensor with the level's data in
    ``_meta.level_data``: read the data, run below, propagate, attach); both run the op on
    the level below. Saved as SVG at ``path``."""
    import matplotlib
    from matplotlib.figure import Figure
    from matplotlib.patches import FancyBboxPatch

    width, height = 6.4, 5.6
    colw, left, right, pad = 2.95, 0.12, 3.33, 0.1
    step = "#ffffff"
    with matplotlib.rc_context(_RC):
        fig = Figure(figsize=(width, height))
        ax = fig.add_axes((0, 0, 1, 1))
        ax.set_xlim(0, width)
        ax.set_ylim(0, height)
        ax.axis("off")
        mid = width / 2
        _box(ax, mid - 1.85, 4.98, 3.7, 0.56,
             "apply(op, x)  (core/dispatch.py)\nhands the op to the deepest visible level "
             "among its inputs\n(core/levels.py, Note [Levels])", fc="#fff2cc", ec="#b58900")
        for x0 in (left, right):
            _arrow(ax, (mid, 4.98), (x0 + colw / 2, 4.55))
        heads = ((left, "wrapper level (core/wrapper_level.py)", "func.grad, vmap"),
                 (right, "data level (core/data_level.py)", "jet, Forward Laplacian, sparsity"))
        for x0, title, what in heads:
            ax.text(x0 + colw / 2, 4.44, title, ha="center", va="center", weight="bold",
                    color=EDGE, fontsize=FONT + 1)
            ax.text(x0 + colw / 2, 4.25, what, ha="center", va="center", color="#333333")
        # the value x of each pattern
        values = ((left, "x: a GradTensor or BatchedTensor\n(a WrapperTensor)",
                   ((1.75, "_value\nthe value one level down"), (0.88, "_level\nits level"))),
                  (right, "x: a plain Tensor\n",
                   ((0.5, "_data"), (2.15, "_meta.level_data[level]\n"
                                          "a series, a Laplacian, dependencies"))))
        for x0, title, fields in values:
            ax.add_patch(FancyBboxPatch((x0, 3.12), colw, 1.0, fc=FILL, ec=EDGE, lw=1,
                                        boxstyle="round,pad=0,rounding_size=0.06"))
            ax.text(x0 + pad, 4.05, title, va="top", ha="left", linespacing=1.35)
            x = x0 + pad
            for w, text in fields:
                _box(ax, x, 3.2, w, 0.4, text, fc=step)
                x += w + 0.12
        # the steps of each pattern's process
        below = "run the op one level down\n(apply again, this level hidden)"
        steps = {left: ("unwrap: each input's _value", below,
                        "wrap each output as a value\nof the level (func.grad: record a node)"),
                 right: ("read each input's level data", below,
                         "propagate: the level's rule\ngives each output's data",
                         "attach the data to the outputs")}
        below_y, inset = 0.12, 0.3
        for x0, texts in steps.items():
            y = 2.85
            xc = x0 + colw / 2
            _arrow(ax, (xc, 3.12), (xc, y))
            ax.text(xc + 0.07, 2.99, "its interpreter's process" if x0 == left else
                    "DataInterpreter.process", ha="left", va="center", style="italic",
                    color="#333333", fontsize=FONT - 0.5)
            for i, text in enumerate(texts):
                h = 0.42 if "\n" in text else 0.3
                _box(ax, x0 + inset, y - h, colw - 2 * inset, h, f"{i + 1}. {text}", fc=step)
                if text == below:
                    # the call down, with its own level hidden, and its result back
                    outer = x0 + inset if x0 == left else x0 + colw - inset
                    side = x0 + pad if x0 == left else x0 + colw - pad
                    ax.plot([outer, side, side], [y - h / 2, y - h / 2, below_y + 0.5],
                            color=EDGE, lw=1)
                    _arrow(ax, (side, below_y + 0.51), (side, below_y + 0.45))
                y -= h
                if i < len(texts) - 1:
                    _arrow(ax, (xc, y), (xc, y - 0.16))
                    y -= 0.16
        _box(ax, left, below_y, right + colw - left, 0.45,
             "the level below: the next visible level's process, or, with none, plain apply\n"
             "(the op's forward on the arrays, recorded on the tape where grad is needed)",
             fc="#e8f4e8", ec="#2e7d32")
        _save(fig, path)


PICTURES = ("layers.svg", "levels.svg")


def write_pictures(folder: Path, root: Path | None = None) -> list[Path]:
    """Draw both pictures into ``folder`` (each rewritten only where it changes): the
    package's layers (``layers.svg``) and the two level patterns (``levels.svg``)."""
    layers, levels = (folder / name for name in PICTURES)
    draw_layers(layers, root)
    draw_levels(levels)
    return [layers, levels]
