"""The package's shape, checked: layers import only downward, no door imports another, no
module or folder grows past what one reader takes in.

The layers, lowest first (``LAYERS``): a unit may import its own layer's modules and any lower
layer's, never a higher one. A unit is a top-level subpackage or module of ``sessionsched``;
each door (``doors/native``, ``doors/spark_rest``, ``doors/livy``) is a unit of its own, and
doors import neither each other nor the service (what they share below their protocols is
``doors/common``): they reach the scheduler only through the
operations port.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "sessionsched"

# Lowest first. Units in one tuple are one layer, and may import each other except where
# SIBLINGS_APART says otherwise.
LAYERS: list[tuple[str, ...]] = [
    ("model", "runtime"),
    ("spark", "config"),
    ("engine",),
    ("store",),
    # The driver's side: the agent inside a Spark driver, the HTTP client, then the programs
    # that run as a driver (the notebook API, Livy's REPL, the Connect server).
    ("agent", "client"),
    ("drivers",),
    ("backends",),
    ("sim",),
    ("eventlog",),  # Spark event logs -> a simulator workload
    ("intake",),
    ("service",),
    ("operations",),
    ("doors", "doors.common", "doors.native", "doors.spark_rest", "doors.livy",
     "doors.standby", "doors.connect"),
    ("server",),
    ("cli", "commands", "__init__"),
]
SIBLINGS_APART = {"doors.native", "doors.spark_rest", "doors.livy", "doors.standby",
                  "doors.connect"}
# Doors translate a protocol and call the operations port; below it they may use the shared
# vocabulary (model, config, store records for their answers), never the service's parts.
DOORS_MAY_NOT_IMPORT = {"service", "engine", "backends", "intake"}


# The package's top holds only these modules; everything else lives in a unit named for what
# it holds. ``model`` (the shared vocabulary) is a package, so no module file of that name.
TOP_MODULES = {
    "__init__",  # the package itself: ``sessionsched.session`` and the version
    "cli",  # the ``sessionsched`` console script's entry point (pyproject.toml names it)
}

MAX_MODULE_LINES = 400
MAX_FOLDER_MODULES = 20


def unit_of(module: str) -> str:
    parts = module.split(".")[1:]
    if not parts:
        return "__init__"  # the package's own __init__
    if parts[0] == "doors" and len(parts) > 1:
        return f"doors.{parts[1]}"
    return parts[0]


def modules() -> Iterator[tuple[str, Path]]:
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        yield ".".join(parts[:-1] if parts[-1] == "__init__" else parts), path


def imported(module: str, path: Path) -> Iterator[str]:
    """Every sessionsched module or name ``module`` imports, at any depth of its body."""
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target == "sessionsched":  # from sessionsched import x: x is the unit
                yield from (f"sessionsched.{a.name}" for a in node.names)
            elif target.startswith("sessionsched."):
                yield target
                if target in ("sessionsched.doors",):
                    yield from (f"{target}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
            yield from (a.name for a in node.names if a.name.startswith("sessionsched."))


def layer_of(unit: str) -> int:
    for rank, layer in enumerate(LAYERS):
        if unit in layer:
            return rank
    raise AssertionError(f"{unit} is in no layer of tests/test_layers.py: place it in LAYERS")


def leaks() -> set[tuple[str, str]]:
    found = set()
    for module, path in modules():
        src = unit_of(module)
        for target in imported(module, path):
            dst = unit_of(target)
            if dst == src:
                continue
            upward = layer_of(dst) > layer_of(src)
            apart = src in SIBLINGS_APART and dst in SIBLINGS_APART
            door_below = src.startswith("doors.") and dst in DOORS_MAY_NOT_IMPORT
            if upward or apart or door_below:
                found.add((src, dst))
    return found


def test_every_unit_has_a_layer():
    for module, _ in modules():
        layer_of(unit_of(module))


def test_no_upward_import_no_door_to_door():
    found = leaks()
    assert not found, f"imports against the layers (importer, imported): {sorted(found)}"


def test_the_top_holds_only_the_entry_points():
    found = {p.stem for p in PACKAGE.glob("*.py")} - TOP_MODULES
    assert not found, f"modules at the package's top, not in a unit: {sorted(found)}"


def long_modules() -> set[str]:
    return {
        str(path.relative_to(PACKAGE))
        for _, path in modules()
        if len(path.read_text().splitlines()) > MAX_MODULE_LINES
    }


def test_no_module_over_the_limit():
    found = long_modules()
    assert not found, f"modules over {MAX_MODULE_LINES} lines: {sorted(found)}"


@pytest.mark.parametrize("folder", sorted({p.parent for _, p in modules()}),
                         ids=lambda p: str(p.relative_to(PACKAGE.parent)))
def test_no_folder_over_the_limit(folder: Path):
    count = len(list(folder.glob("*.py")))
    assert count <= MAX_FOLDER_MODULES, f"{folder} holds {count} modules"


# --- tests/ mirrors the package --------------------------------------------------------------
# A package's tests are in tests/ at the package's own path (sessionsched/engine/gang: in
# tests/engine/gang), so whoever changes a package finds its tests there. Outside the mirror:
# the suites that run real Spark across every layer (tests/real_spark: its __init__.py says
# why) and the helpers several folders share (tests/support); at the top, the checks of the
# whole repository (this file) and the suite's own machinery. A package without tests of its
# own is fine; a folder of tests without its package is not.

TESTS = Path(__file__).resolve().parent
OUTSIDE_THE_MIRROR = {"real_spark", "support"}


def mirrored_folders() -> list[Path]:
    """Every folder of tests/ holding a file (a folder left with only ``__pycache__`` is none),
    but those outside the mirror; relative to tests/."""
    folders = set()
    for path in TESTS.rglob("*"):
        parts = path.relative_to(TESTS).parts
        if path.is_file() and "__pycache__" not in parts and parts[0] not in OUTSIDE_THE_MIRROR:
            folders.update(Path(*parts[:n]) for n in range(1, len(parts)))
    return sorted(folders)


def test_every_tests_folder_is_a_package_folder():
    found = [f"tests/{f.as_posix()}" for f in mirrored_folders()
             if not (PACKAGE / f / "__init__.py").is_file()]
    assert not found, (f"tests folders with no package folder of that path in sessionsched/: "
                       f"{', '.join(found)} (tests go where their package is)")


def test_every_test_module_is_where_its_package_is():
    found = []
    for module in sorted(TESTS.rglob("test_*.py")):
        folder = module.parent.relative_to(TESTS)
        if not folder.parts or folder.parts[0] == "real_spark":
            continue  # a check of the whole repository, or a suite across the layers
        if folder.parts[0] == "support" or not (PACKAGE / folder / "__init__.py").is_file():
            found.append(f"tests/{module.relative_to(TESTS).as_posix()}")
    assert not found, (f"test modules in no package's folder (tests/support holds helpers "
                       f"only): {', '.join(found)}")


def test_no_two_test_modules_share_a_name_pytest_imports_them_by():
    """In a folder without __init__.py, pytest imports a module by its file name alone: two
    such files of one name clash (``import file mismatch``) wherever they are."""
    seen: dict[str, list[str]] = {}
    for module in sorted(TESTS.rglob("*.py")):
        if (module.parent / "__init__.py").exists() or module.name == "conftest.py":
            continue
        seen.setdefault(module.stem, []).append(f"tests/{module.relative_to(TESTS).as_posix()}")
    clashes = [" and ".join(paths) for paths in seen.values() if len(paths) > 1]
    assert not clashes, f"modules pytest imports under one name (rename one): {'; '.join(clashes)}"
