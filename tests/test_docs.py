"""The documentation builds without a warning, its examples run, and so do the README's and
the quickstart's.

The Sphinx builds run in a subprocess, as a user would run them, with ``-W`` (a warning is an
error): a docstring that docutils cannot parse, a section numpydoc does not know, or an op
missing from the reference fails here. Sphinx, numpydoc and pydata-sphinx-theme come with the
``test`` extra; where Sphinx is not installed the build tests are skipped.
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from support import HANG_S

pytestmark = pytest.mark.cpu_only(
    "Sphinx and the quickstart run in subprocesses, which the device fixture does not reach, "
    "and README's example is for the default CPU device (it calls .numpy()): a device case "
    "would repeat the CPU's")

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"

needs_sphinx = pytest.mark.skipif(
    importlib.util.find_spec("sphinx") is None,
    reason="Sphinx is not installed; it comes with the test extra: pip install -e '.[test]'",
)


@pytest.fixture(scope="module")
def doctrees(tmp_path_factory):
    """One doctree cache for both builds: the doctest build reuses what the HTML build read."""
    return tmp_path_factory.mktemp("doctrees")


def sphinx_build(builder, out, doctrees):
    """Run ``sphinx-build -W --keep-going -b builder docs out`` and return the process; it
    takes as long as it takes (a deadline of HANG_S only ends a hang: Note [No test depends
    on the machine's speed] in tests/support.py; a 600 s one failed CI on a busy machine)."""
    cmd = [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-b", builder,
           "-d", str(doctrees), str(DOCS), str(out)]
    # (the gallery's examples at their small sizes: tests/gallery/ checks their numbers)
    env = {**os.environ, "NDGRAD_EXAMPLE_SMALL": "1", "MPLBACKEND": "Agg"}
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=HANG_S,
                          env=env)


def _report(proc):
    return f"sphinx-build exited {proc.returncode}\n--- stdout\n{proc.stdout}\n" \
           f"--- stderr\n{proc.stderr}"


@needs_sphinx
@pytest.mark.xdist_group("sphinx")  # (one worker: the doctest build reuses the doctrees)
def test_html_docs_build_without_warnings(tmp_path, doctrees):
    import ndgrad
    from ndgrad.core.ops import PUBLIC

    html = tmp_path / "html"
    proc = sphinx_build("html", html, doctrees)
    assert proc.returncode == 0, _report(proc)
    generated = html / "api" / "generated"

    # Every public op has a reference page, rendered from its docstring.
    missing = [name for name in sorted(PUBLIC) if not (generated / f"ndgrad.{name}.html").is_file()]
    assert not missing, f"ops without a reference page: {missing}"
    for name in ("tanh", "sum"):
        page = (generated / f"ndgrad.{name}.html").read_text(encoding="utf-8")
        first_line = getattr(ndgrad, name).__doc__.strip().splitlines()[0]
        words = re.sub(r"[`*]", "", first_line).split()[:3]  # before any inline markup
        assert " ".join(words) in page, f"docstring of ndgrad.{name} missing from its page"
        assert "Examples" in page

    # Every function of ndgrad.linalg / fft / special has a page, linked from its namespace's
    # page, which says what is differentiable.
    from ndgrad.core.ops import NAMESPACED
    for ns, fns in NAMESPACED.items():
        ns_page = (html / f"{ns}.html").read_text(encoding="utf-8")
        assert "differentiable" in ns_page.lower(), ns
        missing = [n for n in sorted(fns)
                   if not (generated / f"ndgrad.{ns}.{n}.html").is_file()
                   or f'href="api/generated/ndgrad.{ns}.{n}.html' not in ns_page]
        assert not missing, f"ndgrad.{ns} functions without a page or a link: {missing}"

    # The generated op list links every op, and the Tensor page documents its methods.
    ops_page = (html / "api_ops.html").read_text(encoding="utf-8")
    unlisted = [n for n in sorted(PUBLIC)
                if f'href="api/generated/ndgrad.{n}.html"' not in ops_page]
    assert not unlisted, f"ops missing from the operations page: {unlisted}"
    tensor_page = (generated / "ndgrad.Tensor.html").read_text(encoding="utf-8")
    for member in ("backward", "register_hook", "grad", "tanh"):
        assert f'id="ndgrad.Tensor.{member}"' in tensor_page, member

    # Every example of the gallery has its page, with its code, its output and its plots,
    # linked from the gallery's index.
    examples = sorted(p.stem for p in (ROOT / "examples" / "gallery").glob("plot_*.py"))
    assert len(examples) >= 1, "the gallery has no example"
    index = (html / "gallery" / "index.html").read_text(encoding="utf-8")
    for name in examples:
        page = (html / "gallery" / f"{name}.html").read_text(encoding="utf-8")
        assert f"sphx_glr_{name}_001.png" in page, f"{name}: no plot on its page"
        assert (html / "_images" / f"sphx_glr_{name}_001.png").is_file(), name
        assert f'href="{name}.html' in index, f"{name} is not in the gallery's index"


@needs_sphinx
@pytest.mark.xdist_group("sphinx")
def test_doc_examples_pass(tmp_path, doctrees):
    proc = sphinx_build("doctest", tmp_path / "doctest", doctrees)
    assert proc.returncode == 0, _report(proc)
    summary = proc.stdout[proc.stdout.rfind("Doctest summary"):]
    ran = re.search(r"^\s*(\d+) tests?$", summary, re.M)
    failed = re.search(r"^\s*(\d+) failures? in tests$", summary, re.M)
    assert ran and failed, _report(proc)
    assert int(ran.group(1)) > 0, "the doctest builder found no example to run"
    assert int(failed.group(1)) == 0, _report(proc)


def test_readme_example_runs(capsys):
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    assert blocks, "README.md has no python example"
    exec(compile(blocks[0], "README.md", "exec"), {"__name__": "__readme__"})
    assert "tensor(" in capsys.readouterr().out


def test_quickstart_runs():
    proc = subprocess.run([sys.executable, str(ROOT / "examples" / "quickstart.py")],
                          cwd=ROOT, capture_output=True, text=True, timeout=HANG_S)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "All results match their closed forms." in proc.stdout
