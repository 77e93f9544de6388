"""Every reference in the repository resolves, and nothing cites what is outside it.

Each check fails with one line per broken reference, ``file:line: what is wrong``.

(a) Links. In every ``*.md``, a markdown link or image ``[text](target)`` (and a reference
    definition ``[name]: target``) to a local target must name a file or folder that exists,
    relative to the page (``/x``: from the repository's root). A ``#anchor`` on a ``.md``
    target (or alone, on the page itself) must be the GitHub slug of one of that page's
    headings (lower case; characters other than letters, digits, ``_``, ``-`` and spaces
    dropped; spaces to ``-``; a repeated heading gets ``-1``, ``-2``...). Links inside code
    (fenced blocks, inline spans) are not links. URLs (``scheme:``) are not checked.

(b) Paths. In code (comments, docstrings, strings), docs and build files (``PATH_FILES``), a
    mention of a repository path must exist. A mention is a token with a slash that ends in a
    file suffix of ``SUFFIXES`` (``service/cycle.py``, ``docs/user/api.md``), or that starts
    with one of the repository's top-level folders (``examples/workloads/``,
    ``tests/containers``). Not mentions: absolute and home paths, URLs, placeholders
    (``<state_dir>/logs``, ``{name}``, ``...``), a link's target (that is (a)), what
    (d) reports, and ``NOT_PATHS`` (image names, files made at run time). A mention resolves
    when it names, first match wins:
      1. a path from the repository's root (``docs/user/api.md``, ``tests/conftest.py``);
      2. a path from the mentioning file's own folder (``results/`` in ``docs/results.md``);
      3. the end of a repository path: the module-relative form the package's docstrings
         and the design docs use (``service/cycle.py``, ``arbitration/incremental.py``).
    A folder-form mention may leave out a module's ``.py`` and name an attribute after it
    (``tests/sparkcluster.APP_SOURCE``). A ``*`` is a glob that must match at least one file.
    A bare ``name.md`` (no folder) must be the name of a file somewhere in the repository.
    ``COMMIT:path`` (``344f512:sessionsched/server/api.py``) names a file as it was at that
    commit. A page cited with a section -- ``docs/operator/usage.md, "How the figures are
    timed"``, ``README, "Quick start"``, ``results.md, section 4`` -- must have it: a heading
    whose slug starts with the quoted text's (a number: a heading that starts with it), or the
    quoted text as an emphasised lead-in (``*No launch pacing*``) or a code span (a field).
    This file's own examples are not read.

(c) Code names, in every ``*.md``: ``module.py:Name``, ``module.py:Class.member`` and dotted
    ``sessionsched.module.Name`` must exist, read from the module's source with ``ast`` (not
    imported): a top-level definition, assignment or import of the module, then members of a
    class (its body, ``self.x`` assignments in its methods, and its bases' members), following
    an import from another sessionsched module. ``module.py`` resolves as a path does in (b),
    and a bare name (``cli.py``) also as ``sessionsched/<name>``. ``NOT_CODE`` lists dotted
    names that are not modules (loggers).

In (b) and (c), a markdown section whose heading names a commit in backticks (``### Before
(`344f512`)``) describes the code as it was at that commit: its paths and names are checked
against that commit's tree (``git show``), or not at all where the commit is not in the
repository (a shallow clone).

(d) Citations of what is not in the repository: ``CITATIONS``, in ``CITING_FILES``. The
    repository must stand on its own, so a comment or a page says the reason itself instead.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterator
from pathlib import PurePosixPath

import pytest

from tests.repo_reader import (
    INLINE_CODE,
    Module,
    Tree,
    anchors,
    code_spans,
    commit_tree,
    emphasised,
    headings,
    lookup,
    md_lines,
    module_of,
    normalise,
    repo_files,
    slug,
    text_of,
    work_tree,
)

THIS = PurePosixPath("tests/test_references.py")

# --- which files each check reads -------------------------------------------------------------

SUFFIXES = ("py", "md", "yaml", "yml", "toml", "json", "sh", "ipynb", "conf", "txt", "png", "jar",
            "cfg", "ini", "properties", "html", "js", "css")
TEXT_SUFFIXES = {".py", ".md", ".yaml", ".yml", ".toml", ".sh", ".conf", ".txt", ".cfg", ".ini"}
BUILD_FILES = {"Makefile", "Dockerfile", ".ci/run", ".dockerignore"}


def path_file(path: PurePosixPath) -> bool:
    """(b) reads code, docs and build files."""
    if path == THIS:
        return False
    return path.suffix in TEXT_SUFFIXES or path.name in BUILD_FILES or str(path) in BUILD_FILES


# Path-like words that are not the repository's files.
NOT_PATHS = {
    "sessionsched/spark": "an image's name (docker/compose.yaml)",
    "sessionsched/sessionsched": "an image's name (docker/compose.yaml)",
    "sessionsched/debian": "an image's name (docker/base.sh)",
    "connect/SID.json": "a file the Connect door writes in the server's state_dir",
    "dir/app.py": "a file a test makes in its temporary folder",
    "lib/helper.py": "a file a test makes in its temporary folder",
    "bin/load-spark-env.sh": "a script of Spark's own distribution",
    "docker/ca-certificates/build-host.crt": "made by the container tests for their build",
}


CITING_TOPS = ("sessionsched/", "tests/", "benchmarks/", "examples/", "docs/")
CITING_NAMES = {"README.md", "CONTRIBUTING.md", "Makefile"}


def citing_file(path: PurePosixPath) -> bool:
    """(d) reads the package, tests, benchmarks, examples, docs and the top's own pages."""
    if path == THIS or path.suffix in {".png", ".json", ".jar"}:
        return False
    return str(path) in CITING_NAMES or str(path).startswith(CITING_TOPS)


# --- (d): what is outside the repository -------------------------------------------------------

CITATIONS: list[tuple[str, re.Pattern[str]]] = [
    ("a design document outside the repository", re.compile(r"\bDESIGN\.md\b", re.I)),
    ("a reference document outside the repository",
     re.compile(r"(?<![\w-])reference/[\w.-]+\.md\b", re.I)),
    ("a shared folder outside the repository", re.compile(r"(?<![\w.-])(?<!//)shared/", re.I)),
    ("an issue by its number", re.compile(r"\bissues?\s+#?\d+", re.I)),
    # A seed document's number is three digits (seed 003, seed000-...); a random seed is not.
    ("a seed document by its number", re.compile(r"\bseeds?[\s_-]?\d{3}\b", re.I)),
]

# Dotted names in docs that look like modules and are not.
NOT_CODE = {
    "sessionsched.audit": "the audit log's logger",
    "sessionsched.usage": "the app summaries' logger",
    "sessionsched.notebook": "the notebook API's logger",
    "sessionsched.auth": "the access checks' logger",
}

def resolve(mention: str, where: PurePosixPath, tree: Tree) -> str | None:
    """(b)'s rule: the repository path ``mention`` names, or None."""
    mention = mention.rstrip("/")
    for base in ("", str(where.parent)):
        candidate = normalise(f"{base}/{mention}" if base not in ("", ".") else mention)
        if candidate is None:
            continue
        if "*" in candidate:
            if tree.glob(candidate):
                return candidate
        elif tree.exists(candidate):
            return candidate
    if not mention.startswith(("../", "./")):
        return tree.ending(mention)
    return None


# --- (a) links ---------------------------------------------------------------------------------

LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REF_DEF = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)")
SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")


def link_targets(line: str) -> Iterator[str]:
    line = INLINE_CODE.sub("", line)
    yield from (m.group(1) for m in LINK.finditer(line))
    if m := REF_DEF.match(line):
        yield m.group(1)


def broken_link(target: str, page: PurePosixPath) -> str | None:
    if SCHEME.match(target):
        return None
    path, _, anchor = target.partition("#")
    if not path:
        dest = str(page)
    else:
        rooted = path.startswith("/")
        dest = normalise(path[1:] if rooted else str(PurePosixPath(page.parent, path)))
        if dest is None or not work_tree().exists(dest):
            return f"link to {target}: no such file"
    if anchor and dest.endswith(".md") and anchor not in anchors(dest):
        return f"link to {target}: no heading #{anchor} in {dest}"
    return None


def check_links() -> Iterator[str]:
    for page in repo_files():
        if page.suffix != ".md":
            continue
        for n, line, fenced, _ in md_lines(work_tree().read(str(page))):
            if fenced:
                continue
            for target in link_targets(line):
                if why := broken_link(target, page):
                    yield f"{page}:{n}: {why}"


# --- (b) paths ---------------------------------------------------------------------------------


@functools.cache
def top_folders() -> tuple[str, ...]:
    return tuple(sorted({f.parts[0] for f in repo_files() if len(f.parts) > 1}))


def path_mention() -> re.Pattern[str]:
    suffix = "|".join(SUFFIXES)
    tops = "|".join(re.escape(t) for t in top_folders())
    return re.compile(
        r"(?<![\w./~$<>{}@%*:=-])"  # not inside a longer path, a URL, a variable, a placeholder
        rf"((?:\.\./)*(?:(?:[\w*-][\w.*-]*/)+[\w*-][\w.*-]*\.(?:{suffix})(?![\w/])"
        rf"|(?:{tops})/(?:[\w*-][\w.*-]*/?)*))"
    )


BARE_MD = re.compile(r"(?<![\w./~$<>{}@%*:=-])([\w-][\w.-]*\.md)\b(?![/\w])")
# A page cited with its section: `X.md, "Heading"`, `README, "Heading"`, `X.md, section 4`.
SECTION = re.compile(r"""^`?\)?`?,\s+(?:"([^"]+)"|section\s+(\d+)|\*([^*]+)\*)""")
README_SECTION = re.compile(r"""(?<![\w./])(README)(?!\.md),\s+(?:"([^"]+)"|section\s+(\d+))""")


def cited_section(page: str, quoted: str | None, number: str | None) -> str | None:
    """Why ``page``'s cited section is not there, or None."""
    if not page.endswith(".md"):
        return None
    if number is not None:
        if not any(h.startswith((f"{number}.", f"{number} ")) for h in headings(page)):
            return f"{page} has no section {number}"
        return None
    quoted = " ".join(quoted.split())
    if any(slug(h).startswith(slug(quoted)) for h in headings(page)):
        return None
    if quoted in code_spans(page) or quoted in emphasised(page):
        return None
    return f'{page} has no heading "{quoted}"'


def paths_in(path: PurePosixPath, text: str) -> Iterator[tuple[int, str, str | None, str]]:
    """(line, mention, commit, text after the mention) of every path mention in a file."""
    is_md = path.suffix == ".md"
    pattern = path_mention()
    lines = md_lines(text) if is_md else ((n, ln, False, None)
                                          for n, ln in enumerate(text.splitlines(), 1))
    for n, line, _, commit in lines:
        if is_md:  # a link's target is (a)'s
            line = re.sub(r"\]\([^)]*\)", "]", line)
        line = AT_COMMIT.sub(" ", line)  # checked at their commit
        for m in pattern.finditer(line):
            mention = m.group(1).rstrip(".,;:-")
            if any(c in mention for c in "<>{}") or "..." in mention.replace("../", ""):
                continue
            yield n, mention, commit, line[m.end():]
        for m in BARE_MD.finditer(line):
            yield n, m.group(1), commit, line[m.end():]


AT_COMMIT = re.compile(r"(?<![\w/])([0-9a-f]{7,40}):((?:[\w.-]+/)*[\w.-]+)")


def resolve_folder_form(mention: str, path: PurePosixPath, tree: Tree) -> str | None:
    """A mention as written, or a module named without its ``.py`` (and maybe an attribute)."""
    if found := resolve(mention, path, tree):
        return found
    head, _, last = mention.rpartition("/")
    if not head or last.rsplit(".", 1)[-1] in SUFFIXES:
        return None
    return resolve(f"{head}/{last.split('.', 1)[0]}.py", path, tree)


def check_paths() -> Iterator[str]:
    for path in repo_files():
        if not path_file(path) or (text := text_of(path)) is None:
            continue
        for n, line in enumerate(text.splitlines(), 1):
            for m in AT_COMMIT.finditer(line):
                tree = commit_tree(m.group(1))
                if tree is not None and not tree.exists(m.group(2)):
                    yield f"{path}:{n}: {m.group(0)}: no such file or folder at that commit"
        for n, mention, commit, after in paths_in(path, text):
            if mention in NOT_PATHS or any(p.search(mention) for _, p in CITATIONS):
                continue
            tree = work_tree() if commit is None else commit_tree(commit)
            if tree is None:
                continue
            if "/" not in mention:
                if mention not in tree.names:
                    yield f"{path}:{n}: {mention}: no file of that name"
                continue
            found = resolve_folder_form(mention, path, tree)
            if found is None:
                at = f" at {commit}" if commit else ""
                yield f"{path}:{n}: {mention}: no such file or folder{at}"
            elif commit is None and (m := SECTION.match(after)):
                if why := cited_section(found, m.group(1) or m.group(3), m.group(2)):
                    yield f"{path}:{n}: {why}"
        for n, line in enumerate(text.splitlines(), 1):
            for m in README_SECTION.finditer(line):
                if why := cited_section("README.md", m.group(2), m.group(3)):
                    yield f"{path}:{n}: {why}"


# --- (c) code names ----------------------------------------------------------------------------

MODULE_NAME = re.compile(r"(?<![\w/.-])((?:[\w.-]+/)*\w+\.py):([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)")
DOTTED = re.compile(r"(?<![\w./-])(sessionsched(?:\.[A-Za-z_]\w*)+)(?![\w/-])")
FILE_SUFFIXES = {"yaml", "yml", "json", "md", "py", "conf", "toml", "io"}


def module_file(mention: str, page: PurePosixPath, tree: Tree) -> str | None:
    found = resolve(mention, page, tree)
    if found and found.endswith(".py"):
        return found
    return None


def check_code_names() -> Iterator[str]:
    for page in repo_files():
        if page.suffix != ".md":
            continue
        for n, line, _, commit in md_lines(work_tree().read(str(page))):
            tree = work_tree() if commit is None else commit_tree(commit)
            if tree is None:
                continue
            at = f" at {commit}" if commit else ""
            for m in MODULE_NAME.finditer(line):
                mention, chain = m.group(1), m.group(2).split(".")
                found = module_file(mention, page, tree)
                if found is None:
                    if "/" not in mention:  # with a folder, (b) reports it
                        yield f"{page}:{n}: {mention}:{m.group(2)}: no module {mention}{at}"
                elif not lookup(Module(found, tree), chain):
                    yield f"{page}:{n}: {mention}:{m.group(2)}: not in {found}{at}"
            for m in DOTTED.finditer(line):
                dotted = m.group(1)
                parts = dotted.split(".")
                if dotted in NOT_CODE or parts[-1] in FILE_SUFFIXES:
                    continue
                for i in range(len(parts), 0, -1):
                    module = module_of(".".join(parts[:i]), tree)
                    if module is not None:
                        if not lookup(module, parts[i:]):
                            yield f"{page}:{n}: {dotted}: not in {module.path}{at}"
                        break


# --- (d) citations -----------------------------------------------------------------------------


def check_citations() -> Iterator[str]:
    for path in repo_files():
        if not citing_file(path) or (text := text_of(path)) is None:
            continue
        for n, line in enumerate(text.splitlines(), 1):
            for what, pattern in CITATIONS:
                for m in pattern.finditer(line):
                    yield f"{path}:{n}: {m.group(0)!r}: {what}; say the reason itself"


# --- the tests ---------------------------------------------------------------------------------

CHECKS: dict[str, Callable[[], Iterator[str]]] = {
    "links": check_links,
    "paths": check_paths,
    "code_names": check_code_names,
    "citations": check_citations,
}


def _by_place(line: str) -> tuple[str, int, str]:
    path, n, rest = line.split(":", 2)
    return path, int(n), rest


@pytest.mark.parametrize("check", CHECKS)
def test_every_reference_resolves(check: str) -> None:
    broken = sorted(set(CHECKS[check]()), key=_by_place)
    assert not broken, f"{len(broken)} broken ({check}):\n" + "\n".join(broken)


@pytest.mark.parametrize(("heading", "anchor"), [
    ("Workers: fit per worker", "workers-fit-per-worker"),
    ("(a) `sessionsched priority ID 9000`, to the agent's reclaim",
     "a-sessionsched-priority-id-9000-to-the-agents-reclaim"),
    ("4. The Spark Connect door", "4-the-spark-connect-door"),
    ("Register — `POST /api/v1/agent/register`", "register--post-apiv1agentregister"),
    ("Bounded cycles (§2): figures", "bounded-cycles-2-figures"),
])
def test_slugs_are_githubs(heading: str, anchor: str) -> None:
    assert slug(heading) == anchor
