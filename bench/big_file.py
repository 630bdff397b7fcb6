"""Cost of one big file: wall time, CPU time and peak memory of `dynalint check` on one generated
model file of N lines (many classes, each with an `__init__`, a helper and a `forward` holding a
print, a logging call and a tensor branch: findings in every class, as in real model files).

Per-file cost should grow linearly: the CPU seconds per 10k lines should stay about the same from
10k to 200k lines.

    python bench/big_file.py                       # 10k, 20k, 50k lines
    python bench/big_file.py --lines 200000        # one size
    python bench/big_file.py --bool-chain 20000    # one forward testing `x0 and x1 and ...` (20,000 terms)
    python bench/big_file.py --assert-chain 2000   # one forward asserting `x0.sum() > 0 and ...` (2,000 terms)
    python bench/big_file.py --lines 20000 --phases  # where one file's time goes (in this process)
    python bench/big_file.py --lines 200000 --whole-parse  # libcst parsing the file whole, to compare

Files of 200,000 characters or more are parsed in pieces joined into one tree
(`lint/parsing.parse_in_pieces`); `--whole-parse` (with or without `--phases`) parses them whole.

`--bool-chain N` writes one deep expression instead: a forward whose `if` tests an N-term
`and` chain of comparisons on its tensor argument (libcst nests it N levels deep), so a step that
looks at a node's whole subtree for every node costs N squared. `--assert-chain N` asserts such a
chain instead: each operand is a finding whose fix splits the whole assert (one per operand), so
building that fix once per operand would cost N squared too.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HEADER = (
    "import logging\n\nimport torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n\n"
    "logger = logging.getLogger(__name__)\n"
)

BLOCK = '''

class Block{i}(nn.Module):
    """Block {i}."""

    def __init__(self, dim, heads=8, dropout=0.1):
        super().__init__()
        self.q = nn.Linear(dim, dim)
        self.k = nn.Linear(dim, dim)
        self.v = nn.Linear(dim, dim)
        self.o = nn.Linear(dim, dim)
        self.norm = nn.LayerNorm(dim)
        self.drop = nn.Dropout(dropout)
        self.heads = heads
        self.register_buffer("scale", torch.tensor(dim ** -0.5))

    def _split(self, t):
        b, n, d = t.shape
        return t.view(b, n, self.heads, d // self.heads).transpose(1, 2)

    def forward(self, x, mask=None):
        h = self.norm(x)
        q, k, v = self._split(self.q(h)), self._split(self.k(h)), self._split(self.v(h))
        att = torch.matmul(q, k.transpose(-1, -2)) * self.scale
        if mask is not None:
            att = att.masked_fill(mask == 0, float("-inf"))
        att = F.softmax(att, dim=-1)
        if att.isnan().any():
            logger.warning("nan in block {i}")
        out = torch.matmul(self.drop(att), v)
        out = out.transpose(1, 2).reshape(x.shape)
        print(out.shape)
        return x + self.o(out)
'''


def model_file(lines: int) -> str:
    parts = [HEADER]
    count = HEADER.count("\n")
    i = 0
    while count < lines:
        block = BLOCK.format(i=i)
        parts.append(block)
        count += block.count("\n")
        i += 1
    return "".join(parts)


def _chain_forward(body: str) -> str:
    """A module whose forward takes ten tensors x0..x9 and runs body (indented lines)."""
    return (
        "import torch\nfrom torch import nn\n\n\nclass Chain(nn.Module):\n"
        f"    def forward(self, {', '.join(f'x{i}: torch.Tensor' for i in range(10))}):\n" + body
    )


def bool_chain_file(terms: int) -> str:
    chain = " and ".join(f"x{i % 10} > {i}" for i in range(terms))
    return _chain_forward(f"        if {chain}:\n            return x0 + 1\n        return x0\n")


def assert_chain_file(terms: int) -> str:
    chain = " and ".join(f"x{i % 10}.sum() > {i}" for i in range(terms))
    return _chain_forward(f"        assert {chain}, \"bad input\"\n        return x0\n")


def phases(text: str, whole_parse: bool = False) -> dict[str, float]:
    """CPU seconds of each phase of one file's analysis, in this process, with the cycle collector
    off and the fixes rules offer loaded, as `dynalint check` runs it: libcst's parse, then the
    analyzer's steps (its methods timed where they are called; "kind inference" is the rest of
    the analysis: the two passes over every function that only infer kinds). The fixes' own
    work falls in the rules' walk (what they gather there) and in "positions and fixes"."""
    import gc

    import dynalint.fixes.providers  # noqa: F401  (as the engine does: rules offer their fixes)
    from dynalint.lint import analyzer, fastcst, parsing
    from dynalint.lint.deep import call_deep

    pieces_from = parsing.PIECES_FROM
    if whole_parse:
        parsing.PIECES_FROM = float("inf")

    times: dict[str, float] = {}
    active: set = set()

    def timed(name, fn):
        def wrapper(*args, **kwargs):
            if name in active:  # a recursive call: its time is in the outer one's
                return fn(*args, **kwargs)
            active.add(name)
            start = time.process_time()
            try:
                return fn(*args, **kwargs)
            finally:
                times[name] = times.get(name, 0.0) + time.process_time() - start
                active.discard(name)

        return wrapper

    fa_cls = analyzer.FileAnalyzer
    steps = {
        "module scans": "scan_module_level",
        "class tables": "_declare",
        "rules' walk": "_visit_function",
        "positions and fixes": "_resolve_positions",
    }
    saved = {attr: getattr(fa_cls, attr) for attr in steps.values()}
    saved_positions = fastcst.positions
    saved_of = fastcst.StatementPositions.of
    for name, attr in steps.items():
        setattr(fa_cls, attr, timed(name, saved[attr]))
    # the positions computed up front (a big file's: one top-level statement at a time)
    fastcst.positions = timed("  of which positions", saved_positions)
    fastcst.StatementPositions.of = timed("  of which positions", saved_of)

    def run() -> None:
        start = time.process_time()
        module = analyzer.parse_unvalidated(text)
        times["libcst parse"] = time.process_time() - start
        start = time.process_time()
        fa = fa_cls(module, "big.py", "big", False, analyzer.AnalyzerOptions())
        fa.source = text
        summary = fa.run()
        times["analysis"] = time.process_time() - start
        start = time.process_time()
        summary.to_cache()
        times["summary"] = time.process_time() - start

    was_enabled = gc.isenabled()
    gc.disable()
    try:
        call_deep(run)
    finally:
        if was_enabled:
            gc.enable()
        for attr, fn in saved.items():
            setattr(fa_cls, attr, fn)
        fastcst.positions = saved_positions
        fastcst.StatementPositions.of = saved_of
        parsing.PIECES_FROM = pieces_from
    times["kind inference"] = times["analysis"] - sum(times.get(name, 0.0) for name in steps)
    order = ["libcst parse", "module scans", "class tables", "kind inference", "rules' walk", "positions and fixes", "  of which positions", "summary"]
    return {name: times.get(name, 0.0) for name in order}


def measure(path: Path, jobs: int, whole_parse: bool = False) -> tuple[float, float, int, int]:
    """(wall s, CPU s, peak RSS MiB, findings) of one cold `dynalint check` of path; with
    whole_parse, libcst parses the file whole, as it did before big files were parsed in pieces."""
    cli = "import sys; from dynalint.cli import main; sys.exit(main())"
    if whole_parse:
        cli = "from dynalint.lint import parsing; parsing.PIECES_FROM = float('inf'); " + cli
    cmd = [sys.executable, "-c", cli, "check", "--no-cache", "-j", str(jobs), "--output-format", "json", str(path)]
    env = {**os.environ, "DYNALINT_NO_CACHE": "1"}
    start = time.perf_counter()
    with tempfile.TemporaryFile() as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.PIPE, env=env)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode not in (0, 1):
            raise SystemExit(f"dynalint exited {proc.returncode}: {proc.stderr.read().decode()[-2000:]}")
        out.seek(0)
        import json

        findings = len(json.loads(out.read().decode()))
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss // 1024, findings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lines", type=int, action="append", help="file sizes in lines (repeatable)")
    parser.add_argument("--bool-chain", type=int, action="append", help="terms of one `and` chain (repeatable)")
    parser.add_argument("--assert-chain", type=int, action="append", help="terms of one asserted `and` chain (repeatable)")
    parser.add_argument("--phases", action="store_true", help="split one analysis into its phases, in this process")
    parser.add_argument("--whole-parse", action="store_true", help="parse the file whole (as before parsing big files in pieces), to compare")
    parser.add_argument("-j", "--jobs", type=int, default=1)
    args = parser.parse_args()
    cases = [("lines", n, model_file(n)) for n in args.lines or ()]
    cases += [("terms", n, bool_chain_file(n)) for n in args.bool_chain or ()]
    cases += [("asserted", n, assert_chain_file(n)) for n in args.assert_chain or ()]
    if not cases:
        cases = [("lines", n, model_file(n)) for n in (10_000, 20_000, 50_000)]
    if args.phases:
        for unit, n, text in cases:
            print(f"{n} {unit}: CPU s per phase (in process, cycle collector off)")
            split = phases(text, args.whole_parse)
            for name, seconds in split.items():
                print(f"  {name:<22} {seconds:7.2f}")
            print(f"  {'total':<22} {sum(v for k, v in split.items() if not k.startswith(' ')):7.2f}")
        return
    print(f"{'size':>17} {'MB':>6} {'wall s':>8} {'CPU s':>8} {'CPU s/10k':>10} {'peak MiB':>9} {'findings':>9}")
    with tempfile.TemporaryDirectory() as tmp:
        for unit, n, text in cases:
            path = Path(tmp) / f"{unit}_{n}.py"
            path.write_text(text)
            wall, cpu, rss, findings = measure(path, args.jobs, args.whole_parse)
            print(
                f"{n:>8} {unit:<8} {len(text) / 1e6:>6.2f} {wall:>8.1f} {cpu:>8.1f} {cpu / n * 1e4:>10.2f} {rss:>9} {findings:>9}",
                flush=True,
            )


if __name__ == "__main__":
    main()
