"""Pytrees: nested tuples, lists and dicts (and namedtuples) of leaves.

The transforms (``ndgrad.func``) take and return pytrees of tensors: they flatten them to a
list of leaves and a spec, work on the leaves, and rebuild the same structure. ``None`` is a
leaf. Dicts keep their insertion order (as ``torch.utils._pytree``; JAX sorts the keys).

Examples
--------
>>> from ndgrad.functional.pytree import tree_flatten, tree_unflatten
>>> leaves, spec = tree_flatten({"a": (1, 2), "b": [3]})
>>> leaves
[1, 2, 3]
>>> tree_unflatten(spec, [10, 20, 30])
{'a': (10, 20), 'b': [30]}
"""

from __future__ import annotations

__all__ = ["tree_flatten", "tree_unflatten", "tree_map", "TreeSpec"]


class TreeSpec:
    """The structure of a pytree: ``kind`` ("leaf", "tuple", "list", "dict", "namedtuple"),
    the node's type, dict keys, and the children's specs."""

    __slots__ = ("kind", "type", "keys", "children", "num_leaves", "_hash")

    def __init__(self, kind, type_=None, keys=None, children=()):
        self.kind = kind
        self.type = type_
        self.keys = keys
        self.children = children
        self.num_leaves = 1 if kind == "leaf" else sum(c.num_leaves for c in children)
        self._hash = None

    def __eq__(self, other):
        return isinstance(other, TreeSpec) and self.kind == other.kind and \
            self.type == other.type and self.keys == other.keys and \
            self.children == other.children

    def __hash__(self):  # (a compiled function's signature holds its arguments' structure:
        h = self._hash     # hashed on every call, so kept; a spec does not change)
        if h is None:
            h = self._hash = hash((self.kind, self.type, self.keys, self.children))
        return h

    def __repr__(self):
        if self.kind == "leaf":
            return "*"
        inner = ", ".join(repr(c) for c in self.children)
        if self.kind == "dict":
            inner = ", ".join(f"{k!r}: {c!r}" for k, c in zip(self.keys, self.children))
            return "{" + inner + "}"
        return f"{self.kind}({inner})"


_LEAF = TreeSpec("leaf")


def _is_namedtuple(x):
    return isinstance(x, tuple) and hasattr(type(x), "_fields")


def tree_flatten(tree):
    """``(leaves, spec)`` of ``tree``; :func:`tree_unflatten` inverts it."""
    leaves = []
    spec = _flatten(tree, leaves)
    return leaves, spec


def _flatten(x, leaves):
    if _is_namedtuple(x):
        return TreeSpec("namedtuple", type(x), None, _flatten_all(x, leaves))
    if isinstance(x, tuple):
        return TreeSpec("tuple", None, None, _flatten_all(x, leaves))
    if isinstance(x, list):
        return TreeSpec("list", None, None, _flatten_all(x, leaves))
    if isinstance(x, dict):
        keys = tuple(x)
        return TreeSpec("dict", type(x), keys, _flatten_all(x.values(), leaves))
    leaves.append(x)
    return _LEAF


def _flatten_all(values, leaves):
    """The specs of ``values`` (a loop: a generator in ``_flatten`` would make its arguments
    cells, created on every call)."""
    specs = []
    for v in values:
        specs.append(_flatten(v, leaves))
    return tuple(specs)


def tree_unflatten(spec, leaves):
    """Rebuild the pytree of structure ``spec`` from ``leaves`` (in flattening order)."""
    it = iter(leaves)
    out = _unflatten(spec, it)
    rest = sum(1 for _ in it)
    if rest:
        raise ValueError(f"tree_unflatten: {rest} leaves too many for the structure {spec!r}")
    return out


def _unflatten(spec, it):
    kind = spec.kind
    if kind == "leaf":
        try:
            return next(it)
        except StopIteration:
            raise ValueError("tree_unflatten: too few leaves for the structure") from None
    children = [_unflatten(c, it) for c in spec.children]
    if kind == "tuple":
        return tuple(children)
    if kind == "list":
        return children
    if kind == "namedtuple":
        return spec.type(*children)
    d = dict(zip(spec.keys, children))
    return d if spec.type is dict else spec.type(d)


def tree_map(fn, tree):
    """``tree`` with ``fn`` applied to every leaf."""
    leaves, spec = tree_flatten(tree)
    return tree_unflatten(spec, [fn(x) for x in leaves])
