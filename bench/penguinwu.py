"""The public graph-break corpus of Hugging Face models, checked against today's transformers.

The corpus (github.com/penguinwu/oss-model-graph-break-corpus) ran `torch._dynamo.explain` on
transformers models with torch 2.10 and transformers 5.4, and keeps every break reason with
Dynamo's user stack (`sweep_results/pt2.10/explain_results.json`). For each model this script
takes its break sites (the innermost frame in a transformers file), reads that line in the
release the corpus ran, finds the same source line in the installed transformers (a line with the
same text in the same file, in the function of the same name if there is one, at the nearest
relative position: line numbers moved between releases), lints those files,
and reports, per break kind (Dynamo's GB code and title) and per model:

  sites    break sites (file, line) in transformers 5.4
  present  sites whose line is still in the installed transformers
  found    present sites with a DYN1xx finding on that line
  fixed    found sites where a finding on that line carries a fix (safe or unsafe; a static
           count: whether the fix removes the break is what bench/fix_efficacy.py measures)

Breaks whose stack has no transformers frame (inside torch only) and the follow-up messages
("cannot properly resume", "hit config.recompile_limit") are not sites. A site still present may
no longer break on the installed torch (the corpus used 2.10): `found` counts what the linter
says about the line, not whether today's Dynamo still breaks there.

    pip download --no-deps transformers==5.4.0 && python -m zipfile -e transformers-5.4.0-*.whl tf54
    python bench/penguinwu.py CORPUS_CHECKOUT tf54/transformers      # or the explain_results.json itself
    python bench/penguinwu.py CORPUS_CHECKOUT tf54/transformers --json out.json --verbose
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import re
import sys
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

RESULTS = "sweep_results/pt2.10/explain_results.json"
FRAME = re.compile(r'File "([^"]+)", line (\d+), in ([^\n]+)\n    ([^\n]*)')
HEADER = re.compile(r"in user code at (\S+?):(\d+)")
GB = re.compile(r"/gb/(gb\d+)\.html")
TITLE = re.compile(r"\n(\S[^\n]*)\n  Explanation")
FOLLOW_UPS = ("Graph break: torch.compile cannot properly resume", "torch._dynamo hit config.recompile_limit")


def _kind(reason: str) -> str:
    """Dynamo's GB code and title of the break (the title alone where the report has no code)."""
    gb = GB.search(reason)
    title = TITLE.search(reason)
    first = reason.splitlines()[0]
    named = re.search(r"Graph Break Reason: (.*)", reason)
    if title:
        text = title.group(1).strip()
        if text.startswith("Graph Break Reason: "):  # the older one-line form
            text = text[len("Graph Break Reason: "):]
    elif "Tensor.item()" in first:
        text = "Unsupported Tensor.item() call with capture_scalar_outputs=False"
    elif named and not named.group(1).startswith(("Encountered", "Graph Break")):
        text = named.group(1).strip()
    else:
        text = "(no reason text)"
    return ((gb.group(1).upper() + " ") if gb else "") + text


def parse(results: list[dict]) -> dict[str, dict[tuple[str, int], str]]:
    """-> {model: {(file, line): kind}}: each break at its innermost frame in a transformers file.

    The corpus cuts each report at 2,000 characters, so a long stack loses its innermost frames:
    a report's header ("in user code at FILE:LINE") names the innermost frame; where that is in
    torch, the innermost transformers frame is taken from a stack that reaches the header's frame
    (from this report or another report of the same header)."""
    inner: dict[tuple[str, int], tuple[str, int]] = {}  # header site in torch -> transformers frame
    for r in results:
        for b in r.get("break_reasons") or []:
            t = b["reason"]
            head = HEADER.search(t.splitlines()[0])
            frames = [(f, int(line)) for f, line, _fn, _src in FRAME.findall(t)]
            if head and frames and frames[-1] == (head.group(1), int(head.group(2))):
                ours = [fr for fr in frames if fr[0].startswith("transformers/")]
                if ours:
                    inner.setdefault(frames[-1], ours[-1])
    sites: dict[str, dict[tuple[str, int], str]] = collections.defaultdict(dict)
    unplaced = collections.Counter()
    for r in results:
        for b in r.get("break_reasons") or []:
            t = b["reason"]
            if t.startswith(FOLLOW_UPS):
                continue
            head = HEADER.search(t.splitlines()[0])
            frames = [(f, int(line)) for f, line, _fn, _src in FRAME.findall(t)]
            if head:
                site = (head.group(1), int(head.group(2)))
                if not site[0].startswith("transformers/"):
                    site = inner.get(site)
            elif frames and len(t) < 2000:  # "Graph break from `Tensor.item()`...": its stack, whole
                ours = [fr for fr in frames if fr[0].startswith("transformers/")]
                site = ours[-1] if ours else None
            else:
                site = None
            if site is None:
                unplaced[r["name"]] += 1
                continue
            sites[r["name"]].setdefault(site, _kind(t))
    # Reports without a GB code (older message formats) take the code of the same title elsewhere.
    codes = {k.split(" ", 1)[1]: k for m in sites.values() for k in m.values() if re.match(r"GB\d+ ", k)}
    for m in sites.values():
        for site, k in m.items():
            m[site] = codes.get(k, k)
    return sites


def _lines(path: str, cache: dict):
    if path not in cache:
        try:
            cache[path] = Path(path).read_text(encoding="utf-8").splitlines()
        except OSError:
            cache[path] = None
    return cache[path]


def _enclosing_def(lines: list[str], n: int) -> str | None:
    indent = len(lines[n - 1]) - len(lines[n - 1].lstrip())
    for i in range(n - 2, -1, -1):
        m = re.match(r"(\s*)(?:async\s+)?def\s+(\w+)", lines[i])
        if m and len(m.group(1)) < indent:
            return m.group(2)
    return None


def locate(old_root: str, new_root: str, site: tuple[str, int], cache: dict):
    """(source text in the old release, line in the installed release or None)."""
    rel = site[0][len("transformers/"):]
    old = _lines(os.path.join(old_root, rel), cache)
    if old is None or not (0 < site[1] <= len(old)):
        return None, None
    text = old[site[1] - 1].strip()
    new = _lines(os.path.join(new_root, rel), cache)
    if new is None or not text:
        return text, None
    hits = [i + 1 for i, line in enumerate(new) if line.strip() == text]
    fn = _enclosing_def(old, site[1])
    same_fn = [n for n in hits if _enclosing_def(new, n) == fn]
    hits = same_fn or hits
    # Nearest by position relative to the file's length (files grow and shrink between releases).
    pos = site[1] / max(1, len(old))
    return text, (min(hits, key=lambda n: abs(n / max(1, len(new)) - pos)) if hits else None)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("corpus", help="a checkout of the corpus, or its pt2.10 explain_results.json")
    ap.add_argument("old_transformers", help="the transformers package folder of the release the corpus ran "
                    "(pip download --no-deps transformers==5.4.0, unzipped: its transformers/ folder)")
    ap.add_argument("--json", help="write per-model results here")
    ap.add_argument("--verbose", action="store_true", help="list every site")
    args = ap.parse_args(argv)

    import transformers

    from accuracy import lint

    src = Path(args.corpus)
    if src.is_dir():
        src = src / RESULTS
    data = json.loads(src.read_text())
    meta = data.get("metadata", {}).get("versions", {})
    results = [r for r in data["results"] if r.get("source", "hf") == "hf"]
    sites = parse(results)
    root = os.path.dirname(transformers.__file__)
    cache: dict = {}
    placed = {}  # (file, line) in the old release -> (absolute path, line) installed, or None
    texts = {}
    for model_sites in sites.values():
        for site in model_sites:
            if site not in placed:
                texts[site], line = locate(args.old_transformers, root, site, cache)
                placed[site] = None if line is None else (os.path.join(root, site[0][len("transformers/"):]), line)
    files = sorted({p for p, _ in filter(None, placed.values())})
    findings = lint(files)
    covered = collections.defaultdict(set)  # (path, line) -> codes
    with_fix = set()  # (path, line) where a finding carries a fix
    for f in findings:
        if f.code.startswith("DYN1"):
            for row in range(f.row, f.end_row + 1):
                covered[(f.filename, row)].add(f.code)
                if f.fix is not None:
                    with_fix.add((f.filename, row))

    by_kind = collections.defaultdict(lambda: {"models": set(), "sites": set(), "present": set(), "found": set(),
                                               "fixed": set()})
    per_model = {}
    for model, model_sites in sorted(sites.items()):
        row = {"sites": [], "present": 0, "found": 0, "fixed": 0}
        for site, kind in model_sites.items():  # in the corpus's order: the first break first
            k = by_kind[kind]
            k["models"].add(model)
            k["sites"].add(site)
            where = placed[site]
            codes = sorted(covered.get(where, ())) if where else []
            if where:
                k["present"].add(site)
                row["present"] += 1
            if codes:
                k["found"].add(site)
                row["found"] += 1
            if where in with_fix:
                k["fixed"].add(site)
                row["fixed"] += 1
            row["sites"].append({"site": f"{site[0]}:{site[1]}", "kind": kind, "text": texts.get(site),
                                 "now": f"{os.path.relpath(where[0], root)}:{where[1]}" if where else None,
                                 "codes": codes, "fix": where in with_fix})
        per_model[model] = row

    n_models = len(per_model)
    all_sites = {s for m in sites.values() for s in m}
    present = {s for s in all_sites if placed[s]}
    found = {s for s in present if covered.get(placed[s])}
    fixed = {s for s in found if placed[s] in with_fix}
    print(f"corpus: torch {meta.get('torch', '?')}, transformers {meta.get('transformers', '?')}; "
          f"installed transformers {transformers.__version__}; {len(files)} files linted")
    print(f"{n_models} models with break sites in transformers code; {len(all_sites)} sites, "
          f"{len(present)} still present, {len(found)} of them with a finding "
          f"({len(found) / max(1, len(present)):.2f}), {len(fixed)} with a fix ({len(fixed) / max(1, len(present)):.2f})")
    fully = sum(1 for r in per_model.values() if r["present"] and r["found"] == r["present"])
    some = sum(1 for r in per_model.values() if r["found"])
    gone = sum(1 for r in per_model.values() if not r["present"])
    print(f"models: every present site found {fully}, some found {some}, no site left {gone}")
    # Each model's first break in the corpus's order (eval mode first): the one the corpus names
    # as the model's root cause.
    firsts = [r["sites"][0] for r in per_model.values() if r["sites"]]
    first_present = [x for x in firsts if x["now"]]
    first_found = [x for x in first_present if x["codes"]]
    print(f"first break of each model: {len(firsts)}, still present {len(first_present)}, "
          f"with a finding {len(first_found)}\n")
    print("| break kind (GB code, Dynamo's title) | models | sites | still present | with a finding | with a fix |")
    print("|---|---|---|---|---|---|")
    for kind, k in sorted(by_kind.items(), key=lambda kv: (-len(kv[1]["sites"]), kv[0])):
        print(f"| {kind} | {len(k['models'])} | {len(k['sites'])} | {len(k['present'])} | {len(k['found'])} "
              f"| {len(k['fixed'])} |")
    print(f"| **all** | {n_models} | {len(all_sites)} | {len(present)} | {len(found)} | {len(fixed)} |")
    if args.verbose:
        for model, r in per_model.items():
            print(f"\n{model}: {r['found']}/{r['present']} present sites found ({len(r['sites'])} sites)")
            for s in r["sites"]:
                mark = ",".join(s["codes"]) + ("*" if s["fix"] else "") or ("-" if s["now"] else "gone")
                print(f"  {mark:8s} {s['site']:60s} {s['kind'][:40]:40s} {s['text']}")
    if args.json:
        Path(args.json).write_text(json.dumps(per_model, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
