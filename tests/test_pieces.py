"""Big files are parsed in pieces cut between top-level statements and joined into one tree
(`lint/parsing.parse_in_pieces`): the joined tree must be the one libcst's whole-file parse gives
(`deep_equals`, same code), or the pieces must decline and the file be parsed whole."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import libcst as cst
import pytest

from dynalint.lint import analyzer, parsing
from dynalint.lint.parsing import parse_in_pieces

ROOT = Path(__file__).resolve().parent.parent

# Each text is cut at every top-level statement it can be cut at (pieces of at least one line).
SAME_TREE = {
    "comments and blank lines at cuts": "import a\n\n# about b\n\n\n# right above b\nb = 1\n# after b\nc = 2\n",
    "indented comment closing a block": "def f():\n    x = 1\n    # indented after\n\n# top\n\n\ndef g():\n    pass\n",
    "comments closing nested blocks": "class A:\n    def f(self):\n        x = 1\n        # deep\n    # mid\n\n# top\nclass B:\n    pass\n",
    "decorators": "import x\n\n\n@x.a\n@x.b(\n    1,\n)\n# between\ndef f():\n    pass\n@x.c\nclass C: pass\n",
    "comment inside the last block at the end": "x = 1\n\ndef f():\n    pass\n    # last inside\n# last\n",
    "comment at the end without a newline": "x = 1\ny = 2\n# last",
    "no trailing newline": "x = 1\ny = 2\nif y:\n    z = 3",
    "CRLF": "import a\r\n\r\n# c\r\ndef f():\r\n    return 1\r\n\r\n\r\nx = f()\r\n",
    "tabs": "if a:\n\tb = 1\n\t# t\n\ndef f():\n\treturn 2\nclass C:\n\tpass\n",
    "two-space indent": "if a:\n  b = 1\nif c:\n  d = 2\n",
    "if __name__ block": "def main():\n    pass\n\n\nif __name__ == \"__main__\":\n    main()\n    # done\n",
    "strings and brackets spanning lines": "x = '''\ndef f():\n    pass\n'''\ny = (\n1,\n\n2)\nz = 3\n",
    "statements sharing a line": "a = 1; b = 2\nc = 3; d = 4\n",
    "module header": "#!/usr/bin/env python\n# coding: utf-8\n\n\"\"\"doc\"\"\"\n\nimport os\n",
    "backslash continuation": "x = 1 + \\\n  2\ny = 3\n",
    "comments between branches": "if a:\n    pass\n# c\nelse:\n    pass\n# d\ny = 1\n",
    "comments in try": "try:\n    pass\n    # in try\nexcept E:\n    pass\n    # in except\n\nz = 1\n",
    "indented comment after a simple statement": "a = 1\n    # odd\nb = 2\n",
}

# The pieces decline these (the file is then parsed whole).
WHOLE_PARSE = {
    "mixed line endings": "a = 1\r\nb = 2\nc = 3\r\n",
    "lone carriage return": "a = 1\rb = 2\nc = 3\n",
    "form feed": "a = 1\n\x0c\nb = 2\n",
    "syntax error": "a = 1\nb = (\nc = 3\n",
    "a piece without blocks where the file indents with tabs": "import a\n\nif a:\n\tb = 1\n",
    # libcst's parse of this piece alone drops the blank line before `  # odd` (after a dedent,
    # indented less than the block): its end does not regenerate, so it is not cut there.
    "blank line lost at the end of a piece": "class A:\n    def f(self):\n        x = 1\n    # mid\n\n  # odd\n# top\nclass B:\n    pass\n",
    "nothing to cut": "def f():\n    pass\n",
}


@pytest.mark.parametrize("name", list(SAME_TREE))
def test_the_joined_tree_is_the_whole_parse(name):
    text = SAME_TREE[name]
    whole = cst.parse_module(text)
    joined = parse_in_pieces(text, piece_lines=1)
    assert joined is not None
    assert joined.deep_equals(whole)
    assert joined.code == whole.code == text
    for attr in ("encoding", "default_indent", "default_newline", "has_trailing_newline"):
        assert getattr(joined, attr) == getattr(whole, attr), attr


@pytest.mark.parametrize("name", list(WHOLE_PARSE))
def test_the_pieces_decline_what_they_cannot_join_exactly(name):
    assert parse_in_pieces(WHOLE_PARSE[name], piece_lines=1) is None


def test_pieces_follow_the_requested_size():
    text = "".join(f"def f{i}():\n    return {i}\n\n\n" for i in range(100))  # 400 lines
    seen = []
    real = cst.parse_module

    def counting(source, *args, **kwargs):
        seen.append(source.count("\n"))
        return real(source, *args, **kwargs)

    parsing.cst.parse_module, saved = counting, parsing.cst.parse_module
    try:
        joined = parse_in_pieces(text, piece_lines=100)
    finally:
        parsing.cst.parse_module = saved
    assert joined is not None and joined.deep_equals(cst.parse_module(text))
    assert seen == [100, 100, 100, 100]


def test_the_pieces_leave_the_whole_files_statement_spans(monkeypatch):
    # Python's parser reads each piece only (its tree of a whole 200,000-line file took 1.1 GB);
    # the spans it gives are the whole file's, kept for the positions of a big file.
    text = SAME_TREE["decorators"] + SAME_TREE["strings and brackets spanning lines"] + SAME_TREE["statements sharing a line"]
    expected = parsing._spans(text)
    parsing._last_spans[:] = [None, None]
    assert parse_in_pieces(text, piece_lines=1) is not None
    monkeypatch.setattr(parsing, "_spans", lambda source: pytest.fail("the whole text was parsed again"))
    assert parsing.statement_spans(text) == expected
    parsing._last_spans[:] = [None, None]


def test_a_cut_python_refuses_moves_to_the_next_line():
    # Column-0 lines inside a string and after a decorator are no cuts: the piece before them
    # does not parse, so the cut moves on (to the next such line, then ever further).
    body = "".join(f"v{i} = 1\n" for i in range(5))
    text = body + 'doc = """\n' + "".join(f"line{i}\n" for i in range(10)) + '"""\n@d\ndef f():\n    pass\n' + body
    whole = cst.parse_module(text)
    joined = parse_in_pieces(text, piece_lines=3)
    assert joined is not None and joined.deep_equals(whole) and joined.code == text
    long_string = body + 'doc = """\n' + "".join(f"line{i}\n" for i in range(5_000)) + '"""\n' + body
    joined = parse_in_pieces(long_string, piece_lines=3)
    assert joined is not None and joined.deep_equals(cst.parse_module(long_string))
    broken = body + "x = (\n" + body * 100
    assert parse_in_pieces(broken, piece_lines=3) is None


def _transformers_models() -> Path:
    spec = importlib.util.find_spec("transformers")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("transformers is not installed")
    return Path(list(spec.submodule_search_locations)[0]) / "models"


@pytest.mark.parametrize("model", ["llama", "bert", "gpt2"])
def test_real_model_files_join_into_the_whole_parse(model):
    # bench/parse_pieces.py runs this over every file of a folder (all of transformers/models).
    files = sorted((_transformers_models() / model).glob("*.py"))
    if not files:
        pytest.skip(f"transformers has no {model}")
    joined_any = False
    for path in files:
        text = path.read_text(encoding="utf-8")
        joined = parse_in_pieces(text, piece_lines=1)
        if joined is None:
            continue
        joined_any = True
        assert joined.deep_equals(cst.parse_module(text)), path.name
        assert joined.code == text, path.name
    assert joined_any


def _big_file_bench():
    spec = importlib.util.spec_from_file_location("big_file", ROOT / "bench" / "big_file.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_a_file_parsed_in_pieces_has_the_same_findings_and_interface(monkeypatch):
    text = _big_file_bench().model_file(1_500)

    def analyse(pieces_from: float) -> dict:
        monkeypatch.setattr(parsing, "PIECES_FROM", pieces_from)
        monkeypatch.setattr(parsing, "PIECE_LINES", 200)
        analyzer._PARSED.clear()
        return analyzer.analyze_source(text, "big.py", "big").to_cache()

    calls = []
    real = parsing.parse_in_pieces
    monkeypatch.setattr(parsing, "parse_in_pieces", lambda source: calls.append(1) or real(source, 200))
    whole = analyse(float("inf"))
    assert calls == []
    pieces = analyse(0)
    assert calls == [1]
    assert pieces["findings"] and pieces == whole
    analyzer._PARSED.clear()


def test_a_big_file_with_a_syntax_error_is_reported_as_before(monkeypatch):
    text = "x = 1\n" * 50 + "def f(:\n    pass\n" + "y = 2\n" * 50
    monkeypatch.setattr(parsing, "PIECES_FROM", float("inf"))
    analyzer._PARSED.clear()
    before = analyzer.analyze_source(text, "bad.py", "bad").to_cache()
    monkeypatch.setattr(parsing, "PIECES_FROM", 0)
    analyzer._PARSED.clear()
    after = analyzer.analyze_source(text, "bad.py", "bad").to_cache()
    assert [f["code"] for f in after["findings"]] == ["DYN001"] and after == before
    analyzer._PARSED.clear()


@pytest.mark.parametrize("model", ["bert", "t5"])
def test_a_big_file_places_its_findings_one_statement_at_a_time(monkeypatch, model):
    # In a big file each top-level statement's findings are placed with its positions only
    # (fastcst.StatementPositions), and of a reporting function only the statements of its body
    # that reported are positioned; the findings and fixes are those of all positions at once
    # with each reporting function positioned whole.
    from dynalint.lint import fastcst

    import dynalint.fixes.providers  # noqa: F401

    files = sorted((_transformers_models() / model).glob("modeling_*.py"))
    if not files:
        pytest.skip(f"transformers has no {model} model file")
    text = files[0].read_text(encoding="utf-8")
    monkeypatch.setattr(fastcst, "_WINDOWED_SIZE", 0)  # as if the file were big
    batches = []
    real_of = fastcst.StatementPositions.of
    monkeypatch.setattr(fastcst.StatementPositions, "of", lambda self, stmt: batches.append(stmt) or real_of(self, stmt))
    positioned = []
    real_piece = fastcst._position_piece

    def piece(module, source, node, *args):
        found = real_piece(module, source, node, *args)
        positioned.append((type(node), found is not None))
        return found

    monkeypatch.setattr(fastcst, "_position_piece", piece)

    def analyse() -> dict:
        analyzer._PARSED.clear()
        return analyzer.analyze_source(text, files[0].name, model).to_cache()

    one_at_a_time = analyse()
    assert len(set(map(id, batches))) > 1  # findings in several statements, placed apart
    # statements of function bodies were found and positioned, no function as a whole
    assert positioned and all(found for _, found in positioned)
    assert not any(node_type in (cst.FunctionDef, cst.ClassDef) for node_type, _ in positioned)
    positioned.clear()
    monkeypatch.setattr(fastcst.StatementPositions, "for_file", classmethod(lambda cls, *args: None))
    monkeypatch.setattr(fastcst, "_position_parts", lambda *args: False)  # whole functions
    assert analyse() == one_at_a_time
    assert positioned and all(node_type is cst.FunctionDef for node_type, _ in positioned)
    assert one_at_a_time["findings"]
    analyzer._PARSED.clear()


def test_statement_positions_of_reported_statements_fall_back_to_their_functions(monkeypatch):
    # Positions of the statements of a function body that reported; any other node is looked up
    # in the positions of the whole function (or, outside it, of the whole module), and a
    # statement whose text is not found once in its window makes the function positioned whole.
    from dynalint.lint import fastcst

    text = (
        "import torch\n\n\nclass M(torch.nn.Module):\n"
        "    def forward(self, x):\n        y = x + 1\n        print(y)\n        return y\n\n"
        "    def other(self, y):\n        print(y)\n        return y * 2\n"
    )
    monkeypatch.setattr(fastcst, "_WINDOWED_SIZE", 0)
    module = cst.parse_module(text)
    cls = module.body[1]
    forward, other = cls.body.body
    reference = fastcst.positions(module)
    pieces = []
    real_piece = fastcst._position_piece
    monkeypatch.setattr(
        fastcst, "_position_piece", lambda m, s, node, *a: pieces.append(type(node)) or real_piece(m, s, node, *a)
    )

    def positions_of(fn, stmt):
        within = fastcst.enclosing_statements(module, [fn], {id(fn): {id(stmt): stmt}})
        statements = fastcst.StatementPositions.for_file(module, text, within)
        assert statements is not None
        pieces.clear()
        return statements.of(cls)

    found = positions_of(forward, forward.body.body[1])  # `print(y)` occurs twice: not unique
    assert pieces == [cst.SimpleStatementLine, cst.FunctionDef]
    once = positions_of(forward, forward.body.body[0])  # `y = x + 1` occurs once
    assert pieces == [cst.SimpleStatementLine]
    for got in (found, once):
        for node in fastcst.iter_nodes(forward):
            assert got[node] == reference[node]
        assert got[module.body[0]] == reference[module.body[0]]  # outside: the whole module
    assert pieces == [cst.SimpleStatementLine, cst.FunctionDef]  # the function once, on need


def test_positions_of_reported_statements_in_a_small_file_match_the_whole_module():
    # The same in a file below the windowed size: each reported statement is searched in the
    # whole text (found once, or the functions are positioned as before).
    from dynalint.lint import fastcst

    text = (
        "import torch\n\n\nclass M(torch.nn.Module):\n"
        "    def forward(self, x):\n        y = x + 1\n        print(y)\n        return y\n\n"
        "    def other(self, y):\n        print(y)\n        return y * 2\n"
    )
    module = cst.parse_module(text)
    forward = module.body[1].body.body[0]
    reference = fastcst.positions(module)
    for stmt, unique in ((forward.body.body[0], True), (forward.body.body[1], False)):
        within = fastcst.enclosing_statements(module, [forward], {id(forward): {id(stmt): stmt}})
        got = fastcst.positions(module, text, within)
        assert stmt in got.raw and (forward in got.raw) is not unique  # the function only when needed
        for node in fastcst.iter_nodes(module):
            assert got[node] == reference[node]


def test_gpu_bench_only_takes_a_whole_case_name_with_commas_as_one_case():
    # A case name with commas of its own, split at them, picked every case containing " train".
    spec = importlib.util.spec_from_file_location("gpu_verify", ROOT / "bench" / "gpu_verify.py")
    bench = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = bench  # its dataclasses look their module up
    try:
        spec.loader.exec_module(bench)
    finally:
        sys.modules.pop(spec.name, None)
    name = "mvp (layerdrop 0.1, train, unsafe fixes)"
    assert [c.name for c in bench.select_cases(name)] == [name]
    assert [c.name for c in bench.select_cases("mvp,blenderbot")] == [name, "blenderbot (layerdrop 0.1, train, unsafe fixes)"]
    assert len(bench.select_cases("train")) > 2
