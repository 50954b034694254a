"""Pictures of the backward graph and reports of its memory, for ``ndgrad.autograd.graph``.

This module owns three functions and the two objects they return:

* :func:`to_dot`: the Graphviz DOT source of the backward graph behind some tensors, as a
  :class:`DotGraph` (its ``source``; shown as SVG in a notebook);
* :func:`render`: that picture drawn by Graphviz's ``dot`` program into an SVG, PNG or PDF
  file;
* :func:`memory_report`: how many bytes the graph keeps for backward, per node type and per
  node, as a :class:`MemoryReport` (a printable table, and its numbers as attributes).

All three read the graph the same way: from the roots' ``grad_fn`` (or a root leaf's
``AccumulateGrad`` node) along each node's ``edges``, iteratively and each node once
(:func:`_walk`; a chain of 100,000 operations is fine), and what each node saved through
``Node._items_saved()``. They change nothing in the graph.

Graphviz is an optional external program, never a Python dependency: :func:`to_dot` needs
nothing but ndgrad; drawing (:func:`render`, :meth:`DotGraph.render`, the notebook's SVG)
runs ``dot`` when it is on the ``PATH`` and otherwise says how to install it.
"""

from __future__ import annotations

import dataclasses
import inspect
import os
import shutil
import subprocess
from collections.abc import Mapping

import numpy as _np

from ..core.function import BackwardCFunction
from ..core.graph import AccumulateGrad, OpNode
from ..core.saved import FREED
from ..core.tensor import Tensor

__all__ = ["DotGraph", "MemoryReport", "to_dot", "render", "memory_report"]

FORMATS = ("svg", "png", "pdf")

_INSTALL = ("install Graphviz, which provides it: `apt install graphviz` (Debian, Ubuntu), "
            "`brew install graphviz` (macOS) or `conda install graphviz`; to_dot(...).source "
            "gives the DOT text without it")

# Fill colours of the boxes: the graph's nodes are white.
_LEAF_COLOR = "#cfe2f3"
_ROOT_COLOR = "#d9ead3"
_SAVED_COLOR = "#fff2cc"
_FREED_COLOR = "#eeeeee"


# ------------------------------------------------------------------ reading the graph
def _roots(roots):
    """``[(tensor, node), ...]`` for ``roots`` (a Tensor or a list or tuple of Tensors): the
    node is the tensor's ``grad_fn``, or the ``AccumulateGrad`` node of a leaf that requires
    grad. Each distinct tensor once."""
    if isinstance(roots, Tensor):
        tensors, single = [roots], True
    elif isinstance(roots, (list, tuple)):
        tensors, single = list(roots), False
        if not tensors:
            raise ValueError("roots is empty: pass a Tensor or a list of Tensors whose "
                             "backward graph to show")
    else:
        raise TypeError(f"roots must be a Tensor or a list or tuple of Tensors; got a "
                        f"{type(roots).__name__}")
    pairs = []
    seen = set()
    for i, t in enumerate(tensors):
        where = "the root" if single else f"roots[{i}]"
        if not isinstance(t, Tensor):
            raise TypeError(f"{where} is a {type(t).__name__}, not a Tensor: pass the Tensors "
                            "whose backward graph to show (e.g. the loss)")
        if id(t) in seen:
            continue
        seen.add(id(t))
        node = t.grad_fn
        if node is None:
            if not t.requires_grad:
                raise ValueError(
                    f"{where} (a tensor of shape {tuple(t.shape)}) has no graph: it does not "
                    "require grad (requires_grad=False) and has no grad_fn, so no operation "
                    "was recorded for it. Make the leaves it is computed from with "
                    "requires_grad=True (or call .requires_grad_() on them) and compute it "
                    "outside ndgrad.no_grad()")
            node = _leaf_node(t)
        pairs.append((t, node))
    return pairs


def _leaf_node(t):
    """The ``AccumulateGrad`` node of leaf ``t``: the one its graphs use if it has one, else a
    new one for the picture only (the leaf is not changed)."""
    m = t._meta
    ref = m.accumulator if m is not None else None
    node = ref() if ref is not None else None
    return AccumulateGrad(t) if node is None else node


def _walk(start):
    """Every node reachable from the nodes ``start``, each once, in breadth-first order, and
    one ``(i, j)`` per edge: ``nodes[i]`` (where an input's gradient goes) is an input of
    ``nodes[j]``. Iterative: the depth of the graph does not matter."""
    index = {}
    nodes = []
    for n in start:
        if id(n) not in index:
            index[id(n)] = len(nodes)
            nodes.append(n)
    edges = []
    k = 0
    while k < len(nodes):  # (nodes grows while it is read: a queue)
        for e in nodes[k].edges:
            if e is None:
                continue
            nxt = e[0]
            i = index.get(id(nxt))
            if i is None:
                i = index[id(nxt)] = len(nodes)
                nodes.append(nxt)
            edges.append((i, k))
        k += 1
    return nodes, edges


def _is_array(v):
    """A raw array (NumPy, CuPy): not a Tensor, not a NumPy scalar."""
    return hasattr(v, "nbytes") and hasattr(v, "shape") and hasattr(v, "dtype") and \
        not isinstance(v, _np.generic)


def _array_of(v):
    """The raw array under a Tensor (a transform's value: the plain value under it), or the
    raw array ``v`` itself; None for anything else."""
    for _ in range(64):
        if type(v) is Tensor:
            return v._data
        if not isinstance(v, Tensor):
            return v if _is_array(v) else None
        inner = v._saved_content()
        if inner is v:
            return None
        v = inner
    return None


def _arrays_in(value, where=""):
    """``(where, array)`` for each raw array ``value`` holds: itself (``where`` is ``""``),
    those in a tuple or list (several outputs, an index), with their position (``"[1]"``),
    or those an object a pack hook returned keeps alive, by its ``_kept_for_backward()``
    (``" (checkpoint input 0)"``)."""
    if isinstance(value, Tensor) or _is_array(value):
        a = _array_of(value)
        return [] if a is None else [(where, a)]
    if isinstance(value, (tuple, list)) and where.count("[") < 4:
        found = []
        for k, v in enumerate(value):
            found.extend(_arrays_in(v, f"{where}[{k}]"))
        return found
    kept = getattr(value, "_kept_for_backward", None)
    if kept is not None and where.count("(") < 4:
        # what a saved-tensor hook packed keeps alive, where it says so (a checkpoint's
        # handle: the inputs it runs the function on again)
        found = []
        for label, v in kept():
            found.extend(_arrays_in(v, f"{where} ({label})"))
        return found
    return []


def _key(a):
    """Identity of an array's memory: two arrays with the same key are the same bytes (the
    same array, or another array object over the same buffer with the same layout)."""
    for attr in ("__array_interface__", "__cuda_array_interface__"):  # (NumPy's, CuPy's)
        face = getattr(a, attr, None)
        if isinstance(face, Mapping) and "data" in face:
            strides = face.get("strides")
            return (face["data"][0], tuple(a.shape), None if strides is None else
                    tuple(strides), a.dtype)
    return id(a)


def _parts(node):
    """``(saved, attrs, freed)`` of a node: the ``(name, value)`` pairs it keeps for
    backward (its saved tensors, arrays and scalars, and the parameters that hold arrays,
    such as ``x[idx]``'s index), its other settings as ``(name, value)`` (``axis``,
    ``keepdims``; a custom Function's ``ctx`` attributes), and whether a backward without
    ``retain_graph`` freed its saved values."""
    items = node._items_saved()
    if isinstance(node, OpNode):
        n_params = len(node.params)
        saved = items[:len(items) - n_params]
        params = items[len(items) - n_params:] + _named_extras(node)
        freed = node.saved is FREED or node.saved_out is FREED
        attrs = []
        for name, v in params:
            (saved if _arrays_in(v) else attrs).append((name, v))
        return saved, attrs, freed
    if isinstance(node, BackwardCFunction):
        attrs = [(k, v) for k, v in getattr(node, "__dict__", {}).items()
                 if not k.startswith("_")]
        return items, attrs, bool(node._fn_freed)
    return items, [], False


_EXTRA_NAMES = {}


def _named_extras(node):
    """An op node's positional settings (``permute_dims``'s ``axes``) named after the op's
    parameters (``extra_0``, ... where the signature does not say)."""
    extra = node.extra
    if not extra:
        return []
    op = node.op
    key = (op, len(node.edges))
    names = _EXTRA_NAMES.get(key)
    if names is None:
        try:
            params = list(inspect.signature(op.forward).parameters.values())[1:]
        except (TypeError, ValueError):
            params = []
        positional = []
        for p in params:
            if p.kind is p.VAR_POSITIONAL:
                positional = []  # (the inputs are variadic: the settings have no position)
                break
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
                positional.append(p.name)
        names = _EXTRA_NAMES[key] = positional[len(node.edges):]
    return [(names[k] if k < len(names) else f"extra_{k}", v) for k, v in enumerate(extra)]


# ------------------------------------------------------------------ formatting
def _shape(shape):
    return str(tuple(int(s) for s in shape))


def _describe(a):
    """``(3, 4) float64`` for an array."""
    return f"{_shape(a.shape)} {a.dtype}"


def _nbytes(n):
    """``24 bytes``, or ``4000000 bytes (3.8 MiB)`` from 1 KiB on."""
    text = f"{n} bytes"
    if n >= 1024:
        text += f" ({_human(n)})"
    return text


def _human(n):
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{int(size)} B" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{n} B"  # (unreachable)


def _value_text(v, limit=40):
    """A short text for a setting or a saved scalar: its repr, arrays as ``<(3,) float64>``,
    cut at ``limit`` characters."""
    if isinstance(v, Tensor) or _is_array(v):
        a = _array_of(v)
        text = "<tensor>" if a is None else f"<{_describe(a)}>"
    elif isinstance(v, (tuple, list)):
        inner = ", ".join(_value_text(u, limit) for u in v)
        text = f"({inner},)" if isinstance(v, tuple) and len(v) == 1 else \
            (f"({inner})" if isinstance(v, tuple) else f"[{inner}]")
    else:
        text = repr(v)
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _q(text):
    """``text`` as a quoted DOT string (lines joined with DOT's centred line break)."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


# ------------------------------------------------------------------ to_dot
class DotGraph:
    """A picture of a backward graph: Graphviz DOT source, made by :func:`to_dot`.

    ``str(graph)`` and ``graph.source`` are the DOT text; in a Jupyter notebook the graph
    shows as SVG (``_repr_svg_``, drawn by Graphviz's ``dot`` program when it is installed;
    without it the notebook shows the text representation). :meth:`render` writes a file.

    Attributes
    ----------
    source : str
        The DOT source.
    node_count : int
        The number of nodes of the backward graph drawn (one box each; leaves included, root
        and saved-value boxes not).
    edge_count : int
        The number of edges between them (one per input that gets a gradient).

    Examples
    --------
    >>> import ndgrad
    >>> x = ndgrad.tensor([1.0, 2.0], requires_grad=True)
    >>> g = ndgrad.autograd.graph.to_dot(ndgrad.tanh(x).sum(), params={"x": x})
    >>> g
    <DotGraph: 3 nodes, 2 edges; str() gives the DOT source>
    """

    __slots__ = ("source", "node_count", "edge_count")

    def __init__(self, source, node_count, edge_count):
        self.source = source
        self.node_count = node_count
        self.edge_count = edge_count

    def __str__(self):
        return self.source

    def __repr__(self):
        return (f"<DotGraph: {self.node_count} nodes, {self.edge_count} edges; str() gives "
                "the DOT source>")

    def _repr_svg_(self):
        """The SVG a notebook shows; None (the notebook shows the repr) without Graphviz."""
        if shutil.which("dot") is None:
            return None
        return self.pipe("svg").decode("utf-8")

    def pipe(self, format="svg"):
        """The picture drawn by Graphviz's ``dot`` program, as bytes.

        Parameters
        ----------
        format : {"svg", "png", "pdf"}
            The output format.

        Returns
        -------
        bytes
            What ``dot -T<format>`` printed.

        Raises
        ------
        ValueError
            For a format not among ``"svg"``, ``"png"``, ``"pdf"``.
        RuntimeError
            When ``dot`` is not installed (the message says how to install it), or failed.
        """
        _check_format(format)
        exe = shutil.which("dot")
        if exe is None:
            raise RuntimeError(f"drawing the graph needs Graphviz's `dot` program, which was "
                               f"not found on the PATH: {_INSTALL}")
        proc = subprocess.run([exe, f"-T{format}"], input=self.source.encode("utf-8"),
                              capture_output=True, check=False)
        if proc.returncode != 0:
            raise RuntimeError(f"Graphviz's dot ({exe}) failed with exit status "
                               f"{proc.returncode}: "
                               f"{proc.stderr.decode('utf-8', 'replace').strip()}")
        return proc.stdout

    def render(self, path, format="svg"):
        """Draw the picture into a file with Graphviz's ``dot`` program.

        Parameters
        ----------
        path : str or os.PathLike
            The file to write; ``.<format>`` is appended when it does not end with it.
        format : {"svg", "png", "pdf"}
            The output format.

        Returns
        -------
        str
            The path written.

        Raises
        ------
        ValueError, RuntimeError
            As :meth:`pipe`, which draws the picture: for a format not among its three, or
            without a working ``dot``; nothing is written then.
        """
        _check_format(format)
        path = os.fspath(path)
        if not isinstance(path, str):
            path = os.fsdecode(path)
        if not path.lower().endswith("." + format):
            path += "." + format
        data = self.pipe(format)
        with open(path, "wb") as f:
            f.write(data)
        return path


def _check_format(format):
    if format not in FORMATS:
        raise ValueError(f"format must be one of {', '.join(repr(f) for f in FORMATS)}; "
                         f"got {format!r}")


def _param_names(params):
    """``{id(tensor): name}`` from ``params`` (a dict of name -> Tensor, or pairs)."""
    if params is None:
        return {}
    pairs = params.items() if isinstance(params, Mapping) else params
    names = {}
    try:
        pairs = list(pairs)
    except TypeError:
        raise TypeError(f"params must be a dict of name -> Tensor (e.g. "
                        f"{{'W': W, 'b': b}}); got a {type(params).__name__}") from None
    for item in pairs:
        if not (isinstance(item, tuple) and len(item) == 2):
            raise TypeError("params must be a dict of name -> Tensor (or (name, Tensor) "
                            f"pairs); got an item {_value_text(item)}")
        name, t = item
        if not isinstance(t, Tensor):
            raise TypeError(f"params[{name!r}] is a {type(t).__name__}, not a Tensor: params "
                            "names the leaf tensors of the graph")
        names.setdefault(id(t), str(name))
    return names


def to_dot(roots, params=None, show_saved=False, show_attrs=False):
    """The backward graph behind ``roots`` as Graphviz DOT source.

    The picture has one box per node of the graph, labelled with the node's name
    (``TanhBackward0``), and an arrow from each node to the node that uses its result (the
    direction of the forward computation: leaves at the top, outputs at the bottom). Leaves
    (their ``AccumulateGrad`` nodes, blue) are labelled with their name from ``params``, their
    shape and dtype; each root gets a green box with its shape and dtype, below its node.

    Parameters
    ----------
    roots : Tensor or list or tuple of Tensor
        The outputs whose graph to draw (e.g. the loss); each has a ``grad_fn`` or is a leaf
        that requires grad.
    params : dict of str to Tensor, optional
        Names for the leaves, matched by identity with each ``AccumulateGrad`` node's
        ``variable`` (for instance ``{"W": W, "b": b}``); a root that is in ``params`` is
        named too. Leaves not named show their shape and dtype only.
    show_saved : bool, default False
        Also draw what each node saved for backward: each saved array (a Tensor or raw
        array) once, in a yellow box with its shape, dtype and size in bytes (``nbytes``),
        with a dashed line to each node that saved it, labelled with the name it was saved
        under; a saved scalar as ``name = value`` in the node's box. A node whose saved values
        a backward without ``retain_graph=True`` freed says ``saved values freed`` (grey).
    show_attrs : bool, default False
        Also write each node's settings (non-array parameters such as ``axis`` or
        ``keepdims``; a custom Function's ``ctx`` attributes) as ``name = value`` in its box.

    Returns
    -------
    DotGraph
        ``str()`` of it (or ``.source``) is the DOT text; it shows as SVG in a notebook and
        writes files with ``.render(path, format=...)``.

    Raises
    ------
    TypeError
        If ``roots`` is not a Tensor or a list or tuple of Tensors, or ``params`` is not a
        dict of name to Tensor.
    ValueError
        If a root has no graph (``requires_grad=False``), or ``roots`` is empty.

    See Also
    --------
    render : draw the picture into a file.
    memory_report : what the graph keeps for backward, in bytes.

    Notes
    -----
    The graph is walked iteratively from the roots, each node once, so graphs of any depth
    work; building the text takes about a microsecond per node and edge, drawing it with
    Graphviz much longer for large graphs. Box ids are ``n<k>`` for the graph's nodes (in
    breadth-first order from the roots), ``out<k>`` for the roots, ``s<k>`` for saved arrays.

    Examples
    --------
    >>> import ndgrad
    >>> W = ndgrad.ones((3, 2), requires_grad=True)
    >>> x = ndgrad.ones(2)
    >>> loss = ndgrad.tanh(W @ x).sum()
    >>> dot = ndgrad.autograd.graph.to_dot(loss, params={"W": W})
    >>> print(dot.source)  # doctest: +ELLIPSIS
    digraph backward {
      ...
      n0 [label="SumBackward0"];
      n1 [label="TanhBackward0"];
      n2 [label="MatmulBackward0"];
      n3 [label="W\\n(3, 2) float64", fillcolor="#cfe2f3"];
      out0 [label="output\\n() float64", fillcolor="#d9ead3"];
      n1 -> n0;
      n2 -> n1;
      n3 -> n2;
      n0 -> out0;
    }
    >>> saved = ndgrad.autograd.graph.to_dot(loss, show_saved=True).source
    >>> "(3,) float64" in saved and "24 bytes" in saved  # tanh's saved output
    True
    """
    pairs = _roots(roots)
    names = _param_names(params)
    nodes, edges = _walk([node for _, node in pairs])
    lines = ["digraph backward {",
             '  graph [rankdir=TB, ordering=in];',
             '  node [shape=box, style="rounded,filled", fillcolor="#ffffff", fontsize=11, '
             'height=0.3];',
             "  edge [fontsize=9];"]
    saved_boxes = {}  # memory key -> (box index, label)
    saved_edges = {}  # (box index, node index) -> [names]
    for k, node in enumerate(nodes):
        attrs = ""
        if isinstance(node, AccumulateGrad):
            t = node.variable
            label = _describe(t)
            name = names.get(id(t))
            if name is not None:
                label = f"{name}\n{label}"
            attrs = f", fillcolor={_q(_LEAF_COLOR)}"
        else:
            label = node.name()
            if show_saved or show_attrs:
                saved, settings, freed = _parts(node)
                extra = []
                if show_saved:
                    for sname, v in saved:
                        arrays = _arrays_in(v)
                        if not arrays:
                            extra.append(f"{sname} = {_value_text(v)}")
                        for where, a in arrays:
                            key = _key(a)
                            box = saved_boxes.get(key)
                            if box is None:
                                box = saved_boxes[key] = (len(saved_boxes), a)
                            saved_edges.setdefault((box[0], k), []).append(sname + where)
                    if freed:
                        extra.append("saved values freed")
                        attrs = f", fillcolor={_q(_FREED_COLOR)}"
                if show_attrs:
                    extra.extend(f"{sname} = {_value_text(v)}" for sname, v in settings)
                if extra:
                    label = "\n".join([label] + extra)
        lines.append(f"  n{k} [label={_q(label)}{attrs}];")
    for j, (t, _) in enumerate(pairs):
        name = names.get(id(t), "output")
        lines.append(f"  out{j} [label={_q(name + chr(10) + _describe(t))}, "
                     f"fillcolor={_q(_ROOT_COLOR)}];")
    by_data = {}
    if saved_boxes and names:
        by_data = {_key(_array_of(t)): n for t, n in _named_tensors(params)}
    for key, (b, a) in saved_boxes.items():
        label = f"{_describe(a)}\n{_nbytes(int(a.nbytes))}"
        if key in by_data:
            label = f"{by_data[key]}\n{label}"
        lines.append(f"  s{b} [label={_q(label)}, shape=note, fillcolor={_q(_SAVED_COLOR)}];")
    lines.extend(f"  n{i} -> n{j};" for i, j in edges)
    index = {id(n): k for k, n in enumerate(nodes[:len(pairs)])}  # (the roots' come first)
    for j, (_, node) in enumerate(pairs):
        lines.append(f"  n{index[id(node)]} -> out{j};")
    for (b, k), snames in saved_edges.items():
        lines.append(f"  s{b} -> n{k} [label={_q(', '.join(snames))}, style=dashed, "
                     "arrowhead=none];")
    lines.append("}")
    return DotGraph("\n".join(lines) + "\n", len(nodes), len(edges))


def _named_tensors(params):
    pairs = params.items() if isinstance(params, Mapping) else params
    return [(t, str(n)) for n, t in pairs if _array_of(t) is not None]


def render(roots, path, format="svg", **to_dot_kwargs):
    """Draw the backward graph behind ``roots`` into a file, with Graphviz's ``dot`` program.

    Parameters
    ----------
    roots : Tensor or list or tuple of Tensor
        The outputs whose graph to draw (see :func:`to_dot`).
    path : str or os.PathLike
        The file to write; ``.<format>`` is appended when it does not end with it.
    format : {"svg", "png", "pdf"}
        The output format.
    **to_dot_kwargs
        ``params``, ``show_saved``, ``show_attrs``: as for :func:`to_dot`.

    Returns
    -------
    str
        The path written: ``path``, with ``.<format>`` appended where it lacked it.

    Raises
    ------
    ValueError
        For a format not among ``"svg"``, ``"png"``, ``"pdf"`` (and as :func:`to_dot`).
    RuntimeError
        When Graphviz's ``dot`` is not on the ``PATH`` (the message says how to install it:
        ``apt install graphviz``, ``brew install graphviz`` or ``conda install graphviz``),
        or when it fails.

    Examples
    --------
    >>> import os, shutil, tempfile
    >>> import ndgrad
    >>> x = ndgrad.tensor([1.0, 2.0], requires_grad=True)
    >>> y = (ndgrad.tanh(x) ** 2).sum()
    >>> if shutil.which("dot"):  # Graphviz installed
    ...     with tempfile.TemporaryDirectory() as d:
    ...         path = ndgrad.autograd.graph.render(y, os.path.join(d, "graph"))
    ...         with open(path) as f:
    ...             ok = path.endswith("graph.svg") and "PowBackward0" in f.read()
    ... else:
    ...     ok = True
    >>> ok
    True
    """
    _check_format(format)
    return to_dot(roots, **to_dot_kwargs).render(path, format)


# ------------------------------------------------------------------ memory_report
@dataclasses.dataclass(slots=True, repr=False, eq=False)
class MemoryReport:
    """What a backward graph keeps for backward, in bytes: made by :func:`memory_report`.

    ``print(report)`` shows it as a table; its numbers are these attributes.

    Attributes
    ----------
    total_bytes : int
        Bytes of the distinct arrays the graph's nodes saved for backward (each once).
    array_count : int
        How many distinct arrays that is.
    node_count : int
        How many nodes the graph has (leaves' ``AccumulateGrad`` nodes included).
    freed_count : int
        How many of them had their saved values freed by a backward without
        ``retain_graph=True`` (they keep nothing any more).
    by_type : dict of str to (int, int)
        For each node name (``"TanhBackward0"``): ``(number of nodes, bytes)``, the
        largest first; the bytes add up to ``total_bytes``.
    nodes : list of (str, int)
        ``(node name, bytes)`` of the ``top`` nodes that keep the most, the largest first
        (nodes of equal bytes in breadth-first order from the roots); every node when
        ``top`` is None.
    top : int or None
        How many nodes ``nodes`` lists at most.

    Examples
    --------
    >>> import ndgrad
    >>> x = ndgrad.ones(1000, requires_grad=True)
    >>> report = ndgrad.autograd.graph.memory_report(ndgrad.tanh(x).sum())
    >>> report.total_bytes, report.by_type["TanhBackward0"]
    (8000, (1, 8000))
    """

    total_bytes: int
    array_count: int
    node_count: int
    freed_count: int
    by_type: dict
    nodes: list
    top: int | None

    def __repr__(self):
        return (f"<MemoryReport: {self.total_bytes} bytes saved for backward in "
                f"{self.array_count} arrays, {self.node_count} nodes; print() it for the "
                "table>")

    def __str__(self):
        total = _nbytes(self.total_bytes)
        arrays = "array" if self.array_count == 1 else "arrays"
        nodes = "node" if self.node_count == 1 else "nodes"
        lines = [f"Saved for backward: {total} in {self.array_count} {arrays}, "
                 f"{self.node_count} {nodes}"]
        if self.freed_count:
            lines.append(f"({self.freed_count} nodes' saved values were freed by a backward "
                         "without retain_graph=True)")
        w = max([len("node type") - 5] + [len(n) - 5 for n in self.by_type]
                + [len(n) for n, _ in self.nodes])
        lines += ["", f"{'node type':<{w + 5}}  {'nodes':>7}  {'bytes':>12}",
                  "-" * (w + 28)]
        for name, (count, size) in self.by_type.items():
            lines.append(f"{name:<{w + 5}}  {count:>7}  {size:>12}")
        lines.append(f"{'total':<{w + 5}}  {self.node_count:>7}  {self.total_bytes:>12}")
        heading = "top nodes" if self.top is None else f"top {self.top} nodes"
        lines += ["", f"{heading:<{w + 5}}  {'bytes':>21}", "-" * (w + 28)]
        for rank, (name, size) in enumerate(self.nodes, 1):
            lines.append(f"{rank:>3}. {name:<{w}}  {size:>21}")
        return "\n".join(lines)


def memory_report(roots, top=10):
    """How many bytes the backward graph behind ``roots`` keeps for backward, by node type
    and by node.

    What counts: every array a node of the graph keeps for its backward: the tensors and
    arrays it saved (``Node._items_saved()``: inputs its rule reads, its saved output, a
    custom Function's ``save_for_backward`` tensors), the arrays among an op's parameters
    (the index array of ``x[idx]``) and what a saved-tensor hook's packed value keeps alive
    where it says so (a checkpoint's inputs, kept to run it again in backward: see
    :func:`ndgrad.utils.checkpoint.checkpoint`), each at its ``nbytes`` (a view counts its
    own size, not its base's). An array saved by several nodes counts once, for the first of
    them recorded in the forward computation (arrays are the same when they are the same bytes:
    same buffer, shape, strides and dtype, e.g. one tensor saved twice, or a tensor and its
    ``detach()``). A leaf saved by a node (``x`` in ``x * y``) counts: the graph keeps it
    alive. What does not count: the leaves' own data (it is not saved for backward; PyTorch
    does not count it either), Python and NumPy scalars (0 bytes), arrays kept as plain
    ``ctx`` attributes of a custom Function (save them with ``ctx.save_for_backward``), the
    gradients, and Python's own objects. After a backward without ``retain_graph=True``
    the saved values are freed and count 0.

    Parameters
    ----------
    roots : Tensor or list or tuple of Tensor
        The outputs whose graph to measure (e.g. the loss); each has a ``grad_fn`` or is a
        leaf that requires grad.
    top : int or None, default 10
        How many nodes to list, the largest first (None: all).

    Returns
    -------
    MemoryReport
        ``print()`` it for a table; ``.total_bytes``, ``.by_type`` (node name ->
        ``(nodes, bytes)``), ``.nodes`` (``(node name, bytes)``, the top ones, largest
        first) and the counts ``.array_count``, ``.node_count``, ``.freed_count``.

    Raises
    ------
    TypeError
        If ``roots`` is not a Tensor or a list or tuple of Tensors, or ``top`` is not an
        int >= 0 or None.
    ValueError
        If a root has no graph (``requires_grad=False``), or ``roots`` is empty.

    See Also
    --------
    to_dot : the picture, with ``show_saved=True`` for each saved array.

    Examples
    --------
    >>> import ndgrad
    >>> W = ndgrad.ones((100, 50), requires_grad=True)
    >>> x = ndgrad.ones(50)
    >>> loss = (ndgrad.tanh(W @ x) ** 2).sum()
    >>> report = ndgrad.autograd.graph.memory_report(loss)
    >>> print(report)
    Saved for backward: 1200 bytes (1.2 KiB) in 2 arrays, 5 nodes
    <BLANKLINE>
    node type               nodes         bytes
    -------------------------------------------
    TanhBackward0               1           800
    MatmulBackward0             1           400
    SumBackward0                1             0
    PowBackward0                1             0
    AccumulateGrad              1             0
    total                       5          1200
    <BLANKLINE>
    top 10 nodes                          bytes
    -------------------------------------------
      1. TanhBackward0                      800
      2. MatmulBackward0                    400
      3. SumBackward0                         0
      4. PowBackward0                         0
      5. AccumulateGrad                       0
    >>> report.total_bytes == 100 * 8 + 50 * 8  # tanh's output, the matmul's x
    True
    >>> loss.backward()
    >>> ndgrad.autograd.graph.memory_report(loss).total_bytes  # freed by backward
    0
    """
    if top is not None and (not isinstance(top, int) or isinstance(top, bool) or top < 0):
        raise TypeError(f"top must be an int >= 0 (how many nodes to list) or None (all); "
                        f"got {top!r}")
    pairs = _roots(roots)
    nodes, _ = _walk([node for _, node in pairs])
    seen = set()
    sizes = [0] * len(nodes)
    freed_count = 0
    # (in recording order: an array saved by several nodes counts for the first recorded)
    for k in sorted(range(len(nodes)), key=lambda k: nodes[k].seq):
        node = nodes[k]
        size = 0
        if not isinstance(node, AccumulateGrad):
            saved, _, freed = _parts(node)
            freed_count += freed
            for _, v in saved:
                for _, a in _arrays_in(v):
                    key = _key(a)
                    if key not in seen:
                        seen.add(key)
                        size += int(a.nbytes)
        sizes[k] = size
    per_node = [(node.name(), size) for node, size in zip(nodes, sizes)]
    by_type = {}
    for name, size in per_node:
        count, b = by_type.get(name, (0, 0))
        by_type[name] = (count + 1, b + size)
    total = sum(sizes)
    ranked = sorted(per_node, key=lambda item: -item[1])  # (stable: ties in walk order)
    by_type = dict(sorted(by_type.items(), key=lambda item: -item[1][1]))
    return MemoryReport(total, len(seen), len(nodes), freed_count, by_type,
                        ranked if top is None else ranked[:top], top)
