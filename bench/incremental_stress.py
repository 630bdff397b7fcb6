"""Random edits on a copy of a tree: the incremental path's findings against the whole tree's.

    cp -r .../transformers/models /tmp/tfs
    python bench/incremental_stress.py /tmp/tfs /tmp/tfs-cache 150 2   # TREE CACHE EDITS SEED

Each step edits one random `modeling_*.py` file (a new function, a new function called from a
forward, a call of one of the file's functions from a forward, a removed function, a new import,
a print, a new class, a new nn.Module with a forward, a new method of a class, a subclass of
one of the file's classes with a forward, one overriding a method of it, a subclass of another
model file's class, a call from a forward of another model file's function), then lints the
tree through `dynalint.run.incremental.lint_tree` (as `dynalint check` does) and through the
whole-tree path (`analyze_files` + `select_findings`, with the cache's per-file entries, its
cross-file rounds run again and the compile regions walked in a project of its own), and
compares the findings. The edits accumulate; the copy is left edited.
It prints each step's path (local or whole tree) and time, and the mismatches (there must be
none).
"""
import ast
import os
import random
import sys
import time
from pathlib import Path
from dynalint.check import CheckOptions, effective_config, collect_files
from dynalint.run import engine, incremental

ROOT = Path(sys.argv[1]); CACHE = Path(sys.argv[2]); N = int(sys.argv[3]); SEED = int(sys.argv[4])
rng = random.Random(SEED)
os.chdir(ROOT.parent)
opts = CheckOptions(paths=[Path(ROOT.name)])
config = effective_config(opts)
count = [0]
real = engine.analyze_files
def counting(*a, **k):
    count[0] += 1
    return real(*a, **k)
engine.analyze_files = counting
files = collect_files(opts, config)
model_files = [f for f in files if f.path.name.startswith("modeling_")]
key = lambda f: (f.filename, f.row, f.column, f.code, f.message)
incremental.lint_tree(files, config, cache_dir=CACHE)
stats = {}
def edit(path: Path, i: int) -> str:
    text = path.read_text()
    tree = ast.parse(text)
    lines = text.splitlines(keepends=True)
    top_fns = [n for n in tree.body if isinstance(n, ast.FunctionDef)]
    forwards = [m for c in tree.body if isinstance(c, ast.ClassDef) for m in c.body if isinstance(m, ast.FunctionDef) and m.name == "forward"]
    classes = [c for c in tree.body if isinstance(c, ast.ClassDef)]
    kind = rng.choice(
        ["def", "def+call", "call-existing", "remove-fn", "import", "print-in-fn", "class", "module-class", "method",
         "subclass", "override", "subclass-other", "call-other"]
    )
    def insert_in(fn, stmt):
        # before the first line of the body's last statement, at its indentation
        last = fn.body[-1]
        ln = last.lineno - 1
        indent = lines[ln][: len(lines[ln]) - len(lines[ln].lstrip())]
        lines.insert(ln, indent + stmt + "\n")
    if kind == "def":
        lines.append(f"\n\ndef _dl_new_{i}(x):\n    print(x)\n    return x\n")
    elif kind == "def+call" and forwards:
        insert_in(rng.choice(forwards), f"_dl_new_{i}(None)")
        lines.append(f"\n\ndef _dl_new_{i}(x):\n    print(x)\n    return x\n")
    elif kind == "call-existing" and forwards and top_fns:
        insert_in(rng.choice(forwards), f"{rng.choice(top_fns).name}()")
    elif kind == "remove-fn" and top_fns:
        fn = rng.choice(top_fns)
        start = (fn.decorator_list[0].lineno if fn.decorator_list else fn.lineno) - 1
        del lines[start: fn.end_lineno]
        lines.insert(start, "\n")
    elif kind == "import":
        lines.insert(0, f"import json as _dl_json_{i}\n")
    elif kind == "print-in-fn" and (forwards or top_fns):
        insert_in(rng.choice(forwards + top_fns), "print('x')")
    elif kind == "class":
        lines.append(f"\n\nclass _DlNew{i}:\n    def run(self, x):\n        print(x)\n        return x\n")
    elif kind == "module-class":
        lines.append(
            f"\n\nclass _DlNewModule{i}(torch.nn.Module):\n    def forward(self, x):\n        self.show(x)\n"
            "        return x\n\n    def show(self, x):\n        print(x)\n"
        )
    elif kind == "method" and classes:
        cls = rng.choice(classes)
        first = lines[cls.body[0].lineno - 1]
        indent = first[: len(first) - len(first.lstrip())]
        lines.insert(cls.end_lineno, f"\n{indent}def _dl_method_{i}(self, x):\n{indent}    print(x)\n")
    elif kind == "subclass" and classes:
        base = rng.choice(classes).name
        lines.append(
            f"\n\nclass _DlSub{i}({base}):\n    def forward(self, *args, **kwargs):\n        print(args)\n"
            "        return super().forward(*args, **kwargs)\n"
        )
    elif kind == "override" and classes:
        cls = rng.choice(classes)
        methods = [m.name for m in cls.body if isinstance(m, ast.FunctionDef) and not m.name.startswith("__")]
        if not methods:
            return "skip"
        name = rng.choice(methods)
        lines.append(
            f"\n\nclass _DlOverride{i}({cls.name}):\n    def {name}(self, *args, **kwargs):\n        print(args)\n"
            f"        return super().{name}(*args, **kwargs)\n"
        )
    elif kind in ("subclass-other", "call-other"):
        # What another model file defines, imported relatively (tfs/<folder>/modeling_x.py).
        other = rng.choice([m for m in model_files if m.path != path]).path
        other_tree = ast.parse(other.read_text())
        wanted = ast.ClassDef if kind == "subclass-other" else ast.FunctionDef
        names = [n.name for n in other_tree.body if isinstance(n, wanted) and not n.name.startswith("_")]
        if not names or (kind == "call-other" and not forwards):
            return "skip"
        source = f"..{other.parent.name}.{other.stem}"
        if kind == "subclass-other":
            lines.append(
                f"\n\nfrom {source} import {rng.choice(names)} as _DlOther{i}\n\n\nclass _DlSubOther{i}(_DlOther{i}):\n"
                "    def forward(self, *args, **kwargs):\n        print(args)\n        return super().forward(*args, **kwargs)\n"
            )
        else:
            insert_in(rng.choice(forwards), f"_dl_other_{i}()")
            lines.append(f"\n\nfrom {source} import {rng.choice(names)} as _dl_other_{i}\n")
    else:
        return "skip"
    path.write_text("".join(lines))
    return kind
bad = 0
for i in range(N):
    f = rng.choice(model_files)
    kind = edit(f.path, i)
    if kind == "skip":
        continue
    count[0] = 0
    t = time.time()
    a = [key(x) for x in incremental.lint_tree(files, config, cache_dir=CACHE)]
    dt = time.time() - t
    path = "whole" if count[0] else "local"
    count[0] = 0
    # The reference redoes the cross-file rounds (a trace turns the run record off) and walks
    # from the roots in a project of its own.
    summaries = real(files, config, cache_dir=CACHE, trace={})
    live = engine.live_functions(summaries, config, walk={})
    b = [key(x) for x in engine.select_findings(summaries, config, live=live)]
    ok = a == b
    bad += not ok
    stats.setdefault((kind, path), []).append(dt)
    print(f"{i:3} {kind:14} {path:5} {dt:5.2f}s {'OK' if ok else 'MISMATCH ' + str(set(a) ^ set(b))[:300]} {f.display}", flush=True)
print("mismatches", bad)
for k, v in sorted(stats.items()):
    print(k, len(v), "median %.2f" % sorted(v)[len(v)//2])
