"""The typed public API: the committed ``.pyi`` stubs are what ``python -m ndgrad._stubs``
generates from the registry and the modules, they state every registered function's real
signature, and mypy reads them: a user script type-checks, and a wrong call or a misspelled
name is reported with mypy's message."""

from __future__ import annotations

import ast
import inspect
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import ndgrad
from ndgrad.core import ops
from ndgrad.core.dispatch import VARIADIC
from ndgrad.core.ops.registry import COMPOSITES, REGISTRY
from support import HANG_S

ROOT = Path(ndgrad.__file__).resolve().parents[1]  # the folder holding the package
STUBS = ROOT / "ndgrad"
pytestmark = pytest.mark.cpu_only("it reads the stubs and runs mypy, not a device")


def _run(args, cwd=None):
    return subprocess.run([sys.executable, *args], capture_output=True, text=True,
                          timeout=HANG_S, cwd=cwd)


def _mypy(tmp_path, source):
    """mypy's status and output for ``source`` as a user's script, ndgrad found where it is
    (MYPYPATH: an editable install is an import hook, which mypy does not follow)."""
    script = tmp_path / "user.py"
    script.write_text(source)
    env = dict(os.environ, MYPYPATH=str(ROOT))
    out = subprocess.run([sys.executable, "-m", "mypy", "--cache-dir", str(tmp_path / "cache"),
                          "--no-error-summary", "--hide-error-context", str(script)],
                         capture_output=True, text=True, timeout=HANG_S, cwd=tmp_path, env=env)
    return out.returncode, out.stdout + out.stderr


def _stub_functions(path):
    """``{name: ast.FunctionDef}`` of a stub's module-level functions, and of its classes'
    methods as ``Class.name``."""
    tree = ast.parse(path.read_text())
    found = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            found[node.name] = node
        elif isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and not item.decorator_list:
                    found[f"{node.name}.{item.name}"] = item
    return found


def _stub_parameters(fn):
    """The (name, kind) pairs of a stub's ``def``, in inspect's terms."""
    a, P = fn.args, inspect.Parameter
    out = [(x.arg, P.POSITIONAL_ONLY) for x in a.posonlyargs]
    out += [(x.arg, P.POSITIONAL_OR_KEYWORD) for x in a.args]
    if a.vararg:
        out.append((a.vararg.arg, P.VAR_POSITIONAL))
    out += [(x.arg, P.KEYWORD_ONLY) for x in a.kwonlyargs]
    if a.kwarg:
        out.append((a.kwarg.arg, P.VAR_KEYWORD))
    return out


def _parameters(fn):
    return [(p.name, p.kind) for p in inspect.signature(fn).parameters.values()]


def test_the_committed_stubs_are_the_generated_ones():
    """A fresh interpreter's ``python -m ndgrad._stubs --check`` finds every committed stub
    equal to the generated one (a new op or public name fails here until they are
    regenerated)."""
    out = _run(["-m", "ndgrad._stubs", "--check"], cwd=ROOT)
    assert out.returncode == 0, out.stdout + out.stderr


def test_a_stale_stub_is_named_with_the_command_that_regenerates_it(tmp_path):
    """A copy of the stubs with one op left out and a generated stub of a module that is
    gone: the check names both and says the command."""
    for path in STUBS.rglob("*.pyi"):
        copy = tmp_path / path.relative_to(ROOT)
        copy.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, copy)
    face = tmp_path / "ndgrad" / "__init__.pyi"
    face.write_text("".join(line for line in face.read_text().splitlines(keepends=True)
                            if not line.startswith("def tanh(")))
    gone = tmp_path / "ndgrad" / "gone.pyi"
    gone.write_text((STUBS / "cuda.pyi").read_text())
    (tmp_path / "ndgrad" / "handwritten.pyi").write_text("x: int\n")  # not generated: kept
    out = _run(["-m", "ndgrad._stubs", "--check", "--root", str(tmp_path)], cwd=ROOT)
    assert out.returncode == 1
    assert out.stdout.splitlines()[:2] == ["stale: ndgrad/__init__.pyi", "stale: ndgrad/gone.pyi"]
    assert "regenerate them with `python -m ndgrad._stubs`" in out.stdout
    # regenerating there restores the op and removes the stub of the gone module
    assert _run(["-m", "ndgrad._stubs", "--root", str(tmp_path)], cwd=ROOT).returncode == 0
    assert face.read_text() == (STUBS / "__init__.pyi").read_text() and not gone.exists()
    assert (tmp_path / "ndgrad" / "handwritten.pyi").exists()


ARRAY = "_ArrayLike | Tensor"


def _namespaces():
    yield "ndgrad", ops.PUBLIC, STUBS / "__init__.pyi"
    for space, functions in sorted(ops.NAMESPACED.items()):
        # (the stub at the namespace's home: ndgrad.fft is ndgrad/scipy/fft.py)
        yield f"ndgrad.{space}", functions, STUBS / "scipy" / f"{space}.pyi"


@pytest.mark.parametrize("space,functions,stub", list(_namespaces()),
                         ids=[s for s, _, _ in _namespaces()])
def test_every_registered_function_is_stubbed_with_its_signature(space, functions, stub):
    """Each public function of the registry is a ``def`` of its namespace's stub with the
    parameters (names and kinds) inspect gives; a primitive with one output returns Tensor
    and its array inputs are ``ArrayLike | Tensor``."""
    declared = {id(d.public): d for d in (*REGISTRY.values(), *COMPOSITES.values())}
    defs = _stub_functions(stub)
    wrong = []
    for name, fn in sorted(functions.items()):
        if name.startswith("_"):  # a registered helper of the namespace, not public
            continue
        if name not in defs:
            wrong.append(f"{space}.{name}: missing")
            continue
        if _stub_parameters(defs[name]) != _parameters(fn):
            wrong.append(f"{space}.{name}: {_stub_parameters(defs[name])} != {_parameters(fn)}")
        decl = declared.get(id(fn))
        one_output = getattr(decl, "nout", None) == 1
        if (ast.unparse(defs[name].returns) == "Tensor") != one_output:
            wrong.append(f"{space}.{name}: returns {ast.unparse(defs[name].returns)}")
        if decl is not None and decl.nin:
            a = defs[name].args
            first = (a.vararg if decl.nin == VARIADIC and not decl.pack
                     else (a.posonlyargs + a.args)[0])
            kind = f"_Sequence[{ARRAY}]" if decl.pack else ARRAY
            if ast.unparse(first.annotation) != kind:
                wrong.append(f"{space}.{name}: first input {ast.unparse(first.annotation)}")
    assert wrong == []


def test_every_tensor_method_is_stubbed_with_its_signature():
    """Every public method of Tensor (those the registry attaches included) is in the stub
    with inspect's parameters; the autograd contract's attributes have their types."""
    defs = _stub_functions(STUBS / "__init__.pyi")
    wrong = []
    for name in dir(ndgrad.Tensor):
        value = inspect.getattr_static(ndgrad.Tensor, name)
        if name.startswith("_") or not inspect.isfunction(value):
            continue
        stub = defs.get(f"Tensor.{name}")
        if stub is None or _stub_parameters(stub) != _parameters(value):
            wrong.append(name)
    assert wrong == []
    assert ast.unparse(defs["Tensor.backward"].returns) == "None"
    tree = ast.parse((STUBS / "__init__.pyi").read_text())
    tensor = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Tensor")
    properties = {f.name: ast.unparse(f.returns) for f in tensor.body
                  if isinstance(f, ast.FunctionDef)
                  and [ast.unparse(d) for d in f.decorator_list] == ["property"]}
    assert properties["grad"] == "Tensor | None"
    assert properties["requires_grad"] == "builtins.bool"


USER_SCRIPT = '''\
from __future__ import annotations

import ndgrad
import ndgrad.numpy as np
import ndgrad.scipy.stats as st
from ndgrad.func import grad

x: ndgrad.Tensor = ndgrad.tensor([0.5, 1.0], requires_grad=True)
y = ndgrad.tanh(x)
loss = y.sum()
loss.backward()
a = ndgrad.eye(2)
s = ndgrad.linalg.solve(a, x)
handle = y.register_hook(lambda g: g * 2)
d = grad(lambda t: np.sum(np.tanh(t)))(x)
p = st.norm.logpdf(x)
flag: bool = x.requires_grad
reveal_type(y)
reveal_type(loss)
reveal_type(s)
reveal_type(x.grad)
reveal_type(ndgrad.Tensor.backward)
reveal_type(np.linalg.solve)
reveal_type((2 * x - ndgrad.zeros(2)) @ a / 3)
reveal_type(-x[0] ** 2)
'''


def test_mypy_checks_a_user_script_against_the_stubs(tmp_path):
    """mypy passes the script and infers the stubs' types: an op's Tensor, Tensor | None for
    ``.grad``, backward's signature, ndgrad.numpy.linalg's solve, and the Tensor that the
    creation functions and the Tensor's operators return."""
    status, out = _mypy(tmp_path, USER_SCRIPT)
    assert status == 0, out
    revealed = [line.split("Revealed type is ")[1] for line in out.splitlines()
                if "Revealed type is" in line]
    array = revealed[5].split("(a: ")[1].split(", b: ")[0]
    assert revealed[:4] == ['"ndgrad.Tensor"'] * 3 + ['"ndgrad.Tensor | None"']
    assert revealed[4] == ('"def (self: ndgrad.Tensor, gradient: Any =, retain_graph: Any =, '
                           'create_graph: Any =, inputs: Any =)"')
    assert array.endswith("| ndgrad.Tensor") and "numpy" in array  # ArrayLike | Tensor
    assert revealed[5].endswith(') -> ndgrad.Tensor"')
    assert revealed[6:] == ['"ndgrad.Tensor"'] * 2  # creation functions and operators


WRONG = [
    ("ndgrad.tanh(x, nonsense=1)", 'Unexpected keyword argument "nonsense" for "tanh"'),
    ("ndgrad.tanhh(x)", 'Module has no attribute "tanhh"; maybe "tanh"'),
    ("np.sinn(x)", 'Module has no attribute "sinn"; maybe "sin"'),
    ("ndgrad.linalg.solve(x)", 'Missing positional argument "b" in call to "solve"'),
    ("ndgrad.tanh(x).backward(nonsense=1)",
     'Unexpected keyword argument "nonsense" for "backward" of "Tensor"'),
    ("ndgrad.tanh(x).backwards()", '"Tensor" has no attribute "backwards"'),
    ("(ndgrad.ones(2) * x + 1)[0].backwards()", '"Tensor" has no attribute "backwards"'),
    ("ndgrad.func.grad(f, argnum=0)", 'Unexpected keyword argument "argnum" for "grad"'),
]


def test_mypy_reports_wrong_calls_and_misspelled_names(tmp_path):
    """Each wrong line of a script gets mypy's error on that line (the stubs are read: with
    no stubs mypy cannot tell a misspelled ndgrad function)."""
    head = "import ndgrad\nimport ndgrad.numpy as np\nx = ndgrad.tensor([0.5])\n"
    head += "def f(t: ndgrad.Tensor) -> ndgrad.Tensor:\n    return t\n"
    status, out = _mypy(tmp_path, head + "".join(line + "\n" for line, _ in WRONG))
    assert status == 1
    first = head.count("\n") + 1
    for i, (line, message) in enumerate(WRONG):
        at = [m for m in out.splitlines() if m.startswith(f"user.py:{first + i}: error:")]
        assert len(at) == 1 and message in at[0], (line, out)
