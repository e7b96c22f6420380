"""The TextMate grammar (editors/vscode/syntaxes/pinn.tmLanguage.json) scopes every spec of the repository as
its golden file says, tokenized as VS Code tokenizes (vscode-textmate with oniguruma, under Node).

The golden files (golden/*.scopes: one line per token, ``LINE:COLUMN-END SCOPE TEXT``) hold the scopes of the
tokenizer behind the Pygments lexer and the language server (:func:`pinnspec.editor.tokens`), whose
declarations the lexer's tests check against the syntax tree: two implementations of one classification, one
in Python, one in TextMate's regular expressions.  Regenerate them with PINNSPEC_UPDATE_GOLDEN=1 after an
intended change, and review the diff.  The Node packages install with `make editor`."""

import json
import os
import shutil
import subprocess
import zipfile

import pytest
from editor_specs import ROOT, spec_files

from pinnspec.editor import tokens
from pinnspec.editor import textmate_grammar
from pinnspec.editor._textmate import SCOPES

SPECS = spec_files()
VSCODE = ROOT / "editors" / "vscode"
GRAMMAR = VSCODE / "syntaxes" / "pinn.tmLanguage.json"
GOLDEN = ROOT / "tests" / "editor" / "golden"


def _golden_path(path):
    return GOLDEN / (str(path.relative_to(ROOT)).replace(os.sep, "__") + ".scopes")


def _expected(text: str) -> list[str]:
    """``LINE:COLUMN-END SCOPE TEXT`` of every token but spaces (1-based line, 0-based columns)."""
    lines = []
    for token in tokens(text):
        if token.kind == "space":
            continue
        line = text.count("\n", 0, token.offset) + 1
        column = token.offset - (text.rfind("\n", 0, token.offset) + 1)
        lines.append(f"{line}:{column}-{column + len(token.text)} {SCOPES[token.kind]} {token.text}")
    return lines


def test_the_grammar_file_is_generated_from_the_vocabulary():
    assert json.loads(GRAMMAR.read_text()) == textmate_grammar(), (
        "editors/vscode/syntaxes/pinn.tmLanguage.json is stale: make editor-grammar")


@pytest.mark.parametrize("path", SPECS, ids=lambda p: str(p.relative_to(ROOT)))
def test_golden_scopes_are_the_tokenizers(path):
    expected = _expected(path.read_text(encoding="utf-8"))
    golden = _golden_path(path)
    if os.environ.get("PINNSPEC_UPDATE_GOLDEN"):
        golden.parent.mkdir(exist_ok=True)
        golden.write_text("\n".join(expected) + "\n", encoding="utf-8")
    assert golden.read_text(encoding="utf-8").splitlines() == expected


def test_every_golden_file_has_its_spec():
    assert sorted(GOLDEN.glob("*.scopes")) == sorted(_golden_path(p) for p in SPECS)


def _skip_without_node_modules():
    if shutil.which("node") is None:
        pytest.skip("Node is not installed (VS Code's tokenizer and vsce run under Node)")
    if not (VSCODE / "node_modules" / "vscode-textmate").is_dir():
        pytest.skip("the extension's Node packages are not installed: make editor (npm ci in editors/vscode)")


@pytest.fixture(scope="module")
def textmate_tokens():
    _skip_without_node_modules()
    out = subprocess.run(["node", "test/tokenize.js", *map(str, SPECS)], cwd=VSCODE, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


@pytest.mark.parametrize("path", SPECS, ids=lambda p: str(p.relative_to(ROOT)))
def test_vscode_textmate_gives_the_golden_scopes(path, textmate_tokens):
    scope_at = {}  # (line, column) -> the innermost scope there
    for line, start, end, scope in textmate_tokens[str(path)]:
        for column in range(start, end):
            scope_at[(line, column)] = scope
    wrong = []
    for entry in _golden_path(path).read_text(encoding="utf-8").splitlines():
        place, scope, text = entry.split(" ", 2)
        line, _, columns = place.partition(":")
        start, _, end = columns.partition("-")
        found = {scope_at.get((int(line), c)) for c in range(int(start), int(end))}
        if found != {scope}:
            wrong.append(f"{place} {text!r}: golden {scope}, vscode-textmate {sorted(map(str, found))}")
    assert wrong == []


def test_the_extension_packages_as_a_vsix(tmp_path):
    _skip_without_node_modules()
    out = subprocess.run(["npx", "--no-install", "vsce", "package", "--skip-license",
                          "--allow-missing-repository", "--out",
                          str(tmp_path / "pinnspec.vsix")], cwd=VSCODE, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    with zipfile.ZipFile(tmp_path / "pinnspec.vsix") as vsix:
        names = set(vsix.namelist())
        manifest = json.loads(vsix.read("extension/package.json"))
    assert {"extension/extension.js", "extension/syntaxes/pinn.tmLanguage.json",
            "extension/language-configuration.json", "extension/node_modules/vscode-languageclient/package.json"} <= names
    assert not any(n.startswith("extension/test/") for n in names)
    assert manifest["contributes"]["grammars"][0]["path"] == "./syntaxes/pinn.tmLanguage.json"
    assert manifest["contributes"]["configuration"]["properties"]["pinnspec.command"]["default"] == ["pinnspec", "lsp"]
