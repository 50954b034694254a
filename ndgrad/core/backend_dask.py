"""The Dask backend: ndgrad's operations on ``dask.array`` arrays, lazily (device ``"dask"``).

This is the only module that imports Dask. It registers its backend when imported, and
core/lazy.py's finder imports it only when a Dask array is first used
(``ndgrad.asarray(dask_array)``, ``device="dask"``): importing ndgrad never loads Dask (Note
[The Dask backend], Note [Backend plug-ins] in core/backend.py).

Note [The Dask backend]
~~~~~~~~~~~~~~~~~~~~~~~
A :class:`DaskBackend` is a namespace over ``dask.array`` as :class:`CupyBackend` is over
CuPy: ``B.exp`` is ``dask.array.exp``, so an op's forward called with Dask arrays adds tasks
to a Dask graph and computes nothing. The vjp and jvp rules run with the same backend when
their cotangent is a Dask array (the engine picks the backend from the cotangent), so the
backward pass builds Dask graphs too; Dask schedules them (threads, processes or a
``distributed`` cluster), ndgrad only builds them.

* Names NumPy has and ``dask.array`` lacks: those that take no arrays (dtypes, ``finfo``,
  ``result_type``, ``errstate``, constants) are NumPy's; NumPy ufuncs (and SciPy's special
  ufuncs) run blockwise through Dask's ``__array_ufunc__``; any other is a stand-in that
  raises :class:`DaskUnsupported` (a NotImplementedError) when called, naming the function
  and suggesting ``.compute()``. ``dispatch.apply`` adds the name of the ndgrad function the
  user called. NumPy functions are never called on Dask arrays: Dask's
  ``__array_function__`` would compute them silently.
* Mixing: NumPy-backed tensors (model parameters) meet Dask-backed ones (data) in every op;
  the op runs with this backend and Dask wraps the NumPy arrays as one-chunk constants of
  the graph (Note [Mixing devices] in core/devices.py). A NumPy leaf's gradient is then a
  Dask array: ``.backward()`` keeps it aside and computes all of them in one
  ``dask.compute`` when the pass ends (``deferred_gradients``: Note [Deferred gradients] in
  core/accumulate.py), so ``param.grad`` is NumPy-backed. Dask with a GPU tensor is an error
  naming both devices.
* Stand-ins: a reduction's cotangent is broadcast back to its input's shape; on a Dask input
  that would be one chunk as large as the input, which the next elementwise rule (a ``-g``)
  fills in memory whole. So a node whose rules read only metadata keeps, for a Dask input,
  the stand-in ``B.stand_in`` gives (``stand_ins``), a :class:`ChunkedShape` carrying the
  input's chunks, and ``reductions.expand_reduced`` lets it broadcast the cotangent chunk by
  chunk, aligned with the data: the backward pass holds a few chunks at a time, as the
  forward does.
* Views: Dask arrays share no memory (``may_share_memory`` is False); an in-place operation
  on a Dask-backed tensor replaces its graph (Dask's ``__setitem__``) and no view sees it.
* Indices stay NumPy arrays (Dask indexes with them: results of known shape; on_device in
  core/ops/indexing.py asks :meth:`DaskBackend.host_index`); ``scatter_add`` with an index
  array runs in one task over the whole target (``dask.delayed``), a basic index blockwise.
  Assigning into a copy (``B.array(x, copy=True)``) leaves ``x`` as it was: Dask's
  ``__setitem__`` replaces the graph of the very object it is called on.
* Functions along an axis (``sort``, ``argsort``) or of whole matrices (``eigh``, ``eig``,
  ``matrix_rank``, ``expm``) run blockwise (``map_blocks``) when that axis, or each matrix,
  is one chunk: a stack of matrices is rechunked so, an axis of several chunks is a
  DaskUnsupported saying how to rechunk (the rechunk can be large: the user decides).
* A result whose shape depends on the values (a lazy boolean mask's selection,
  ``trim_zeros``, the polynomials of Note [Values that decide a shape] in numpy/polynomials.py)
  is a DaskUnsupported saying so: computing the values would break laziness silently.
"""

from __future__ import annotations

import numpy as np

import dask
import dask.array as da

from .backend import (SCIPY_LINALG, SCIPY_SPECIAL, Backend, Device, SubNamespace,
                      Unsupported, _seed_state, register_backend, vector_norm_of)

__all__ = ["DaskBackend", "DaskUnsupported", "ChunkedShape", "compute", "persist"]

DASK_DEVICE = Device("dask")
_NOVALUE = object()

# NumPy names that take no arrays, or only read their metadata: NumPy's own serve Dask.
_NUMPY_META = frozenset({
    "errstate", "result_type", "promote_types", "can_cast", "finfo", "iinfo", "dtype",
    "issubdtype", "isdtype", "broadcast_shapes", "isscalar", "ndim", "shape", "size",
    "iscomplexobj", "isrealobj", "min_scalar_type", "obj2sctype", "geterr", "seterr",
    "normalize_axis_index", "printoptions", "get_printoptions", "set_printoptions",
    "index_exp", "s_", "ndindex", "prod_shape",
})


class DaskUnsupported(Unsupported):
    """A function the Dask backend cannot run lazily (Note [The Dask backend]): the
    ``Unsupported`` of this backend, with Dask's advice."""

    def __init__(self, label, hint="", op=None, *, why=None, via=None):
        super().__init__("dask", label, hint, op, why=why, via=via)

    def message(self):
        needed = f"ndgrad.{self.op}" if self.op is not None else "this operation"
        if self.via is not None:
            needed += f" (through ndgrad.{self.via})"
        reason = self.why if self.why is not None else f"dask.array has no {self.label}"
        advice = "Compute the tensor first (t.compute(), a NumPy-backed tensor)"
        if self.why is None:
            advice += (" or, for a chunk-local operation, rechunk so that the axes it works "
                       "along are one chunk and use dask.array.map_blocks")
        return (f"{needed} cannot run on Dask arrays: {reason}"
                f"{' (' + self.hint + ')' if self.hint else ''}. {advice}")

    def for_op(self, qualname):
        via = self.via if self.via is not None else (
            self.op if self.op not in (None, qualname) else None)
        return DaskUnsupported(self.label, self.hint, qualname, why=self.why, via=via)


class ChunkedShape(tuple):
    """A Dask input's shape with its ``chunks`` (the stand-in a metadata-only node saves,
    :meth:`DaskBackend.stand_in`): a rule that broadcasts a cotangent back to the shape
    (``reductions.expand_reduced``) gives it the input's chunks, so the cotangent is built
    chunk by chunk, aligned with the data, never as one chunk (Note [The Dask backend])."""

    def broadcast(self, g):
        """Raw cotangent ``g`` broadcast to this shape, chunked as the input (a Dask ``g``;
        another: None)."""
        if type(g) is da.Array:
            return da.broadcast_to(g, tuple(self), chunks=self.chunks)
        return None


def _unsupported(label, hint=""):
    """A stand-in for a function Dask lacks: raises DaskUnsupported when called."""
    def call(*args, **kwargs):
        raise DaskUnsupported(label, hint)
    call.__name__ = label.rpartition(".")[2]
    call.unsupported = True
    return call


def _dask_lacks(label, f):
    """The host's ``f`` for a name Dask's namespace lacks: a NumPy/SciPy ufunc runs blockwise
    through Dask; another function is a stand-in that raises DaskUnsupported."""
    if callable(f) and not isinstance(f, (np.ufunc, type)):
        return _unsupported(label)
    return f


def _blockwise(name):
    """SciPy's elementwise function ``special.<name>`` (not a ufunc) run blockwise."""
    def call(*args):
        return da.core.elemwise(_SpecialFn(name), *args)
    call.__name__ = name
    return call


class _SpecialFn:
    """``scipy.special.<name>``, picklable by name (for distributed workers)."""

    def __init__(self, name):
        self.name = name

    def __call__(self, *args):
        return getattr(SCIPY_SPECIAL, self.name)(*args)


class DaskBackend(Backend):
    """The backend over ``dask.array`` (device ``"dask"``; Note [The Dask backend])."""

    name = "dask"
    # results are graphs, computed by dask.compute, never implicitly (Note [Backend
    # plug-ins] in core/backend.py names what each attribute changes)
    reads_values = False
    adds_in_place = False  # (B.scatter_add: blockwise for a basic index)
    takes_host_arrays = True  # (NumPy arrays: one-chunk constants of the graph)
    deferred_gradients = True
    stand_ins = True
    host_indices = True  # index arrays stay NumPy arrays (core/ops/indexing.on_device)

    def __init__(self):
        for name in dir(da):
            if not name.startswith("_") and not hasattr(type(self), name):
                setattr(self, name, getattr(da, name))
        self.array_type = self.ndarray = da.Array
        # (Dask's own namespaces: linalg; for the others `load` gives None, which has none)
        self.linalg = SubNamespace("linalg", lambda: da.linalg, np.linalg, _dask_lacks,
                                   vector_norm=self._vector_norm, svd=self._svd,
                                   cholesky=self._cholesky, qr=self._qr,
                                   matrix_transpose=self.matrix_transpose, det=self._det,
                                   slogdet=self._slogdet, pinv=self._pinv,
                                   solve=_square_chunks(da.linalg.solve, "linalg.solve"),
                                   inv=_square_chunks(da.linalg.inv, "linalg.inv"),
                                   eigh=_eigh, eigvalsh=_eigvalsh, eig=_eig, eigvals=_eigvals,
                                   matrix_rank=_matrix_rank, cross=_cross)
        self.fft = SubNamespace("fft", lambda: None, None, _dask_lacks,
                                **{n: _one_chunk_fft(n) for n in _FFT_NAMES})
        self.special = SubNamespace("special", lambda: None, SCIPY_SPECIAL, _dask_lacks,
                                    polygamma=_blockwise("polygamma"),
                                    zeta=_blockwise("zeta"), lambertw=_blockwise("lambertw"))
        self.scipy_linalg = SubNamespace("scipy_linalg", lambda: None, SCIPY_LINALG,
                                         _dask_lacks, solve_triangular=self._solve_triangular,
                                         expm=_expm)
        self.permute_dims = da.transpose
        self.concat = da.concatenate
        self.host_fallbacks = set()
        self._rng = None

    def __getattr__(self, name):
        # Only reached for names dask.array lacks (instance attributes win).
        if name.startswith("_"):
            raise AttributeError(f"the Dask backend has no {name!r}")
        try:
            f = getattr(np, name)
        except AttributeError:
            raise AttributeError(f"the Dask backend has no {name!r}") from None
        if name in _NUMPY_META or not callable(f) or isinstance(f, (type, np.ufunc)):
            pass  # (a ufunc runs blockwise through Dask's __array_ufunc__)
        else:
            f = _unsupported(name)
        setattr(self, name, f)
        return f

    # -- NumPy's contract where dask.array's differs
    def array(self, x, dtype=None, copy=None, **kwargs):
        """``numpy.array``. Dask arrays are values: a copy shares the graph, but is another
        object, so an assignment into it (Dask's ``__setitem__`` replaces the graph of the
        object it is called on) leaves ``x`` as it was."""
        if isinstance(x, da.Array):
            if dtype is not None and x.dtype != dtype:
                return x.astype(dtype)
            return x.copy() if copy or copy is None else x
        return da.asarray(np.array(x, dtype=dtype, **kwargs))

    def max(self, a, axis=None, out=None, keepdims=False, initial=_NOVALUE, where=_NOVALUE):
        """``numpy.max`` with ``initial`` (Dask's has none)."""
        return self._extremum(da.max, da.maximum, a, axis, keepdims, initial, where)

    def min(self, a, axis=None, out=None, keepdims=False, initial=_NOVALUE, where=_NOVALUE):
        """``numpy.min`` with ``initial`` (Dask's has none)."""
        return self._extremum(da.min, da.minimum, a, axis, keepdims, initial, where)

    amax, amin = max, min

    def _extremum(self, reduce, combine, a, axis, keepdims, initial, where):
        if where is not _NOVALUE:
            raise DaskUnsupported("max/min(where=...)")
        if initial is _NOVALUE:
            return reduce(a, axis=axis, keepdims=keepdims)
        if a.size == 0:
            raise DaskUnsupported("max/min of an empty array with initial")
        return combine(reduce(a, axis=axis, keepdims=keepdims), initial)

    def _svd(self, a, full_matrices=True, compute_uv=True, hermitian=False):
        """``numpy.linalg.svd`` of one tall-and-skinny (or short-and-fat) matrix: Dask's
        (tsqr) takes no ``full_matrices`` / ``compute_uv`` and a matrix chunked along one
        axis only."""
        if a.ndim != 2:
            raise DaskUnsupported("linalg.svd of a stack of matrices")
        if full_matrices and min(a.shape) != max(a.shape) and compute_uv:
            raise DaskUnsupported("linalg.svd(full_matrices=True) of a non-square matrix",
                                  "pass full_matrices=False")
        u, s, vh = da.linalg.svd(_one_way(a, "linalg.svd"))
        return (u, s, vh) if compute_uv else s

    def _det(self, a):
        """``numpy.linalg.det``, blockwise over a stack's chunks: each matrix is one chunk
        (its last two axes are rechunked to one chunk)."""
        return _per_matrix(a, np.linalg.det, a.dtype)

    def _slogdet(self, a):
        """``numpy.linalg.slogdet``, blockwise as :meth:`_det`."""
        r = _per_matrix(a, _slogdet_pair, a.dtype, extra=2)
        sign, logabsdet = r[..., 0], r[..., 1]
        return sign, (da.real(logabsdet) if np.iscomplexobj(logabsdet) else logabsdet)

    def _pinv(self, a, rtol=None, hermitian=False):
        """``numpy.linalg.pinv`` of one tall-and-skinny (or short-and-fat) matrix, from
        Dask's SVD (tsqr: the matrix chunked along its long axis only): the pseudo-inverse
        of a matrix too large for memory is a Dask array too."""
        if a.ndim != 2:
            raise DaskUnsupported("linalg.pinv of a stack of matrices")
        wide = a.shape[0] < a.shape[1]
        u, s, vh = da.linalg.svd(_one_way(a.T if wide else a, "linalg.pinv"))
        if rtol is None:
            rtol = max(a.shape) * np.finfo(np.result_type(a.dtype, 1.0)).eps
        keep = s > rtol * s.max()
        inv_s = da.where(keep, 1.0 / da.where(keep, s, 1.0), 0.0)
        p = (da.conj(vh).T * inv_s) @ da.conj(u).T
        return p.T if wide else p

    def _cholesky(self, a, upper=False):
        """``numpy.linalg.cholesky`` with ``upper`` (Dask's gives the lower factor of one
        matrix chunked in square blocks)."""
        L = da.linalg.cholesky(a, lower=True)
        return da.conj(L.T) if upper else L

    def _qr(self, a, mode="reduced"):
        """``numpy.linalg.qr`` (Dask's tsqr: ``mode="reduced"``, a matrix chunked along
        one axis)."""
        if mode != "reduced":
            raise DaskUnsupported(f"linalg.qr(mode={mode!r})", "Dask has mode='reduced'")
        return da.linalg.qr(a)

    # -- functions dask.array lacks, built from its own
    def cumulative_sum(self, x, /, *, axis=None, dtype=None, include_initial=False):
        return self._cumulative(da.cumsum, 0, x, axis, dtype, include_initial)

    def cumulative_prod(self, x, /, *, axis=None, dtype=None, include_initial=False):
        return self._cumulative(da.cumprod, 1, x, axis, dtype, include_initial)

    def _cumulative(self, scan, initial, x, axis, dtype, include_initial):
        if axis is None:
            if x.ndim > 1:
                raise ValueError("cumulative_sum/prod: axis is required for arrays of more "
                                 "than one dimension")
            axis = 0
        r = scan(x, axis=axis, dtype=dtype)
        if include_initial:
            shape = list(r.shape)
            shape[axis] = 1
            r = da.concatenate([da.full(shape, initial, dtype=r.dtype), r], axis=axis)
        return r

    def errstate(self, **kwargs):
        """Floating-point warnings happen when the graph runs: nothing to silence now."""
        return np.errstate(**kwargs)

    def astype(self, x, dtype, /, *, copy=True):
        return x.astype(dtype)

    def split(self, x, indices_or_sections, axis=0):
        """``numpy.split``, by slicing (Dask has none)."""
        n = x.shape[axis]
        if isinstance(indices_or_sections, int):
            if indices_or_sections <= 0 or n % indices_or_sections:
                raise ValueError("array split does not result in an equal division")
            step = n // indices_or_sections
            cuts = list(range(step, n, step))[:indices_or_sections - 1]
        else:
            cuts = list(indices_or_sections)
        bounds = [0] + cuts + [n]
        index = [slice(None)] * x.ndim
        parts = []
        for lo, hi in zip(bounds[:-1], bounds[1:]):
            index[axis] = slice(lo, max(lo, hi))
            parts.append(x[tuple(index)])
        return parts

    def take_along_axis(self, x, indices, axis):
        """``numpy.take_along_axis``, blockwise: ``axis`` must be one chunk of ``x``
        (the other axes broadcast and keep ``x``'s chunks)."""
        x = da.asarray(x)
        if axis is None:
            x, axis = x.reshape(-1), 0
        axis = axis % x.ndim
        if x.numblocks[axis] != 1:
            raise DaskUnsupported(
                "take_along_axis along an axis of several chunks",
                f"rechunk it to one chunk first: x.rechunk({{{axis}: -1}})")
        idx = da.asarray(indices)
        other = np.broadcast_shapes(*[tuple(1 if k == axis else d for k, d in enumerate(a))
                                      for a in (x.shape, idx.shape)])
        xs = other[:axis] + (x.shape[axis],) + other[axis + 1:]
        js = other[:axis] + (idx.shape[axis],) + other[axis + 1:]
        x = da.broadcast_to(x, xs) if x.shape != xs else x
        idx = da.broadcast_to(idx, js) if idx.shape != js else idx
        idx = idx.rechunk(tuple(-1 if k == axis else c for k, c in enumerate(x.chunks)))
        return da.map_blocks(_take_along_axis, x, idx, axis=axis, dtype=x.dtype,
                             chunks=idx.chunks)

    def broadcast_to(self, x, shape, chunks=None):
        """``numpy.broadcast_to``; ``chunks`` (those of the array the result meets) chunks
        it along its broadcast axes too, instead of one chunk per axis (Note [Lazy
        gradients] in core/accumulate.py)."""
        x = da.asarray(x)
        if chunks is None:
            return da.broadcast_to(x, shape)
        shape = tuple(shape)
        lead = len(shape) - x.ndim
        kept = {k: chunks[lead + k] for k in range(x.ndim) if x.shape[k] == shape[lead + k]}
        if any(x.chunks[k] != c for k, c in kept.items()):
            x = x.rechunk(kept)
        return da.broadcast_to(x, shape, chunks=tuple(chunks))

    def matrix_transpose(self, x):
        return da.swapaxes(x, -1, -2)

    def vecdot(self, x1, x2, axis=-1):
        return (da.conj(x1) * x2).sum(axis=axis)

    def may_share_memory(self, a, b, max_work=None):
        return False  # (Note [The Dask backend]: views)

    shares_memory = may_share_memory

    def _vector_norm(self, x, axis=None, keepdims=False, ord=2):
        return vector_norm_of(da, x, axis, keepdims, ord)

    def _solve_triangular(self, a, b, trans=0, lower=False, unit_diagonal=False,
                          overwrite_b=False, check_finite=False):
        """``scipy.linalg.solve_triangular`` for one matrix (Dask's: no ``trans``, no unit
        diagonal, no batches)."""
        if a.ndim != 2 or trans not in (0, "N") or unit_diagonal:
            raise DaskUnsupported("scipy_linalg.solve_triangular",
                                  "Dask solves one triangular system, without trans or "
                                  "unit_diagonal")
        return da.linalg.solve_triangular(a, b, lower=lower)

    # -- devices and conversion
    def device_of(self, array):
        return DASK_DEVICE

    def asarray(self, data, dtype=None, device=None, copy=None):
        """A Dask array: Dask arrays as they are (cast when ``dtype`` differs), host data
        as one chunk (``rechunk`` it for parallelism)."""
        if isinstance(data, da.Array):
            return data if dtype is None or data.dtype == dtype else data.astype(dtype)
        return da.asarray(np.asarray(data, dtype=dtype))

    def to_numpy(self, array):
        """Compute ``array`` (one ``dask.compute``)."""
        return np.asarray(array.compute())

    def stand_in(self, array):
        """The shape with chunks a metadata-only node saves (Note [The Dask backend])."""
        shape = ChunkedShape(array.shape)
        shape.chunks = array.chunks
        return shape

    def summary(self, array):
        return f"<lazy shape={array.shape} chunks={array.chunksize}>"

    def unsupported(self, label, hint="", *, why=None):
        return DaskUnsupported(label, hint, why=why)

    def host_index(self, index, select=True):
        """``index`` as Dask indexes with it (NumPy index arrays stay NumPy arrays: their
        results have known shapes). ``select``: ``index`` picks elements out (``x[index]``),
        where a lazy boolean mask would make the result's shape depend on its values."""
        if select:
            for part in index if isinstance(index, tuple) else (index,):
                if isinstance(part, da.Array) and part.dtype == bool:
                    raise DaskUnsupported(
                        "getitem", "ndgrad.where(mask, x, 0) keeps the shape",
                        why="the number of elements a lazy boolean mask selects, so the "
                            "result's shape, depends on the values of the mask")
        return index

    def assign(self, out, index, values):
        """``out[index] = values`` (Dask's ``__setitem__``: the last value written to a
        repeated position stays, as in NumPy), new axes (None) of a basic index taken out
        first (Dask's assignment has none)."""
        index, values = _settable(out.shape, index, values)
        out[index] = values

    def scatter_add(self, target, index, values):
        """``target[index] += values`` with repeated indices accumulating: the new graph
        replaces ``target``'s (Dask's ``__setitem__``). A basic index adds blockwise; an
        index with arrays runs as one task over the whole target (``numpy.add.at``)."""
        if _is_basic(index):
            index, values = _settable(target.shape, index, values)
            target[index] = target[index] + values
            return target
        new = da.from_delayed(dask.delayed(_add_at)(target, index, values),
                              shape=target.shape, dtype=target.dtype)
        target[...] = new
        return target

    def repeat(self, a, repeats, axis=None):
        """``numpy.repeat``: also of the flattened array (``axis=None``) and with a count
        per element (Dask's repeats every element as often, along an axis)."""
        a = da.asarray(a)
        if axis is None:
            a, axis = a.reshape(-1), 0
        if not isinstance(repeats, (int, np.integer)) and len(repeats) == 1:
            repeats = repeats[0]
        if isinstance(repeats, (int, np.integer)):
            return da.repeat(a, int(repeats), axis=axis)
        return da.take(a, np.repeat(np.arange(a.shape[axis]), repeats), axis=axis)

    def sort(self, a, axis=-1, kind=None):
        """``numpy.sort`` along an axis that is one chunk, blockwise (Dask has no sort)."""
        a, axis = _along_one_chunk(a, axis, "sort")
        return da.map_blocks(_sort_block, a, axis=axis, kind=kind, dtype=a.dtype)

    def argsort(self, a, axis=-1, kind=None):
        """``numpy.argsort`` along an axis that is one chunk, blockwise."""
        a, axis = _along_one_chunk(a, axis, "argsort")
        return da.map_blocks(_argsort_block, a, axis=axis, kind=kind, dtype=np.intp)

    def set_readonly(self, array):
        pass  # (Dask arrays are values)

    def compute(self, *arrays, **kwargs):
        """NumPy arrays of ``arrays`` from one ``dask.compute`` (shared intermediates run
        once)."""
        return compute(*arrays, **kwargs)

    def persist(self, *arrays, **kwargs):
        """``dask.persist`` of ``arrays``."""
        return persist(*arrays, **kwargs)

    # -- random numbers: Dask's generator, seeded from ndgrad's seed
    def generator(self):
        if self._rng is None:
            self._rng = da.random.default_rng(_seed_state["seed"])
        return self._rng

    def manual_seed(self, seed):
        self._rng = da.random.default_rng(seed)

    def rng_state(self):
        return None

    def set_rng_state(self, state):
        pass


def _is_basic(index):
    """An index of ints, slices, None and Ellipsis only (core/ops/indexing.is_basic)."""
    return all(i is None or i is Ellipsis or isinstance(i, (slice, int, np.integer))
               for i in (index if isinstance(index, tuple) else (index,)))


def _settable(shape, index, values):
    """``index`` and ``values`` as Dask's ``__setitem__`` takes them: a basic index without
    new axes (None), the values broadcast to the selection's shape (NumPy's rule, which
    also drops the values' leading axes of length 1)."""
    if not _is_basic(index):
        return index, values
    parts = index if isinstance(index, tuple) else (index,)
    if all(i is not None for i in parts):
        return index, values
    probe = np.broadcast_to(np.empty((), dtype=bool), shape)  # (no memory: shapes only)
    full = probe[parts].shape
    bare = tuple(i for i in parts if i is not None)
    v = da.asarray(values)
    while v.ndim > len(full) and v.shape[0] == 1:
        v = v[0]
    return bare, da.broadcast_to(v, full).reshape(probe[bare].shape)


def _along_one_chunk(a, axis, label):
    """``a`` (flattened when ``axis`` is None) and the axis, which must be one chunk
    (else DaskUnsupported, saying how to rechunk)."""
    a = da.asarray(a)
    if axis is None:
        a, axis = a.reshape(-1), 0
    axis = axis % a.ndim if a.ndim else 0
    if a.ndim and a.numblocks[axis] != 1:
        # (the axis is named in general: a composite may have moved it, as median does)
        raise DaskUnsupported(f"{label} along an axis of several chunks",
                              "rechunk the axis it works along to one chunk first: "
                              "x.rechunk({axis: -1})")
    return a, axis


def _sort_block(x, axis, kind):
    return np.sort(x, axis=axis, kind=kind)


def _argsort_block(x, axis, kind):
    return np.argsort(x, axis=axis, kind=kind)


def _matrices(a, label):
    """``a``, a stack of square matrices, each made one chunk (the batch axes keep their
    chunks)."""
    if a.ndim < 2:
        raise ValueError(f"{label}: a matrix or a stack of matrices is needed, got shape "
                         f"{a.shape}")
    n = a.ndim
    return a.rechunk({n - 2: -1, n - 1: -1})


def _eigh_packed(a, UPLO):
    lam, v = np.linalg.eigh(a, UPLO=UPLO)
    return np.concatenate([v, lam[..., :, None].astype(v.dtype)], axis=-1)


def _eigh(a, UPLO="L"):
    """``numpy.linalg.eigh`` blockwise over a stack (each matrix made one chunk): one task
    per block gives the eigenvectors with the eigenvalues as an extra column."""
    a = _matrices(da.asarray(a), "linalg.eigh")
    n = a.shape[-1]
    dtype = np.result_type(a.dtype, np.float32)
    packed = da.map_blocks(_eigh_packed, a, UPLO=UPLO, dtype=dtype,
                           chunks=a.chunks[:-1] + ((n + 1,),))
    lam = packed[..., n]
    return (da.real(lam) if dtype.kind == "c" else lam), packed[..., :n]


def _eigvalsh_block(a, UPLO):
    return np.linalg.eigvalsh(a, UPLO=UPLO)


def _eigvalsh(a, UPLO="L"):
    """``numpy.linalg.eigvalsh`` blockwise over a stack (each matrix one chunk)."""
    a = _matrices(da.asarray(a), "linalg.eigvalsh")
    dtype = np.finfo(np.result_type(a.dtype, np.float32)).dtype
    return da.map_blocks(_eigvalsh_block, a, UPLO=UPLO, drop_axis=a.ndim - 1, dtype=dtype)


def _eig_packed(a, ctype):
    lam, v = np.linalg.eig(a)
    return np.concatenate([v.astype(ctype), lam[..., None, :].astype(ctype)], axis=-2)


def _eig(a):
    """``numpy.linalg.eig`` blockwise over a stack (each matrix one chunk), always complex
    (NumPy's result is real when every eigenvalue is: a dtype that depends on the values;
    ndgrad's eig is complex anyway). The eigenvalues ride as an extra row."""
    a = _matrices(da.asarray(a), "linalg.eig")
    n = a.shape[-1]
    ctype = np.result_type(a.dtype, np.complex64)
    packed = da.map_blocks(_eig_packed, a, ctype=ctype, dtype=ctype,
                           chunks=a.chunks[:-2] + ((n + 1,), (n,)))
    return packed[..., n, :], packed[..., :n, :]


def _eigvals(a):
    """``numpy.linalg.eigvals`` as :func:`_eig` gives them (complex)."""
    return _eig(a)[0]


def _matrix_rank_block(a, tol, hermitian, rtol):
    return np.asarray(np.linalg.matrix_rank(a, tol=tol, hermitian=hermitian, rtol=rtol))


def _matrix_rank(a, tol=None, hermitian=False, rtol=None):
    """``numpy.linalg.matrix_rank`` blockwise over a stack (each matrix one chunk); a
    tolerance per matrix is not taken (a number is)."""
    if not all(t is None or np.ndim(t) == 0 for t in (tol, rtol)):
        raise DaskUnsupported("linalg.matrix_rank with a tolerance per matrix",
                              "pass one number as tol or rtol")
    a = _matrices(da.asarray(a), "linalg.matrix_rank")
    return da.map_blocks(_matrix_rank_block, a, tol=tol, hermitian=hermitian, rtol=rtol,
                         drop_axis=[a.ndim - 2, a.ndim - 1], dtype=np.intp)


def _expm_block(a):
    return SCIPY_LINALG.expm(a)


def _expm(a):
    """``scipy.linalg.expm`` blockwise over a stack (each matrix made one chunk)."""
    a = _matrices(da.asarray(a), "linalg.matrix_exp")
    return da.map_blocks(_expm_block, a, dtype=np.result_type(a.dtype, np.float32))


def _cross(x1, x2, axis=-1):
    """``numpy.linalg.cross`` of 3-vectors along ``axis`` (negative), from their
    components: elementwise, so any chunks."""
    x1, x2 = da.asarray(x1), da.asarray(x2)
    tail = (slice(None),) * (-axis - 1)
    a0, a1, a2 = (x1[(Ellipsis, k) + tail] for k in range(3))
    b0, b1, b2 = (x2[(Ellipsis, k) + tail] for k in range(3))
    return da.stack([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0], axis=axis)


def _one_way(a, label):
    """``a`` as Dask's tsqr needs it, chunked along one axis only (else DaskUnsupported,
    saying how to rechunk)."""
    short = 1 if a.shape[0] >= a.shape[1] else 0
    if min(a.numblocks) > 1:
        raise DaskUnsupported(f"{label} of a matrix chunked along both axes",
                              f"rechunk it to one chunk along axis {short}: "
                              f"a.rechunk({{{short}: -1}})")
    return a


def _take_along_axis(x, idx, axis):
    return np.take_along_axis(x, idx, axis=axis)


def _slogdet_pair(a):
    sign, logabsdet = np.linalg.slogdet(a)
    return np.stack([sign, logabsdet.astype(sign.dtype)], axis=-1)


def _per_matrix(a, fn, dtype, extra=0):
    """``fn`` (det, slogdet) over the matrices of ``a`` blockwise: the last two axes made
    one chunk, the batch axes keep their chunks; ``extra``: a new last axis of that size."""
    if a.ndim < 2:
        raise ValueError(f"a matrix or a stack of matrices is needed, got shape {a.shape}")
    n = a.ndim
    a = a.rechunk({n - 2: -1, n - 1: -1})
    dtype = np.result_type(dtype, 1.0)
    if extra:
        return da.map_blocks(fn, a, drop_axis=n - 1, dtype=dtype,
                             chunks=a.chunks[:n - 2] + ((extra,),))
    return da.map_blocks(fn, a, drop_axis=[n - 2, n - 1], dtype=dtype,
                         chunks=a.chunks[:n - 2])


def _square_chunks(fn, label):
    """Dask's LU-based ``fn`` (solve, inv), with Dask's error about chunks made a
    DaskUnsupported that says how to rechunk."""
    def call(a, *args, **kwargs):
        if a.ndim > 2:
            return _stacked(fn, label, a, *args)
        if len(set(a.chunks[0] + a.chunks[1])) > 1 or a.chunks[0] != a.chunks[1]:
            raise DaskUnsupported(
                f"{label} of a matrix in non-square chunks (Dask's LU needs square chunks)",
                f"rechunk it: a.rechunk({a.chunks[0][0]}) or one chunk, a.rechunk(-1)")
        return fn(a, *args, **kwargs)
    call.__name__ = label.rpartition(".")[2]
    return call


def _stacked(fn, label, a, b=None):
    """``numpy.linalg.<fn>`` over a stack of matrices, blockwise: each matrix one chunk,
    the batch axes keep ``a``'s chunks (``b``: a stack of the same batch shape)."""
    n = a.ndim
    a = a.rechunk({n - 2: -1, n - 1: -1})
    host = getattr(np.linalg, fn.__name__)
    if b is None:
        return da.map_blocks(host, a, dtype=np.result_type(a.dtype, 1.0))
    if b.ndim != n or b.shape[:-2] != a.shape[:-2]:
        raise DaskUnsupported(f"{label} of a stack with a right-hand side of another batch "
                              "shape")
    b = b.rechunk(a.chunks[:-2] + (-1, -1))
    return da.map_blocks(host, a, b, dtype=np.result_type(a.dtype, b.dtype, 1.0),
                         chunks=b.chunks)


_FFT_NAMES = ("fft", "ifft", "rfft", "irfft", "hfft", "ihfft", "fft2", "ifft2", "rfft2",
              "irfft2", "fftn", "ifftn", "rfftn", "irfftn", "fftfreq", "rfftfreq",
              "fftshift", "ifftshift")


def _one_chunk_fft(name):
    """Dask's ``fft.<name>``; along an axis of several chunks a DaskUnsupported saying how
    to rechunk (Dask transforms one chunk per axis)."""
    fn = getattr(da.fft, name, None)
    if fn is None:
        return _unsupported(f"fft.{name}")
    if name in ("fftfreq", "rfftfreq", "fftshift", "ifftshift"):
        return fn

    def call(a, *args, **kwargs):
        try:
            return fn(a, *args, **kwargs)
        except ValueError as exc:
            if "single chunk" not in str(exc):
                raise
            raise DaskUnsupported(
                f"fft.{name} along an axis of several chunks",
                "Dask transforms an axis that is one chunk: rechunk it first, "
                "x.rechunk({axis: -1})") from None
    call.__name__ = name
    return call


def _add_at(target, index, values):
    """``numpy.add.at`` on a copy (one Dask task; module-level, so workers can unpickle it)."""
    out = np.array(target, copy=True)
    np.add.at(out, index, values)
    return out


def compute(*arrays, **kwargs):
    """``dask.compute`` of the Dask arrays in ``arrays`` (others pass through), as a tuple
    of NumPy arrays."""
    lazy = [k for k, a in enumerate(arrays) if isinstance(a, da.Array)]
    values = dask.compute(*[arrays[k] for k in lazy], **kwargs)
    out = list(arrays)
    for k, v in zip(lazy, values):
        out[k] = np.asarray(v)
    return tuple(out)


def persist(*arrays, **kwargs):
    """``dask.persist`` of the Dask arrays in ``arrays`` (others pass through)."""
    lazy = [k for k, a in enumerate(arrays) if isinstance(a, da.Array)]
    values = dask.persist(*[arrays[k] for k in lazy], **kwargs)
    out = list(arrays)
    for k, v in zip(lazy, values):
        out[k] = v
    return tuple(out)


DASK = DaskBackend()
register_backend(da.Array, DASK)
