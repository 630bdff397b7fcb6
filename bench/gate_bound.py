"""How much could a cheap gate before libcst save on a cold run? An upper bound.

    python bench/gate_bound.py TREE [--every N]

Issue 6 suggests gates before libcst ("skip files that cannot contain a compile region; parse
only what is needed"). This measures the best any such gate could do while libcst stays the
source of findings: it first runs dynalint on TREE (no cache) to learn the functions that really
are live (reachable from compile roots), then, on every Nth file, replaces the text of every
top-level function and method that is *not* live by a string literal spanning the same lines
(line numbers unchanged), keeping imports, module-level statements, class bodies and each
class's `__init__` (it sets the attribute kinds the live methods read). That is what a perfect
gate would hand to libcst. It reports, in one process with the cycle collector off, the CPU
time of `ast` parsing plus the blanking (the gate's own cost), of libcst parsing, and of the
analysis, for the full and the blanked texts, and checks that the findings in live functions
are the same.

A real gate would have to find the live functions without libcst (an `ast` port of the
analysis) and could only over-approximate them, so it would save less than this.
"""

from __future__ import annotations

import argparse
import ast
import gc
import sys
import time
from pathlib import Path


def live_functions(tree: Path) -> tuple[set[str], dict[str, str]]:
    from dynalint.run import engine
    from dynalint.check import CheckOptions, collect_files, effective_config

    opts = CheckOptions(paths=[tree], no_cache=True)
    config = effective_config(opts)
    files = collect_files(opts, config)
    summaries = engine.analyze_files(files, config)
    return engine.live_functions(summaries, config), {str(f.path): f.module for f in files}


def blank_dead_functions(source: str, module: str, live: set[str]) -> tuple[str, int]:
    """The text with every top-level function and method that is not live (except `__init__`)
    turned into a string literal over the same lines, and how many lines stayed."""
    tree = ast.parse(source)
    lines = source.split("\n")
    spans = []

    def consider(node: ast.AST, qualname: str) -> None:
        if qualname in live:
            return
        first = node.decorator_list[0] if node.decorator_list else node
        start, col = first.lineno, first.col_offset - (1 if node.decorator_list else 0)
        end = node.end_lineno
        before = lines[start - 1][: max(col, 0)]
        after = lines[end - 1][node.end_col_offset :].split("#")[0]
        if before.strip() or after.strip():
            return  # shares a line with another statement
        spans.append((start, end, max(col, 0)))

    for stmt in tree.body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            consider(stmt, f"{module}.{stmt.name}")
        elif isinstance(stmt, ast.ClassDef):
            for item in stmt.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and item.name != "__init__":
                    consider(item, f"{module}.{stmt.name}.{item.name}")
    kept = len(lines)
    for start, end, col in spans:
        indent = " " * col
        if start == end:
            lines[start - 1] = indent + '""""""'
        else:
            lines[start - 1] = indent + '"""'
            for i in range(start, end - 1):
                lines[i] = ""
            lines[end - 1] = '"""'
        kept -= end - start + 1
    return "\n".join(lines), kept


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("tree", type=Path)
    ap.add_argument("--every", type=int, default=6, help="measure every Nth file (default 6)")
    args = ap.parse_args()
    import dynalint.fixes.providers  # noqa: F401  (the fixes rules offer, as the engine loads them)
    from dynalint.lint import analyzer

    live, modules = live_functions(args.tree)
    paths = sorted(modules)[:: args.every]
    texts = [Path(p).read_text(encoding="utf-8") for p in paths]
    gc.disable()
    start = time.process_time()
    blanked = [blank_dead_functions(t, modules[p], live) for t, p in zip(texts, paths)]
    gate = time.process_time() - start
    total = sum(t.count("\n") for t in texts)
    kept = sum(k for _, k in blanked)
    print(f"{len(paths)} files (every {args.every}th), {total:,} lines; {len(live):,} live functions in the tree")
    print(f"gate (ast parse + blanking): {gate:.2f} CPU s; lines kept: {kept:,} ({kept / total:.0%})")
    results = {}
    for label, sources in (("full", texts), ("blanked", [b for b, _ in blanked])):
        start = time.process_time()
        modules_parsed = [analyzer.parse_unvalidated(s) for s in sources]
        parse = time.process_time() - start
        start = time.process_time()
        findings = []
        for path, source, parsed in zip(paths, sources, modules_parsed):
            analyzer._PARSED[:] = [(source, parsed, {})]  # the analysis reuses this parse
            summary = analyzer.analyze_source(source, path, modules[path])
            findings += [(f.filename, f.row, f.column, f.code, f.message) for f in summary.findings if f.scope in live]
        analysis = time.process_time() - start
        results[label] = (parse, analysis, sorted(findings))
        print(f"{label:8} libcst parse {parse:.2f} CPU s, analysis {analysis:.2f} CPU s, findings in live functions {len(findings)}")
    full, cut = results["full"], results["blanked"]
    saved = (full[0] + full[1]) - (cut[0] + cut[1] + gate)
    print(f"same findings in live functions: {full[2] == cut[2]}")
    print(f"a perfect gate saves {saved:.2f} of {full[0] + full[1]:.2f} CPU s ({saved / (full[0] + full[1]):.0%})")
    sys.exit(0 if full[2] == cut[2] else 1)


if __name__ == "__main__":
    main()
