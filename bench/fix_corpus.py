"""`check --fix --unsafe-fixes` over a large real corpus: every file still parses, a second run
finds nothing more to fix.

Copies each corpus (by default the installed `transformers/models`, and `timm` when it is
installed) to a temporary folder, then on the copy:
  1. lints it and applies every fix, safe and unsafe, through the same `fix_paths` as
     `dynalint check --fix --unsafe-fixes`;
  2. parses every file with Python's own parser (the files that parsed before must still parse);
  3. lints and fixes again with `--diff` semantics: the second pass must change nothing.
Then it prints files, findings, fixes applied (per rule), files changed, fixes dropped because
their result would not parse, parse failures and the size of the second pass.

    python bench/fix_corpus.py                         # installed transformers/models (+ timm)
    python bench/fix_corpus.py path/to/timm --jobs 8   # any folders
    python bench/fix_corpus.py --keep /tmp/fixed       # keep the fixed copies to look at
    python bench/fix_corpus.py --json results.json

Exit status 1 when a guarantee fails (a file no longer parses, or the second pass is not empty).
"""

from __future__ import annotations

import argparse
import ast
import collections
import importlib.util
import json
import shutil
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path


@dataclass
class CorpusResult:
    name: str
    source: str
    files: int = 0
    findings: int = 0
    fixable: int = 0
    fixed: int = 0
    fixed_by_rule: dict = field(default_factory=dict)
    files_changed: int = 0
    remaining: int = 0
    dropped: int = 0  # fixes whose result would not parse (dropped, reported)
    errors: list = field(default_factory=list)
    parse_failures: list = field(default_factory=list)  # parsed before the fix, not after
    second_pass_fixes: int = 0
    second_pass_diff_lines: int = 0
    lint_seconds: float = 0.0
    fix_seconds: float = 0.0
    second_pass_seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return not self.parse_failures and self.second_pass_fixes == 0 and self.second_pass_diff_lines == 0


def default_corpora() -> list[Path]:
    out = []
    for package, sub in (("transformers", "models"), ("timm", "")):
        spec = importlib.util.find_spec(package)  # locates the package without importing it
        if spec is not None and spec.submodule_search_locations:
            root = Path(list(spec.submodule_search_locations)[0])
            out.append(root / sub if sub else root)
    return out


def _parses(path: Path) -> bool:
    try:
        ast.parse(path.read_bytes())
        return True
    except (SyntaxError, ValueError):
        return False


def _lint_and_fix(root: Path, jobs: int, diff: bool):
    from dynalint.check import CheckOptions, collect_files, effective_config
    from dynalint.run.engine import analyze_files, select_findings
    from dynalint.autofix import fix_paths
    from dynalint.fixes.apply import applicable
    opts = CheckOptions(paths=[root], fix=not diff, unsafe_fixes=True, diff=diff, no_cache=True, jobs=jobs)
    config = effective_config(opts)
    files = collect_files(opts, config)
    t0 = time.perf_counter()
    summaries = analyze_files(files, config, jobs=jobs)
    findings = select_findings(summaries, config)
    t1 = time.perf_counter()
    outcome = fix_paths(files, summaries, findings, config, unsafe=True, diff=diff)
    t2 = time.perf_counter()
    fixable = sum(1 for f in findings if applicable(f, True))
    return files, findings, fixable, outcome, t1 - t0, t2 - t1


def run_corpus(source: Path, work: Path, jobs: int) -> CorpusResult:
    name = source.parent.name + "/" + source.name if source.name == "models" else source.name
    result = CorpusResult(name=name, source=str(source))
    copy = work / source.name
    shutil.copytree(source, copy, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    paths = sorted(copy.rglob("*.py"))
    parsed_before = {p for p in paths if _parses(p)}
    before = {p: p.read_bytes() for p in paths}

    files, findings, fixable, outcome, lint_s, fix_s = _lint_and_fix(copy, jobs, diff=False)
    result.files = len(files)
    result.findings = len(findings)
    result.fixable = fixable
    result.fixed = len(outcome.fixed)
    result.fixed_by_rule = dict(sorted(collections.Counter(f.code for f in outcome.fixed).items()))
    result.remaining = len(outcome.remaining)
    result.errors = list(outcome.errors)
    result.dropped = sum("would not parse" in e for e in outcome.errors)
    result.files_changed = sum(1 for p in paths if p.read_bytes() != before[p])
    result.lint_seconds, result.fix_seconds = round(lint_s, 1), round(fix_s, 1)

    result.parse_failures = [str(p.relative_to(work)) for p in sorted(parsed_before) if not _parses(p)]

    t0 = time.perf_counter()
    _, _, _, again, _, _ = _lint_and_fix(copy, jobs, diff=True)
    result.second_pass_seconds = round(time.perf_counter() - t0, 1)
    result.second_pass_fixes = len(again.fixed)
    result.second_pass_diff_lines = sum(
        1 for line in again.diff_text.splitlines() if line.startswith(("+", "-")) and not line.startswith(("+++", "---"))
    )
    if again.diff_text:
        (work / f"{source.name}.second-pass.diff").write_text(again.diff_text)
    return result


def print_result(r: CorpusResult) -> None:
    print(f"== {r.name}  ({r.source})")
    print(f"files                     {r.files}")
    print(f"findings                  {r.findings} ({r.fixable} with a fix, safe or unsafe)")
    print(f"fixes applied             {r.fixed}  " + ", ".join(f"{k} {v}" for k, v in r.fixed_by_rule.items()))
    print(f"files changed             {r.files_changed}")
    print(f"findings remaining        {r.remaining}")
    print(f"fixes dropped (no parse)  {r.dropped}")
    print(f"files that stopped parsing {len(r.parse_failures)}" + (f": {r.parse_failures[:5]}" if r.parse_failures else ""))
    print(f"second pass: fixes        {r.second_pass_fixes} (diff lines {r.second_pass_diff_lines})")
    print(f"time: lint {r.lint_seconds}s, fix {r.fix_seconds}s, second pass {r.second_pass_seconds}s")
    for e in r.errors[:10]:
        print(f"  error: {e}")
    print("OK" if r.ok else "FAILED")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("paths", nargs="*", type=Path, help="folders to fix (default: installed transformers/models and timm)")
    ap.add_argument("--jobs", "-j", type=int, default=0, help="analysis processes (default: all CPUs)")
    ap.add_argument("--keep", type=Path, help="write the fixed copies here instead of a temporary folder")
    ap.add_argument("--json", type=Path, help="also write the results as JSON")
    args = ap.parse_args(argv)

    corpora = args.paths or default_corpora()
    if not corpora:
        print("no corpus: install transformers (or timm), or pass folders", file=sys.stderr)
        return 2
    results = []
    for source in corpora:
        if args.keep:
            args.keep.mkdir(parents=True, exist_ok=True)
            if (args.keep / source.name).exists():
                shutil.rmtree(args.keep / source.name)
            results.append(run_corpus(source, args.keep, args.jobs))
        else:
            with tempfile.TemporaryDirectory(prefix="dynalint-fix-corpus-") as tmp:
                results.append(run_corpus(source, Path(tmp), args.jobs))
        print_result(results[-1])
    if args.json:
        args.json.write_text(json.dumps([asdict(r) | {"ok": r.ok} for r in results], indent=2) + "\n")
    return 0 if all(r.ok for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
