"""Latency of `dynalint check` on one big model file from a cold process (the on-save path).

    python bench/latency.py                   # transformers' modeling_t5.py if installed, else a generated file
    python bench/latency.py --file path.py --runs 20 --json out.json --budget 0.5

Each run is a new process running the installed `dynalint` console script, as an editor's
on-save hook or pre-commit starts it. Measured cases:
  startup      `dynalint --version`: interpreter + click + the CLI module
  check-cold   `dynalint check --no-cache FILE`: the file changed since the last run (the on-save case)
  cold-no-table  the same with DYNALINT_NO_IMPORT_CACHE=1: libcst imported without the table of
               its dataclass code (dynalint/run/importcache.py)
  check-warm   `dynalint check FILE` with the cache already filled: the file did not change
  stdin        `dynalint check --no-cache --stdin-filename FILE < FILE`: editor plugins
  in-process   one `lint_source` call in a warm process: what `dynalint lsp` pays per edit
`phases` splits one cold run into imports, libcst parse, analysis and cross-file selection.
The script also checks that the check path never imports torch (or numpy) and lists the
third-party packages it does import.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from importlib.util import find_spec
from pathlib import Path

from children import CHILD_ENV, dynalint_command  # bench/children.py

THIRD_PARTY_OK = {"click", "libcst", "pathspec", "yaml", "typing_extensions", "tomli"}


def default_file() -> tuple[Path, str]:
    """A ~1,500-line real model file: transformers' T5 when installed (found without importing
    transformers), else a generated one so that the benchmark runs anywhere."""
    spec = find_spec("transformers")
    if spec is not None and spec.origin:
        t5 = Path(spec.origin).parent / "models" / "t5" / "modeling_t5.py"
        if t5.is_file():
            return t5, "transformers/models/t5/modeling_t5.py"
    path = Path(tempfile.mkdtemp(prefix="dynalint-latency-")) / "generated_model.py"
    path.write_text(generated_model(1500))
    return path, "generated_model.py (transformers not installed)"


BLOCK = '''

class Block{i}(nn.Module):
    """Attention block {i}."""

    def __init__(self, dim: int, heads: int = 8):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, dim * 3)
        self.proj = nn.Linear(dim, dim)
        self.norm = nn.LayerNorm(dim)
        self.scale = (dim // heads) ** -0.5

    def forward(self, x, mask=None):
        b, n, d = x.shape
        q, k, v = self.qkv(self.norm(x)).chunk(3, dim=-1)
        q = q.view(b, n, self.heads, -1).transpose(1, 2)
        k = k.view(b, n, self.heads, -1).transpose(1, 2)
        v = v.view(b, n, self.heads, -1).transpose(1, 2)
        attn = (q @ k.transpose(-2, -1)) * self.scale
        if mask is not None:
            attn = attn.masked_fill(mask[:, None, None, :] == 0, float("-inf"))
        if x.size(1) > 512:
            attn = attn.float()
        attn = attn.softmax(dim=-1)
        out = (attn @ v).transpose(1, 2).reshape(b, n, d)
        print("block {i}", out.shape)
        return x + self.proj(out)
'''


def generated_model(lines: int) -> str:
    out = ['"""A generated model file for the latency benchmark."""\n', "import torch\n", "from torch import nn\n"]
    i = 0
    while sum(s.count("\n") for s in out) < lines:
        out.append(BLOCK.replace("{i}", str(i)))
        i += 1
    return "".join(out)


# CPU seconds (user + system) of each timed child, by case: on a busy machine wall time
# includes waiting for a core, CPU time does not.
CPU_TIMES: dict[str, list[float]] = {}


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def time_runs(cmd: list[str], runs: int, cwd: Path, stdin_file: Path | None = None, case: str = "", env: dict | None = None) -> list[float]:
    env = CHILD_ENV if env is None else env
    times = []
    for _ in range(runs):
        stdin = open(stdin_file, "rb") if stdin_file else subprocess.DEVNULL
        try:
            cpu0 = _children_cpu()
            t0 = time.perf_counter()
            proc = subprocess.run(cmd, cwd=cwd, stdin=stdin, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
            times.append(time.perf_counter() - t0)
            CPU_TIMES.setdefault(case, []).append(_children_cpu() - cpu0)
        finally:
            if stdin_file:
                stdin.close()
        if proc.returncode not in (0, 1):
            raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}): {proc.stderr.decode()[-2000:]}")
    return times


IMPORT_PROBE = """
import sys
before = set(sys.modules)  # what site-packages' .pth hooks loaded before dynalint
from dynalint.cli import main
try:
    main(["check", "--no-cache", sys.argv[1]])
except SystemExit:
    pass
new = set(sys.modules) - before
top = sorted({m.split(".")[0] for m in new} - set(sys.stdlib_module_names) - {"dynalint", "__main__"})
print("TOP", ",".join(top))
"""


IN_PROCESS_PROBE = """
import sys, time
from dynalint.run.engine import lint_source
text = open(sys.argv[1], encoding="utf-8").read()
lint_source(text, sys.argv[1])  # imports and first-call caches
for i in range(int(sys.argv[2])):
    edited = text + f"# edit {i}\\n"  # a new text each time, as after an edit (no parse reuse)
    t0 = time.perf_counter()
    lint_source(edited, sys.argv[1])
    print("T", time.perf_counter() - t0)
"""


def in_process_times(target: Path, runs: int, cwd: Path) -> list[float]:
    proc = subprocess.run(
        [sys.executable, "-c", IN_PROCESS_PROBE, str(target), str(runs)], cwd=cwd, capture_output=True, text=True, env=CHILD_ENV
    )
    return [float(x[2:]) for x in proc.stdout.splitlines() if x.startswith("T ")]


PHASES_PROBE = """
import sys, time
t0 = time.perf_counter()
import click
t1 = time.perf_counter()
from dynalint.run import importcache
importcache.install()  # as the command line does
import libcst
t2 = time.perf_counter()
from dynalint.config import Config
from dynalint.run.engine import select_findings
from dynalint.lint.analyzer import analyze_source
from dynalint.lint.rules import all_rules
import dynalint.fixes.providers  # the fixes rules offer, as the engine loads them
all_rules()
t3 = time.perf_counter()
text = open(sys.argv[1], encoding="utf-8").read()
from dynalint.lint.analyzer import parse_unvalidated
parse_unvalidated(text)
t4 = time.perf_counter()
summary = analyze_source(text, sys.argv[1], "model")
t5 = time.perf_counter()
select_findings([summary], Config())
t6 = time.perf_counter()
print("P", t1 - t0, t2 - t1, t3 - t2, t4 - t3, t5 - t4, t6 - t5)
"""
PHASES = ("import click", "import libcst", "import dynalint", "parse", "analyze (incl. parse)", "select")


def phase_times(target: Path, runs: int, cwd: Path) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {name: [] for name in PHASES}
    for _ in range(runs):
        proc = subprocess.run([sys.executable, "-c", PHASES_PROBE, str(target)], cwd=cwd, capture_output=True, text=True, env=CHILD_ENV)
        (line,) = [x for x in proc.stdout.splitlines() if x.startswith("P ")]
        for name, value in zip(PHASES, line[2:].split()):
            out[name].append(float(value))
    return out


def imported_packages(target: Path, cwd: Path) -> list[str]:
    proc = subprocess.run(
        [sys.executable, "-c", IMPORT_PROBE, str(target)], cwd=cwd, capture_output=True, text=True, timeout=300
    )
    line = [x for x in proc.stdout.splitlines() if x.startswith("TOP ")][-1]
    return [m for m in line[4:].split(",") if m]


def summarize(times: list[float]) -> dict:
    return {
        "min_s": round(min(times), 3),
        "median_s": round(statistics.median(times), 3),
        "max_s": round(max(times), 3),
        "runs": len(times),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--file", type=Path, help="model file to lint (default: transformers' modeling_t5.py)")
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--json", type=Path, help="write the results here")
    ap.add_argument("--budget", type=float, help="exit 1 if check-cold's median is above this many seconds")
    args = ap.parse_args()

    target, label = (args.file.resolve(), str(args.file)) if args.file else default_file()
    n_lines = target.read_text(encoding="utf-8").count("\n")
    cmd = dynalint_command()
    with tempfile.TemporaryDirectory(prefix="dynalint-latency-run-") as tmp:
        work = Path(tmp)
        # Lint a copy in an empty folder: no project config, cache or siblings in play.
        copy = work / target.name
        shutil.copy(target, copy)
        cache = work / "cache"
        time_runs([*cmd, "check", "--cache-dir", str(cache), copy.name], 1, work)  # fill the cache
        cases = {
            "startup": time_runs([*cmd, "--version"], args.runs, work, case="startup"),
            "check-cold": time_runs([*cmd, "check", "--no-cache", copy.name], args.runs, work, case="check-cold"),
            # the same without the table of libcst's dataclass code (dynalint/run/importcache.py)
            "cold-no-table": time_runs(
                [*cmd, "check", "--no-cache", copy.name], args.runs, work, case="cold-no-table",
                env=dict(CHILD_ENV, DYNALINT_NO_IMPORT_CACHE="1"),
            ),
            "check-warm": time_runs([*cmd, "check", "--cache-dir", str(cache), copy.name], args.runs, work, case="check-warm"),
            "stdin": time_runs(
                [*cmd, "check", "--no-cache", "--stdin-filename", copy.name], args.runs, work, stdin_file=copy, case="stdin"
            ),
        }
        cases["in-process"] = in_process_times(copy, args.runs, work)
        phases = phase_times(copy, args.runs, work)
        packages = imported_packages(copy, work)

    result = {
        "file": label,
        "lines": n_lines,
        "command": " ".join(Path(c).name if i == 0 else c for i, c in enumerate(cmd)),
        "python": platform.python_version(),
        "machine": f"{platform.machine()}, {os.cpu_count()} cpus",
        "cases": {k: summarize(v) for k, v in cases.items()},
        "cpu": {k: summarize(v) for k, v in CPU_TIMES.items()},
        "load_average": os.getloadavg()[0],
        "phases": {k: summarize(v) for k, v in phases.items()},
        "third_party_imports": packages,
        "torch_imported": "torch" in packages,
    }
    print(f"dynalint check latency: {label} ({n_lines} lines), {args.runs} cold processes each")
    print(f"{'case':<14} {'min':>7} {'median':>7} {'max':>7} {'CPU median':>11}")
    for name, s in result["cases"].items():
        cpu = result["cpu"].get(name)
        cpu_text = f"{cpu['median_s']:>10.3f}s" if cpu else f"{'':>11}"
        print(f"{name:<14} {s['min_s']:>6.3f}s {s['median_s']:>6.3f}s {s['max_s']:>6.3f}s {cpu_text}")
    print(f"load average (1 min) at the end: {result['load_average']:.1f} on {os.cpu_count()} cores")
    print("phases of one cold run (median): " + ", ".join(f"{k} {v['median_s']:.3f}s" for k, v in result["phases"].items()))
    print(f"third-party packages imported by `check`: {', '.join(packages) or 'none'}")
    unexpected = sorted(set(packages) - THIRD_PARTY_OK)
    if unexpected:
        print(f"unexpected imports on the check path: {', '.join(unexpected)}")
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n")
    over = args.budget is not None and result["cases"]["check-cold"]["median_s"] > args.budget
    if over:
        print(f"check-cold median {result['cases']['check-cold']['median_s']}s is over the {args.budget}s budget")
    return 1 if over or result["torch_imported"] or unexpected else 0


if __name__ == "__main__":
    sys.exit(main())
