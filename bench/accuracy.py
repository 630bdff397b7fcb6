"""Precision and recall of dynalint against the break sites Dynamo reports on real models.

For each model (transformers with tiny random configs, timm and torchvision with random init):
  1. run it eagerly while recording every executed line of the library's source files;
  2. run `torch._dynamo.explain` and map each break reason to its innermost frame outside torch;
  3. lint the same installed source files (one project, so cross-file regions resolve);
then report, per rule and overall:
  precision = findings on executed lines that sit on a real break site / findings on executed lines
  recall    = break sites with a finding / break sites
plus the misses and the false alarms, so each one can be looked at.

    python bench/accuracy.py                      # transformers suite
    python bench/accuracy.py --suite timm         # needs timm (and torchvision)
    python bench/accuracy.py --suite torchvision  # classification, segmentation and detection models
    python bench/accuracy.py --only longformer,big_bird --verbose
"""

from __future__ import annotations

import argparse
import collections
import copy
import re
import logging
import json
import os
import sys
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path

warnings.filterwarnings("ignore")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

# Architectures to build with tiny configs; older ones are included on purpose (they break today).
TRANSFORMERS_MODELS = [
    "albert", "bart", "bert", "big_bird", "bigbird_pegasus", "blenderbot", "bloom", "camembert",
    "canine", "codegen", "convbert", "ctrl", "data2vec-text", "deberta", "deberta-v2", "distilbert",
    "electra", "ernie", "esm", "falcon", "fnet", "fsmt", "funnel", "gemma", "gpt2", "gpt_bigcode",
    "gpt_neo", "gpt_neox", "gptj", "ibert", "layoutlm", "led", "llama", "longformer", "longt5",
    "luke", "m2m_100", "marian", "markuplm", "mbart", "megatron-bert", "mistral", "mixtral", "mpnet",
    "mpt", "mra", "mt5", "mvp", "nezha", "nllb-moe", "nystromformer", "opt", "pegasus", "pegasus_x",
    "phi", "plbart", "prophetnet", "qwen2", "qwen2_moe", "reformer", "rembert", "roberta",
    "roc_bert", "roformer", "squeezebert", "switch_transformers", "t5", "umt5", "xglm", "xlm",
    "xlm-roberta", "xlnet", "xmod", "yoso", "vit", "deit", "swin", "convnext", "resnet",
    "mobilevit", "segformer", "beit", "wav2vec2", "whisper",
]
TIMM_MODELS = [
    "resnet18", "vit_tiny_patch16_224", "deit_tiny_patch16_224", "convnext_atto", "efficientnet_b0",
    "mobilenetv3_small_050", "swin_tiny_patch4_window7_224", "regnetx_002", "densenet121",
    "levit_128s", "coat_tiny", "crossvit_tiny_240", "twins_svt_small", "pit_ti_224", "cait_xxs24_224",
    "xcit_nano_12_p16_224", "poolformer_s12", "mobilevitv2_050", "edgenext_xx_small", "tresnet_m",
    "visformer_tiny", "beit_base_patch16_224", "eva02_tiny_patch14_224", "maxvit_nano_rw_256",
    "nfnet_l0", "ghostnet_100", "rexnet_100", "dla34", "hrnet_w18_small", "sequencer2d_s",
]

SMALL = dict(
    hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=37, vocab_size=99,
    max_position_embeddings=128, d_model=32, encoder_layers=2, decoder_layers=2,
    encoder_attention_heads=2, decoder_attention_heads=2, encoder_ffn_dim=37, decoder_ffn_dim=37,
    num_layers=2, num_heads=2, d_ff=37, d_kv=16, n_layer=2, n_head=2, n_embd=32, n_positions=128,
    num_key_value_heads=2, head_dim=16, embedding_size=32, num_experts=4, num_local_experts=4,
    num_experts_per_tok=2, moe_intermediate_size=16, shared_expert_intermediate_size=16,
    attention_window=8, block_size=4, num_random_blocks=2, num_decoder_layers=2,
)


@dataclass
class ModelRun:
    name: str
    executed: set = field(default_factory=set)  # (file, line)
    breaks: list = field(default_factory=list)  # (file, line, reason)
    # (file, line) inside functions Dynamo stopped tracing (recompile limit, a frame it skipped
    # after a break it could not resume from): it neither confirms nor denies findings there.
    untraced: list = field(default_factory=list)
    graph_count: int = 0
    error: str | None = None
    seconds: float = 0.0


def _shrink(cfg):
    for k, v in SMALL.items():
        if hasattr(cfg, k) and not isinstance(getattr(cfg, k), (list, dict)) or k == "attention_window":
            if hasattr(cfg, k):
                cur = getattr(cfg, k)
                if isinstance(cur, list):
                    setattr(cfg, k, [v] * len(cur))
                else:
                    setattr(cfg, k, v)
    for sub in ("text_config", "vision_config", "encoder", "decoder"):
        if hasattr(cfg, sub) and getattr(cfg, sub) is not None and hasattr(getattr(cfg, sub), "to_dict"):
            _shrink(getattr(cfg, sub))
    if hasattr(cfg, "attention_window") and isinstance(cfg.attention_window, list):
        cfg.attention_window = [8] * cfg.num_hidden_layers
    return cfg


def build_transformers(model_type: str):
    import torch
    from transformers import AutoConfig, AutoModel

    cfg = _shrink(AutoConfig.for_model(model_type))
    if model_type == "big_bird":
        cfg.attention_type = "block_sparse"
    if model_type in ("vit", "deit", "beit", "swin", "convnext", "resnet", "mobilevit", "segformer"):
        for k in ("image_size",):
            if hasattr(cfg, k):
                setattr(cfg, k, 64 if model_type not in ("swin",) else 64)
    torch.manual_seed(0)
    model = AutoModel.from_config(cfg).eval()
    name = model.main_input_name
    gen = torch.Generator().manual_seed(0)
    if name == "input_ids":
        ids = torch.randint(3, 90, (2, 64), generator=gen)
        kwargs = {"input_ids": ids, "attention_mask": torch.ones_like(ids)}
        if getattr(cfg, "is_encoder_decoder", False):
            kwargs["decoder_input_ids"] = ids[:, :16]
        return model, kwargs
    if name == "pixel_values":
        size = getattr(cfg, "image_size", 64)
        size = size if isinstance(size, int) else size[0]
        return model, {"pixel_values": torch.randn(2, getattr(cfg, "num_channels", 3), size, size, generator=gen)}
    if name == "input_values":
        return model, {"input_values": torch.randn(2, 4000, generator=gen)}
    if name == "input_features":
        return model, {
            "input_features": torch.randn(2, getattr(cfg, "num_mel_bins", 80), 3000, generator=gen),
            "decoder_input_ids": torch.tensor([[1, 2, 3, 4]] * 2),
        }
    raise ValueError(f"unknown main input {name}")


def build_timm(name: str):
    import timm
    import torch

    torch.manual_seed(0)
    model = timm.create_model(name, pretrained=False).eval()
    cfg = model.pretrained_cfg
    size = cfg.get("input_size", (3, 224, 224))
    return model, {"x": torch.randn(1, *size)}


# torchvision: classifiers and segmenters run in eval and train mode; detectors (their data-dependent
# post-processing: score thresholds, NMS, box decoding) in eval mode only, since training them
# needs targets.
TORCHVISION_MODELS = [
    "resnet18", "mobilenet_v3_small", "efficientnet_b0", "vit_b_16", "swin_t", "convnext_tiny",
    "regnet_y_400mf", "shufflenet_v2_x0_5", "squeezenet1_0", "googlenet", "mnasnet0_5",
    "deeplabv3_mobilenet_v3_large", "lraspp_mobilenet_v3_large",
    "fasterrcnn_mobilenet_v3_large_320_fpn", "retinanet_resnet50_fpn", "ssdlite320_mobilenet_v3_large",
    "fcos_resnet50_fpn", "maskrcnn_resnet50_fpn", "keypointrcnn_resnet50_fpn",
]
TORCHVISION_DETECTION = ("rcnn", "retinanet", "ssd", "fcos")


def build_torchvision(name: str):
    import torch
    import torchvision

    torch.manual_seed(0)
    detector = any(k in name for k in TORCHVISION_DETECTION)
    kwargs = {"weights": None, "weights_backbone": None} if detector or name.startswith(("deeplab", "lraspp")) else {"weights": None}
    if name == "googlenet":
        kwargs["aux_logits"] = False
        kwargs["init_weights"] = True
    model = torchvision.models.get_model(name, **kwargs).eval()
    gen = torch.Generator().manual_seed(0)
    if detector:
        return _eval_only(model), {"images": [torch.rand(3, 160, 200, generator=gen)]}
    if name.startswith(("deeplab", "lraspp")):  # batch of 2: train-mode batch norm on 1x1 maps
        key = "input" if name.startswith("lraspp") else "x"
        return model, {key: torch.randn(2, 3, 224, 224, generator=gen)}
    return model, {"x": torch.randn(1, 3, 224, 224, generator=gen)}


def _eval_only(model):
    """The detector in a module that stays in eval mode in the "train" pass (training needs
    targets)."""
    import torch

    class EvalOnly(torch.nn.Module):
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def train(self, mode: bool = True):
            super().train(mode)
            self.inner.eval()
            return self

        def forward(self, images):
            return self.inner(images)

    return EvalOnly(model)


SUITES = {
    "transformers": (lambda: TRANSFORMERS_MODELS, lambda: build_transformers),
    "timm": (lambda: TIMM_MODELS, lambda: build_timm),
    "torchvision": (lambda: TORCHVISION_MODELS, lambda: build_torchvision),
}


def _library_root(suite: str) -> str:
    import importlib

    mod = importlib.import_module(suite)
    return os.path.dirname(mod.__file__) + os.sep


class _GraphBreakLog(logging.Handler):
    """Collects (file, line, reason) from Dynamo's graph-break log for files under `root`."""

    LOGGER = "torch._dynamo"
    AT = re.compile(r"Graph break in user code at (.+?):(\d+)")
    FRAME = re.compile(r'File "(.+?)", line (\d+)')

    def __init__(self, root: str):
        super().__init__(logging.DEBUG)
        self.root = root
        self.sites: list[tuple] = []
        self.untraced: list[tuple] = []

    def __enter__(self):
        import torch._logging

        torch._logging.set_logs(graph_breaks=True)
        logger = logging.getLogger(self.LOGGER)
        self._propagate = logger.propagate
        logger.addHandler(self)
        return self

    def __exit__(self, *exc):
        import torch._logging

        logging.getLogger(self.LOGGER).removeHandler(self)
        torch._logging.set_logs()
        return False

    def emit(self, record: logging.LogRecord) -> None:
        msg = record.getMessage()
        if "recompile_limit" in msg or "cache_size_limit" in msg:
            where = re.search(r"function: '.*?' \((.+?):(\d+)\)", msg)
            if where and where.group(1).startswith(self.root):
                self.untraced.append((where.group(1), int(where.group(2))))
            return
        at = self.AT.search(msg)
        if at is None:
            return
        places = [(at.group(1), int(at.group(2)))] + [(f, int(n)) for f, n in self.FRAME.findall(msg)]
        mine = [p for p in places if p[0].startswith(self.root)]
        if not mine:
            return
        reason = msg.split("Graph Break Reason:", 1)[-1].strip().splitlines()
        text = next((line.strip() for line in reason[1:] if line.strip() and "Graph break encountered" not in line), "")
        if "Failed to handle graph break gracefully" not in (reason[0] if reason else ""):
            text = reason[0] if reason else text
        # The line in user code is the first place named; frames below it come from the traceback.
        f, line = mine[0] if places[0][0].startswith(self.root) else mine[-1]
        self.sites.append((f, line, text[:120]))
        if "Skipping the function" in msg:
            self.untraced.append((f, line))


def run_model(name: str, builder, root: str) -> ModelRun:
    import torch
    import torch._dynamo

    run = ModelRun(name)
    t0 = time.time()
    try:
        pristine, kwargs = builder(name)
        # Eval (inference, no grad) and train mode (dropout, layerdrop, grad on): some breaks only
        # happen in one of them, and a finding is right if Dynamo breaks there in either.
        for mode in ("eval", "train"):
            # Each run starts from the model as built: code that runs only on a first call (lazy
            # set-up such as torchvision's `if self.scales is None`) must run under Dynamo too,
            # or its lines count as executed but untested.
            model = copy.deepcopy(pristine)
            model.train(mode == "train")
            with torch.set_grad_enabled(mode == "train"):
                executed = run.executed

                def tracer(frame, event, arg):
                    fn = frame.f_code.co_filename
                    if not fn.startswith(root):
                        return None
                    if event == "line":
                        executed.add((fn, frame.f_lineno))
                    return tracer

                torch.manual_seed(0)
                sys.settrace(tracer)
                try:
                    model(**kwargs)
                finally:
                    sys.settrace(None)
                torch._dynamo.reset()
                torch.manual_seed(0)
                model = copy.deepcopy(pristine)
                model.train(mode == "train")
                with _GraphBreakLog(root) as logged:
                    out = torch._dynamo.explain(model)(**kwargs)
            run.graph_count = max(run.graph_count, out.graph_count)
            for r in out.break_reasons:
                frames = [f for f in r.user_stack if f.filename.startswith(root)]
                if not frames:
                    continue
                f = frames[-1]
                run.breaks.append((f.filename, f.lineno, str(r.reason).strip().splitlines()[0][:120]))
            # A break Dynamo cannot resume from (inside a loop, say) skips the whole frame and is
            # missing from `break_reasons`; the graph-break log still names its line.
            known = {(f, line) for f, line, _ in run.breaks}
            run.breaks += [b for b in logged.sites if (b[0], b[1]) not in known]
            run.untraced += [u for u in logged.untraced if u not in run.untraced]
    except Exception as exc:  # a model that cannot be built or run is skipped, not fatal
        run.error = f"{type(exc).__name__}: {str(exc).splitlines()[0][:150] if str(exc) else ''}"
    run.seconds = time.time() - t0
    return run


def save_runs(path: str, runs: list[ModelRun], root: str) -> None:
    def rel(p):
        return p[len(root):]

    data = [
        {"name": r.name, "error": r.error, "graph_count": r.graph_count, "seconds": r.seconds,
         "executed": sorted([rel(f), l] for f, l in r.executed),
         "breaks": [[rel(f), l, why] for f, l, why in r.breaks],
         "untraced": [[rel(f), l] for f, l in r.untraced]}
        for r in runs
    ]
    Path(path).write_text(json.dumps(data))


def load_runs(path: str, root: str) -> list[ModelRun]:
    runs = []
    for d in json.loads(Path(path).read_text()):
        runs.append(
            ModelRun(d["name"], {(root + f, l) for f, l in d["executed"]},
                     [(root + f, l, why) for f, l, why in d["breaks"]], [(root + f, l) for f, l in d.get("untraced", [])],
                     d["graph_count"], d["error"], d["seconds"])
        )
    return runs


def lint(files: list[str]):
    from dynalint.check import collect_files  # noqa: F401  (same discovery path as the CLI)
    from dynalint.config import Config
    from dynalint.engine import SourceFile, analyze_files, module_name_for, select_findings

    config = Config(select=("DYN0", "DYN1"))
    sources = []
    for p in files:
        module, is_pkg = module_name_for(Path(p))
        sources.append(SourceFile(Path(p), p, module, is_pkg))
    summaries = analyze_files(sources, config, jobs=0)
    return select_findings(summaries, config)


def score(runs: list[ModelRun], findings, verbose: bool):
    executed = set().union(*(r.executed for r in runs if not r.error)) if runs else set()
    sites: dict[tuple, str] = {}
    for r in runs:
        for f, line, reason in r.breaks:
            sites.setdefault((f, line), reason)
    by_line = collections.defaultdict(list)
    live = []
    for f in findings:
        rows = range(f.row, f.end_row + 1)
        if any((f.filename, row) in executed for row in rows):
            live.append(f)
            for row in rows:
                by_line[(f.filename, row)].append(f)
    tp = collections.Counter()
    total = collections.Counter()
    false_alarms = []
    unverified = []
    # "step_unsupported": Dynamo gave up on the rest of that frame (it runs eagerly from there).
    gave_up = {(f, line) for r in runs for f, line, why in r.breaks if why.startswith("step_unsupported")}
    untraced = _untraced_ranges({u for r in runs for u in r.untraced} | gave_up)
    for f in live:
        on_site = any((f.filename, row) in sites for row in range(f.row, f.end_row + 1))
        if not on_site and any(lo <= f.row <= hi for lo, hi in untraced.get(f.filename, ())):
            unverified.append(f)  # Dynamo gave up on that function: it cannot tell
            continue
        total[f.code] += 1
        if on_site:
            tp[f.code] += 1
        else:
            false_alarms.append(f)
    found = collections.Counter()
    site_total = collections.Counter()
    misses = []
    for site, reason in sites.items():
        hit = by_line.get(site)
        code = hit[0].code if hit else "missed"
        site_total[code if hit else "missed"] += 1
        if hit:
            found[code] += 1
        else:
            misses.append((site, reason))
    return tp, total, found, sites, false_alarms, misses, unverified


def _untraced_ranges(points) -> dict[str, list[tuple[int, int]]]:
    """(file, line) points -> line ranges of the innermost functions holding them."""
    import ast

    out: dict[str, list[tuple[int, int]]] = {}
    for filename in {f for f, _ in points}:
        try:
            tree = ast.parse(Path(filename).read_text(encoding="utf-8"))
        except (OSError, SyntaxError, UnicodeDecodeError):
            continue
        defs = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
        for f, line in points:
            if f != filename:
                continue
            holders = [d for d in defs if d.lineno <= line <= d.end_lineno]
            if holders:
                d = max(holders, key=lambda d: d.lineno)
                out.setdefault(filename, []).append((d.lineno, d.end_lineno))
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--suite", choices=sorted(SUITES), default="transformers")
    ap.add_argument("--only", help="comma-separated model names")
    ap.add_argument("--json", help="write all results here")
    ap.add_argument("--verbose", action="store_true")
    ap.add_argument(
        "--runs",
        help="cache of the model runs (executed lines, break sites): reused when it exists, so the "
        "linter can be re-scored without running the models again",
    )
    args = ap.parse_args(argv)

    names = SUITES[args.suite][0]()
    if args.only:
        names = [n for n in args.only.split(",") if n]
    builder = SUITES[args.suite][1]()
    root = _library_root(args.suite)

    runs = load_runs(args.runs, root) if args.runs and Path(args.runs).exists() else None
    if runs is None:
        runs = []
        for name in names:
            run = run_model(name, builder, root)
            runs.append(run)
            status = run.error or f"{run.graph_count} graphs, {len(run.breaks)} breaks, {len(run.executed)} lines"
            print(f"  {name:<28} {run.seconds:6.1f}s  {status}", file=sys.stderr, flush=True)
        if args.runs:
            save_runs(args.runs, runs, root)

    ok = [r for r in runs if not r.error]
    files = sorted({f for r in ok for f, _ in r.executed} | {f for r in ok for f, _, _ in r.breaks})
    t0 = time.time()
    findings = lint(files)
    lint_s = time.time() - t0
    tp, total, found, sites, false_alarms, misses, unverified = score(ok, findings, args.verbose)

    def rel(p):
        return p[len(root):] if p.startswith(root) else p

    print(f"\n{args.suite}: {len(ok)} models run ({len(runs) - len(ok)} skipped), {len(files)} source files linted in {lint_s:.1f}s")
    print(f"break sites: {len(sites)}; findings on executed lines: {sum(total.values())}\n")
    print("| rule | findings on executed lines | on a break site | precision | break sites found |")
    print("|---|---|---|---|---|")
    for code in sorted(set(total) | set(found)):
        p = tp[code] / total[code] if total[code] else float("nan")
        print(f"| {code} | {total[code]} | {tp[code]} | {p:.2f} | {found[code]} |")
    all_tp, all_total = sum(tp.values()), sum(total.values())
    n_found = sum(found.values())
    precision = all_tp / all_total if all_total else float("nan")
    recall = n_found / len(sites) if sites else float("nan")
    print(f"| **all DYN1xx** | {all_total} | {all_tp} | **{precision:.2f}** | {n_found} of {len(sites)}: recall **{recall:.2f}** |")
    if misses:
        print("\nmissed break sites:")
        for (f, line), reason in sorted(misses):
            print(f"  {rel(f)}:{line}: {reason}")
    if false_alarms:
        print("\nfindings on executed lines with no break there:")
        for f in false_alarms:
            print(f"  {rel(f.filename)}:{f.row}:{f.column}: {f.code} {f.message}")
    if unverified:
        print(f"\nnot scored: {len(unverified)} findings in functions Dynamo stopped tracing (recompile limit or a skipped frame):")
        for f in unverified:
            print(f"  {rel(f.filename)}:{f.row}:{f.column}: {f.code}")
    skipped = [r for r in runs if r.error]
    if skipped and args.verbose:
        print("\nskipped models:")
        for r in skipped:
            print(f"  {r.name}: {r.error}")
    if args.json:
        Path(args.json).write_text(
            json.dumps(
                {
                    "suite": args.suite,
                    "models": [
                        {"name": r.name, "error": r.error, "graph_count": r.graph_count,
                         "breaks": [(rel(f), l, why) for f, l, why in r.breaks]}
                        for r in runs
                    ],
                    "precision": precision,
                    "recall": recall,
                    "per_rule": {c: {"findings": total[c], "true": tp[c], "sites_found": found[c]} for c in set(total) | set(found)},
                    "misses": [(rel(f), l, why) for (f, l), why in misses],
                    "false_alarms": [(rel(f.filename), f.row, f.code) for f in false_alarms],
                    "not_scored": [(rel(f.filename), f.row, f.code) for f in unverified],
                },
                indent=1,
            )
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
