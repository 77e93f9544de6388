"""No engine module reads another object's privates (books that keep themselves).

Every ``x._name`` in ``sessionsched/engine`` must be on ``self`` or ``cls``: an index is changed
through its owner's verbs (``app_books.Books``), never by a module reaching into it. The
NamedTuple API (``_make``, ``_replace``...) is public despite its underscore.
"""

import ast
from pathlib import Path

import pytest

ENGINE = Path(__file__).resolve().parents[2] / "sessionsched" / "engine"
PUBLIC = {"_make", "_replace", "_asdict", "_fields", "_field_defaults"}


def reaches(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if not isinstance(node, ast.Attribute):
            continue
        name = node.attr
        if not name.startswith("_") or name.startswith("__") or name in PUBLIC:
            continue
        if isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"):
            continue
        found.append(f"{path.name}:{node.lineno} {ast.unparse(node)}")
    return found


@pytest.mark.parametrize("path", sorted(ENGINE.rglob("*.py")),
                         ids=lambda p: str(p.relative_to(ENGINE)))
def test_no_module_reads_another_objects_privates(path):
    assert reaches(path) == []
