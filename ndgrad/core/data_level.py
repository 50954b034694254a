"""The base of the data levels: transform levels that keep their values' data on the tensors
themselves (a dual level's tangents, a jet's series, the Forward Laplacian's gradient batch and
Laplacian, sparsity detection's dependency matrix), in ``_meta.level_data`` (Note [Levels] in
core/levels.py).

Note [Data levels]
~~~~~~~~~~~~~~~~~~
Transform levels come in two patterns. A *wrapper* level (``func.grad``, ``vmap``) gives its
values a Tensor subclass that wraps the value one level down (Note [Wrapper levels] in
core/wrapper_level.py). A *data* level leaves a value a plain Tensor and keeps the level's
data beside it, per tensor, keyed by the level. Every data level runs an operation the same
way, so :class:`DataInterpreter` owns that skeleton once, and a data level (forward mode's
dual levels, jets, the Forward Laplacian, sparsity detection) subclasses it and supplies its
rules and little else:

* ``process``: read each input's data (``read``: by default ``data_of``, a view's brought up
  to date, Note [Views at the data levels]); run the op one level down; link a view op's
  outputs at the level; if the op is differentiable and some input has data, ask the
  subclass's ``propagate`` for each output's data (one level down unless ``rules_below`` is
  False) and ``attach`` it;
* ``process_function``: a custom Function's forward one level down, then the subclass's
  ``function_rule`` for each output's data, attached the same way;
* ``process_inplace``: the one in-place protocol of the data levels (Note [In-place at the
  data levels]);
* ``attach``: an output of a differentiable dtype takes the data the rule gave, fitted to it
  by the subclass's ``fit`` (one level down; by default as it is) and kept by ``store``;
* while a custom Function's forward runs below the level, all three only refuse the level's
  values the Function did not receive and run the operation one level down (Note [Data
  levels below a Function] in core/refusing.py);
* entering and leaving a level (:meth:`DataInterpreter.enter`, :meth:`DataInterpreter.leave`:
  the level's data is dropped from every tensor that got some), and lifting an input
  (:meth:`DataInterpreter.carrier`: a view of the user's tensor, made one level down, that
  carries the data the transform starts from, so the user's tensor is left as it was).

A subclass supplies ``propagate(lv, op, data, out, args, params)`` (a list with one entry
per output: its data, or None), ``function_rule(lv, cls, ctx, args, kwargs, data, outs)``
(the same for a custom Function, with its ctx), ``zeros(data)`` (a zero of the level's data
like ``data``), optionally ``fit(lv, out, data, who)``, and a level ``info`` object derived
from :class:`DataInfo` (it holds ``who``, what the user called, for errors). Forward mode
also supplies ``read``, ``store`` and ``write_inplace``: a view's tangent there is a view of
its base's tangent, and an in-place change writes the new tangent into the old one's memory
(Note [Tangents of views] in ndgrad/forward_ad), where the other levels keep a view's data
by epochs and write it up the chain of views (a dependency matrix is not an array; the
Forward Laplacian keeps a zero Laplacian as None).

Note [In-place at the data levels]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
An in-place op ``op`` on ``target`` at a data level runs out of place, at the level, on a
copy of the target that carries its data (so the op's own rules give the new data, and what
its reverse-mode node saves keeps the old value's data: forward over reverse), and the
result ``new`` is checked as core's in-place protocol checks a result (its shape is the
target's, its dtype casts to the target's: ``inplace.check_inplace_result``). The target's
new data is ``new``'s, or a zero like its old data (``zeros``) where ``new`` has none,
fitted to the target; ``write_inplace`` then writes ``new`` into the target one level down
(that write is the levels' below it: a ``func.grad`` level records it, a plain tensor's
version moves on) and keeps the new data: by default with the view chain's ``scatter``
rules (Note [Views at the data levels]), for forward mode in its tangent's memory. An error
from the write names the op the user called.
"""

from __future__ import annotations

import weakref

from . import levels as _levels
from .backend import is_differentiable_dtype
from .dispatch import TENSOR_F, VARIADIC, apply
from .function import _run as run_at_level, apply_function
from .inplace import ReadOnlyTargetError, apply_inplace, check_inplace_result
from .refusing import check_received
from .ops import REGISTRY
from .tensor import Tensor, drop_level_data, level_data, set_level_data
from .views import link_view

__all__ = ["DataInterpreter", "DataInfo", "LevelViews", "data_of", "set_data", "link_views",
           "fit_to"]

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

    def params(self):
        """The arguments that make a new info of this type with the same parameters
        (``type(info)(*info.params())``), or None where there is none: a level a compiled
        function cannot run its program through (Note [Differentiating a compiled function]
        in functional/compiled_function.py)."""
        return None


class DataInterpreter(_levels.Interpreter):
    """The skeleton every data level shares (Note [Data levels]); a subclass supplies
    ``propagate``, ``function_rule`` and ``zeros`` (and ``fit`` where the rule's data must be
    fitted to its output; ``read``, ``store`` and ``write_inplace`` where the level keeps its
    data otherwise: forward mode's tangents)."""

    keeps_tensor_data = True  # the level's data lives in each tensor's _meta.level_data
    rules_below = True  # the rules run one level down (sparsity's read host arrays only)
    # a level that follows every op and every dtype, not only the differentiable ones, and
    # runs a custom Function at the level as its forward's operations (compile's tracer)
    follows_every_op = False

    # ---------------------------------------------------------------- a subclass supplies
    def propagate(self, lv, op, data, out, args, params):  # pragma: no cover - interface
        """Per output of ``op``, its data at ``lv`` (or None), from the inputs' ``data``."""
        raise NotImplementedError

    def function_rule(self, lv, cls, ctx, args, kwargs, data, outs):  # pragma: no cover
        """Per output of custom Function ``cls`` (``outs``, a tuple; ``ctx`` its context),
        its data at ``lv``."""
        raise NotImplementedError

    def zeros(self, data):  # pragma: no cover - interface
        """A zero of the level's data, like ``data`` (one level down)."""
        raise NotImplementedError

    def fit(self, lv, out, data, who):
        """The rule's ``data`` fitted to output ``out`` (one level down); ``who`` names the
        op or Function in an error."""
        return data

    def pack(self, data):
        """A tensor's ``data`` at the level as a tuple of tensors (read at the level), or None
        where it has no such form; ``unpack`` makes the data again. A compiled function
        takes and returns them as arrays (Note [Differentiating a compiled function] in
        functional/compiled_function.py)."""
        return None

    def unpack(self, tensors):
        """The data ``pack`` made ``tensors`` of."""
        raise NotImplementedError

    # ``read(a, lv)`` and ``store(t, lv, data)``: how a value's data is read and kept; by
    # default with the views' epochs (data_of and set_data, bound below the class: Note
    # [Views at the data levels]); forward mode's tangents share their views' memory instead

    # ---------------------------------------------------------------- the skeleton
    def process(self, lv, op, args, params):
        if lv.received is not None:  # (Note [Data levels below a Function])
            check_received(lv, args)
            check_received(lv, params)
            with below(lv):
                return apply(op, *args, **params)
        nin = len(args) if op.nin == VARIADIC else op.nin
        read = self.read
        data = []
        moving = False
        for a in args[:nin]:
            d = read(a, lv)
            data.append(d)
            if d is not None:
                moving = True
        run = params
        if self.follows_every_op and params:  # (an index parameter of traced tensors: the
            run = _arrays_of(params)           # op runs on their arrays one level down)
            if not moving and run is not params:
                moving = _carries(params.values(), lv)
        results = None
        hid = _levels.hide(lv)
        try:
            out = apply(op, *args, **run)
            if op.view:  # (Note [Views at the data levels])
                link_views(op, args, nin, params, out)
            if moving and (op.differentiable or self.follows_every_op) and self.rules_below:
                results = self.propagate(lv, op, tuple(data), out, args, params)
        finally:
            _levels.unhide(hid)
        if moving and (op.differentiable or self.follows_every_op) and not self.rules_below:
            results = self.propagate(lv, op, tuple(data), out, args, params)
        if results is None:
            return out
        if op.nout == 1:
            self.attach(lv, out, results[0], op.qualname)
        else:
            for o, r in zip(out, results):
                self.attach(lv, o, r, op.qualname)
        return out

    def process_function(self, lv, cls, args, kwargs, needs):
        """A custom Function: its forward one level down, then the level's
        ``function_rule`` for its outputs' data."""
        if lv.received is not None:  # (Note [Data levels below a Function])
            check_received(lv, args)
            check_received(lv, kwargs)
            with below(lv):
                return apply_function(cls, args, kwargs, needs)
        if self.follows_every_op:  # (its forward's operations are the level's)
            return run_at_level(cls, args, kwargs, needs)
        read = self.read
        data = tuple(read(a, lv) for a in args)
        with below(lv):
            outs, ctx = apply_function(cls, args, kwargs, needs)
        if all(d is None for d in data):
            return outs, ctx
        seq = outs if isinstance(outs, tuple) else (outs,)
        if self.rules_below:
            with below(lv):
                results = self.function_rule(lv, cls, ctx, args, kwargs, data, seq)
        else:
            results = self.function_rule(lv, cls, ctx, args, kwargs, data, seq)
        for o, r in zip(seq, results):
            self.attach(lv, o, r, cls.__name__)
        return outs, ctx

    def process_inplace(self, lv, op, target, args, params):
        """The in-place protocol of every data level (Note [In-place at the data levels])."""
        if lv.received is not None:  # (Note [Data levels below a Function])
            check_received(lv, (target,) + tuple(args))
            check_received(lv, params)
            with below(lv):
                return apply_inplace(op, target, *args, **params)
        old = self.read(target, lv)
        new = apply(op, TENSOR_F.clone(target), *args, **params)  # at the level: data moves
        check_inplace_result(op, target, new)
        data = self.read(new, lv)
        if data is None and old is not None:
            with below(lv):
                data = self.zeros(old)
        if data is not None and (self.follows_every_op or is_differentiable_dtype(target.dtype)):
            with below(lv):
                data = self.fit(lv, target, data, op.qualname)
        else:
            data = None
        try:
            return self.write_inplace(lv, op, target, new, old, data)
        except ReadOnlyTargetError as exc:
            exc.op = op.name  # (the write is the level's: name what the user called)
            raise

    def write_inplace(self, lv, op, target, new, old, data):
        """Write ``new`` into ``target`` one level down and give ``target`` its new
        ``data`` (None: it has none, nor had); a view's new data is written up its chain of
        views (Note [In-place at the data levels])."""
        m = target._meta
        base = m.base if m is not None else None
        chain = []  # (a view's parent, its new value at the level), up to the base
        if base is not None and data is not None:
            t, child = target, new
            while t._meta is not None and t._meta.base is not None:
                parent, vop, extra, vparams, k = t._meta.view_of
                if vop.scatter is None:
                    raise RuntimeError(
                        f"{lv.info.who}: the in-place operation {op.name} changes a view made "
                        f"by {vop.name}, which cannot be written back into its base "
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
            return target
        lv.info.views.advance(target if base is None else base)
        set_data(target, lv, data)
        for parent, value in chain:
            d = level_data(value, lv)
            if d is not None:
                set_data(parent, lv, d)
        return target

    def attach(self, lv, out, data, who):
        """Give ``out`` the ``data`` a rule gave it (fitted by ``fit``), if it is a tensor of
        a differentiable dtype."""
        if data is None or not isinstance(out, Tensor) or not (
                self.follows_every_op or is_differentiable_dtype(out.dtype)):
            return
        with below(lv):
            data = self.fit(lv, out, data, who)
        self.store(out, lv, data)

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


def fit_to(value, shape, out, who, what, copy=False):
    """A transform rule's ``value`` as a Tensor of ``shape`` and ``out``'s dtype: broadcast
    (then a copy with its own memory when ``copy``), the real part for a real output, cast.
    The data levels fit their rules' results with it; ``what`` names the result in the error
    (``"the forward-mode rule returned a tangent"``)."""
    F = TENSOR_F
    if not isinstance(value, Tensor):
        value = Tensor._from_saved(out.backend.asarray(value), None)
    if tuple(value.shape) != tuple(shape):
        try:
            value = F.broadcast_to(value, shape)
        except ValueError:
            raise RuntimeError(
                f"{who}: {what} of shape {list(value.shape)} for an output of shape "
                f"{list(shape)}; they must match (or broadcast)") from None
        if copy:
            value = F.clone(value)
    if value.dtype != out.dtype:
        if value.dtype.kind == "c" and out.dtype.kind != "c":
            value = F.real(value)
        value = F.astype(value, out.dtype)
    return value


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
# * an in-place change at the level (Note [In-place at the data levels]) runs the op out
#   of place on a copy of the target, which carries its data, and writes the result into
#   the target one level down; the target takes the result's data. A view's new data is
#   written up its chain of views with each view op's declared ``scatter`` rule,
#   ``parent_new = scatter(parent, child_new)``, run at the level, so that the level's own
#   rules give each parent's new data, up to the base; a base that carried no data gets
#   data this way (``y = zeros(3); w = y[:2]; w += 3 * x[:2]``). Then the base's epoch
#   moves on.
#
# Forward mode's dual levels keep a view's tangent as a view of its base's tangent and
# write a new tangent into the old one's memory instead (their ``read``, ``store`` and
# ``write_inplace``); the other levels cannot: a dependency
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


def _arrays_of(params):
    """``params`` with the plain tensors in them (into tuples and lists) as their arrays,
    or ``params`` itself when it holds none."""
    if not any(_holds_tensor(v) for v in params.values()):
        return params
    return {k: _array_in(v) for k, v in params.items()}


def _holds_tensor(v):
    if type(v) is Tensor:
        return True
    return type(v) in (tuple, list) and any(_holds_tensor(x) for x in v)


def _array_in(v):
    if type(v) is Tensor:
        return v._data
    if type(v) in (tuple, list):
        return type(v)(_array_in(x) for x in v)
    return v


def _carries(values, lv):
    """Whether a tensor among ``values`` (searched into tuples and lists) carries data of
    ``lv``."""
    for v in values:
        if isinstance(v, Tensor):
            if data_of(v, lv) is not None:
                return True
        elif type(v) in (tuple, list) and _carries(v, lv):
            return True
    return False


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


DataInterpreter.read = staticmethod(data_of)
DataInterpreter.store = staticmethod(set_data)
