"""`dynalint verify` on the seed examples and on real models with graph breaks: the README table.

    python bench/gpu_verify.py                     # every case, markdown table on stdout
    python bench/gpu_verify.py --only longformer   # some cases
    python bench/gpu_verify.py --json reports.json # also every report as JSON

Each case is what `dynalint verify` runs (the CLI line is printed with each row); this script
only loops over them, keeps a time budget and prints one table. The real models are
transformers architectures with small random configs, built by the factories below (verify
imports this file as the target module and calls them: they return `(module, example_inputs)`).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from dataclasses import dataclass, field
from typing import Optional

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
FIXTURES = os.path.join("tests", "fixtures", "verify")
THIS = os.path.relpath(os.path.abspath(__file__), ROOT)


# --------------------------------------------------------------------------------------------
# Factories for real models (called inside the verify child process)


def _ids(batch: int, seq: int, vocab: int = 128):
    import torch

    return torch.randint(0, vocab, (batch, seq))


def longformer_tiny():
    """Longformer on a length that is not a multiple of its window: a padding warning is logged in
    forward, and `is_global_attn = ....any().item()` breaks the graph."""
    from transformers import LongformerConfig, LongformerModel

    cfg = LongformerConfig(vocab_size=128, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                           intermediate_size=128, attention_window=[32, 32], max_position_embeddings=600)
    return LongformerModel(cfg), {"input_ids": _ids(2, 250)}


def big_bird_block_sparse():
    """BigBird with block-sparse attention (sequence long enough for it)."""
    from transformers import BigBirdConfig, BigBirdModel

    cfg = BigBirdConfig(vocab_size=128, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                        intermediate_size=128, max_position_embeddings=512, block_size=8, num_random_blocks=2,
                        attention_type="block_sparse")
    return BigBirdModel(cfg), {"input_ids": _ids(2, 128)}


def big_bird_short_sequence():
    """BigBird given a sequence too short for block-sparse: it logs a warning inside forward."""
    from transformers import BigBirdConfig, BigBirdModel

    cfg = BigBirdConfig(vocab_size=128, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                        intermediate_size=128, max_position_embeddings=512, block_size=16, num_random_blocks=2,
                        attention_type="block_sparse")
    return BigBirdModel(cfg), {"input_ids": _ids(2, 64)}


def led_tiny():
    """LED (Longformer encoder-decoder)."""
    from transformers import LEDConfig, LEDModel

    cfg = LEDConfig(vocab_size=128, d_model=64, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4,
                    decoder_attention_heads=4, encoder_ffn_dim=128, decoder_ffn_dim=128, attention_window=[32, 32],
                    max_encoder_position_embeddings=512, max_decoder_position_embeddings=512)
    return LEDModel(cfg), {"input_ids": _ids(2, 250), "decoder_input_ids": _ids(2, 32)}


# --------------------------------------------------------------------------------------------
# Cases


@dataclass
class Case:
    name: str
    target: str
    options: dict = field(default_factory=dict)

    def cli(self) -> str:
        """The equivalent `dynalint verify` command line."""
        flags = []
        for key, value in self.options.items():
            flag = "--" + key.replace("_", "-")
            if value is True:
                flags.append(flag)
            elif isinstance(value, list):
                flags.append(f"{flag} {','.join(map(str, value))}")
            else:
                flags.append(f"{flag} {value}")
        return " ".join(["dynalint verify", self.target, *flags])


CASES = [
    Case("BadIf", f"{FIXTURES}/bad_if.py::BadIf", {"input_shape": [64, 16]}),
    Case("BadIf, unsafe fixes", f"{FIXTURES}/bad_if.py::BadIf", {"input_shape": [64, 16], "unsafe_fixes": True}),
    Case("LogInsideForward", f"{FIXTURES}/log_inside_forward.py::LogInsideForward", {"input_shape": [64, 16]}),
    Case("PrintInForward", f"{FIXTURES}/print_in_forward.py::PrintInForward", {"input_shape": [64, 16]}),
    Case("ShapeBranch (dynamic)", f"{FIXTURES}/shape_branch.py::ShapeBranch",
         {"input_shape": [64, 16], "second_input_shape": [64, 32], "dynamic": True}),
    Case("longformer", f"{THIS}::longformer_tiny"),
    Case("big_bird (block sparse)", f"{THIS}::big_bird_block_sparse"),
    Case("big_bird (short sequence)", f"{THIS}::big_bird_short_sequence"),
    Case("led", f"{THIS}::led_tiny"),
]


def run_case(case: Case, device: str, repeat: int, unsafe: bool, timeout: float) -> dict:
    from dynalint.verify.runner import VerifyError, verify

    opts = dict(case.options)
    try:
        report = verify(case.target, device=device, repeat=repeat, timeout=timeout,
                        unsafe_fixes=unsafe or bool(opts.get("unsafe_fixes")),
                        input_shape=opts.get("input_shape"), second_input_shape=opts.get("second_input_shape"),
                        dynamic=opts.get("dynamic"))
    except VerifyError as exc:
        return {"target": case.target, "error": str(exc), "details": exc.details[-3000:]}
    return report


def _fmt(value: Optional[float], spec: str = ".3f") -> str:
    return "-" if value is None else format(value, spec)


def table_row(case: Case, report: dict) -> str:
    if report.get("error"):
        return f"| {case.name} | error: {report['error']} | | | | | | | |"
    b, a, t = report["before"], report["after"], report.get("timing") or {}
    graphs = f"{b['graph_count']} / {len(b['break_reasons'])} → {a['graph_count']} / {len(a['break_reasons'])}"
    if "recompiles" in b:
        graphs += f" (recompiles {b['recompiles']} → {a.get('recompiles')})"
    confirmed = sum(f["status"] == "confirmed" for f in report["findings"])
    findings = f"{len(report['fixes'])} fixed; {confirmed} confirmed, {len(report['missed'])} missed"
    speedup = "-" if t.get("speedup") is None else f"{t['speedup']:.2f}x"
    match = "yes" if report["outputs_match"] else "NO"
    return (f"| {case.name} | {graphs} | {findings} | {_fmt(t.get('eager_ms'))} | {_fmt(t.get('compiled_before_ms'))} | "
            f"{_fmt(t.get('compiled_after_ms'))} | {speedup} | {match} ({_fmt(report.get('max_abs_diff'), '.1g')}) |")


HEADER = ("| case | graphs / breaks before → after | fixes, findings | eager ms | compiled before ms | "
          "compiled after ms | speedup | outputs match (max abs diff) |\n|---|---|---|---|---|---|---|---|")


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", help="comma-separated substrings of case names")
    parser.add_argument("--device", default="auto")
    parser.add_argument("--repeat", type=int, default=50)
    parser.add_argument("--unsafe-fixes", action="store_true")
    parser.add_argument("--budget", type=float, default=540.0, help="stop starting cases after this many seconds")
    parser.add_argument("--timeout", type=float, default=300.0, help="per child process")
    parser.add_argument("--json", help="write {case: report} here (rewritten after each case)")
    args = parser.parse_args(argv)
    os.chdir(ROOT)
    cases = CASES
    if args.only:
        wanted = [w.strip().lower() for w in args.only.split(",")]
        cases = [c for c in CASES if any(w in c.name.lower() for w in wanted)]
    start = time.perf_counter()
    rows, reports = [], {}
    for case in cases:
        if time.perf_counter() - start > args.budget:
            print(f"# skipped {case.name}: over the {args.budget:g} s budget", flush=True)
            continue
        t0 = time.perf_counter()
        report = run_case(case, args.device, args.repeat, args.unsafe_fixes, args.timeout)
        reports[case.name] = report
        rows.append(table_row(case, report))
        print(f"# {case.name}: {time.perf_counter() - t0:.1f} s  `{case.cli()} --repeat {args.repeat}`", flush=True)
        print(rows[-1], flush=True)
        if args.json:
            with open(args.json, "w") as fh:
                json.dump(reports, fh, indent=2)
    first = next((r for r in reports.values() if not r.get("error")), {})
    print()
    print(f"torch {first.get('torch')}, {first.get('device_name')}, repeat {args.repeat}, "
          f"total {time.perf_counter() - start:.0f} s")
    print(HEADER)
    print("\n".join(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
