"""The migration report: report.html renders in a real browser (headless Chromium) with its tables
and charts, charts are real PNGs, and the reports still work without matplotlib."""

from __future__ import annotations

import base64
import builtins
import html.parser
import json
import re
import shutil
import subprocess

import pytest

from dynalint.migrate.command import run_migration
from dynalint.migrate.render import render_html, render_markdown, write_charts
from tests.test_migrate import FakeMeasure, corrupting_fixer, options, repo  # noqa: F401 (repo: a fixture)

BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")


def browser() -> str | None:
    return next((found for name in BROWSERS if (found := shutil.which(name))), None)


@pytest.fixture
def migrated(repo, monkeypatch):  # noqa: F811 (the fixture imported above)
    """A fake-measured migration with one reverted file, so every section has rows."""
    corrupting_fixer(monkeypatch, lambda name, text: text.replace("x * 2", "x * 3") if name == "helpers.py" else text)
    run_migration(options(repo), measure=FakeMeasure(repo))
    return repo / "report"


class Tables(html.parser.HTMLParser):
    """Rows of every <table id=...> in a document, as lists of cell texts."""

    def __init__(self):
        super().__init__()
        self.tables: dict[str, list[list[str]]] = {}
        self.images: list[str] = []
        self._table = None
        self._row = None
        self._cell = None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "table":
            self._table = self.tables.setdefault(attrs.get("id", ""), [])
        elif tag == "tr" and self._table is not None:
            self._row = []
            self._table.append(self._row)
        elif tag in ("td", "th") and self._row is not None:
            self._cell = []
        elif tag == "img":
            self.images.append(attrs.get("src", ""))

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell is not None:
            self._row.append("".join(self._cell).strip())
            self._cell = None
        elif tag == "table":
            self._table = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)


def parse(document: str) -> Tables:
    tables = Tables()
    tables.feed(document)
    return tables


def test_html_renders_in_headless_chromium(migrated, tmp_path):
    exe = browser()
    if exe is None:
        pytest.skip("no Chromium/Chrome installed (.ci/run installs it with apt-get)")
    page = migrated / "report.html"
    run = subprocess.run(
        [exe, "--headless", "--no-sandbox", "--disable-gpu", f"--user-data-dir={tmp_path / 'profile'}",
         "--dump-dom", page.as_uri()],
        capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
    )
    if run.returncode != 0 or "<html" not in run.stdout:  # a browser that cannot start here, not our page
        pytest.skip(f"{exe} did not start: {run.stderr.strip()[-500:]}")
    dom = parse(run.stdout)  # the DOM after the browser parsed and laid out the page
    assert dom.tables["rules"][0][:3] == ["rule", "name", "before"]
    assert ["DYN101", "print-in-compiled-region", "1", "0", "1", "1"] in dom.tables["rules"]
    models = {row[0]: row for row in dom.tables["models"][1:]}
    assert set(models) == {"net", "other"} and models["net"][1] == "verified"
    assert dom.tables["reverts"][1][0] == "pkg/helpers.py"
    assert dom.tables["needs-human"][1][1] == "DYN101"
    assert {row[0] for row in dom.tables["files"][1:]} == {"pkg/helpers.py", "pkg/net.py"}
    assert len(dom.images) == 2 and all(src.startswith("data:image/png;base64,") for src in dom.images)


def test_charts_are_png_images_inlined_in_html_and_linked_from_markdown(migrated):
    pytest.importorskip("matplotlib")
    doc = parse((migrated / "report.html").read_text())
    for src in doc.images:
        png = base64.b64decode(src.split(",", 1)[1])
        assert png.startswith(b"\x89PNG\r\n\x1a\n") and len(png) > 5000
    md = (migrated / "report.md").read_text()
    assert "](graphs.png)" in md and "](speedups.png)" in md
    assert (migrated / "graphs.png").read_bytes().startswith(b"\x89PNG")


def test_reports_without_matplotlib(migrated, monkeypatch, tmp_path):
    out = tmp_path / "charts"
    out.mkdir()
    real_import = builtins.__import__

    def no_matplotlib(name, *args, **kwargs):
        if name.startswith("matplotlib"):
            raise ImportError("no matplotlib")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_matplotlib)
    data = json.loads((migrated / "report.json").read_text())
    charts = write_charts(data, out)
    assert charts == {} and not list(out.iterdir())
    assert "Charts need matplotlib" in render_markdown(data, charts)
    page = render_html(data, charts)
    assert "Charts need matplotlib" in page and "<img" not in page
    assert '<table id="models">' in page


def test_markdown_tables_escape_pipes_and_link_docs(migrated):
    data = json.loads((migrated / "report.json").read_text())
    data["needs_human"][0]["message"] = "a | b"
    md = render_markdown(data, {})
    assert "a \\| b" in md
    assert re.search(r"\| \[docs\]\(https://\S+#dyn101\) \|", md)
    # Each table row has as many cells as its header.
    for block in re.findall(r"(?:^\|.*\|$\n?)+", md, flags=re.MULTILINE):
        widths = {len(re.split(r"(?<!\\)\|", line)) for line in block.strip().splitlines()}
        assert len(widths) == 1, block
