"""What the analyzer knows about torch's API without importing torch.

Kinds of values: T (a tensor), B (a boolean tensor, also a tensor), S (a size: an int taken from
a tensor's shape), N (known not to be a tensor), U (unknown). Only T/B ever trigger a
data-dependent finding; U never does, which is what keeps precision high.
"""

T = "T"
B = "B"
S = "S"
N = "N"
U = "U"

TENSORISH = (T, B)

# torch.* callables that do not return tensors.
TORCH_NON_TENSOR_FUNCS = frozenset(
    """
    is_tensor is_storage is_floating_point is_complex is_nonzero numel get_default_dtype
    set_default_dtype set_default_device get_default_device Size device dtype finfo iinfo
    is_grad_enabled is_inference_mode_enabled no_grad enable_grad set_grad_enabled inference_mode
    autocast manual_seed seed initial_seed get_rng_state set_rng_state set_printoptions
    is_autocast_enabled get_autocast_gpu_dtype get_autocast_dtype is_anomaly_enabled
    compile typename result_type promote_types can_cast broadcast_shapes use_deterministic_algorithms
    are_deterministic_algorithms_enabled get_num_threads set_num_threads is_deterministic_algorithms_warn_only_enabled
    save load cond vmap
    """.split()
)
# torch submodules whose callables are not tensor ops.
TORCH_NON_TENSOR_PREFIXES = (
    "torch.cuda.",
    "torch.backends.",
    "torch.distributed.",
    "torch.jit.",
    "torch.compiler.",
    "torch._dynamo.",
    "torch._utils.",
    "torch.utils.",
    "torch.onnx.",
    "torch.fx.",
    "torch.nn.init.",  # in-place init; result rarely used
    "torch.nn.utils.",
    "torch.testing.",
    "torch.overrides.",
    "torch.library.",
    "torch.profiler.",
    "torch.autograd.profiler.",
    "torch.amp.",
    "torch.cpu.",
    "torch.mps.",
    "torch.xpu.",
    "torch.hub.",
    "torch.serialization.",
    "torch.export.",
    "torch.Size",
    "torch.device",
    "torch.dtype",
)

# Tensor methods that do not return a tensor.
NON_TENSOR_METHODS = frozenset(
    """
    dim ndimension numel nelement element_size is_contiguous is_floating_point is_complex
    data_ptr stride storage_offset get_device tolist item numpy __len__ is_pinned is_shared
    is_set_to is_signed is_inference untyped_storage storage type_as_str has_names
    register_hook backward dim_order is_sparse is_quantized is_meta
    """.split()
)
SIZE_METHODS = frozenset({"size"})
# Tensor methods returning boolean tensors.
BOOL_METHODS = frozenset(
    """
    eq ne gt lt ge le isnan isinf isfinite isneginf isposinf isreal bool logical_and logical_or
    logical_not logical_xor any all signbit isclose eq_ ne_ __eq__ __ne__ __lt__ __le__ __gt__ __ge__
    """.split()
)
BOOL_TORCH_FUNCS = frozenset(
    """
    eq ne gt lt ge le greater less greater_equal less_equal not_equal isnan isinf isfinite isneginf
    isposinf isreal logical_and logical_or logical_not logical_xor any all signbit isclose isin
    """.split()
)
# Attributes of a tensor that are not tensors.
NON_TENSOR_ATTRS = frozenset(
    """
    dtype device ndim requires_grad is_cuda is_leaf layout names is_sparse is_quantized is_meta
    grad_fn is_mkldnn is_nested itemsize nbytes output_nr _version
    """.split()
)
TENSOR_ATTRS = frozenset({"T", "mT", "H", "mH", "data", "grad", "real", "imag"})
SHAPE_ATTRS = frozenset({"shape"})

# Python builtins whose results are never tensors.
NON_TENSOR_BUILTINS = frozenset(
    """
    len isinstance issubclass hasattr getattr callable id type str repr int float bool range
    enumerate zip list tuple dict set frozenset sorted reversed print format hash round divmod
    iter next super object vars dir
    """.split()
)

# Spellings of "is Dynamo tracing right now?" (last component is enough for helpers of that name).
IS_COMPILING_NAMES = frozenset(
    {
        "torch.compiler.is_compiling",
        "torch.compiler.is_dynamo_compiling",
        "torch._dynamo.is_compiling",
        "torch._dynamo.external_utils.is_compiling",
        "torch._utils.is_compiling",
    }
)
IS_COMPILING_HELPER_NAMES = frozenset({"is_torchdynamo_compiling", "is_compiling", "is_dynamo_compiling"})
# Spellings that are False while Dynamo traces.
IS_SCRIPTING_NAMES = frozenset(
    {"torch.jit.is_scripting", "torch.jit.is_tracing", "torch._C._get_tracing_state", "torch.onnx.is_in_onnx_export"}
)

DISABLE_DECORATORS = frozenset(
    {
        "torch.compiler.disable",
        "torch._dynamo.disable",
        "torch._disable_dynamo",
        "torch._dynamo.skip",
        "torch.jit.unused",
    }
)
COMPILE_DECORATORS = frozenset({"torch.compile", "torch._dynamo.optimize"})

# Base classes that are never nn.Modules (so a class deriving only from them is not a compile root).
NON_MODULE_BASES = frozenset(
    """
    object Exception BaseException ValueError RuntimeError TypeError KeyError dict list tuple set str
    int float Enum IntEnum enum.Enum enum.IntEnum NamedTuple typing.NamedTuple Protocol
    typing.Protocol Generic typing.Generic ABC abc.ABC dataclass
    """.split()
)
