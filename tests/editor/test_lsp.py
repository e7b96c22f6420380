"""`pinnspec lsp` driven as an editor drives it: JSON-RPC with Content-Length framing over the stdin and stdout
of a subprocess.  Diagnostics are those of `pinnspec check` (message and range), and clear when the text is
fixed; hover, completion, definition and symbols answer on specs of specs/ and examples/."""

import json
import queue
import re
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from editor_specs import ROOT

pytest.importorskip("pygls", reason="pinnspec lsp needs pygls: pip install -e '.[lsp]'")

from pinnspec.cli import main  # noqa: E402
from pinnspec.editor import declarations, uses, vocabulary  # noqa: E402
from pinnspec.lang import SpecError, loads, parse  # noqa: E402

#: a sample of the repository's specs: 1-D in time, geometry with shapes, stages and a coefficient table, an
#: inverse problem with data, a periodic embedding
SAMPLE = ["specs/burgers.pinn", "examples/plate_holes/plate_holes.pinn", "examples/burgers_stages/burgers_stages.pinn",
          "examples/coefficient_table/coefficient_table.pinn", "examples/inverse_heat/inverse_heat.pinn",
          "examples/advection_periodic/advection_periodic.pinn"]
TIMEOUT = 60


class Client:
    """A language client over a subprocess's stdin and stdout (the LSP base protocol: a Content-Length header,
    a blank line, a JSON body)."""

    def __init__(self):
        self.process = subprocess.Popen([sys.executable, "-m", "pinnspec", "lsp"], cwd=ROOT, stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.messages: queue.Queue = queue.Queue()
        self.pending: list[dict] = []
        self.ids = 0
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        stream = self.process.stdout
        while True:
            headers = {}
            while (line := stream.readline()) not in (b"\r\n", b""):
                key, _, value = line.decode("ascii").partition(":")
                headers[key.strip().lower()] = value.strip()
            if not headers:
                return
            self.messages.put(json.loads(stream.read(int(headers["content-length"]))))

    def send(self, message: dict) -> None:
        body = json.dumps({"jsonrpc": "2.0", **message}).encode("utf-8")
        self.process.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.process.stdin.flush()

    def notify(self, method: str, params: dict) -> None:
        self.send({"method": method, "params": params})

    def _next(self) -> dict:
        try:
            message = self.messages.get(timeout=TIMEOUT)
        except queue.Empty:
            raise AssertionError(f"no message from the server in {TIMEOUT} s; its stderr:\n"
                                 + self.process.stderr.read1().decode()) from None
        if "method" in message and "id" in message:  # a request of the server's (e.g. a progress token)
            self.send({"id": message["id"], "result": None})
        return message

    def request(self, method: str, params: dict):
        self.ids += 1
        self.send({"id": self.ids, "method": method, "params": params})
        while True:
            message = self._next()
            if message.get("id") == self.ids and "method" not in message:
                assert "error" not in message, message["error"]
                return message["result"]
            self.pending.append(message)

    def notification(self, method: str, uri: str) -> dict:
        """The next notification ``method`` about ``uri`` (publishDiagnostics)."""
        while True:
            for message in self.pending:
                if message.get("method") == method and message["params"].get("uri") == uri:
                    self.pending.remove(message)
                    return message["params"]
            self.pending.append(self._next())

    def close(self):
        self.request("shutdown", None)
        self.notify("exit", None)
        assert self.process.wait(timeout=TIMEOUT) == 0
        self.process.stdout.close()
        self.process.stderr.close()
        self.process.stdin.close()


@pytest.fixture(scope="module")
def client():
    c = Client()
    result = c.request("initialize", {"processId": None, "rootUri": ROOT.as_uri(), "capabilities": {
        "textDocument": {"hover": {"contentFormat": ["markdown", "plaintext"]},
                         "documentSymbol": {"hierarchicalDocumentSymbolSupport": True}}}})
    capabilities = result["capabilities"]
    assert {"hoverProvider", "completionProvider", "definitionProvider", "documentSymbolProvider"} <= set(capabilities)
    c.notify("initialized", {})
    yield c
    c.close()


def _open(client, path: Path, text: str) -> list[dict]:
    uri = path.as_uri()
    client.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "pinn", "version": 1,
                                                            "text": text}})
    return client.notification("textDocument/publishDiagnostics", uri)["diagnostics"]


def _check_output(path: Path, capsys) -> list[tuple[int, int, str, str]]:
    """(line, column, severity, message) of each diagnostic `pinnspec check` prints for ``path``."""
    main(["check", str(path)])
    found = re.findall(r"^.*?:(\d+):(\d+): (error|warning): (.*)$", capsys.readouterr().err, re.M)
    return [(int(line), int(col), severity, message) for line, col, severity, message in found]


def _located(diagnostics) -> list[tuple[int, int, str, str]]:
    severities = {1: "error", 2: "warning"}
    return sorted((d["range"]["start"]["line"] + 1, d["range"]["start"]["character"] + 1, severities[d["severity"]],
                   d["message"]) for d in diagnostics)


def test_an_error_arrives_with_checks_message_and_range_and_clears_when_fixed(client, tmp_path, capsys):
    good = (ROOT / "specs/burgers.pinn").read_text()
    bad = good.replace("u_t + u*u_x", "u_t + w*u_x").replace("loss B = walls", "loss B = wall")
    path = tmp_path / "burgers.pinn"
    path.write_text(bad)
    diagnostics = _open(client, path, bad)
    expected = _check_output(path, capsys)
    assert len(expected) == 2 and _located(diagnostics) == sorted(expected)
    with pytest.raises(SpecError) as err:
        loads(bad, filename=str(path))
    spans = {d.message: d.span for d in err.value.diagnostics}
    for d in diagnostics:
        span = spans[d["message"]]
        assert d["range"] == {"start": {"line": span.line - 1, "character": span.column - 1},
                              "end": {"line": span.end_line - 1, "character": span.end_column - 1}}
    assert any("unknown field 'w'" in d["message"] or "'w'" in d["message"] for d in diagnostics)

    client.notify("textDocument/didChange", {"textDocument": {"uri": path.as_uri(), "version": 2},
                                             "contentChanges": [{"text": good}]})
    assert client.notification("textDocument/publishDiagnostics", path.as_uri())["diagnostics"] == []


def test_a_syntax_error_and_a_warning_have_checks_ranges(client, tmp_path, capsys):
    text = (ROOT / "specs/burgers.pinn").read_text()
    for name, changed in (("syntax.pinn", text.replace("loss N = burgers", "loss N = burgers +")),
                          ("warning.pinn", text + "boundary extra on x = 1: u_x = 0\n")):
        path = tmp_path / name
        path.write_text(changed)
        diagnostics = _open(client, path, changed)
        assert diagnostics and _located(diagnostics) == sorted(_check_output(path, capsys))


def test_ranges_count_utf16_units_as_lsp_does(client, tmp_path, capsys):
    """A character outside the BMP is two UTF-16 units (the protocol's default encoding) and one column of check."""
    text = (ROOT / "specs/burgers.pinn").read_text().replace("let nu = 0.01/pi",
                                                                'let nu = table("\U0001F600.csv") + zz')
    path = tmp_path / "emoji.pinn"
    path.write_text(text, encoding="utf-8")
    diagnostics = {d["message"]: d["range"]["start"] for d in _open(client, path, text)}
    checked = {message: (line, col) for line, col, _, message in _check_output(path, capsys)}
    unknown = next(m for m in checked if "'zz'" in m)
    assert diagnostics[unknown] == {"line": checked[unknown][0] - 1, "character": checked[unknown][1]}  # col - 1 + 1


def test_a_file_outside_the_domain_is_warned_on_open(client, capsys):
    path = ROOT / "tests/engine/data/hole_plate.pinn"
    diagnostics = _open(client, path, path.read_text())
    main(["check", str(path)])
    printed = capsys.readouterr().err
    assert [d["message"] for d in diagnostics] == re.findall(r"warning: (.*)$", printed, re.M)
    reference = next(st for st in parse(path.read_text()).statements if st.keyword == "reference")
    assert diagnostics[0]["range"]["start"]["line"] == reference.span.line - 1


@pytest.mark.parametrize("spec", SAMPLE)
def test_symbols_hover_definition_on_a_spec(client, spec):
    path = ROOT / spec
    text = path.read_text()
    assert _open(client, path, text) == []  # the repository's specs check without errors or warnings
    uri = path.as_uri()
    tree = parse(text, str(path))
    declared = declarations(tree)

    symbols = client.request("textDocument/documentSymbol", {"textDocument": {"uri": uri}})
    assert [(s["name"], s["selectionRange"]["start"]["line"] + 1) for s in symbols] == [
        (d.name, d.span.line) for d in declared]

    for d in declared:
        position = {"line": d.span.line - 1, "character": d.span.column}
        hover = client.request("textDocument/hover", {"textDocument": {"uri": uri}, "position": position})
        assert f"`{d.name}`" in hover["contents"]["value"], (d, hover)
        if d.kind == "let":
            assert "SymPy: `" in hover["contents"]["value"]

    keywords = set(vocabulary().statement_keywords)
    for statement in tree.statements[:3]:  # at a statement's start: the statement keywords
        items = client.request("textDocument/completion", {"textDocument": {"uri": uri}, "position": {
            "line": statement.span.line - 1, "character": statement.span.column - 1}})["items"]
        assert {item["label"] for item in items} == keywords

    first = {}
    for d in declared:
        first.setdefault(d.name, d)
    referring = [u for u in uses(tree) if u.name in first and u.span not in {d.span for d in declared}]
    assert referring
    for use in referring:
        target = first[use.name]
        if target.kind == "problem":
            continue
        location = client.request("textDocument/definition", {"textDocument": {"uri": uri}, "position": {
            "line": use.span.line - 1, "character": use.span.column - 1}})
        assert location["uri"] == uri
        assert location["range"]["start"] == {"line": target.span.line - 1, "character": target.span.column - 1}


def _complete(client, path: Path, text: str, line: int, character: int) -> dict[str, dict]:
    uri = path.as_uri()
    client.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "pinn", "version": 1,
                                                            "text": text}})
    client.notification("textDocument/publishDiagnostics", uri)
    result = client.request("textDocument/completion", {"textDocument": {"uri": uri},
                                                        "position": {"line": line, "character": character}})
    return {item["label"]: item for item in result["items"]}


def test_completion_by_context(client, tmp_path):
    words = vocabulary()
    base = (ROOT / "specs/burgers.pinn").read_text()
    lines = base.count("\n")
    cases = [
        ("", 0, set(words.statement_keywords)),  # a new statement
        ("surgery ", 8, set(words.calls["surgery"])),
        ("optimizer adam(", 15, set(words.calls["optimizer"]["adam"])),
        ("model mlp(width = 20, activation = ", 35, {"tanh", "sin", "gelu", "silu"}),
        ("train ", 6, set(words.settings["train"])),
        ("stage lbfgs(history = 5) ", 25, set(words.settings["stage"])),
        ("shape hole = disk(", 18, {"center", "radius"}),
        ("report r = mean(walls, ", 23, {"u", "nu", "x", "t", "sin", "pi", "burgers", "walls"}),
    ]
    for i, (typed, column, expected) in enumerate(cases):
        path = tmp_path / f"complete{i}.pinn"
        items = _complete(client, path, base + typed + "\n", lines, column)
        assert expected <= set(items), (typed, sorted(items))
    items = _complete(client, tmp_path / "kinds.pinn", base + "surgery \n", lines, 8)
    assert items["cagrad"]["detail"] == "cagrad(c = 0.5)"


def test_the_server_loads_no_torch():
    code = ("import sys\nfrom pinnspec.editor import serve\nfrom pinnspec.editor._analysis import analyze\n"
            "a = analyze(open('specs/burgers.pinn').read(), 'specs/burgers.pinn', files=True)\n"
            "a.hover(18, 33); a.completions(30, 1); a.symbols()\n"
            "assert 'torch' not in sys.modules, 'torch'\n")
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True)


def test_without_pygls_the_command_says_what_to_install():
    code = ("import sys\nsys.modules['pygls'] = None\nfrom pinnspec.cli import main\nsys.exit(main(['lsp']))\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 1
    assert "pip install 'pinnspec[lsp]'" in out.stderr and "Traceback" not in out.stderr
