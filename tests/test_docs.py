"""Specs shown in the docs are real: every code block that starts with
`problem` (or a `# comment` line and then `problem`) checks without errors."""

import re
from pathlib import Path

import pytest

from pinnspec.lang import loads

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", ROOT / "docs" / "language.md"]


def _spec_blocks():
    for doc in DOCS:
        for i, block in enumerate(re.findall(r"```\n(.*?)```", doc.read_text(), re.S)):
            lines = [ln for ln in block.splitlines() if ln.strip() and not ln.lstrip().startswith("#")]
            if lines and lines[0].startswith("problem "):
                yield pytest.param(block, id=f"{doc.name}-{i}")


@pytest.mark.parametrize("block", list(_spec_blocks()))
def test_spec_in_docs_checks(block):
    loads(block, filename="doc.pinn", base_dir=str(ROOT))


def test_docs_have_spec_blocks():
    assert len(list(_spec_blocks())) >= 2
