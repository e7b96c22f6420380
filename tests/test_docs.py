"""Specs shown in the docs are real.

* docs/reference.md and docs/language.md mark every complete spec with the
  info string ``pinn`` (a fence opened with three backticks and ``pinn``);
  each such block checks without errors, and no other block of theirs starts
  with ``problem`` and goes on (a full spec cannot slip past this test
  unmarked; the syntax line ``problem NAME`` alone is a fragment).
* README.md: every plain code block that starts with ``problem`` (or
  ``# comment`` lines and then ``problem``) checks without errors.
"""

import re
from pathlib import Path

import pytest

from pinnspec.lang import loads

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
MARKED = [ROOT / "docs" / "reference.md", ROOT / "docs" / "language.md"]
FENCE = re.compile(r"^(\s*)```(\S*)\s*$")


def _blocks(doc: Path):
    """(info string, text) of every fenced code block of ``doc``, in order."""
    info, lines = None, []
    for line in doc.read_text(encoding="utf-8").splitlines():
        fence = FENCE.match(line)
        if info is None:
            if fence:
                info, lines = fence.group(2), []
        elif fence and not fence.group(2):
            yield info, "\n".join(lines) + "\n"
            info = None
        else:
            lines.append(line)
    assert info is None, f"{doc.name}: a code block is never closed"


def _starts_with_problem(block: str) -> bool:
    lines = [ln for ln in block.splitlines() if ln.strip() and not ln.lstrip().startswith("#")]
    return bool(lines) and lines[0].startswith("problem ")


def _spec_blocks():
    for i, (info, block) in enumerate(_blocks(README)):
        if info == "" and _starts_with_problem(block):
            yield pytest.param(block, id=f"{README.name}-{i}")
    for doc in MARKED:
        for i, (info, block) in enumerate(_blocks(doc)):
            if info == "pinn":
                yield pytest.param(block, id=f"{doc.name}-{i}")


@pytest.mark.parametrize("block", list(_spec_blocks()))
def test_spec_in_docs_checks(block):
    loads(block, filename="doc.pinn", base_dir=str(ROOT))


@pytest.mark.parametrize("doc", MARKED, ids=lambda d: d.name)
def test_full_specs_are_marked(doc):
    unmarked = [block for info, block in _blocks(doc)
                if info != "pinn" and _starts_with_problem(block) and len(block.strip().splitlines()) > 1]
    assert not unmarked, f"{doc.name}: mark complete specs with ```pinn:\n" + "\n---\n".join(unmarked)


@pytest.mark.parametrize("doc", MARKED, ids=lambda d: d.name)
def test_docs_have_spec_blocks(doc):
    assert any(info == "pinn" for info, _ in _blocks(doc))


@pytest.mark.parametrize("doc", MARKED + [README], ids=lambda d: d.name)
def test_docs_cite_no_internal_notes(doc):
    """The docs stand alone: they point to files a user of the project has."""
    text = doc.read_text(encoding="utf-8")
    assert not re.search(r"DESIGN\.md|LANGUAGE\.md", text)
