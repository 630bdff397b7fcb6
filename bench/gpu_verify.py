"""`dynalint verify` on the seed examples and on real models with graph breaks: the README table.

    python bench/gpu_verify.py                     # every case, markdown table on stdout
    python bench/gpu_verify.py --only longformer   # some cases
    python bench/gpu_verify.py --out DIR           # also DIR/table.md, DIR/reports.json, DIR/reports.txt
    python bench/gpu_verify.py --table DIR/reports.json ...  # the table again from saved reports

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


def longformer_tiny(hidden: int = 64, layers: int = 2, seq: int = 250, batch: int = 2, window: int = 32):
    """Longformer on a length that is not a multiple of its window: a padding warning is logged in
    forward, and `is_global_attn = ....any().item()` breaks the graph."""
    from transformers import LongformerConfig, LongformerModel

    cfg = LongformerConfig(vocab_size=128, hidden_size=hidden, num_hidden_layers=layers,
                           num_attention_heads=max(4, hidden // 64), intermediate_size=hidden * 4 if hidden > 64 else 128,
                           attention_window=[window] * layers, max_position_embeddings=seq + window + 8)
    return LongformerModel(cfg), {"input_ids": _ids(batch, seq)}


def big_bird_block_sparse(hidden: int = 64, layers: int = 2, seq: int = 128, batch: int = 2, block: int = 8,
                          dropout: float = 0.1):
    """BigBird with block-sparse attention (sequence long enough for it). In train mode it plans its
    random attention with NumPy on every call; `dropout=0` keeps train-mode outputs comparable."""
    from transformers import BigBirdConfig, BigBirdModel

    cfg = BigBirdConfig(vocab_size=128, hidden_size=hidden, num_hidden_layers=layers,
                        num_attention_heads=max(4, hidden // 64), intermediate_size=hidden * 4 if hidden > 64 else 128,
                        max_position_embeddings=max(512, seq), block_size=block, num_random_blocks=2,
                        attention_type="block_sparse", hidden_dropout_prob=dropout, attention_probs_dropout_prob=dropout)
    return BigBirdModel(cfg), {"input_ids": _ids(batch, seq)}


def timm_model(name: str = "sequencer2d_s", batch: int = 2, size: int = 224):
    """A timm model with random weights. sequencer2d_s runs bidirectional nn.LSTMs over image rows
    and columns, which Dynamo refuses without `allow_rnn` (the setting --try-settings suggests)."""
    import timm
    import torch

    return timm.create_model(name, pretrained=False), {"x": torch.randn(batch, 3, size, size)}


def tv_detector(name: str = "fasterrcnn_mobilenet_v3_large_320_fpn", images: int = 2, size: int = 320):
    """A torchvision detector with random weights, in eval mode, on a batch of images: its region
    proposals and detections are filtered per image (score thresholds, NMS), which breaks the graph."""
    import torch
    import torchvision

    torch.manual_seed(0)
    model = torchvision.models.get_model(name, weights=None, weights_backbone=None).eval()
    gen = torch.Generator().manual_seed(0)
    return model, {"images": [torch.rand(3, size, size, generator=gen) for _ in range(images)]}


def big_bird_short_sequence():
    """BigBird given a sequence too short for block-sparse: it logs a warning inside forward."""
    from transformers import BigBirdConfig, BigBirdModel

    cfg = BigBirdConfig(vocab_size=128, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                        intermediate_size=128, max_position_embeddings=512, block_size=16, num_random_blocks=2,
                        attention_type="block_sparse")
    return BigBirdModel(cfg), {"input_ids": _ids(2, 64)}


def led_tiny(d_model: int = 64, layers: int = 2, seq: int = 250, batch: int = 2, window: int = 32, target: int = 32):
    """LED (Longformer encoder-decoder)."""
    from transformers import LEDConfig, LEDModel

    heads = max(4, d_model // 64)
    cfg = LEDConfig(vocab_size=128, d_model=d_model, encoder_layers=layers, decoder_layers=layers,
                    encoder_attention_heads=heads, decoder_attention_heads=heads,
                    encoder_ffn_dim=d_model * 4 if d_model > 64 else 128, decoder_ffn_dim=d_model * 4 if d_model > 64 else 128,
                    attention_window=[window] * layers, max_encoder_position_embeddings=max(512, seq + window),
                    max_decoder_position_embeddings=max(512, target))
    return LEDModel(cfg), {"input_ids": _ids(batch, seq), "decoder_input_ids": _ids(batch, target)}


def ctrl_model(hidden: int = 64, layers: int = 2, seq: int = 128, batch: int = 2):
    """CTRL: forward converts its `nn.Buffer` of position encodings with
    `self.pos_encoding = self.pos_encoding.to(...)`, which breaks the graph (DYN142)."""
    from transformers import CTRLConfig, CTRLModel

    cfg = CTRLConfig(vocab_size=1024, n_positions=max(256, seq), n_embd=hidden, dff=hidden * 4, n_layer=layers,
                     n_head=max(4, hidden // 64))
    return CTRLModel(cfg), {"input_ids": _ids(batch, seq)}


def switch_model(d_model: int = 64, layers: int = 2, experts: int = 4, seq: int = 64, batch: int = 2, target: int = 16):
    """Switch Transformers: its experts' loop over `....nonzero()` with `torch.where(mask)` breaks
    the graph per expert (DYN130; the unsafe fix is dense dispatch)."""
    from transformers import SwitchTransformersConfig, SwitchTransformersModel

    cfg = SwitchTransformersConfig(vocab_size=128, d_model=d_model, d_kv=64, d_ff=d_model * 4, num_layers=layers,
                                   num_decoder_layers=layers, num_heads=max(4, d_model // 64), num_experts=experts,
                                   expert_capacity=2 * batch * seq // experts, num_sparse_encoder_layers=layers // 2,
                                   num_sparse_decoder_layers=layers // 2)
    return SwitchTransformersModel(cfg), {"input_ids": _ids(batch, seq), "decoder_input_ids": _ids(batch, target)}


def m2m100_model(d_model: int = 64, layers: int = 2, seq: int = 64, batch: int = 2, target: int = 16,
                 layerdrop: float = 0.05):
    """M2M100 with its default LayerDrop (0.05): in train mode a draw per layer decides whether the
    layer runs, a graph break per layer (DYN120; the unsafe fix selects the layer's output with
    `torch.where`). Dropout off, so the original and the fixed code give the same outputs."""
    from transformers import M2M100Config, M2M100Model

    heads = max(4, d_model // 64)
    cfg = M2M100Config(vocab_size=1024, d_model=d_model, encoder_layers=layers, decoder_layers=layers,
                       encoder_attention_heads=heads, decoder_attention_heads=heads, encoder_ffn_dim=d_model * 4,
                       decoder_ffn_dim=d_model * 4, encoder_layerdrop=layerdrop, decoder_layerdrop=layerdrop,
                       dropout=0.0, attention_dropout=0.0, activation_dropout=0.0,
                       max_position_embeddings=max(1024, seq + 8))
    return M2M100Model(cfg), {"input_ids": _ids(batch, seq, 1024), "decoder_input_ids": _ids(batch, target, 1024)}


def hf_model(model_type: str = "xlm", seq: int = 128, batch: int = 2, **overrides):
    """Any transformers architecture from its default config with `overrides` (sizes, dropout),
    random weights; encoder-decoder models get decoder inputs a quarter as long."""
    from transformers import AutoConfig, AutoModel

    cfg = AutoConfig.for_model(model_type, **overrides)
    vocab = min(int(getattr(cfg, "vocab_size", 1024) or 1024), 1024)
    inputs = {"input_ids": _ids(batch, seq, vocab)}
    if getattr(cfg, "is_encoder_decoder", False):
        inputs["decoder_input_ids"] = _ids(batch, max(8, seq // 4), vocab)
    return AutoModel.from_config(cfg), inputs


def musicgen_model(hidden: int = 64, layers: int = 2, seq: int = 64, batch: int = 2, codebooks: int = 4,
                   layerdrop: float = 0.0):
    """MusicGen's decoder (LayerDrop drawn with Python's `random.uniform`), dropout off; its input
    is one row of codes per codebook and example."""
    from transformers import MusicgenDecoderConfig
    from transformers.models.musicgen.modeling_musicgen import MusicgenModel

    cfg = MusicgenDecoderConfig(vocab_size=2048, hidden_size=hidden, num_hidden_layers=layers,
                                num_attention_heads=max(1, hidden // 64), ffn_dim=4 * hidden,
                                num_codebooks=codebooks, layerdrop=layerdrop, dropout=0.0, attention_dropout=0.0,
                                activation_dropout=0.0, max_position_embeddings=max(2048, seq + 8))
    return MusicgenModel(cfg), {"input_ids": _ids(batch * codebooks, seq, 2048)}


def xmod_model(hidden: int = 64, layers: int = 2, seq: int = 64, batch: int = 4, languages: int = 2):
    """X-MOD with several languages in one batch: each layer routes every sequence through its
    language's adapter by a boolean mask (`hidden_states[lang_mask]`), dropout off."""
    import torch
    from transformers import XmodConfig, XmodModel

    cfg = XmodConfig(vocab_size=1024, hidden_size=hidden, num_hidden_layers=layers,
                     num_attention_heads=max(1, hidden // 64), intermediate_size=4 * hidden,
                     languages=[f"lang_{i}" for i in range(languages)], hidden_dropout_prob=0.0,
                     attention_probs_dropout_prob=0.0, max_position_embeddings=seq + 8)
    return XmodModel(cfg), {"input_ids": _ids(batch, seq, 1024), "lang_ids": torch.arange(batch) % languages}


def wav2vec2_model(hidden: int = 64, layers: int = 2, seconds: float = 1.0, batch: int = 2,
                   mask_time_prob: float = 0.05, layerdrop: float = 0.1):
    """wav2vec2 from raw audio (16 kHz), its default SpecAugment and LayerDrop, dropout off: in
    train mode its feature encoder flags the audio as needing gradients (for reentrant
    checkpointing) and SpecAugment plans its masks with NumPy."""
    import torch
    from transformers import Wav2Vec2Config, Wav2Vec2Model

    cfg = Wav2Vec2Config(hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=max(1, hidden // 64),
                         intermediate_size=4 * hidden, hidden_dropout=0.0, attention_dropout=0.0,
                         activation_dropout=0.0, feat_proj_dropout=0.0, final_dropout=0.0,
                         mask_time_prob=mask_time_prob, layerdrop=layerdrop)
    g = torch.Generator().manual_seed(0)
    return Wav2Vec2Model(cfg), {"input_values": torch.randn(batch, int(16000 * seconds), generator=g)}


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
            if key == "target_args":
                flags += [f"--arg {k}={v}" for k, v in value.items()]
            elif value is True:
                flags.append(flag)
            elif isinstance(value, list):
                flags.append(f"{flag} {','.join(map(str, value))}")
            else:
                flags.append(f"{flag} {value}")
        return " ".join(["dynalint verify", self.target, *flags])


# Sizes that keep a GPU busy (a 64-wide, 2-layer model is launch-bound: its timings measure Python
# and kernel launches, and verify says so). The `small` cases are the old toy sizes, for contrast.
REAL_LONGFORMER = {"hidden": 512, "layers": 4, "seq": 1000, "batch": 4, "window": 64}
REAL_LED = {"d_model": 512, "layers": 3, "seq": 1000, "batch": 4, "window": 64, "target": 128}
REAL_BIG_BIRD = {"hidden": 512, "layers": 4, "seq": 1024, "batch": 4, "block": 64}
# 1024, 3072 and 4096 take BigBird's fixed plan (`_bigbird_block_rand_mask`); other lengths the
# general one (`_bigbird_block_rand_mask_with_head`), which the helper split moves out of the graph.
LONG_BIG_BIRD = {**REAL_BIG_BIRD, "seq": 2048}
REAL_CTRL = {"hidden": 1024, "layers": 6, "seq": 512, "batch": 4}
REAL_SWITCH = {"d_model": 512, "layers": 4, "experts": 8, "seq": 512, "batch": 4, "target": 128}
# A BART-style encoder with LayerDrop as earlier transformers wrote it (tests/fixtures/verify).
REAL_LAYERDROP = {"hidden": 1024, "layers": 12, "seq": 512, "batch": 8}
REAL_SEQUENCER = {"batch": 32, "size": 224}
REAL_M2M100 = {"d_model": 1024, "layers": 6, "seq": 512, "batch": 8, "target": 128}
# Smaller layers: each break's cost (a graph boundary, launches, lost fusion) weighs more.
MID_M2M100 = {"d_model": 512, "layers": 6, "seq": 128, "batch": 8, "target": 32}
REAL_XLM = {"model_type": "xlm", "seq": 512, "batch": 8, "emb_dim": 1024, "n_layers": 6, "n_heads": 16,
            "dropout": 0.0, "attention_dropout": 0.0}
REAL_IBERT = {"model_type": "ibert", "seq": 512, "batch": 8, "hidden_size": 768, "num_hidden_layers": 6, "max_position_embeddings": 1024,
              "hidden_dropout_prob": 0.0, "attention_probs_dropout_prob": 0.0}
REAL_NLLB_MOE = {"model_type": "nllb-moe", "seq": 256, "batch": 8, "d_model": 512, "encoder_layers": 4,
                 "decoder_layers": 4, "num_experts": 8, "expert_capacity": 512, "encoder_ffn_dim": 2048,
                 "decoder_ffn_dim": 2048, "dropout": 0.0, "attention_dropout": 0.0, "activation_dropout": 0.0}
# BART-family models whose layers return tuples (attentions collected after the layer), with
# LayerDrop set as fine-tuning recipes set it; 6 + 6 layers of BART-large width.
REAL_MVP = {"model_type": "mvp", "seq": 512, "batch": 8, "d_model": 1024, "encoder_layers": 6, "decoder_layers": 6,
            "encoder_layerdrop": 0.1, "decoder_layerdrop": 0.1, "dropout": 0.0, "attention_dropout": 0.0,
            "activation_dropout": 0.0}
REAL_BLENDERBOT = {"model_type": "blenderbot", "seq": 128, "batch": 8, "d_model": 1024, "encoder_layers": 6,
                   "decoder_layers": 6, "encoder_ffn_dim": 4096, "decoder_ffn_dim": 4096, "encoder_attention_heads": 16,
                   "decoder_attention_heads": 16, "encoder_layerdrop": 0.1, "decoder_layerdrop": 0.1, "dropout": 0.0,
                   "attention_dropout": 0.0, "activation_dropout": 0.0}
# MusicGen small's width, half its depth, with its default LayerDrop of 0 (the safe fix decides the
# draw's branch from the probability).
REAL_MUSICGEN = {"hidden": 1024, "layers": 12, "seq": 256, "batch": 4, "codebooks": 4}
# XLM-R base width, 4 languages mixed in a batch: dense dispatch runs all 4 adapters (each a
# quarter of a feed-forward block) on every sequence.
REAL_XMOD = {"hidden": 768, "layers": 12, "seq": 512, "batch": 8, "languages": 4}
# wav2vec2 base's width and depth, 4 s of audio, batch 8, its default SpecAugment (0.05) and
# LayerDrop (0.1).
REAL_WAV2VEC2 = {"hidden": 768, "layers": 12, "seconds": 4.0, "batch": 8}
# Busier: dense dispatch does every expert's work for every token (8x the expert FLOPs here).
LARGE_SWITCH = {"d_model": 1024, "layers": 8, "experts": 8, "seq": 1024, "batch": 8, "target": 256}

# Detectors at the sizes they are trained for: 8 images, Faster R-CNN's mobile variant at 320 px,
# Mask R-CNN at 800 px (its transform resizes to 800 anyway).
REAL_FASTERRCNN = {"name": "fasterrcnn_mobilenet_v3_large_320_fpn", "images": 8, "size": 320}
REAL_MASKRCNN = {"name": "maskrcnn_resnet50_fpn", "images": 4, "size": 800}

CASES = [
    Case("BadIf", f"{FIXTURES}/bad_if.py::BadIf", {"input_shape": [65536, 16]}),
    Case("BadIf, unsafe fixes", f"{FIXTURES}/bad_if.py::BadIf", {"input_shape": [65536, 16], "unsafe_fixes": True}),
    Case("LogInsideForward", f"{FIXTURES}/log_inside_forward.py::LogInsideForward", {"input_shape": [65536, 16]}),
    Case("PrintInForward", f"{FIXTURES}/print_in_forward.py::PrintInForward", {"input_shape": [65536, 16]}),
    Case("ShapeBranch (dynamic)", f"{FIXTURES}/shape_branch.py::ShapeBranch",
         {"input_shape": [64, 16], "second_input_shape": [64, 32], "dynamic": True}),
    Case("longformer", f"{THIS}::longformer_tiny", {"target_args": REAL_LONGFORMER}),
    Case("led", f"{THIS}::led_tiny", {"target_args": REAL_LED}),
    Case("big_bird (block sparse)", f"{THIS}::big_bird_block_sparse", {"target_args": REAL_BIG_BIRD}),
    Case("big_bird (block sparse, train)", f"{THIS}::big_bird_block_sparse",
         {"target_args": {**REAL_BIG_BIRD, "dropout": 0.0}, "train": True}),
    Case("big_bird (block sparse, seq 2048)", f"{THIS}::big_bird_block_sparse", {"target_args": LONG_BIG_BIRD}),
    Case("big_bird (block sparse, seq 2048, train)", f"{THIS}::big_bird_block_sparse",
         {"target_args": {**LONG_BIG_BIRD, "dropout": 0.0}, "train": True}),
    Case("ctrl", f"{THIS}::ctrl_model", {"target_args": REAL_CTRL}),
    Case("layerdrop encoder (train)", f"{FIXTURES}/layerdrop_encoder.py::layerdrop_encoder",
         {"target_args": REAL_LAYERDROP, "train": True}),
    Case("m2m_100 (layerdrop 0.05, train, unsafe fixes)", f"{THIS}::m2m100_model",
         {"target_args": REAL_M2M100, "train": True, "unsafe_fixes": True}),
    Case("xlm (unsafe fixes)", f"{THIS}::hf_model", {"target_args": REAL_XLM, "unsafe_fixes": True}),
    Case("ibert (train, unsafe fixes)", f"{THIS}::hf_model", {"target_args": REAL_IBERT, "train": True, "unsafe_fixes": True}),
    Case("nllb-moe (layerdrop 0.05, train, unsafe fixes)", f"{THIS}::hf_model",
         {"target_args": REAL_NLLB_MOE, "train": True, "unsafe_fixes": True}),
    Case("mvp (layerdrop 0.1, train, unsafe fixes)", f"{THIS}::hf_model",
         {"target_args": REAL_MVP, "train": True, "unsafe_fixes": True}),
    Case("blenderbot (layerdrop 0.1, train, unsafe fixes)", f"{THIS}::hf_model",
         {"target_args": REAL_BLENDERBOT, "train": True, "unsafe_fixes": True}),
    Case("musicgen (train)", f"{THIS}::musicgen_model", {"target_args": REAL_MUSICGEN, "train": True}),
    Case("xmod (4 languages, unsafe fixes)", f"{THIS}::xmod_model", {"target_args": REAL_XMOD, "unsafe_fixes": True}),
    Case("xmod (4 languages, train, unsafe fixes)", f"{THIS}::xmod_model",
         {"target_args": REAL_XMOD, "train": True, "unsafe_fixes": True}),
    Case("wav2vec2 (train, unsafe fixes)", f"{THIS}::wav2vec2_model",
         {"target_args": REAL_WAV2VEC2, "train": True, "unsafe_fixes": True}),
    Case("wav2vec2 (no layerdrop, train, unsafe fixes)", f"{THIS}::wav2vec2_model",
         {"target_args": {**REAL_WAV2VEC2, "layerdrop": 0.0}, "train": True, "unsafe_fixes": True}),
    Case("m2m_100 mid (layerdrop 0.05, train, unsafe fixes)", f"{THIS}::m2m100_model",
         {"target_args": MID_M2M100, "train": True, "unsafe_fixes": True}),
    Case("sequencer2d_s (timm, try settings)", f"{THIS}::timm_model", {"target_args": REAL_SEQUENCER, "try_settings": True}),
    Case("longformer (try settings)", f"{THIS}::longformer_tiny", {"target_args": REAL_LONGFORMER, "try_settings": True}),
    Case("fasterrcnn mobilenet 320 (torchvision, unsafe fixes)", f"{THIS}::tv_detector",
         {"target_args": REAL_FASTERRCNN, "unsafe_fixes": True}),
    Case("maskrcnn resnet50 (torchvision, unsafe fixes)", f"{THIS}::tv_detector",
         {"target_args": REAL_MASKRCNN, "unsafe_fixes": True}),
    Case("switch_transformers", f"{THIS}::switch_model", {"target_args": REAL_SWITCH}),
    Case("switch_transformers (large)", f"{THIS}::switch_model", {"target_args": LARGE_SWITCH}),
    Case("big_bird (short sequence)", f"{THIS}::big_bird_short_sequence"),
    Case("longformer (small)", f"{THIS}::longformer_tiny"),
    Case("led (small)", f"{THIS}::led_tiny"),
]


def select_cases(only: str) -> list:
    """`--only`: comma-separated case names or substrings of them. A whole case name picks that
    case, also when it has commas of its own ("m2m_100 (layerdrop 0.05, train, unsafe fixes)":
    split at its commas, " train" would pick every train case)."""
    text = only.strip().lower()
    exact = [c for c in CASES if c.name.lower() == text]
    if exact:
        return exact
    wanted = [w.strip() for w in text.split(",") if w.strip()]
    names = {c.name.lower() for c in CASES}
    return [c for c in CASES if any(w == c.name.lower() or (w not in names and w in c.name.lower()) for w in wanted)]


def run_case(case: Case, device: str, repeat: int, unsafe: bool, timeout: float, max_time: float = 60.0,
             cold_compile: bool = True, settings: bool = False) -> dict:
    from dynalint.verify.runner import VerifyError, verify

    opts = dict(case.options)
    try:
        report = verify(case.target, device=device, repeat=repeat, timeout=timeout,
                        unsafe_fixes=unsafe or bool(opts.get("unsafe_fixes")),
                        input_shape=opts.get("input_shape"), second_input_shape=opts.get("second_input_shape"),
                        dynamic=opts.get("dynamic"), target_args=opts.get("target_args"), max_seconds=max_time,
                        cold_compile=cold_compile, settings=settings or bool(opts.get("try_settings")),
                        train=bool(opts.get("train")))
    except VerifyError as exc:
        return {"target": case.target, "error": str(exc), "details": exc.details[-3000:]}
    return report


def _fmt(value: Optional[float], spec: str = ".3f") -> str:
    return "-" if value is None else format(value, spec)


def _arm(t: dict, name: str) -> str:
    arm = (t.get("arms") or {}).get(name)
    if not arm:
        return "-"
    return f"{arm['median_ms']:.3f} [{arm['q1_ms']:.3f}-{arm['q3_ms']:.3f}]"


def _graphs(side: dict) -> str:
    """`graphs / breaks`; a forward Dynamo gave up on has no graph (explain counts -1 breaks)."""
    if not side["graph_count"]:
        return "0 (skipped)"
    return f"{side['graph_count']} / {side['graph_break_count']}"


def _ratio(t: dict, otherwise: str) -> str:
    """`1.26x [1.22-1.30] faster` for a paired timing with a verdict, else `otherwise`."""
    if t.get("speedup") is None or t.get("verdict") == "cannot measure":
        return otherwise
    return f"{t['speedup']:.2f}x [{t['speedup_ci'][0]:.2f}-{t['speedup_ci'][1]:.2f}] {t['verdict']}"


def _busy(t: dict) -> str:
    """` (GPU busy 61% → 62%)`: each timed version's kernel share, where profiled."""
    busy = t.get("gpu_busy") or {}
    if not busy:
        return ""
    return " (GPU busy " + " → ".join(f"{busy[n]:.0%}" for n in ("before", "after", "compiled") if n in busy) + ")"


def table_row(case: Case, report: dict, run: str = "") -> str:
    name = f"{case.name}{f' ({run})' if run else ''}"
    if report.get("error"):
        return f"| {name} | error: {report['error']} | | | | | | | |"
    b, a, t = report["before"], report["after"], report.get("timing") or {}
    graphs = f"{_graphs(b)} → {_graphs(a)}"
    if "recompiles" in b:
        graphs += f" (recompiles {b['recompiles']} → {a.get('recompiles')})"
    confirmed = sum(f["status"] == "confirmed" for f in report["findings"])
    findings = f"{len(report['fixes'])} fixed; {confirmed} confirmed, {len(report['missed'])} missed"
    speedup = _ratio(t, t.get("verdict") or "-")
    compile_s = f"{_fmt(t.get('compile_before_s'), '.1f')} → {_fmt(t.get('compile_after_s'), '.1f')}"
    status = report.get("outputs_status")
    judged = report.get("outputs_judgement") or {}
    if status == "within rounding":  # float64 runs of both versions: rounding only (dynalint.verify.outputs)
        match = f"within {judged.get('dtype') or 'float'} rounding, own error {_fmt(judged.get('original_error'), '.1g')}"
    else:
        match = "yes" if report["outputs_match"] else "NO"
    tried = report.get("settings_tried")
    if tried is not None:
        best = next((t for t in tried if t["suggested"] or t.get("slower")), None)
        label = "suggested" if best and best["suggested"] else "not suggested (slower)"
        findings += (f"; {label} {', '.join(best['settings'])}: {best['graph_count']} / {best['graph_break_count']}"
                     if best else "; no Dynamo setting helps")
        st = (best or {}).get("timing") or {}
        if st.get("compiled_after_ms") is not None:
            findings += (f", compiled {_arm(st, 'before')} ms without it, {_arm(st, 'after')} ms with it: "
                         f"{_ratio(st, 'cannot measure')}{_busy(st)}")
        elif st.get("error"):
            findings += f", timing failed: {st['error'][:80]}"
    warnings = ("; ".join(w.split(":")[0] for w in t.get("warnings") or ()) or "-") + _busy(t)
    before_arm = "before" if "before" in (t.get("arms") or {}) else "compiled"
    after_arm = "after" if "after" in (t.get("arms") or {}) else "compiled"
    return (f"| {name} | {graphs} | {findings} | {_arm(t, 'eager')} | {_arm(t, before_arm)} | "
            f"{_arm(t, after_arm)} | {speedup} | {warnings} | {compile_s} | "
            f"{match} ({_fmt(report.get('max_abs_diff'), '.1g')}) |")


HEADER = ("| case | graphs / breaks before → after | fixes, findings | eager ms [IQR] | compiled before ms [IQR] | "
          "compiled after ms [IQR] | speedup [95% interval] verdict | warnings | compile s before → after | "
          "outputs match (max abs diff) |\n"
          "|---|---|---|---|---|---|---|---|---|---|")


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", help="comma-separated case names (or substrings of them)")
    parser.add_argument("--device", default="auto")
    parser.add_argument("--repeat", type=int, default=30, help="interleaved timing rounds")
    parser.add_argument("--max-time", type=float, default=20.0, help="seconds of timing rounds per case")
    parser.add_argument("--runs", type=int, default=1, help="run every case this many times (verdicts should agree)")
    parser.add_argument("--warm-cache", action="store_true",
                        help="let compiles reuse the Inductor cache (faster; compile times are then warm)")
    parser.add_argument("--unsafe-fixes", action="store_true")
    parser.add_argument("--try-settings", action="store_true", help="also try Dynamo settings (verify --try-settings)")
    parser.add_argument("--budget", type=float, default=540.0, help="stop starting cases after this many seconds")
    parser.add_argument("--timeout", type=float, default=300.0, help="per child process")
    parser.add_argument("--out", help="write table.md, reports.json ({case: report}) and reports.txt (each "
                        "report as `dynalint verify` prints it) here, rewritten after each case")
    parser.add_argument("--table", nargs="+", metavar="REPORTS_JSON", help="print the table of saved reports, run nothing")
    args = parser.parse_args(argv)
    if args.table:
        return print_saved_table(args.table)
    if args.out:
        args.out = os.path.abspath(args.out)
    os.chdir(ROOT)
    cases = CASES
    if args.only:
        cases = select_cases(args.only)
    start = time.perf_counter()
    rows, reports = [], {}
    for case in cases:  # a case's runs back to back: a cut-off budget still leaves complete pairs
        for run in range(1, args.runs + 1):
            if time.perf_counter() - start > args.budget:
                print(f"# skipped {case.name}: over the {args.budget:g} s budget", flush=True)
                continue
            t0 = time.perf_counter()
            report = run_case(case, args.device, args.repeat, args.unsafe_fixes, args.timeout, args.max_time,
                              cold_compile=not args.warm_cache, settings=args.try_settings)
            label = f"run {run}" if args.runs > 1 else ""
            reports[f"{case.name}{f' ({label})' if label else ''}"] = report
            rows.append(table_row(case, report, label))
            print(f"# {case.name}: {time.perf_counter() - t0:.1f} s  `{case.cli()} --repeat {args.repeat} "
                  f"--max-time {args.max_time:g}`", flush=True)
            print(rows[-1], flush=True)
            if args.out:
                write_outputs(args.out, cases, reports, rows, caption(reports, args, time.perf_counter() - start))
    print()
    print(caption(reports, args, time.perf_counter() - start))
    print(HEADER)
    print("\n".join(rows))
    return 0


def print_saved_table(paths: list[str]) -> int:
    """The table of `--out` runs' reports.json files (cases in CASES order)."""
    reports = {}
    for path in paths:
        with open(path) as fh:
            reports.update(json.load(fh))
    by_name = {c.name: c for c in CASES}
    print(HEADER)
    for name, report in sorted(reports.items(), key=lambda kv: list(by_name).index(kv[0]) if kv[0] in by_name else 99):
        print(table_row(by_name.get(name) or Case(name, report.get("target", "")), report))
    return 0


def caption(reports: dict, args, elapsed: float) -> str:
    first = next((r for r in reports.values() if not r.get("error")), {})
    return (f"torch {first.get('torch')}, {first.get('device_name')}, repeat {args.repeat}, "
            f"total {elapsed:.0f} s")


def write_outputs(folder: str, cases: list[Case], reports: dict, rows: list[str], title: str) -> None:
    from dynalint.verify.report import render

    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "table.md"), "w") as fh:
        fh.write("\n".join([title, "", HEADER, *rows]) + "\n")
    with open(os.path.join(folder, "reports.json"), "w") as fh:
        json.dump(reports, fh, indent=2)
    texts = []
    by_name = {c.name: c for c in cases}
    for name, report in reports.items():
        case = by_name.get(name.split(" (run ")[0])
        body = f"error: {report['error']}" if report.get("error") else render(report, "text")
        texts.append(f"$ {case.cli() if case else name}\n{body}\n")
    with open(os.path.join(folder, "reports.txt"), "w") as fh:
        fh.write("\n".join(texts))


if __name__ == "__main__":
    sys.exit(main())
