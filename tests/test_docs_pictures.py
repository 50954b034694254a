"""The pictures that the docs build draws for docs/how_it_works.rst (docs/_ext/design_pictures.py,
imported here by its path, without Sphinx): every module of ndgrad is in exactly one layer
group of its table, the imports between groups point down the table's order (and one that
points up is found and drawn red), and both drawings are valid SVG naming what they show."""

from __future__ import annotations

import importlib.util
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

import ndgrad

PACKAGE = Path(ndgrad.__file__).resolve().parent
SOURCE = Path(__file__).resolve().parents[1] / "docs" / "_ext" / "design_pictures.py"
pytestmark = pytest.mark.cpu_only("it reads the package's source and draws with matplotlib")


def _load():
    spec = importlib.util.spec_from_file_location("ndgrad_docs_design_pictures", SOURCE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


pictures = _load()


@pytest.fixture(scope="module")
def walk():
    return pictures.package_imports(PACKAGE)


def _fake_package(tmp_path):
    """A package laid out as ndgrad is, with two imports up the stack: the kernel imports a
    transform (``core/tensor.py``), and a transform imports the package face."""
    pkg = tmp_path / "pkg"
    for folder in ("core", "functional"):
        (pkg / folder).mkdir(parents=True)
        (pkg / folder / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("from . import core\nfrom .functional import api\n")
    (pkg / "core" / "grad_mode.py").write_text("STATE = 1\n")
    (pkg / "core" / "tensor.py").write_text("from . import grad_mode\n"
                                            "from ..functional import api\n")
    (pkg / "functional" / "api.py").write_text("from ..core import tensor\n\n\ndef f():\n"
                                               "    from .. import core, version\n"
                                               "    return core, version\n")
    return pkg


def _svg_text(path):
    """All the text of an SVG file, which must parse as XML with an <svg> root."""
    root = ET.parse(path).getroot()
    assert root.tag == "{http://www.w3.org/2000/svg}svg"
    return " ".join(root.itertext())


def test_every_module_is_in_exactly_one_group(walk):
    files = sorted(PACKAGE.rglob("*.py"))  # independent of the walk
    assert len(walk.paths) == len(files) and set(walk.paths.values()) == set(files)
    placed = {f.relative_to(PACKAGE).as_posix(): pictures.groups_of(
        f.relative_to(PACKAGE).as_posix()) for f in files}
    assert {rel: gs for rel, gs in placed.items() if len(gs) != 1} == {}
    groups = pictures.members(walk)
    assert "?" not in groups and list(groups) == pictures.ORDER
    listed = [m for mods in groups.values() for m in mods]
    assert len(listed) == len(files) and set(listed) == set(walk.paths)
    assert groups["face"][0] == "ndgrad" and "ndgrad.core.dispatch" in groups["kernel"]


def test_the_table_check_finds_a_module_in_no_group_or_two():
    assert pictures.groups_of("core/dispatch.py") == ["kernel"]
    assert pictures.groups_of("core/data_level.py") == ["level bases"]  # the more specific
    assert pictures.groups_of("newthing.py") == []
    doubled = pictures.GROUPS + (("again", "", ("core/*.py",)),)
    assert pictures.groups_of("core/dispatch.py", doubled) == ["kernel", "again"]
    # modules moving into ndgrad/numpy/ and ndgrad/scipy/ land in their mirror's box
    assert pictures.groups_of("numpy/linalg.py") == ["NumPy mirror"]
    assert pictures.groups_of("scipy/signal/windows.py") == ["SciPy mirror"]


def test_imports_between_groups_point_down(walk):
    edges = pictures.group_edges(walk)
    assert edges[("ops", "kernel")] > 0 and edges[("face", "kernel")] > 0
    assert pictures.upward(edges) == []


def test_an_upward_import_is_reported_and_drawn_red(tmp_path):
    pkg = _fake_package(tmp_path)
    fake = pictures.package_imports(pkg)
    assert set(fake.paths) == {"pkg", "pkg.core", "pkg.core.grad_mode", "pkg.core.tensor",
                               "pkg.functional", "pkg.functional.api"}
    edges = pictures.group_edges(fake)
    assert edges == {("kernel", "functional"): 1, ("functional", "kernel"): 2,
                     ("functional", "face"): 1, ("face", "kernel"): 1,
                     ("face", "functional"): 1}
    assert pictures.upward(edges) == [("functional", "face"), ("kernel", "functional")]
    drawn = pictures.draw_layers(tmp_path / "fake.svg", pkg)
    assert drawn["upward"] == [("functional", "face"), ("kernel", "functional")]
    assert f"stroke: {pictures.UP}" in (tmp_path / "fake.svg").read_text()  # a red line


def test_both_drawings_are_svg_naming_what_they_show(tmp_path):
    layers, levels = pictures.write_pictures(tmp_path, PACKAGE)
    text = _svg_text(layers)
    for name in pictures.ORDER:
        assert name in text, name
    for module in ("dispatch", "registry", "wrapper_level", "taylor"):
        assert module in text, module
    assert pictures.UP not in layers.read_text()  # no import points up: nothing red
    text = _svg_text(levels)
    for words in (*pictures.LEVEL_KINDS, "apply(op, x)", "GradTensor", "BatchedTensor",
                  "_value", "_level", "_meta.level_data[level]", "DataInterpreter.process",
                  "the level below"):
        assert words in text, words
