"""The base of the data levels: transform levels that keep their values' data on the tensors
themselves (a jet's series, the Forward Laplacian's gradient batch and Laplacian, sparsity
detection's dependency matrix), in ``_meta.level_data`` (Note [Levels] in core/levels.py).

Note [Data levels]
~~~~~~~~~~~~~~~~~~
Transform levels come in two patterns. A *wrapper* level (``func.grad``, ``vmap``) gives its
values a Tensor subclass that wraps the value one level down. A *data* level leaves a value
a plain Tensor and keeps the level's data beside it, per tensor, keyed by the level. Every
data level runs an operation the same way, so :class:`DataInterpreter` owns that skeleton
once, and a data level subclasses it and supplies its propagation rule and little else:

* ``process``: read each input's data (``data_of``: a view's brought up to date, Note [Views
  at the data levels]); run the op one level down; link a view op's outputs at the level;
  if the op is differentiable and some input has data, ask the subclass's ``propagate``
  for each output's data (one level down unless ``rules_below`` is False) and ``attach`` it;
* ``process_function``: a custom Function's forward one level down, then the subclass's
  ``function_rule`` for each output's data, attached the same way;
* ``process_inplace``: the one in-place protocol of the data levels
  (:func:`inplace_through_copy`), with the subclass's ``zeros`` for a target whose result
  carries no data;
* ``attach``: an output of a differentiable dtype takes the data the rule gave, fitted to it
  by the subclass's ``fit`` (one level down; by default as it is);
* entering and leaving a level (:meth:`DataInterpreter.enter`, :meth:`DataInterpreter.leave`:
  the level's data is dropped from every tensor that got some), and lifting an input
  (:meth:`DataInterpreter.carrier`: a view of the user's tensor, made one level down, that
  carries the data the transform starts from, so the user's tensor is left as it was).

A subclass supplies ``propagate(lv, op, data, out, args, params)`` (a list with one entry
per output: its data, or None), ``function_rule(lv, cls, args, kwargs, data, outs)`` (the
same for a custom Function), ``zeros(data)`` (a zero of the level's data like ``data``),
optionally ``fit(lv, out, data, who)``, and a level ``info`` object derived from
:class:`DataInfo` (it holds ``who``, what the user called, for errors). Forward mode's dual
levels (``ndgrad.forward_ad``) keep their data on tensors too, but not through this base:
a view's tangent there is a view of its base's tangent, and an in-place change writes the
new tangent into the old one's memory (Note [Tangents of views] there), an in-place protocol
these levels cannot have (a dependency matrix is not an array; the Forward Laplacian keeps a
zero Laplacian as None).
"""

from __future__ import annotations

import weakref

from . import levels as _levels
from .backend import is_differentiable_dtype
from .dispatch import TENSOR_F, VARIADIC, apply
from .function import apply_function
from .inplace import apply_inplace
from .ops import REGISTRY
from .tensor import Tensor, drop_level_data, level_data, set_level_data
from .views import link_view

__all__ = ["DataInterpreter", "DataInfo", "LevelViews", "data_of", "set_data", "link_views",
           "inplace_through_copy"]

below = _levels.below
_INDEX_PUT = REGISTRY["index_put"]
_RESHAPE = REGISTRY["reshape"]


class DataInfo:
    """A data level's own record (its ``Level.info``): ``who`` (what the user called, for
    errors), ``holders`` (weak references to the tensors given data at the level, whose data
    is dropped when it is left) and ``views`` (Note [Views at the data levels]). A level
    derives its own, with its parameters."""

    __slots__ = ("who", "holders", "views")

    def __init__(self, who):
        self.who = who
        self.holders = []
        self.views = LevelViews()


class DataInterpreter(_levels.Interpreter):
    """The skeleton every data level shares (Note [Data levels]); a subclass supplies
    ``propagate``, ``function_rule`` and ``zeros`` (and ``fit`` where the rule's data must be
    fitted to its output)."""

    keeps_tensor_data = True  # the level's data lives in each tensor's _meta.level_data
    rules_below = True  # the rules run one level down (sparsity's read host arrays only)

    # ---------------------------------------------------------------- a subclass supplies
    def propagate(self, lv, op, data, out, args, params):  # pragma: no cover - interface
        """Per output of ``op``, its data at ``lv`` (or None), from the inputs' ``data``."""
        raise NotImplementedError

    def function_rule(self, lv, cls, args, kwargs, data, outs):  # pragma: no cover
        """Per output of custom Function ``cls`` (``outs``, a tuple), its data at ``lv``."""
        raise NotImplementedError

    def zeros(self, data):  # pragma: no cover - interface
        """A zero of the level's data, like ``data`` (one level down)."""
        raise NotImplementedError

    def fit(self, lv, out, data, who):
        """The rule's ``data`` fitted to output ``out`` (one level down); ``who`` names the
        op or Function in an error."""
        return data

    # ---------------------------------------------------------------- the skeleton
    def process(self, lv, op, args, params):
        nin = len(args) if op.nin == VARIADIC else op.nin
        data = []
        moving = False
        for a in args[:nin]:
            d = data_of(a, lv)
            data.append(d)
            if d is not None:
                moving = True
        hid = _levels.hide(lv)
        try:
            out = apply(op, *args, **params)
        finally:
            _levels.unhide(hid)
        if op.view:  # (Note [Views at the data levels])
            link_views(op, args, nin, params, out)
        if not moving or not op.differentiable:
            return out
        if self.rules_below:
            with below(lv):
                results = self.propagate(lv, op, tuple(data), out, args, params)
        else:
            results = self.propagate(lv, op, tuple(data), out, args, params)
        if results is None:
            return out
        if op.nout == 1:
            self.attach(lv, out, results[0], op.qualname)
        else:
            for o, r in zip(out, results):
                self.attach(lv, o, r, op.qualname)
        return out

    def process_inplace(self, lv, op, target, args, params):
        return inplace_through_copy(lv, op, target, args, params, self.zeros, lv.info.who)

    def process_function(self, lv, cls, args, kwargs, needs):
        """A custom Function: its forward one level down, then the level's
        ``function_rule`` for its outputs' data."""
        data = tuple(data_of(a, lv) for a in args)
        with below(lv):
            outs, ctx = apply_function(cls, args, kwargs, needs)
        if all(d is None for d in data):
            return outs, ctx
        seq = outs if isinstance(outs, tuple) else (outs,)
        if self.rules_below:
            with below(lv):
                results = self.function_rule(lv, cls, args, kwargs, data, seq)
        else:
            results = self.function_rule(lv, cls, args, kwargs, data, seq)
        for o, r in zip(seq, results):
            self.attach(lv, o, r, cls.__name__)
        return outs, ctx

    def attach(self, lv, out, data, who):
        """Give ``out`` the ``data`` a rule gave it (fitted by ``fit``), if it is a tensor of
        a differentiable dtype."""
        if data is None or not isinstance(out, Tensor) or not is_differentiable_dtype(out.dtype):
            return
        with below(lv):
            data = self.fit(lv, out, data, who)
        set_data(out, lv, data)

    # ---------------------------------------------------------------- entering, lifting
    def enter(self, info):
        """Enter a new level of this interpreter with ``info`` (a :class:`DataInfo`)."""
        return _levels.push(self, info)

    def leave(self, lv):
        """Leave ``lv`` and drop its data from every tensor that got some."""
        try:
            _levels.pop(lv)
        finally:
            drop_level_data(lv, lv.info.holders)

    def carrier(self, lv, x, data):
        """A view of ``x``, made one level down (it keeps ``x``'s history and its values of
        the levels outside), that carries ``data`` at ``lv``: a transform's input."""
        with below(lv):
            v = apply(_RESHAPE, x, shape=tuple(x.shape))
        set_data(v, lv, data)
        return v


# Note [Views at the data levels]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# A jet, the Forward Laplacian and sparsity detection keep their data on each tensor (a
# series; a gradient batch and a Laplacian; a dependency matrix). A view's data is its view
# op's rule applied to its parent's data when the view was made. An in-place change of its
# base, or of another view of the base, changes the memory they share, so the view's data is
# then stale (a view taken before ``y.sin_()`` kept the old series: silently wrong). As
# core's views regenerate their histories (Note [In-place on views] in core/views.py):
#
# * each level numbers the in-place changes of every base (the root of a chain of views)
#   made at the level (its epoch), and stamps a view's data with its base's epoch when the
#   data is set (``set_data``);
# * where a view's data is read (``data_of``: an op's inputs, the transform's outputs), a
#   stamp that is not its base's epoch is brought up to date by running its view op again,
#   at the level, on its parent (brought up to date first); so is a view with no data whose
#   base got data after the view was made. A view whose parent carries no data keeps its
#   own (a transform's input is a view of the user's tensor that carries the level's data);
# * an in-place change at the level (``inplace_through_copy``) runs the op out of place on
#   a copy of the target, which carries its data, and writes the result into the target
#   one level down; the target takes the result's data. A view's new data is written up its
#   chain of views with each view op's declared ``scatter`` rule, ``parent_new =
#   scatter(parent, child_new)``, run at the level, so that the level's own rules give each
#   parent's new data, up to the base; a base that carried no data gets data this way
#   (``y = zeros(3); w = y[:2]; w += 3 * x[:2]``). Then the base's epoch moves on.
#
# Forward mode's dual levels keep a view's tangent as a view of its base's tangent and
# write a new tangent into the old one's memory instead; these levels cannot: a dependency
# matrix is not an array, and the Forward Laplacian keeps a zero Laplacian as None and a
# gradient batch as an unmultiplied product. Views of a transform's values that dispatch
# does not link are linked by their own level (a ``func.grad`` level's; vmap's batched
# values, Note [Views of batched values] in functional/vmap.py: ``y = zeros_like(x); w =
# y[:2]`` inside ``vmap(laplacian(f))`` is a view made while neither it nor its base carried
# the level's data); ``link_views`` links any other at the level. Only views pay: reading a
# tensor that is not a view costs what it did.
class LevelViews:
    """A data level's epochs of bases and stamps of views (Note [Views at the data
    levels]), keyed by ``id`` with a weak reference that says the tensor is the same (a
    Tensor compares elementwise, so it cannot be a weak dictionary's key)."""

    __slots__ = ("epochs", "stamps")

    def __init__(self):
        self.epochs = {}  # id(base) -> (weakref to it, its epoch)
        self.stamps = {}  # id(view) -> (weakref to it, its base's epoch when its data was set)

    def epoch(self, base):
        e = self.epochs.get(id(base))
        return e[1] if e is not None and e[0]() is base else 0

    def current(self, view, base):
        s = self.stamps.get(id(view))
        return s is not None and s[0]() is view and s[1] == self.epoch(base)

    def stamp(self, view, base):
        self.stamps[id(view)] = (weakref.ref(view), self.epoch(base))

    def advance(self, base):
        self.epochs[id(base)] = (weakref.ref(base), self.epoch(base) + 1)


def data_of(a, lv):
    """``a``'s data at data level ``lv``, or None; a view's brought up to date first (Note
    [Views at the data levels]). ``lv`` must be visible (not below it)."""
    if not isinstance(a, Tensor):
        return None
    m = a._meta
    if m is None:
        return None
    if m.base is None:
        d = m.level_data
        return d.get(lv) if d else None
    if lv.info.views.current(a, m.base):
        return m.level_data.get(lv) if m.level_data else None
    parent, vop, extra, params, k = m.view_of
    if data_of(parent, lv) is not None:
        r = apply(vop, parent, *extra, **params)  # at the level: its rule for the view op
        if k >= 0:
            r = r[k]
        d = level_data(r, lv)
        if d is not None:
            set_level_data(a, lv, d, lv.info.holders)
        elif m.level_data:
            m.level_data.pop(lv, None)
    lv.info.views.stamp(a, m.base)
    return m.level_data.get(lv) if m.level_data else None


def set_data(t, lv, data):
    """Give ``t`` its data at data level ``lv``, current now (a view's is stamped)."""
    set_level_data(t, lv, data, lv.info.holders)
    base = t._meta.base
    if base is not None:
        lv.info.views.stamp(t, base)


def link_views(op, args, nin, params, out):
    """Link the outputs of view op ``op`` at a data level that dispatch did not link (views
    of vmap's batched values; Note [Views at the data levels])."""
    outs = (out,) if op.nout == 1 else out
    for k, o in enumerate(outs):
        if type(o) is not Tensor and isinstance(o, Tensor) and (
                o._meta is None or o._meta.base is None):
            link_view(op, args[:nin], tuple(args[nin:]), params, o, k)


def inplace_through_copy(lv, op, target, args, params, zeros, who):
    """An in-place op at a data level (a jet, the Forward Laplacian, sparsity detection):
    out of place on a copy carrying the target's data, written into the target one level
    down; the target takes the result's data (``zeros(old)`` when the result has none), and
    a view's new data is written up its chain of views (Note [Views at the data levels]).
    ``who`` names the transform in an error."""
    old = data_of(target, lv)
    new = apply(op, TENSOR_F.clone(target), *args, **params)
    data = level_data(new, lv)
    m = target._meta
    base = m.base if m is not None else None
    chain = []  # (a view's parent, its new value at the level), up to the base
    if base is not None and (data is not None or old is not None):
        t, child = target, new
        while t._meta is not None and t._meta.base is not None:
            parent, vop, extra, vparams, k = t._meta.view_of
            if vop.scatter is None:
                raise RuntimeError(
                    f"{who}: the in-place operation {op.name} changes a view made by "
                    f"{vop.name}, which cannot be written back into its base "
                    f"({vop.notes.get('scatter', 'it declares no scatter rule')}); use the "
                    "out-of-place operation")
            if k >= 0:
                child = vop.scatter(TENSOR_F, k, parent, child, *extra, **vparams)
            else:
                child = vop.scatter(TENSOR_F, parent, child, *extra, **vparams)
            chain.append((parent, child))
            t = parent
    with below(lv):
        apply_inplace(_INDEX_PUT, target, new, index=Ellipsis)
    if data is None:
        if old is None:
            return target
        with below(lv):
            data = zeros(old)
    lv.info.views.advance(target if base is None else base)
    set_data(target, lv, data)
    for parent, value in chain:
        d = level_data(value, lv)
        if d is not None:
            set_data(parent, lv, d)
    return target
