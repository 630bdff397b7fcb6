"""Speed at codebase scale: dynalint against ruff and TorchFix on the same installed trees.

    python bench/speed.py                                  # every tool on both trees, median of 3
    python bench/speed.py --tools dynalint,ruff --trees transformers
    python bench/speed.py --torchfix /tmp/venv-torchfix/bin/torchfix --torchfix-runs 1 --json speed.json

Trees (found without importing anything):
  transformers   `transformers/models` of this interpreter's transformers
  timm           timm's package folder (`--timm PATH`; default: this interpreter's timm, else
                 /work/venv-acc/lib/python3.11/site-packages/timm)
  one-file       transformers' models/t5/modeling_t5.py (a ~1,500-line model file)

Runs, each a fresh process, stdout thrown away, median wall time of `--runs`:
  dynalint cold      `dynalint check --no-cache TREE` (all cores; `--no-cold` skips it)
  dynalint warm      `dynalint check --cache-dir C TREE` on a temporary copy of the tree, after
                     one run that filled the cache: nothing changed
  dynalint 1 changed the same, after appending a comment to one big model file before each run
                     (the file's interface is unchanged: only it is analysed again)
  ... new def        the same, appending a new function instead (its interface changed, but
                     nothing other files see: still only it is analysed again)
  ... new class      the same, appending a new class that no other file names (still local)
  ... new subclass   the same, appending a subclass of the file's first class (a class of
                     the same file that no other file names: still only it is analysed again)
  ... new method     the same, adding a method to the file's first class (other files name
                     that class, but no call of the project looks up a method of that name:
                     still local)
  ... subclass across files, ... call across files
                     the same, appending a subclass of a class imported from another file of the
                     tree, or a module whose forward passes a tensor to a function imported from
                     one (OTHER_FILE): edits other files see, so the whole-tree path (rounds,
                     reachability, the state for the next edits)
  ruff               `ruff check --select ALL --no-cache TREE`
  parse: ast/libcst  with --parse-every N: CPU time of parsing every Nth file in this process
  torchfix           `torchfix TREE` (its default rules), from its own virtual environment
                     (`--torchfix PATH`; skipped, saying so, when absent). It is slow: `--torchfix-runs`
                     (default 1) sets how many runs it gets, and the table says how many it had.

Peak RSS is the largest sum of the resident sets of the process and all its workers, sampled
every 20 ms (shared pages count once per process, so it errs high), next to the largest single
process as the kernel reports it (`wait4` rusage).
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass, field
from importlib.util import find_spec
from pathlib import Path
from typing import Optional

from children import CHILD_ENV, dynalint_command  # bench/children.py

DEFAULT_TIMM = Path("/work/venv-acc/lib/python3.11/site-packages/timm")
DEFAULT_TORCHFIX = Path("/tmp/venv-torchfix/bin/torchfix")
# The file changed between warm runs: a big model file of each tree.
CHANGED_FILE = {"transformers": "llama/modeling_llama.py", "timm": "models/vision_transformer.py"}
# What the edits that other files see import into it, relative to it: a class of another file
# to subclass, a function of another file to call with a tensor.
OTHER_FILE = {
    "transformers": {"class": ("..mistral.modeling_mistral", "MistralRMSNorm"), "function": ("..mistral.modeling_mistral", "rotate_half")},
    "timm": {"class": ("..layers.mlp", "Mlp"), "function": ("..layers.pos_embed", "resample_abs_pos_embed")},
}


@dataclass
class Tree:
    name: str
    path: Path
    files: int = 0
    lines: int = 0


@dataclass
class Row:
    tool: str
    tree: str
    files: int
    lines: int
    runs: list[float] = field(default_factory=list)
    peak_rss_mib: float = 0.0  # sum over the process tree
    max_process_rss_mib: float = 0.0
    cpu_s: float = 0.0  # user + system of the median run, workers included
    exit_codes: list[int] = field(default_factory=list)
    note: str = ""

    @property
    def wall(self) -> float:
        return statistics.median(self.runs)


# -- trees --------------------------------------------------------------------------------------


def package_dir(name: str) -> Optional[Path]:
    spec = find_spec(name)
    if spec is None or not spec.origin:
        return None
    return Path(spec.origin).parent


def count(path: Path) -> tuple[int, int]:
    """Python files and lines under path (or of one file), __pycache__ aside."""
    paths = [path] if path.is_file() else [Path(d) / f for d, dirs, fs in os.walk(path) for f in fs if f.endswith(".py")]
    lines = 0
    for p in paths:
        with open(p, "rb") as fh:
            lines += fh.read().count(b"\n")
    return len(paths), lines


def find_trees(names: list[str], timm: Optional[Path]) -> list[Tree]:
    trees = []
    tf = package_dir("transformers")
    for name in names:
        if name == "transformers" and tf is not None:
            trees.append(Tree("transformers/models", tf / "models"))
        elif name == "timm":
            path = timm or package_dir("timm") or DEFAULT_TIMM
            if path.is_dir():
                trees.append(Tree("timm", path))
            else:
                print(f"skipping timm: {path} not found (--timm PATH)", file=sys.stderr)
        elif name == "one-file" and tf is not None:
            trees.append(Tree("one file: t5/modeling_t5.py", tf / "models" / "t5" / "modeling_t5.py"))
        elif name in ("transformers", "one-file"):
            print(f"skipping {name}: transformers is not installed for {sys.executable}", file=sys.stderr)
    for t in trees:
        t.files, t.lines = count(t.path)
    return trees


# -- measuring one process -----------------------------------------------------------------------


def _tree_rss_kib(pid: int) -> int:
    """Resident set of pid and all its descendants, from /proc (0 once it is gone)."""
    total, stack = 0, [pid]
    while stack:
        p = stack.pop()
        try:
            with open(f"/proc/{p}/status") as fh:
                for line in fh:
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1])
                        break
            with open(f"/proc/{p}/task/{p}/children") as fh:
                stack.extend(int(c) for c in fh.read().split())
        except (OSError, ValueError):
            continue
    return total


@dataclass
class Measure:
    wall: float
    exit_code: int
    peak_tree_kib: int
    max_process_kib: int
    cpu: float


def warm_up_bytecode(cmd: list[str], work: Path) -> None:
    """One unmeasured check of a tiny model, so that the modules on the check path have their
    bytecode cached before anything is timed."""
    tiny = work / "warm_up_model.py"
    tiny.write_text("from torch import nn\n\nclass M(nn.Module):\n    def forward(self, x):\n        print(x)\n        return x\n")
    subprocess.run(cmd + ["--no-cache", str(tiny)], cwd=work, env=CHILD_ENV, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    tiny.unlink()


def run_once(cmd: list[str], cwd: Path) -> Measure:
    peak = [0]
    with tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.DEVNULL, stderr=err, env=CHILD_ENV)
        done = threading.Event()

        def sample() -> None:
            while not done.wait(0.02):
                peak[0] = max(peak[0], _tree_rss_kib(proc.pid))

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        done.set()
        sampler.join()
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode not in (0, 1):
            err.seek(0)
            tail = err.read().decode(errors="replace")[-2000:]
            raise SystemExit(f"{' '.join(cmd)} exited {proc.returncode}:\n{tail}")
    return Measure(wall, proc.returncode, peak[0], usage.ru_maxrss, usage.ru_utime + usage.ru_stime)


def measure(row: Row, cmd: list[str], cwd: Path, runs: int, before_each=None) -> Row:
    measures = []
    for i in range(runs):
        if before_each is not None:
            before_each(i)
        m = run_once(cmd, cwd)
        measures.append(m)
        print(f"  {row.tool:<22} {row.tree:<28} run {i + 1}/{runs}: {m.wall:7.2f} s", file=sys.stderr)
    row.runs = [m.wall for m in measures]
    row.exit_codes = [m.exit_code for m in measures]
    row.peak_rss_mib = max(m.peak_tree_kib for m in measures) / 1024
    row.max_process_rss_mib = max(m.max_process_kib for m in measures) / 1024
    median = sorted(measures, key=lambda m: m.wall)[len(measures) // 2]
    row.cpu_s = median.cpu
    return row


# -- the tools ------------------------------------------------------------------------------------


def bench_dynalint(tree: Tree, runs: int, jobs: int, work: Path, cold: bool = True) -> list[Row]:
    base = dynalint_command() + ["check"] + (["-j", str(jobs)] if jobs else [])
    warm_up_bytecode(base, work)
    rows = []
    if cold:
        rows.append(measure(Row("dynalint cold", tree.name, tree.files, tree.lines), base + ["--no-cache", str(tree.path)], work, runs))
    # Warm runs on a copy: the cache lives beside it, and one file of it may be edited.
    copy = work / "tree"
    if copy.exists():
        shutil.rmtree(copy)
    if tree.path.is_file():
        copy.mkdir()
        target = copy / tree.path.name
        shutil.copy2(tree.path, target)
        changed = target
    else:
        shutil.copytree(tree.path, copy, ignore=shutil.ignore_patterns("__pycache__"))
        target = copy
        rel = CHANGED_FILE.get(tree.name.split("/")[0])
        changed = copy / rel if rel and (copy / rel).is_file() else max(copy.rglob("*.py"), key=lambda p: p.stat().st_size)
    cache = work / "cache"
    shutil.rmtree(cache, ignore_errors=True)
    cmd = base + ["--cache-dir", str(cache), str(target)]
    run_once(cmd, work)  # fills the cache
    rows.append(measure(Row("dynalint warm", tree.name, tree.files, tree.lines), cmd, work, runs))

    original = changed.read_text(encoding="utf-8")

    def edit(i: int) -> None:
        changed.write_text(original + f"\n# edited for run {i} at {time.time()}\n", encoding="utf-8")

    note = f"edits {changed.relative_to(copy).as_posix() if changed != copy else changed.name}"
    row = Row("dynalint 1 changed", tree.name, tree.files, tree.lines, note=note)
    rows.append(measure(row, cmd, work, runs, before_each=edit))

    def add_function(i: int) -> None:
        changed.write_text(original + f"\n\ndef edited_for_run_{i}_{time.time_ns()}(x):\n    return x\n", encoding="utf-8")

    # A new function changes the file's interface, but nothing another file sees: still local.
    row = Row("dynalint 1 changed, new def", tree.name, tree.files, tree.lines, note=note)
    rows.append(measure(row, cmd, work, runs, before_each=add_function))

    def add_class(i: int) -> None:
        changed.write_text(original + f"\n\nclass EditedForRun{i}_{time.time_ns()}:\n    pass\n", encoding="utf-8")

    # A new class nobody names, with bases outside the linted files: local.
    row = Row("dynalint 1 changed, new class", tree.name, tree.files, tree.lines, note=note)
    rows.append(measure(row, cmd, work, runs, before_each=add_class))

    first_class = next((n.name for n in ast.parse(original).body if isinstance(n, ast.ClassDef)), None)

    def add_subclass(i: int) -> None:
        changed.write_text(original + f"\n\nclass EditedForRun{i}_{time.time_ns()}({first_class}):\n    pass\n", encoding="utf-8")

    # A subclass of a class of the same file, named by no other file: local.
    if first_class is not None:
        row = Row("dynalint 1 changed, new subclass", tree.name, tree.files, tree.lines, note=note)
        rows.append(measure(row, cmd, work, runs, before_each=add_subclass))

    first = next((n for n in ast.parse(original).body if isinstance(n, ast.ClassDef)), None)
    lines = original.splitlines(keepends=True)

    def add_method(i: int) -> None:
        body = lines[first.body[0].lineno - 1]
        indent = body[: len(body) - len(body.lstrip())]
        method = f"\n{indent}def edited_for_run_{i}_{time.time_ns()}(self, x):\n{indent}    return x\n"
        changed.write_text("".join(lines[: first.end_lineno] + [method] + lines[first.end_lineno :]), encoding="utf-8")

    # A new method of a class other files name (in both trees' changed files), under a name no
    # call looks up: local (the whole-tree path before 1d8820f).
    if first is not None:
        row = Row("dynalint 1 changed, new method", tree.name, tree.files, tree.lines, note=note)
        rows.append(measure(row, cmd, work, runs, before_each=add_method))
    other = OTHER_FILE.get(tree.name.split("/")[0])
    if other is not None and changed != copy:
        (cls_module, cls_name), (fn_module, fn_name) = other["class"], other["function"]

        def subclass_other(i: int) -> None:
            name = f"EditedForRun{i}_{time.time_ns()}"
            changed.write_text(
                original + f"\n\nfrom {cls_module} import {cls_name} as {name}Base\n\n\nclass {name}({name}Base):\n    pass\n",
                encoding="utf-8",
            )

        # Other files see these two: the whole-tree path (cross-file rounds, reachability).
        row = Row("dynalint 1 changed, subclass across files", tree.name, tree.files, tree.lines, note=note)
        rows.append(measure(row, cmd, work, runs, before_each=subclass_other))

        def call_other(i: int) -> None:
            name = f"EditedForRun{i}_{time.time_ns()}"
            changed.write_text(
                original
                + f"\n\nimport torch.nn as {name}_nn\nfrom {fn_module} import {fn_name} as {name}_call\n\n\n"
                + f"class {name}({name}_nn.Module):\n    def forward(self, x):\n        return {name}_call(x)\n",
                encoding="utf-8",
            )

        row = Row("dynalint 1 changed, call across files", tree.name, tree.files, tree.lines, note=note)
        rows.append(measure(row, cmd, work, runs, before_each=call_other))
    changed.write_text(original, encoding="utf-8")
    return rows


def bench_ruff(tree: Tree, runs: int, work: Path) -> list[Row]:
    ruff = shutil.which("ruff")
    if ruff is None:
        print("skipping ruff: not on PATH", file=sys.stderr)
        return []
    cmd = [ruff, "check", "--select", "ALL", "--no-cache", str(tree.path)]
    return [measure(Row("ruff --select ALL", tree.name, tree.files, tree.lines), cmd, work, runs)]


def bench_torchfix(tree: Tree, runs: int, exe: Optional[Path], work: Path) -> list[Row]:
    if exe is None or not exe.exists():
        print(f"skipping torchfix: {exe} not found (python -m venv /tmp/venv-torchfix && /tmp/venv-torchfix/bin/pip install torchfix)", file=sys.stderr)
        return []
    row = Row("torchfix 0.7", tree.name, tree.files, tree.lines)
    return [measure(row, [str(exe), str(tree.path)], work, runs)]


# -- report -----------------------------------------------------------------------------------------


def table(rows: list[Row]) -> str:
    ruff = {r.tree: r.wall for r in rows if r.tool.startswith("ruff")}
    out = [
        "| tool | tree | files | lines | wall s (median) | lines/s | CPU s | peak RSS MiB (all processes / largest) | vs ruff | note |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in rows:
        ratio = f"{r.wall / ruff[r.tree]:.1f}x" if r.tree in ruff else "–"
        runs = f"{len(r.runs)} run{'s' if len(r.runs) != 1 else ''}"
        note = runs + (f", {r.note}" if r.note else "")
        out.append(
            f"| {r.tool} | {r.tree} | {r.files:,} | {r.lines:,} | {r.wall:.2f} | {r.lines / r.wall:,.0f} | {r.cpu_s:.1f} "
            f"| {r.peak_rss_mib:,.0f} / {r.max_process_rss_mib:,.0f} | {ratio} | {note} |"
        )
    return "\n".join(out)


def parse_rates(tree: Tree, every: int) -> list[Row]:
    """CPU time of parsing every `every`-th file with Python's `ast` and with libcst, in this
    process, collector off: the floor under any libcst-based analysis of the tree."""
    import ast
    import gc

    import libcst

    paths = sorted(p for p in ([tree.path] if tree.path.is_file() else tree.path.rglob("*.py")) if "__pycache__" not in p.parts)
    texts = [p.read_text(encoding="utf-8") for p in paths[::every]]
    lines = sum(t.count("\n") for t in texts)
    rows = []
    for name, parse in (("parse: ast", ast.parse), ("parse: libcst", libcst.parse_module)):
        gc.disable()
        start = time.process_time()
        for text in texts:
            parse(text)
        cpu = time.process_time() - start
        gc.enable()
        row = Row(name, tree.name, len(texts), lines, runs=[cpu], cpu_s=cpu, note=f"every {every}th file, one core, CPU s as wall")
        rows.append(row)
        print(f"  {name:<22} {tree.name:<28} {cpu:7.2f} s CPU for {lines:,} lines", file=sys.stderr)
    return rows


def machine() -> str:
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    return f"{os.cpu_count()} cores, Python {platform.python_version()}, {platform.machine()}, load average {load:.1f} at the end"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tools", default="dynalint,ruff,torchfix", help="comma-separated: dynalint, ruff, torchfix")
    ap.add_argument("--trees", default="transformers,timm,one-file", help="comma-separated: transformers, timm, one-file")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--torchfix", type=Path, default=DEFAULT_TORCHFIX, help="torchfix executable (its own venv)")
    ap.add_argument("--torchfix-runs", type=int, default=1)
    ap.add_argument("--timm", type=Path, default=None, help="timm package folder")
    ap.add_argument("-j", "--jobs", type=int, default=0, help="dynalint workers (default: all cores)")
    ap.add_argument("--json", type=Path, help="also write the rows here")
    ap.add_argument("--parse-every", type=int, default=0, help="also time parsing every Nth file with ast and libcst")
    ap.add_argument("--no-cold", action="store_true", help="skip dynalint's cold rows (warm and edit rows only)")
    args = ap.parse_args()

    tools = [t.strip() for t in args.tools.split(",") if t.strip()]
    trees = find_trees([t.strip() for t in args.trees.split(",") if t.strip()], args.timm)
    rows: list[Row] = []
    with tempfile.TemporaryDirectory(prefix="dynalint-speed-") as tmp:
        work = Path(tmp)
        for tree in trees:
            print(f"{tree.name}: {tree.files:,} files, {tree.lines:,} lines ({tree.path})", file=sys.stderr)
            if "ruff" in tools:
                rows += bench_ruff(tree, args.runs, work)
            if "dynalint" in tools:
                rows += bench_dynalint(tree, args.runs, args.jobs, work, cold=not args.no_cold)
            if "torchfix" in tools:
                rows += bench_torchfix(tree, args.torchfix_runs, args.torchfix, work)
            if args.parse_every:
                rows += parse_rates(tree, args.parse_every)
    print(f"\n{machine()}\n")
    print(table(rows))
    if args.json:
        args.json.write_text(json.dumps({"machine": machine(), "rows": [{**asdict(r), "wall_s": r.wall} for r in rows]}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
