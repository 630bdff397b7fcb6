"""`dynalint lsp`, driven as an editor drives it: a real subprocess spoken to over its pipes."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("pygls")

from dynalint import rule_url  # noqa: E402
from dynalint.config import Config  # noqa: E402
from dynalint.run.engine import lint_source  # noqa: E402
from dynalint.autofix import fix_source  # noqa: E402

from .lsp_client import LspClient  # noqa: E402

MODEL = textwrap.dedent(
    """\
    import torch
    from torch import nn


    class Net(nn.Module):
        def forward(self, x):
            y = x.relu()
            print(y.shape)
            if y.sum() > 0:
                y = y * 2
            return y
    """
)
PRINT_LINE = 7  # 0-based line of `print(...)` in MODEL
RESOLVE_EDITS = {"textDocument": {"codeAction": {"resolveSupport": {"properties": ["edit"]}}}}


def start(root: Path, command=None) -> LspClient:
    return LspClient(command or [sys.executable, "-m", "dynalint.lsp"], cwd=root)


def open_doc(client: LspClient, path: Path, text: str, version: int = 1) -> str:
    path.write_text(text)
    uri = path.as_uri()
    client.notify(
        "textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "python", "version": version, "text": text}}
    )
    return uri


def change(client: LspClient, uri: str, text: str, version: int) -> None:
    client.notify(
        "textDocument/didChange",
        {"textDocument": {"uri": uri, "version": version}, "contentChanges": [{"text": text}]},
    )


def diagnostics_for(client: LspClient, uri: str, version=None, timeout: float = 60) -> list[dict]:
    params = client.wait_for(
        "textDocument/publishDiagnostics",
        lambda p: p["uri"] == uri and (version is None or p.get("version") == version),
        timeout=timeout,
    )
    return params["diagnostics"]


def code_actions(client: LspClient, uri: str, line: int, only=None) -> list[dict]:
    context: dict = {"diagnostics": []}
    if only is not None:
        context["only"] = only
    rng = {"start": {"line": line, "character": 0}, "end": {"line": line, "character": 0}}
    return client.request("textDocument/codeAction", {"textDocument": {"uri": uri}, "range": rng, "context": context})


def apply_edits(text: str, edits: list[dict]) -> str:
    """Apply LSP TextEdits (UTF-16 positions), last first, as an editor does."""
    lines = text.splitlines(keepends=True)

    def offset(pos: dict) -> int:
        if pos["line"] >= len(lines):
            return len(text)
        line = lines[pos["line"]]
        units, chars = 0, 0
        for ch in line:
            if units >= pos["character"]:
                break
            units += 2 if ord(ch) > 0xFFFF else 1
            chars += 1
        return sum(len(x) for x in lines[: pos["line"]]) + chars

    spans = sorted(((offset(e["range"]["start"]), offset(e["range"]["end"]), e["newText"]) for e in edits), reverse=True)
    for start, end, new in spans:
        text = text[:start] + new + text[end:]
    return text


@pytest.fixture
def client(tmp_path):
    c = start(tmp_path)
    yield c
    c.close()


def test_diagnostics_on_open_carry_code_range_severity_and_docs_link(client, tmp_path):
    init = client.initialize(tmp_path)
    caps = init["capabilities"]
    assert caps["codeActionProvider"]["resolveProvider"] is True
    assert "source.fixAll.dynalint" in caps["codeActionProvider"]["codeActionKinds"]
    assert caps["textDocumentSync"]["save"] is not None and caps["hoverProvider"]
    uri = open_doc(client, tmp_path / "model.py", MODEL)

    diags = diagnostics_for(client, uri, version=1)
    by_code = {d["code"]: d for d in diags}
    assert set(by_code) == {"DYN101", "DYN120"}
    printed = by_code["DYN101"]
    assert printed["range"] == {"start": {"line": PRINT_LINE, "character": 8}, "end": {"line": PRINT_LINE, "character": 22}}
    assert printed["severity"] == 1 and printed["source"] == "dynalint"
    assert printed["codeDescription"]["href"] == rule_url("DYN101")
    assert client.shutdown() == 0


def test_edits_are_debounced_and_save_relints(client, tmp_path):
    client.initialize(tmp_path, {"debounceMs": 400})
    uri = open_doc(client, tmp_path / "model.py", MODEL)
    assert {d["code"] for d in diagnostics_for(client, uri, version=1)} == {"DYN101", "DYN120"}

    # A burst of keystrokes: only the last version is linted and published.
    clean = MODEL.replace("        print(y.shape)\n", "")
    for version in range(2, 7):
        change(client, uri, clean if version == 6 else MODEL.replace("y.shape", f"y.shape{version}"), version)
    assert {d["code"] for d in diagnostics_for(client, uri, version=6)} == {"DYN120"}
    client.drain(0.6)
    published = [n["params"].get("version") for n in client.notifications if n.get("method") == "textDocument/publishDiagnostics"]
    assert not set(published) & {2, 3, 4, 5}

    # Saving lints at once (no quiet period), e.g. after the config changed on disk.
    (tmp_path / "pyproject.toml").write_text('[tool.dynalint]\nignore = ["DYN120"]\n')
    client.notify("textDocument/didSave", {"textDocument": {"uri": (tmp_path / "pyproject.toml").as_uri()}})
    assert diagnostics_for(client, uri, version=6) == []
    client.notify("textDocument/didSave", {"textDocument": {"uri": uri}})
    assert diagnostics_for(client, uri, version=6) == []
    assert client.shutdown() == 0


def test_noqa_action_suppresses_the_finding(client, tmp_path):
    client.initialize(tmp_path)
    uri = open_doc(client, tmp_path / "model.py", MODEL)
    diagnostics_for(client, uri, version=1)

    actions = code_actions(client, uri, PRINT_LINE)
    noqa = [a for a in actions if a["title"] == "Disable DYN101 for this line"]
    assert len(noqa) == 1 and noqa[0]["kind"] == "quickfix"
    assert noqa[0]["diagnostics"][0]["code"] == "DYN101"
    new_text = apply_edits(MODEL, noqa[0]["edit"]["changes"][uri])
    assert "        print(y.shape)  # noqa: DYN101\n" in new_text

    change(client, uri, new_text, 2)
    assert {d["code"] for d in diagnostics_for(client, uri, version=2)} == {"DYN120"}
    # On a line that already has `# noqa: DYN101`, a second code is appended to the same comment.
    text3 = MODEL.replace("        if y.sum() > 0:", "        if y.sum() > 0:  # noqa: DYN101")
    change(client, uri, text3, 3)
    diagnostics_for(client, uri, version=3)
    actions = code_actions(client, uri, PRINT_LINE + 1)
    (noqa120,) = [a for a in actions if a["title"] == "Disable DYN120 for this line"]
    assert "if y.sum() > 0:  # noqa: DYN101, DYN120\n" in apply_edits(text3, noqa120["edit"]["changes"][uri])
    assert client.shutdown() == 0


def test_quick_fix_applies_the_rule_fix(client, tmp_path):
    (finding,) = [f for f in lint_source(MODEL, "model.py", Config()) if f.code == "DYN101"]
    if finding.fix is None or not finding.fix.edits:
        pytest.skip("DYN101 has no autofix in this build")
    client.initialize(tmp_path)
    uri = open_doc(client, tmp_path / "model.py", MODEL)
    diagnostics_for(client, uri, version=1)

    actions = code_actions(client, uri, PRINT_LINE)
    (fix,) = [a for a in actions if a["title"].startswith("DYN101: ")]
    assert fix["kind"] == "quickfix" and fix["isPreferred"] is True
    fixed = apply_edits(MODEL, fix["edit"]["changes"][uri])
    assert fixed != MODEL
    change(client, uri, fixed, 2)
    assert "DYN101" not in {d["code"] for d in diagnostics_for(client, uri, version=2)}
    assert client.shutdown() == 0


def test_fix_all_source_action_matches_fix_source(client, tmp_path):
    expected = fix_source(MODEL, str(tmp_path / "model.py"), Config()).text
    client.initialize(tmp_path, capabilities=RESOLVE_EDITS)
    uri = open_doc(client, tmp_path / "model.py", MODEL)
    diagnostics_for(client, uri, version=1)

    actions = code_actions(client, uri, 0, only=["source.fixAll"])
    if expected == MODEL:
        assert actions == []
        pytest.skip("no autofix applies to the model in this build")
    (action,) = actions
    assert action["kind"] == "source.fixAll.dynalint"
    assert "edit" not in action  # computed only when the client resolves it
    resolved = client.request("codeAction/resolve", action)
    assert apply_edits(MODEL, resolved["edit"]["changes"][uri]) == expected
    # `only` filters: asking for quick fixes leaves the source action out.
    quick = code_actions(client, uri, PRINT_LINE, only=["quickfix"])
    assert quick and all(a["kind"] == "quickfix" for a in quick)
    assert code_actions(client, uri, PRINT_LINE, only=["refactor"]) == []
    assert client.shutdown() == 0


def test_fix_all_comes_with_its_edit_for_clients_that_cannot_resolve(client, tmp_path):
    expected = fix_source(MODEL, str(tmp_path / "model.py"), Config()).text
    if expected == MODEL:
        pytest.skip("no autofix applies to the model in this build")
    client.initialize(tmp_path, capabilities={})
    uri = open_doc(client, tmp_path / "model.py", MODEL)
    diagnostics_for(client, uri, version=1)
    (action,) = code_actions(client, uri, 0, only=["source"])
    assert apply_edits(MODEL, action["edit"]["changes"][uri]) == expected
    assert client.shutdown() == 0


def test_settings_from_initialization_options_and_did_change_configuration(client, tmp_path):
    client.initialize(tmp_path, {"ignore": ["DYN101"], "notASetting": 1})
    warning = client.wait_for("window/showMessage")
    assert "notASetting" in warning["message"]
    uri = open_doc(client, tmp_path / "model.py", MODEL)
    assert {d["code"] for d in diagnostics_for(client, uri, version=1)} == {"DYN120"}

    client.notify("workspace/didChangeConfiguration", {"settings": {"dynalint": {"select": ["DYN101"], "ignore": []}}})
    assert {d["code"] for d in diagnostics_for(client, uri, version=1)} == {"DYN101"}

    client.notify("workspace/didChangeConfiguration", {"settings": {"dynalint": {"select": ["NOPE9"]}}})
    assert "NOPE9" in client.wait_for("window/showMessage")["message"]
    # The bad value is skipped; the previous selection stays.
    assert {d["code"] for d in diagnostics_for(client, uri, version=1)} == {"DYN101"}
    assert client.shutdown() == 0


def test_nearest_pyproject_config_applies(client, tmp_path):
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "pyproject.toml").write_text('[tool.dynalint]\nignore = ["DYN120"]\n\n[tool.dynalint.severity]\nDYN101 = "warning"\n')
    client.initialize(tmp_path)
    uri = open_doc(client, pkg / "model.py", MODEL)
    (diag,) = diagnostics_for(client, uri, version=1)
    assert diag["code"] == "DYN101" and diag["severity"] == 2
    assert client.shutdown() == 0


def test_hover_shows_rule_docs(client, tmp_path):
    client.initialize(tmp_path)
    uri = open_doc(client, tmp_path / "model.py", MODEL)
    diagnostics_for(client, uri, version=1)
    hover = client.request("textDocument/hover", {"textDocument": {"uri": uri}, "position": {"line": PRINT_LINE, "character": 10}})
    value = hover["contents"]["value"]
    assert "**DYN101**" in value and rule_url("DYN101") in value and "## Why it breaks the graph" in value
    assert client.request("textDocument/hover", {"textDocument": {"uri": uri}, "position": {"line": 0, "character": 1}}) is None
    assert client.shutdown() == 0


def test_positions_are_utf16_and_close_clears(client, tmp_path):
    text = MODEL.replace("        print(y.shape)", '        s = "\U0001f600"; print(s)')
    client.initialize(tmp_path)
    uri = open_doc(client, tmp_path / "model.py", text)
    (diag,) = [d for d in diagnostics_for(client, uri, version=1) if d["code"] == "DYN101"]
    # `print` is code point 17 of the line; the emoji before it is two UTF-16 units, so unit 18.
    assert text.splitlines()[PRINT_LINE].index("print") == 17
    assert diag["range"]["start"] == {"line": PRINT_LINE, "character": 18}
    client.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
    assert diagnostics_for(client, uri) == []
    assert client.shutdown() == 0


def test_cross_file_regions_use_open_documents(client, tmp_path):
    helper = "def log_it(t):\n    print(t)\n    return t\n"
    model = "from torch import nn\nfrom helpers import log_it\n\n\nclass Net(nn.Module):\n    def forward(self, x):\n        return log_it(x)\n"
    client.initialize(tmp_path)
    helper_uri = open_doc(client, tmp_path / "helpers.py", helper)
    assert diagnostics_for(client, helper_uri, version=1) == []  # nothing compiled calls it yet
    # Opening a model that calls it puts the helper in a compile region: its diagnostics follow.
    model_uri = open_doc(client, tmp_path / "model.py", model)
    diagnostics_for(client, model_uri, version=1)
    assert [d["code"] for d in diagnostics_for(client, helper_uri, version=1)] == ["DYN101"]
    client.notify("textDocument/didClose", {"textDocument": {"uri": model_uri}})
    diagnostics_for(client, model_uri)
    client.notify("textDocument/didSave", {"textDocument": {"uri": helper_uri}})
    assert diagnostics_for(client, helper_uri, version=1) == []
    assert client.shutdown() == 0


def test_dynalint_lsp_subcommand_starts_the_server(tmp_path):
    command = [sys.executable, "-c", "from dynalint.cli import main; main()", "lsp", "--stdio"]
    c = start(tmp_path, command)
    try:
        assert c.initialize(tmp_path)["serverInfo"]["name"] == "dynalint"
        uri = open_doc(c, tmp_path / "model.py", MODEL)
        assert {d["code"] for d in diagnostics_for(c, uri, version=1)} == {"DYN101", "DYN120"}
        assert c.shutdown() == 0
    finally:
        c.close()
