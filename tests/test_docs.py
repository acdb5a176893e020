"""The documentation as a reader meets it (issue 32): a README front door, guides in `docs/`, one-page
decisions numbered whole, and no path named that the repository does not hold."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
ADRS = sorted((ROOT / "docs" / "adr").glob("*.md"))
_FENCE = re.compile(r"^```.*?^```", re.M | re.S)
_SPAN = re.compile(r"`([^`\n]+)`")
_LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
_PART_OF_A_PATH = re.compile(r"<[^>]*>|\{[^}]*\}|…")  # a placeholder: any name fits


def _docs() -> list[Path]:
    """The README and every page under `docs/` (the CHANGELOG records what was, paths included)."""
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def _sh_blocks(section: str) -> list[str]:
    return re.findall(r"```sh\n(.*?)```", section, re.S)


def test_the_readme_is_a_front_door_of_at_most_200_lines() -> None:
    """Issue 32 (DESIGN, "Comments, docs, decisions"): the README is a front door, at most about 200
    lines; guides, the configuration reference and the figures live in `docs/`."""
    assert len((ROOT / "README.md").read_text().splitlines()) <= 200


def test_the_quick_start_runs_the_suite_exactly_as_ci_does() -> None:
    """Issue 32: the README's second Quick start command is the one `.ci/run` runs, word for word."""
    section = (ROOT / "README.md").read_text().split("\n## Quick start", 1)[1].split("\n## ", 1)[0]
    blocks = _sh_blocks(section)
    ci = [line for line in (ROOT / ".ci" / "run").read_text().splitlines() if line and not line.startswith("#")]
    assert len(blocks) == 2 and shlex.split(blocks[1]) == shlex.split(ci[-1])


def _named_paths(doc: Path) -> list[tuple[str, Path]]:
    """What a page names as a place in the repository: a link's target (relative to the page), and a
    span in backticks that starts at the repository's top (`schemas/...`) or in the package
    (`chain/compose.py`, read under `mcp_server/`). What runs write (`runs/...`) is no such place."""
    text = _FENCE.sub("", doc.read_text())
    top = {p.name for p in ROOT.iterdir()} - {"runs", ".git", ".venv", ".cache"}
    parts = {p.name for p in (ROOT / "mcp_server").iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    named = []
    for target in _LINK.findall(text):
        if not re.match(r"^([a-z][a-z0-9+.-]*:|#)", target):
            named.append((target, doc.parent / target.split("#", 1)[0]))
    for span in _SPAN.findall(text):
        first = span.split("/", 1)[0]
        if " " in span or span.startswith(("/", "~", "$")) or first.startswith("-"):
            continue
        if first in top and ("/" in span or "." in span):
            named.append((span, ROOT / span))
        elif first in parts and "/" in span:
            named.append((span, ROOT / "mcp_server" / span))
    return named


def _exists(path: Path) -> bool:
    pattern = _PART_OF_A_PATH.sub("*", str(path.relative_to(ROOT) if path.is_relative_to(ROOT) else path))
    if "*" in pattern:
        return any(ROOT.glob(pattern.rstrip("/")))
    return path.exists()


def _anchors(page: Path) -> set[str]:
    """The anchors a page's headings make, as GitHub makes them."""
    headings = re.findall(r"^#+ (.+)$", _FENCE.sub("", page.read_text()), re.M)
    return {re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-") for heading in headings}


@pytest.mark.parametrize("doc", _docs(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_path_a_doc_names_exists(doc: Path) -> None:
    """Issue 32: a page that names a file, a folder or a link target names one the repository holds,
    and a link to a heading of a page finds it (the README pointed at a test file that had moved;
    ADRs cited paths that no longer exist)."""
    missing = [name for name, path in _named_paths(doc) if not _exists(path.resolve())]
    for target in _LINK.findall(_FENCE.sub("", doc.read_text())):
        page, _, anchor = target.partition("#")
        linked = (doc.parent / page).resolve() if page else doc
        if anchor and linked.suffix == ".md" and linked.exists() and anchor not in _anchors(linked):
            missing.append(target)
    assert missing == []


def _adr_number(path: Path) -> int:
    return int(path.name.split("-", 1)[0])


# Numbers given to decisions whose records are written elsewhere and not yet in this folder: a
# number is given when a decision is taken, so it may arrive after a later one.
_GIVEN_ELSEWHERE: frozenset[int] = frozenset()


def test_the_adrs_are_numbered_whole() -> None:
    """Issue 32: the decision records run 1, 2, 3, ... with no number missing (22 was) or used twice,
    and each page's title carries its file's number."""
    numbers = [_adr_number(path) for path in ADRS]
    assert len(numbers) == len(set(numbers))
    assert set(range(1, max(numbers) + 1)) - set(numbers) <= _GIVEN_ELSEWHERE
    for path in ADRS:
        assert path.read_text().startswith(f"# {_adr_number(path)}. "), path.name


def _status(path: Path) -> str:
    found = re.search(r"^- Status: (.+)$", path.read_text(), re.M)
    assert found is not None, f"{path.name} has no status line"
    return found.group(1)


@pytest.mark.parametrize("adr", ADRS, ids=lambda p: p.name)
def test_each_adr_is_one_page_with_status_date_and_its_parts(adr: Path) -> None:
    """Issue 32 (DESIGN): an ADR is one page, about 60 lines: its status, date, context, decision and
    consequences (and the options it considered, where the record kept them)."""
    text = adr.read_text()
    assert len(text.splitlines()) <= 60
    assert _status(adr) and re.search(r"^- Date: \d{4}-\d{2}-\d{2}", text, re.M)
    for heading in ("Context", "Decision", "Consequences"):
        assert re.search(rf"^## {heading}\b", text, re.M), heading


def test_a_superseded_adr_names_a_later_one_that_replaces_it() -> None:
    """Issue 32: an ADR a later one replaces says so in its status line and names it (ADR 1's chain
    and ADR 10's rows in C no longer exist)."""
    numbers = {_adr_number(path) for path in ADRS}
    superseded = {}
    for path in ADRS:
        status = _status(path)
        if status.lower().startswith("superseded"):
            by = re.findall(r"ADR (\d+)", status)
            assert by and all(int(n) in numbers and int(n) > _adr_number(path) for n in by), status
            superseded[_adr_number(path)] = status
    assert {1, 10} <= set(superseded)
