"""Parsing in pieces gives the whole-file tree: for every .py file under a folder, the tree
`lint/parsing.parse_in_pieces` joins from the file cut into pieces of N lines (the size threshold
ignored, so small files are cut too) against libcst's parse of the whole file: `deep_equals`,
and both regenerate the file's text. A file the pieces decline ("whole parse": the linter then
parses it whole, as it does every file below the threshold) is counted apart.

    python bench/parse_pieces.py FOLDER                    # cut at every top-level statement
    python bench/parse_pieces.py FOLDER --piece-lines 200  # pieces of at least 200 lines

Exit status 1 when any joined tree differs.
"""

from __future__ import annotations

import argparse
import gc
import resource
import sys
import time
from pathlib import Path


def compare(text: str, piece_lines: int) -> str:
    """'equal', 'whole parse' (declined), 'different' or 'not parsed' (libcst refuses it)."""
    import libcst as cst

    from dynalint.lint.parsing import parse_in_pieces

    try:
        whole = cst.parse_module(text)
    except Exception:
        return "not parsed"
    joined = parse_in_pieces(text, piece_lines)
    if joined is None:
        return "whole parse"
    if joined.deep_equals(whole) and joined.code == whole.code == text:
        return "equal"
    return "different"


def run(folder: Path, piece_lines: int) -> dict:
    counts = {"equal": 0, "whole parse": 0, "different": 0, "not parsed": 0}
    different = []
    for path in sorted(folder.rglob("*.py")):
        text = path.read_text(encoding="utf-8", errors="surrogateescape")
        verdict = compare(text, piece_lines)
        counts[verdict] += 1
        if verdict == "different":
            different.append(str(path))
        gc.collect()
    return {"counts": counts, "different": different}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("folder", type=Path)
    parser.add_argument("--piece-lines", type=int, default=1, help="least lines per piece (default 1: every cut)")
    args = parser.parse_args()
    from dynalint.lint.deep import call_deep

    start = time.perf_counter()
    result = call_deep(run, args.folder, args.piece_lines)
    usage = resource.getrusage(resource.RUSAGE_SELF)
    files = sum(result["counts"].values())
    print(f"{files} files, pieces of at least {args.piece_lines} lines: " + ", ".join(f"{k} {v}" for k, v in result["counts"].items()))
    for path in result["different"]:
        print(f"  different: {path}")
    print(f"{time.perf_counter() - start:.0f} s wall, {usage.ru_utime + usage.ru_stime:.0f} CPU s, peak {usage.ru_maxrss // 1024} MiB")
    sys.exit(1 if result["different"] else 0)


if __name__ == "__main__":
    main()
