"""The `.pinn` texts of the repository the editor tests run on: every spec file and every ```pinn block of the
docs."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
_SKIP = {".git", "node_modules", "runs", ".venv"}
FENCE = re.compile(r"^```pinn\s*\n(.*?)^```\s*$", re.S | re.M)


def spec_files() -> list[Path]:
    """Every .pinn file of the checkout (specs/, examples/, benchmarks/, the tests' data)."""
    return sorted(p for p in ROOT.rglob("*.pinn") if not _SKIP & set(p.relative_to(ROOT).parts))


def doc_blocks() -> list[tuple[str, str]]:
    """(DOC:LINE, text) of every ```pinn block of README.md and docs/*.md."""
    found = []
    for doc in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        text = doc.read_text(encoding="utf-8")
        for match in FENCE.finditer(text):
            found.append((f"{doc.name}:{text.count(chr(10), 0, match.start()) + 1}", match.group(1)))
    return found
