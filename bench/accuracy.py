"""Precision and recall of dynalint against the break sites Dynamo reports on real models.

For each model (transformers with tiny random configs, timm and torchvision with random init):
  1. run it eagerly while recording every executed line of the library's source files;
  2. run `torch._dynamo.explain` and map each break reason to its innermost frame outside torch;
  3. lint the same installed source files (one project, so cross-file regions resolve);
then report, per rule and overall:
  precision = findings on executed lines that sit on a real break site / findings on executed lines
  recall    = break sites with a finding / break sites
plus the misses and the false alarms, so each one can be looked at.

The research suite (x_transformers, vector_quantize_pytorch, openai-whisper, segment_anything,
open_clip_torch, each installed with `pip install --no-deps`) scores findings only on the lines
Dynamo itself traced (its `trace_source` log), not on every line run eagerly: a finding on a line
Dynamo never traced can be neither right nor wrong there ("not scored"). It reports precision and
recall per package and overall. Missing optional imports of those packages that no model forward
uses (torchvision's transforms and ops, numba's jit) are replaced by stubs in the process.

    python bench/accuracy.py                      # transformers suite
    python bench/accuracy.py --suite timm         # needs timm (and torchvision)
    python bench/accuracy.py --suite torchvision  # classification, segmentation and detection models
    python bench/accuracy.py --suite research     # unannotated research code (x_transformers, ...)
    python bench/accuracy.py --only longformer,big_bird --verbose
"""

from __future__ import annotations

import argparse
import collections
import copy
import importlib.util
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
    "mpt", "mra", "mt5", "mvp", "nllb-moe", "nystromformer", "opt", "pegasus", "pegasus_x",
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
    # (file, line) Dynamo traced (its trace_source log), for suites scored on traced lines only.
    traced: set = field(default_factory=set)


def _set(cfg, k, v) -> None:
    """Set one field; a config that rejects it (a read-only property such as Falcon's `head_dim`,
    a field another field constrains, strict validation of an aliased field) keeps its own."""
    try:
        setattr(cfg, k, v)
    except Exception:
        pass


def _shrink(cfg):
    for k, v in SMALL.items():
        if hasattr(cfg, k) and not isinstance(getattr(cfg, k), (list, dict)) or k == "attention_window":
            if hasattr(cfg, k):
                cur = getattr(cfg, k)
                if isinstance(cur, list):
                    _set(cfg, k, [v] * len(cur))
                else:
                    _set(cfg, k, v)
    for sub in ("text_config", "vision_config", "encoder", "decoder"):
        if hasattr(cfg, sub) and getattr(cfg, sub) is not None and hasattr(getattr(cfg, sub), "to_dict"):
            _shrink(getattr(cfg, sub))
    if hasattr(cfg, "attention_window") and isinstance(cfg.attention_window, list):
        cfg.attention_window = [8] * cfg.num_hidden_layers
    # Token ids the small vocabulary must still hold (Marian's and Whisper's padding id is its last).
    for k in ("pad_token_id", "decoder_start_token_id", "bos_token_id", "eos_token_id"):
        tok = getattr(cfg, k, None)
        if isinstance(tok, int) and tok >= SMALL["vocab_size"] and hasattr(cfg, "vocab_size"):
            _set(cfg, k, 1 if k != "pad_token_id" else 0)
    return cfg


# What the tiny sizes above leave inconsistent for some architectures (each checked to build and
# run a forward on transformers 5.24): rotary dims within a head, group counts that divide the
# widths, Reformer's axial position factors, widths the grouped expert matmul accepts.
SMALL_PER_MODEL = {
    "codegen": dict(rotary_dim=8),
    "gptj": dict(rotary_dim=8),
    "esm": dict(pad_token_id=1, mask_token_id=2),
    "funnel": dict(block_sizes=[1, 1], block_repeats=[1, 1], architectures=["FunnelModel"]),  # AutoModel: two classes
    "mixtral": dict(intermediate_size=32),
    "reformer": dict(axial_pos_shape=(8, 8), axial_pos_embds_dim=(16, 16), attention_head_size=16,
                     lsh_attn_chunk_length=16, local_attn_chunk_length=16, num_buckets=4, num_hashes=1,
                     feed_forward_size=37, max_position_embeddings=64),
    "squeezebert": dict(intermediate_size=36),
    "swin": dict(embed_dim=32, depths=[1, 1], num_heads=[2, 2]),
    "segformer": dict(hidden_sizes=[16, 32], num_attention_heads=[1, 2], depths=[1, 1], num_encoder_blocks=2,
                      sr_ratios=[2, 1], patch_sizes=[7, 3], strides=[4, 2], mlp_ratios=[4, 4], decoder_hidden_size=32),
    "convnext": dict(hidden_sizes=[16, 32], depths=[1, 1], num_stages=2),
}


def build_transformers(model_type: str):
    import torch
    from transformers import AutoConfig, AutoModel

    cfg = _shrink(AutoConfig.for_model(model_type))
    for k, v in SMALL_PER_MODEL.get(model_type, {}).items():
        _set(cfg, k, v)
    if model_type == "big_bird":
        cfg.attention_type = "block_sparse"
    if model_type in ("vit", "deit", "beit", "swin", "convnext", "resnet", "mobilevit", "segformer"):
        for k in ("image_size",):
            if hasattr(cfg, k):
                setattr(cfg, k, 64 if model_type not in ("swin",) else 64)
    torch.manual_seed(0)
    model = AutoModel.from_config(cfg).eval()
    if model_type == "xmod":
        model.set_default_language("en_XX")  # X-MOD routes through per-language adapters
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


# Research code, written without type annotations: each package installed with `pip install
# --no-deps` (and its small pure-Python dependencies). Random init, small configs, no downloads.
RESEARCH_PACKAGES = ("x_transformers", "vector_quantize_pytorch", "whisper", "segment_anything", "open_clip",
                     "encodec", "torch_geometric")
RESEARCH_MODELS = [
    "x_transformers:decoder", "x_transformers:decoder_features", "x_transformers:encoder",
    "x_transformers:continuous", "x_transformers:xtransformer",
    "vector_quantize_pytorch:vq", "vector_quantize_pytorch:vq_cosine", "vector_quantize_pytorch:vq_kmeans",
    "vector_quantize_pytorch:residual_vq", "vector_quantize_pytorch:fsq", "vector_quantize_pytorch:residual_fsq",
    "vector_quantize_pytorch:lfq", "vector_quantize_pytorch:residual_lfq", "vector_quantize_pytorch:simvq",
    "whisper:tiny", "segment_anything:sam", "open_clip:clip",
    "encodec:encodec",
    "torch_geometric:gcn", "torch_geometric:gat", "torch_geometric:sage", "torch_geometric:gin_pool",
    "torch_geometric:transformer_conv",
]


def _stub_missing_imports() -> None:
    """torchvision (transforms and ops, imported by segment_anything's and open_clip's package
    modules for preprocessing), numba (whisper's word timing) and torchaudio (encodec's audio file
    helpers) are not needed by any forward measured here; when they are not installed, stand-ins
    let the packages import."""
    import importlib.abc
    import importlib.machinery
    import importlib.util
    import types

    class _Anything(type):
        def __getattr__(cls, name):
            if name.startswith("__"):
                raise AttributeError(name)
            return cls

        def __call__(cls, *args, **kwargs):
            if len(args) == 1 and callable(args[0]) and not kwargs:
                return args[0]  # used as a decorator: the function itself
            return cls

    class Stub(metaclass=_Anything):
        pass

    class StubModule(types.ModuleType):
        def __getattr__(self, name):
            if name.startswith("__"):
                raise AttributeError(name)
            return Stub

    class Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
        def __init__(self, heads):
            self.heads = heads

        def find_spec(self, fullname, path, target=None):
            if fullname.split(".")[0] in self.heads:
                return importlib.machinery.ModuleSpec(fullname, self, is_package=True)
            return None

        def create_module(self, spec):
            return StubModule(spec.name)

        def exec_module(self, module):
            module.__path__ = []

    missing = tuple(m for m in ("torchvision", "numba", "torchaudio") if importlib.util.find_spec(m) is None)
    if missing:
        sys.meta_path.append(Finder(missing))


def build_research(name: str):
    import torch

    _stub_missing_imports()
    torch.manual_seed(0)
    gen = torch.Generator().manual_seed(0)
    pkg, variant = name.split(":")
    if pkg == "x_transformers":
        from x_transformers import ContinuousTransformerWrapper, Decoder, Encoder, TransformerWrapper, XTransformer

        ids = torch.randint(0, 64, (2, 32), generator=gen)
        if variant == "decoder":
            model = TransformerWrapper(
                num_tokens=64, max_seq_len=64,
                attn_layers=Decoder(dim=32, depth=2, heads=2, rotary_pos_emb=True, attn_flash=False),
            )
            return model.eval(), {"x": ids}
        if variant == "decoder_features":
            model = TransformerWrapper(
                num_tokens=64, max_seq_len=64,
                attn_layers=Decoder(dim=32, depth=2, heads=2, attn_num_mem_kv=2, rel_pos_bias=True, macaron=True,
                                    sandwich_norm=True, shift_tokens=1, ff_glu=True, attn_gate_values=True,
                                    attn_qk_norm=True),
            )
            return model.eval(), {"x": ids}
        if variant == "continuous":
            model = ContinuousTransformerWrapper(
                dim_in=8, dim_out=8, max_seq_len=64,
                attn_layers=Encoder(dim=32, depth=1, heads=2, dynamic_pos_bias=True),
            )
            x = torch.randn(2, 16, 8, generator=gen)
            return model.eval(), {"x": x, "mask": torch.ones(2, 16, dtype=torch.bool)}
        if variant == "encoder":
            model = TransformerWrapper(
                num_tokens=64, max_seq_len=64, num_memory_tokens=2,
                attn_layers=Encoder(dim=32, depth=2, heads=2, alibi_pos_bias=True, ff_glu=True,
                                    residual_attn=True, layer_dropout=0.1),
            )
            return model.eval(), {"x": ids, "mask": torch.ones_like(ids).bool()}
        model = XTransformer(
            dim=32, enc_num_tokens=64, enc_depth=2, enc_heads=2, enc_max_seq_len=64,
            dec_num_tokens=64, dec_depth=2, dec_heads=2, dec_max_seq_len=64,
        )
        return model.eval(), {"src": ids, "tgt": ids[:, :16], "mask": torch.ones_like(ids).bool()}
    if pkg == "vector_quantize_pytorch":
        from vector_quantize_pytorch import FSQ, LFQ, ResidualFSQ, ResidualLFQ, ResidualVQ, SimVQ, VectorQuantize

        x = torch.randn(2, 16, 32, generator=gen)
        if variant == "vq":
            return VectorQuantize(dim=32, codebook_size=64, decay=0.8, commitment_weight=1.0).eval(), {"x": x}
        if variant == "vq_cosine":
            model = VectorQuantize(dim=32, codebook_size=64, heads=2, separate_codebook_per_head=True,
                                   use_cosine_sim=True, threshold_ema_dead_code=2, orthogonal_reg_weight=0.1)
            return model.eval(), {"x": x}
        if variant == "vq_kmeans":  # k-means init on the first batch seen in training
            return VectorQuantize(dim=32, codebook_size=16, kmeans_init=True, kmeans_iters=2).eval(), {"x": x}
        if variant == "residual_fsq":
            return ResidualFSQ(dim=32, levels=[8, 5, 5], num_quantizers=2).eval(), {"x": x}
        if variant == "residual_lfq":
            return ResidualLFQ(dim=32, codebook_size=256, num_quantizers=2).eval(), {"x": x}
        if variant == "simvq":
            return SimVQ(dim=32, codebook_size=64).eval(), {"x": x}
        if variant == "residual_vq":
            return ResidualVQ(dim=32, num_quantizers=2, codebook_size=64, quantize_dropout=True).eval(), {"x": x}
        if variant == "fsq":
            return FSQ(levels=[8, 5, 5], dim=32).eval(), {"z": x}
        return LFQ(dim=32, codebook_size=256, entropy_loss_weight=0.1).eval(), {"x": x}
    if pkg == "whisper":
        from whisper.model import ModelDimensions, Whisper

        dims = ModelDimensions(n_mels=16, n_audio_ctx=16, n_audio_state=32, n_audio_head=2, n_audio_layer=2,
                               n_vocab=64, n_text_ctx=16, n_text_state=32, n_text_head=2, n_text_layer=2)
        model = Whisper(dims)
        mel = torch.randn(2, 16, 32, generator=gen)
        return model.eval(), {"mel": mel, "tokens": torch.randint(0, 64, (2, 8), generator=gen)}
    if pkg == "segment_anything":
        from functools import partial

        from segment_anything.modeling import ImageEncoderViT, MaskDecoder, PromptEncoder, Sam, TwoWayTransformer

        size, patch, dim = 64, 16, 32
        sam = Sam(
            image_encoder=ImageEncoderViT(
                depth=2, embed_dim=dim, img_size=size, mlp_ratio=2, norm_layer=partial(torch.nn.LayerNorm, eps=1e-6),
                num_heads=2, patch_size=patch, qkv_bias=True, use_rel_pos=True, global_attn_indexes=[1],
                window_size=2, out_chans=dim,
            ),
            prompt_encoder=PromptEncoder(embed_dim=dim, image_embedding_size=(size // patch, size // patch),
                                         input_image_size=(size, size), mask_in_chans=4),
            mask_decoder=MaskDecoder(
                num_multimask_outputs=3,
                transformer=TwoWayTransformer(depth=2, embedding_dim=dim, mlp_dim=64, num_heads=2),
                transformer_dim=dim, iou_head_depth=2, iou_head_hidden_dim=32,
            ),
            pixel_mean=[123.675, 116.28, 103.53], pixel_std=[58.395, 57.12, 57.375],
        )
        batch = [{
            "image": torch.rand(3, size, size, generator=gen) * 255,
            "original_size": (size, size),
            "point_coords": torch.rand(1, 2, 2, generator=gen) * size,
            "point_labels": torch.tensor([[1, 0]]),
            "boxes": torch.tensor([[4.0, 4.0, 40.0, 40.0]]),
        }]
        return sam.eval(), {"batched_input": batch, "multimask_output": True}
    if pkg == "open_clip":
        from open_clip.model import CLIP, CLIPTextCfg, CLIPVisionCfg

        model = CLIP(
            embed_dim=32,
            vision_cfg=CLIPVisionCfg(layers=2, width=32, head_width=16, patch_size=8, image_size=32),
            text_cfg=CLIPTextCfg(context_length=16, vocab_size=64, width=32, heads=2, layers=2),
        )
        return model.eval(), {"image": torch.randn(2, 3, 32, 32, generator=gen),
                              "text": torch.randint(1, 64, (2, 16), generator=gen)}
    if pkg == "encodec":  # SEANet encoder/decoder with LSTMs, residual VQ (as the 48 kHz model); small, random
        import encodec.modules as em
        import encodec.quantization as eq
        from encodec.model import EncodecModel

        # weight_norm (the default) makes weights non-leaf tensors that the fresh copy for Dynamo cannot deepcopy
        kw = dict(channels=1, dimension=32, n_filters=4, ratios=[4, 2], causal=False, lstm=1, norm="time_group_norm")
        model = EncodecModel(em.SEANetEncoder(**kw), em.SEANetDecoder(**kw),
                             eq.ResidualVectorQuantizer(dimension=32, n_q=4, bins=64),
                             [1.5, 3.0], sample_rate=800, channels=1, normalize=True, name="tiny")
        model.set_target_bandwidth(3.0)
        return model.eval(), {"x": torch.randn(2, 1, 400, generator=gen)}
    if pkg == "torch_geometric":  # a random graph of 12 nodes in two components
        from torch_geometric.nn import GINConv, TransformerConv, global_mean_pool
        from torch_geometric.nn import models as gm

        x = torch.randn(12, 8, generator=gen)
        edge_index = torch.randint(0, 12, (2, 40), generator=gen)
        kw = dict(in_channels=8, hidden_channels=16, num_layers=2, out_channels=4)
        if variant in ("gcn", "gat", "sage"):
            cls = {"gcn": gm.GCN, "gat": gm.GAT, "sage": gm.GraphSAGE}[variant]
            extra = {"heads": 2} if variant == "gat" else {}
            return cls(**kw, **extra).eval(), {"x": x, "edge_index": edge_index}
        batch = torch.tensor([0] * 6 + [1] * 6)

        class GraphClassifier(torch.nn.Module):  # per-graph readout, as graph classification does
            def __init__(self, conv1, conv2):
                super().__init__()
                self.conv1, self.conv2 = conv1, conv2
                self.head = torch.nn.Linear(16, 2)

            def forward(self, x, edge_index, batch):
                h = self.conv1(x, edge_index).relu()
                h = self.conv2(h, edge_index).relu()
                return self.head(global_mean_pool(h, batch))

        if variant == "gin_pool":
            mlp = lambda i: torch.nn.Sequential(torch.nn.Linear(i, 16), torch.nn.ReLU(), torch.nn.Linear(16, 16))
            model = GraphClassifier(GINConv(mlp(8), train_eps=True), GINConv(mlp(16)))
        else:
            model = GraphClassifier(TransformerConv(8, 8, heads=2), TransformerConv(16, 16, concat=False))
        return model.eval(), {"x": x, "edge_index": edge_index, "batch": batch}
    raise ValueError(f"unknown research model {name}")


SUITES = {
    "transformers": (lambda: TRANSFORMERS_MODELS, lambda: build_transformers),
    "timm": (lambda: TIMM_MODELS, lambda: build_timm),
    "torchvision": (lambda: TORCHVISION_MODELS, lambda: build_torchvision),
    "research": (lambda: RESEARCH_MODELS, lambda: build_research),
}


def _library_root(suite: str) -> str:
    import importlib

    if suite == "research":  # the folder holding the packages; each package is a prefix below
        spec = importlib.util.find_spec(RESEARCH_PACKAGES[0])
        return os.path.dirname(os.path.dirname(spec.origin)) + os.sep
    mod = importlib.import_module(suite)
    return os.path.dirname(mod.__file__) + os.sep


def _library_prefixes(suite: str, root: str) -> tuple:
    """Source files of the suite's library: paths starting with one of these."""
    if suite == "research":
        return tuple(root + pkg + os.sep for pkg in RESEARCH_PACKAGES)
    return (root,)


class _GraphBreakLog(logging.Handler):
    """Collects (file, line, reason) from Dynamo's graph-break log for files under `root`."""

    LOGGER = "torch._dynamo"
    AT = re.compile(r"Graph break in user code at (.+?):(\d+)")
    FRAME = re.compile(r'File "(.+?)", line (\d+)')
    TRACED = re.compile(r"TRACE starts_line (.+?):(\d+) in ")

    def __init__(self, root, trace_lines: bool = False):
        super().__init__(logging.DEBUG)
        self.root = root  # a prefix or a tuple of prefixes
        self.sites: list[tuple] = []
        self.untraced: list[tuple] = []
        self.trace_lines = trace_lines
        self.traced: set[tuple] = set()

    def __enter__(self):
        import torch._logging

        torch._logging.set_logs(graph_breaks=True, trace_source=self.trace_lines)
        logger = logging.getLogger(self.LOGGER)
        self._propagate = logger.propagate
        self._printers = list(logger.handlers) if self.trace_lines else []
        for h in self._printers:  # a line per traced line: kept here, not printed
            logger.removeHandler(h)
        logger.addHandler(self)
        return self

    def __exit__(self, *exc):
        import torch._logging

        logger = logging.getLogger(self.LOGGER)
        logger.removeHandler(self)
        for h in self._printers:
            logger.addHandler(h)
        torch._logging.set_logs()
        return False

    def emit(self, record: logging.LogRecord) -> None:
        msg = record.getMessage()
        if self.trace_lines and msg.startswith("TRACE starts_line"):
            m = self.TRACED.match(msg)
            if m and m.group(1).startswith(self.root):
                self.traced.add((m.group(1), int(m.group(2))))
            return
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


def run_model(name: str, builder, root, trace_lines: bool = False) -> ModelRun:
    """`root`: a prefix (or tuple of prefixes) of the library's files; `trace_lines`: record the
    lines Dynamo traced."""
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
                with _GraphBreakLog(root, trace_lines) as logged:
                    out = torch._dynamo.explain(model)(**kwargs)
                run.traced |= logged.traced
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
         "untraced": [[rel(f), l] for f, l in r.untraced],
         "traced": sorted([rel(f), l] for f, l in r.traced)}
        for r in runs
    ]
    Path(path).write_text(json.dumps(data))


def load_runs(path: str, root: str) -> list[ModelRun]:
    runs = []
    for d in json.loads(Path(path).read_text()):
        runs.append(
            ModelRun(d["name"], {(root + f, l) for f, l in d["executed"]},
                     [(root + f, l, why) for f, l, why in d["breaks"]], [(root + f, l) for f, l in d.get("untraced", [])],
                     d["graph_count"], d["error"], d["seconds"], {(root + f, l) for f, l in d.get("traced", [])})
        )
    return runs


def with_package_inits(files: set, prefixes: tuple) -> set:
    """The executed files plus the `__init__.py` of each package above them (within the library):
    a package's re-exports (`from torch_geometric.utils import scatter`) run at import time, not
    while the model runs, yet the linter needs them to follow a call into the module defining it."""
    out = set(files)
    for f in files:
        d = os.path.dirname(f)
        while any((d + os.sep).startswith(p) for p in prefixes):
            init = os.path.join(d, "__init__.py")
            if init not in out and os.path.exists(init):
                out.add(init)
            d = os.path.dirname(d)
    return out


def lint(files: list[str]):
    from dynalint.check import collect_files  # noqa: F401  (same discovery path as the CLI)
    from dynalint.config import Config
    from dynalint.run.engine import SourceFile, analyze_files, module_name_for, select_findings

    config = Config(select=("DYN0", "DYN1"))
    sources = []
    for p in files:
        module, is_pkg = module_name_for(Path(p))
        sources.append(SourceFile(Path(p), p, module, is_pkg))
    summaries = analyze_files(sources, config, jobs=0)
    return select_findings(summaries, config)


def score(runs: list[ModelRun], findings, verbose: bool, on_traced: bool = False):
    """With `on_traced`, only findings on lines Dynamo traced are scored; the others on lines run
    eagerly are listed as not scored."""
    executed = set().union(*(r.executed for r in runs if not r.error)) if runs else set()
    traced = set().union(*(r.traced for r in runs if not r.error)) if runs and on_traced else None
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
        if traced is not None and not on_site and not any((f.filename, row) in traced for row in range(f.row, f.end_row + 1)):
            unverified.append(f)  # run eagerly, never traced by Dynamo: it cannot tell
            continue
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
    prefixes = _library_prefixes(args.suite, root)
    on_traced = args.suite == "research"

    runs = load_runs(args.runs, root) if args.runs and Path(args.runs).exists() else None
    if runs is None:
        runs = []
        for name in names:
            run = run_model(name, builder, prefixes, trace_lines=on_traced)
            runs.append(run)
            status = run.error or f"{run.graph_count} graphs, {len(run.breaks)} breaks, {len(run.executed)} lines"
            print(f"  {name:<28} {run.seconds:6.1f}s  {status}", file=sys.stderr, flush=True)
        if args.runs:
            save_runs(args.runs, runs, root)

    ok = [r for r in runs if not r.error]
    files = sorted(with_package_inits({f for r in ok for f, _ in r.executed} | {f for r in ok for f, _, _ in r.breaks},
                                      prefixes))
    t0 = time.time()
    findings = lint(files)
    lint_s = time.time() - t0
    tp, total, found, sites, false_alarms, misses, unverified = score(ok, findings, args.verbose, on_traced)

    def rel(p):
        return p[len(root):] if p.startswith(root) else p

    per_package = {}
    if args.suite == "research":
        print("\n| package | models run | break sites | precision | recall | not scored |")
        print("|---|---|---|---|---|---|")
        for pkg, prefix in zip(RESEARCH_PACKAGES, prefixes):
            mine = [r for r in ok if r.name.split(":")[0] == pkg]
            if not mine:
                continue
            p_tp, p_total, p_found, p_sites, _, _, p_unv = score(
                mine, [f for f in findings if f.filename.startswith(prefix)], args.verbose, on_traced
            )
            a, b, c = sum(p_tp.values()), sum(p_total.values()), sum(p_found.values())
            per_package[pkg] = {"models": len(mine), "sites": len(p_sites), "findings": b, "true": a,
                                "sites_found": c, "not_scored": len(p_unv)}
            prec = f"{a / b:.2f} ({a}/{b})" if b else "- (0/0)"
            rec = f"{c / len(p_sites):.2f} ({c}/{len(p_sites)})" if p_sites else "- (0/0)"
            print(f"| {pkg} | {len(mine)} | {len(p_sites)} | {prec} | {rec} | {len(p_unv)} |")

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
                    "per_package": per_package,
                },
                indent=1,
            )
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
