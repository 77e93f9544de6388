"""The repository as ``tests/test_references.py`` reads it: its files (in the working tree, or
in a commit's tree), its markdown pages (headings, anchors, sections, code) and its Python
modules' names (with ``ast``: nothing is imported)."""

from __future__ import annotations

import ast
import fnmatch
import functools
import re
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

ROOT = Path(__file__).resolve().parent.parent

# --- the repository's files --------------------------------------------------------------------


@functools.cache
def repo_files() -> tuple[PurePosixPath, ...]:
    """Tracked files and new ones not ignored (a page being written is checked too)."""
    try:
        out = subprocess.run(
            ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            cwd=ROOT, capture_output=True, check=True).stdout.decode()
        names = [n for n in out.split("\0") if n]
    except (OSError, subprocess.CalledProcessError):
        skip = {".git", ".venv", ".venv-airflow", "__pycache__", ".sessionsched"}
        names = [str(p.relative_to(ROOT)) for p in ROOT.rglob("*")
                 if p.is_file() and not skip.intersection(p.relative_to(ROOT).parts)]
    return tuple(PurePosixPath(n) for n in sorted(names) if (ROOT / n).is_file())


@dataclass(frozen=True)
class Tree:
    """The files of the working tree, or of a commit's tree."""

    files: frozenset[str]
    commit: str | None = None

    @functools.cached_property
    def folders(self) -> frozenset[str]:
        return frozenset(str(p) for f in self.files for p in PurePosixPath(f).parents)

    @functools.cached_property
    def names(self) -> frozenset[str]:
        return frozenset(PurePosixPath(f).name for f in self.files)

    def ending(self, mention: str) -> str | None:
        """The first file or folder whose path ends with ``/mention``."""
        tail = "/" + mention
        if "*" in mention:
            return next((f for f in sorted(self.files) if fnmatch.fnmatch(f, "*" + tail)), None)
        return next((p for p in sorted(self.files | self.folders) if p.endswith(tail)), None)

    def exists(self, path: str) -> bool:
        path = path.rstrip("/") or "."
        return path in self.files or path in self.folders

    def glob(self, pattern: str) -> bool:
        return any(fnmatch.fnmatch(f, pattern) for f in self.files)

    def read(self, path: str) -> str:
        if self.commit is None:
            return (ROOT / path).read_text(encoding="utf-8")
        return _git_show(self.commit, path)


@functools.cache
def work_tree() -> Tree:
    return Tree(frozenset(map(str, repo_files())))


@functools.cache
def commit_tree(commit: str) -> Tree | None:
    """The tree at ``commit``, or None where the repository does not have it."""
    try:
        out = subprocess.run(["git", "ls-tree", "-r", "-z", "--name-only", commit], cwd=ROOT,
                             capture_output=True, check=True).stdout.decode()
    except (OSError, subprocess.CalledProcessError):
        return None
    return Tree(frozenset(n for n in out.split("\0") if n), commit)


@functools.cache
def _git_show(commit: str, path: str) -> str:
    return subprocess.run(["git", "show", f"{commit}:{path}"], cwd=ROOT, capture_output=True,
                          check=True).stdout.decode()


def text_of(path: PurePosixPath) -> str | None:
    try:
        return (ROOT / path).read_text(encoding="utf-8")
    except (UnicodeDecodeError, OSError):
        return None


def normalise(path: str) -> str | None:
    parts: list[str] = []
    for part in path.split("/"):
        if part in ("", "."):
            continue
        if part == "..":
            if not parts:
                return None
            parts.pop()
        else:
            parts.append(part)
    return "/".join(parts) or "."


# --- markdown: headings, sections, code --------------------------------------------------------

FENCE = re.compile(r"^\s*(```|~~~)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
COMMIT_IN_HEADING = re.compile(r"`([0-9a-f]{7,40})`")
INLINE_CODE = re.compile(r"(`+)(.+?)\1")


def slug(heading: str) -> str:
    """GitHub's anchor for a heading."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link: its text
    text = re.sub(r"[^\w\- ]", "", text.strip().lower())
    return text.replace(" ", "-")


def md_lines(text: str) -> Iterator[tuple[int, str, bool, str | None]]:
    """(line number, line, inside a fenced block, the commit its section names or None)."""
    fenced = False
    commits: list[tuple[int, str | None]] = []  # (heading level, commit) of open sections
    for n, line in enumerate(text.splitlines(), 1):
        if FENCE.match(line):
            fenced = not fenced
            yield n, line, True, _commit(commits)
            continue
        if not fenced and (m := HEADING.match(line)):
            level = len(m.group(1))
            while commits and commits[-1][0] >= level:
                commits.pop()
            c = COMMIT_IN_HEADING.search(m.group(2))
            commits.append((level, c.group(1) if c else None))
        yield n, line, fenced, _commit(commits)


def _commit(commits: list[tuple[int, str | None]]) -> str | None:
    return next((c for _, c in reversed(commits) if c), None)


@functools.cache
def anchors(path: str, commit: str | None = None) -> frozenset[str]:
    tree = work_tree() if commit is None else commit_tree(commit)
    text = tree.read(path) if tree else ""
    seen: dict[str, int] = {}
    out = set()
    for _, line, fenced, _ in md_lines(text):
        if fenced:
            continue
        if m := HEADING.match(line):
            s = slug(m.group(2))
            k = seen.get(s, 0)
            seen[s] = k + 1
            out.add(s if k == 0 else f"{s}-{k}")
        out.update(re.findall(r"""<a\s+(?:name|id)=["']([^"']+)["']""", line))
    return frozenset(out)


@functools.cache
def headings(path: str) -> tuple[str, ...]:
    return tuple(m.group(2) for _, line, fenced, _ in md_lines(work_tree().read(path))
                 if not fenced and (m := HEADING.match(line)))


@functools.cache
def code_spans(path: str) -> frozenset[str]:
    return frozenset(m.group(2).strip() for m in INLINE_CODE.finditer(work_tree().read(path)))


@functools.cache
def emphasised(path: str) -> frozenset[str]:
    text = work_tree().read(path)
    return frozenset(" ".join(m.group(2).split())
                     for m in re.finditer(r"(\*{1,2}|_{1,2})([^*_\n][^*_]*?)\1", text))


# --- Python modules: the names they define ------------------------------------------------------

@dataclass(frozen=True)
class Module:
    path: str
    tree: Tree

    @functools.cached_property
    def ast(self) -> ast.Module:
        return ast.parse(self.tree.read(self.path))

    @functools.cached_property
    def names(self) -> dict[str, ast.AST]:
        """Top-level definitions and assignments; imports anywhere (a lazy import counts)."""
        out: dict[str, ast.AST] = {}
        for node in ast.walk(self.ast):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                for alias in node.names:
                    out.setdefault((alias.asname or alias.name).split(".")[0], node)
        for node in self.ast.body:
            for name in _bound(node):
                out[name] = node
        return out

    def imported_module(self, node: ast.ImportFrom) -> str | None:
        """The sessionsched module an ``import from`` reads, as a dotted name."""
        if node.level:
            package = PurePosixPath(self.path).parent.parts
            base = package[: len(package) - node.level + 1]
            return ".".join(base + ((node.module,) if node.module else ()))
        return node.module if node.module and node.module.startswith("sessionsched") else None


def _bound(node: ast.AST) -> Iterator[str]:
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        yield node.name
    elif isinstance(node, ast.Assign):
        for target in node.targets:
            yield from (n.id for n in ast.walk(target) if isinstance(n, ast.Name))
    elif isinstance(node, (ast.AnnAssign, ast.AugAssign)) and isinstance(node.target, ast.Name):
        yield node.target.id
    elif isinstance(node, (ast.If, ast.Try)):
        for child in ast.iter_child_nodes(node):
            yield from _bound(child)


def module_of(dotted: str, tree: Tree) -> Module | None:
    path = dotted.replace(".", "/")
    for candidate in (f"{path}.py", f"{path}/__init__.py"):
        if candidate in tree.files:
            return Module(candidate, tree)
    return None


def lookup(module: Module, chain: list[str], depth: int = 0) -> bool:
    """Whether ``chain`` (a name, then members) exists in ``module``."""
    if not chain or depth > 8:
        return True
    node = module.names.get(chain[0])
    if node is None:
        sub = module_of(module.path.removesuffix("/__init__.py").removesuffix(".py")
                        .replace("/", ".") + "." + chain[0], module.tree)
        return sub is not None and lookup(sub, chain[1:], depth + 1)
    if isinstance(node, ast.ImportFrom):
        source = module.imported_module(node)
        if source is None:
            return True  # from outside the package: not ours to check
        alias = next(a for a in node.names if (a.asname or a.name) == chain[0])
        target = module_of(source, module.tree)
        if target is not None and alias.name in target.names:
            return lookup(target, [alias.name, *chain[1:]], depth + 1)
        sub = module_of(f"{source}.{alias.name}", module.tree)
        return sub is not None and lookup(sub, chain[1:], depth + 1)
    if isinstance(node, ast.ClassDef):
        return len(chain) == 1 or member(module, node, chain[1], depth)
    return True  # a function or a variable: its attributes are not followed


def member(module: Module, cls: ast.ClassDef, name: str, depth: int) -> bool:
    for node in cls.body:
        if name in _bound(node):
            return True
    for node in ast.walk(cls):
        if (isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store)
                and isinstance(node.value, ast.Name) and node.value.id == "self"
                and node.attr == name):
            return True
    for base in cls.bases:
        if isinstance(base, ast.Name) and base.id in module.names:
            if lookup(module, [base.id, name], depth + 1):
                return True
        elif not isinstance(base, ast.Name) or base.id not in module.names:
            return True  # a base from outside the package (Enum, Exception...): not checked
    return False
