"""``ndgrad.numpy`` and ``ndgrad.scipy``: NumPy's and SciPy's namespaces made of ndgrad's own
objects (Note [NumPy's names in ndgrad.numpy], Note [SciPy's subpackages in ndgrad.scipy]).

A HIPS-autograd-style script against central differences of the same code run by NumPy;
every name of ``ndgrad.numpy`` is ndgrad's object; NumPy's namespace walked for what
``ndgrad.numpy`` has (and every name ndgrad has must be there), the rest refused with a
message; each ``ndgrad.scipy`` subpackage is ndgrad's module, importable by its full name.
"""

from __future__ import annotations

import importlib
import pkgutil
import subprocess
import sys
import types

import numpy
import pytest
import scipy.special

import ndgrad
import ndgrad.numpy as anp
from support import host

MIRRORED = ("linalg", "fft", "random")  # NumPy's submodules ndgrad.numpy has


def _mlp_loss(np):
    """A tanh MLP's mean squared error written with ``np``'s functions only (NumPy's, or
    ndgrad.numpy's): the same source runs both ways."""
    def loss(params, x, y):
        w1, b1, w2, b2 = params[:12].reshape(3, 4), params[12:16], params[16:20], params[20]
        hidden = np.tanh(np.dot(x, w1) + b1)
        out = np.dot(hidden, w2) + b2
        return np.mean((out - y) ** 2) + 1e-2 * np.sum(params ** 2)
    return loss


def test_hips_autograd_style_script_against_central_differences():
    rng = numpy.random.default_rng(0)
    x, y = rng.standard_normal((5, 3)), rng.standard_normal(5)
    p0 = rng.standard_normal(21)

    grad = ndgrad.func.grad(_mlp_loss(anp))(anp.array(p0), anp.array(x), anp.array(y))

    reference, h = _mlp_loss(numpy), 1e-6  # central differences of NumPy's run
    fd = numpy.array([(reference(p0 + h * e, x, y) - reference(p0 - h * e, x, y)) / (2 * h)
                      for e in numpy.eye(p0.size)])
    assert isinstance(grad, ndgrad.Tensor)
    numpy.testing.assert_allclose(host(grad), fd, rtol=1e-7, atol=1e-9)
    value = _mlp_loss(anp)(anp.array(p0), anp.array(x), anp.array(y))
    numpy.testing.assert_allclose(host(value), reference(p0, x, y), rtol=1e-14)


def _public(module):
    return {n for n in dir(module) if not n.startswith("_")}


def test_every_name_of_ndgrad_numpy_is_ndgrads_object():
    assert set(anp.__all__) <= set(vars(anp))
    for name in anp.__all__:
        if name == "random":
            continue
        assert getattr(anp, name) is getattr(ndgrad, name), name
    callables = [getattr(anp, n) for n in anp.__all__
                 if callable(getattr(anp, n)) and not isinstance(getattr(anp, n), type)]
    assert callables and all(f.__module__.startswith("ndgrad") for f in callables)
    assert anp.linalg is ndgrad.linalg and anp.fft is ndgrad.fft
    assert (anp.random.rand, anp.random.randn, anp.random.seed) \
        == (ndgrad.rand, ndgrad.randn, ndgrad.manual_seed)
    assert (anp.pi, anp.e, anp.newaxis) == (numpy.pi, numpy.e, None)
    assert anp.inf == numpy.inf and anp.nan != anp.nan
    assert anp.float64 == numpy.float64 and anp.int32 == numpy.int32


def test_ndgrad_numpy_covers_numpys_namespace():
    """Walk NumPy's public namespace: every name ndgrad has is in ndgrad.numpy (failing on
    one that is not), every other name raises an AttributeError naming ndgrad.numpy; the
    count of NumPy's functions ndgrad.numpy has."""
    missing, refused = [], []
    for name in sorted(_public(numpy)):
        ours = getattr(ndgrad, name, None)
        mirrors = not isinstance(ours, types.ModuleType) or name in MIRRORED
        if name in MIRRORED or (hasattr(ndgrad, name) and mirrors):
            if name not in vars(anp):
                missing.append(name)
            continue
        with pytest.raises(AttributeError, match=rf"^ndgrad\.numpy has no '{name}': "):
            getattr(anp, name)
        refused.append(name)
    assert not missing, f"ndgrad has these NumPy names, ndgrad.numpy lacks them: {missing}"

    functions = {n for n in _public(numpy) if callable(getattr(numpy, n))
                 and not isinstance(getattr(numpy, n), type)}
    have = sorted(functions & set(vars(anp)))
    lacking = sorted(functions - set(have))
    print(f"ndgrad.numpy has {len(have)} of NumPy {numpy.__version__}'s {len(functions)} "
          f"public functions; lacks {lacking}")
    assert len(have) + len(lacking) == len(functions)
    assert set(lacking) <= set(refused)
    assert len(have) >= 0.85 * len(functions), (len(have), len(functions))
    for sub in ("linalg", "fft"):  # NumPy's submodules: ndgrad's module has their functions
        theirs = {n for n in _public(getattr(numpy, sub))
                  if callable(getattr(getattr(numpy, sub), n))}
        assert theirs - {"test"} <= _public(getattr(anp, sub)), sub


def test_import_forms_of_ndgrad_numpy():
    import ndgrad.numpy.fft as f
    import ndgrad.numpy.linalg as la
    from ndgrad.numpy import random
    assert la is ndgrad.linalg and f is ndgrad.fft and random is anp.random
    star = {}
    exec("from ndgrad.numpy import *", star)
    assert {n for n in star if n != "__builtins__"} == set(anp.__all__)
    x = numpy.array([[2.0, 1.0], [1.0, 3.0]])
    numpy.testing.assert_allclose(host(la.inv(anp.array(x))), numpy.linalg.inv(x),
                                  rtol=1e-14)


def test_names_ndgrad_lacks_raise_a_clear_attribute_error():
    with pytest.raises(AttributeError, match=r"ndgrad\.numpy has no 'array2string': .*"
                       r"printing and formatting .*t\.detach\(\)\.numpy\(\)"):
        _ = anp.array2string
    with pytest.raises(AttributeError, match=r"ndgrad\.numpy has no 'ndarray': .*"
                       r"ndgrad's array is ndgrad\.Tensor"):
        _ = anp.ndarray
    with pytest.raises(AttributeError, match=r"ndgrad\.numpy has no 'floating': numpy\."
                       r"floating is a NumPy scalar type.*isdtype\(x\.dtype, 'real floating'\)"):
        _ = anp.floating
    with pytest.raises(AttributeError, match=r"ndgrad\.numpy has no 'vectorize': .*"
                       r"ndgrad\.func\.vmap"):
        _ = anp.vectorize
    with pytest.raises(AttributeError, match=r"ndgrad\.numpy has no 'ma': numpy\.ma is a "
                       r"NumPy submodule ndgrad does not mirror \(ndgrad\.numpy has linalg, "
                       r"fft and random\)"):
        _ = anp.ma
    with pytest.raises(AttributeError, match=r"ndgrad\.numpy\.random has no 'normal': "
                       r"ndgrad draws only rand, randn, seed; draw with NumPy"):
        _ = anp.random.normal
    with pytest.raises(AttributeError, match=r"^module 'ndgrad\.numpy' has no attribute "
                       r"'not_numpys'$"):
        _ = anp.not_numpys
    assert not hasattr(anp, "core")  # ndgrad.core is not numpy.core


SCIPY_SUBPACKAGES = ("fft", "integrate", "interpolate", "linalg", "ndimage", "optimize",
                     "signal", "sparse", "special", "stats")


@pytest.mark.parametrize("name", SCIPY_SUBPACKAGES)
def test_ndgrad_scipy_subpackages_are_ndgrads_modules(name):
    import ndgrad.scipy
    ours = getattr(ndgrad, name)
    assert getattr(ndgrad.scipy, name) is ours
    assert importlib.import_module(f"ndgrad.scipy.{name}") is ours
    for sub in pkgutil.iter_modules(getattr(ours, "__path__", [])):  # its submodules too
        assert importlib.import_module(f"ndgrad.scipy.{name}.{sub.name}") \
            is importlib.import_module(f"ndgrad.{name}.{sub.name}"), sub.name


def test_ndgrad_scipy_import_forms_and_a_derivative():
    import ndgrad.scipy.stats as st
    from ndgrad.scipy import special
    assert sorted(ndgrad.scipy.__all__) == sorted(SCIPY_SUBPACKAGES)
    x0 = numpy.array([-1.5, 0.0, 2.0])
    g = ndgrad.func.grad(lambda x: special.expit(x).sum())(ndgrad.tensor(x0))
    s = scipy.special.expit(x0)
    numpy.testing.assert_allclose(host(g), s * (1 - s), rtol=1e-14)
    g = ndgrad.func.grad(lambda x: st.norm.logpdf(x).sum())(ndgrad.tensor(x0))
    numpy.testing.assert_allclose(host(g), -x0, rtol=1e-14)
    with pytest.raises(AttributeError, match=r"ndgrad\.scipy has no 'spatial': ndgrad does "
                       r"not differentiate scipy\.spatial; ndgrad\.scipy has fft, .*Call "
                       r"scipy\.spatial on t\.detach\(\)\.numpy\(\)"):
        _ = ndgrad.scipy.spatial
    with pytest.raises(AttributeError, match=r"^module 'ndgrad\.scipy' has no attribute"):
        _ = ndgrad.scipy.not_scipys


# (a fresh interpreter: each public import form first, before any other import of the module)
FORMS = ["import ndgrad.stats as m; from ndgrad.scipy import stats as n",
         "import ndgrad.signal.windows as m; import ndgrad.scipy.signal.windows as n",
         "import ndgrad.sparse.linalg as m; import ndgrad.scipy.sparse.linalg as n",
         "from ndgrad.stats import norm as m; from ndgrad.scipy.stats import norm as n",
         "import ndgrad.linalg as m; import ndgrad.numpy.linalg as n",
         "import ndgrad.scipy.fft as m; import ndgrad.fft as n"]
ONCE = r"""
import sys
{form}
assert m is n
import importlib, pkgutil, ndgrad
for info in pkgutil.walk_packages(ndgrad.scipy.__path__, "ndgrad.scipy."):
    home = importlib.import_module(info.name)
    public = importlib.import_module("ndgrad." + info.name[len("ndgrad.scipy."):])
    assert home is public, info.name
    assert home.__name__ == "ndgrad." + info.name[len("ndgrad.scipy."):], home.__name__
files = {{}}
for module in list(sys.modules.values()):
    f = getattr(module, "__file__", None) or ""
    if "ndgrad" in f:
        assert files.setdefault(f, module) is module, f"{{f}} loaded twice"
print("ok")
"""


@pytest.mark.parametrize("form", FORMS)
def test_each_mirror_module_is_loaded_once_under_both_names(form):
    """``import ndgrad.stats`` and ``import ndgrad.scipy.stats`` (and the nested ones) give the
    one module loaded from ndgrad/scipy/ (Note [SciPy's subpackages in ndgrad.scipy]), whose
    ``__name__`` is its public name (Note [Public module names]), and no file of ndgrad is
    loaded as two module objects."""
    out = subprocess.run([sys.executable, "-c", ONCE.format(form=form)], capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr


def test_functions_of_moved_modules_keep_their_public_module():
    assert ndgrad.stats.norm.__class__.__module__ == "ndgrad.stats"
    assert ndgrad.integrate.quad.__module__ == "ndgrad.integrate"
    assert ndgrad.special.yn.__module__ == "ndgrad.special"
    assert ndgrad.linalg.solve.__module__ == ndgrad.linalg.lu_factor.__module__ == "ndgrad.linalg"
    assert ndgrad.signal.windows.get_window.__module__ == "ndgrad.signal.windows"
    assert ndgrad.concatenate.__module__ == ndgrad.quantile.__module__ == "ndgrad"
