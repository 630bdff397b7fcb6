"""What the analyzer knows about torch's API without importing torch.

Kinds of values (`Kind`): T (a tensor), B (a boolean tensor, also a tensor), P (a presumed
tensor), S (a size: an int taken from a tensor's shape), N (known not to be a tensor), U
(unknown). Only T/B ever trigger a data-dependent finding; U never does, which is what keeps
precision high. Rules name kinds as `Kind.SIZE`, never as letters.
"""

import re


class Kind:
    """What the analyzer knows a value is: named one-letter strings, not an `Enum`, because
    summaries carry kinds into the marshal cache, which holds plain strings only."""

    TENSOR = "T"
    BOOL_TENSOR = "B"  # a boolean tensor (a mask), also a tensor
    # A "presumed" tensor: an unannotated parameter of forward / a compiled function. It behaves as
    # a tensor in arithmetic and known tensor methods, but a bare truthiness test (`if use_cache:`)
    # or an unknown method (`cache.get_seq_length()`) on it says nothing, since such parameters are
    # often flags or cache objects.
    PRESUMED = "P"
    SIZE = "S"  # an int taken from a tensor's shape
    # Not a tensor itself, but what it holds may be (an `isinstance` test said so: the other
    # branch of `isinstance(x, torch.Tensor)`, or `isinstance(x, (list, tuple))`): its items are
    # presumed tensors.
    CONTAINER = "C"
    NOT_TENSOR = "N"
    UNKNOWN = "U"


# The analyzer's short names.
T, B, P, S, N, U = Kind.TENSOR, Kind.BOOL_TENSOR, Kind.PRESUMED, Kind.SIZE, Kind.NOT_TENSOR, Kind.UNKNOWN
C = Kind.CONTAINER

TENSORISH = (T, B, P)

# einops functions that give a tensor of a tensor (their first argument).
EINOPS_TENSOR_FUNCS = frozenset({"einops.rearrange", "einops.repeat", "einops.reduce", "einops.einsum"})

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
    save load vmap get_device_module get_device TorchVersion
    """.split()
)
# `torch._C.*` namespaces whose functions are tensor operators; the rest of `torch._C` is not.
TORCH_C_TENSOR_PREFIXES = (
    "torch._C._nn.",
    "torch._C._VariableFunctions.",
    "torch._C._linalg.",
    "torch._C._fft.",
    "torch._C._special.",
    "torch._C._nested.",
    "torch._C._sparse.",
)
# torch submodules whose callables are not tensor ops.
TORCH_NON_TENSOR_PREFIXES = (
    "torch.cuda.",
    "torch.torch_version.",  # `TorchVersion("2.5")`: compared with `torch.__version__` (tabpfn)
    "torch.version.",
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
# NumPy math whose result on Python numbers is a 0-d array (a tensor under Dynamo), and its
# Python equivalent on numbers (DYN106 and its fix; attributes set with it, lint.filefacts).
NUMPY_MATH_EQUIVALENT = {
    "lcm": "math.lcm", "gcd": "math.gcd", "prod": "math.prod", "sum": "sum",
    # one number in, one out (pypots' FEDformer: `math.floor(np.log2(N))` with N from a shape)
    "log": "math.log", "log2": "math.log2", "log10": "math.log10", "sqrt": "math.sqrt", "exp": "math.exp",
    "ceil": "math.ceil", "floor": "math.floor", "trunc": "math.trunc",
}
# Whole-tensor comparisons that give a Python bool, not a tensor: they read values, and a test
# reading one cannot become a tensor condition (DYN120 offers no fix; fixes/where.py).
PYTHON_BOOL_COMPARISONS = frozenset({"equal", "allclose", "is_nonzero", "is_same_size", "is_set_to"})
# Methods of dicts that tensors do not have: a "tensor" they are called on is a mapping. (Not
# `values()`: sparse tensors have it, `x.coalesce().values()`.)
MAPPING_METHODS = frozenset({"items", "keys", "get", "setdefault", "popitem", "update"})
SIZE_METHODS = frozenset({"size"})
# Tensor methods returning boolean tensors.
BOOL_METHODS = frozenset(
    """
    eq ne gt lt ge le isnan isinf isfinite isneginf isposinf isreal bool logical_and logical_or
    logical_not logical_xor any all signbit isclose eq_ ne_ __eq__ __ne__ __lt__ __le__ __gt__ __ge__
    """.split()
)
# Methods of a tensor that give a tensor of the same values (another device or dtype, a copy).
TENSOR_CONVERSIONS = frozenset(
    """to cuda cpu float double half bfloat16 long int short bool type_as detach clone contiguous
    requires_grad_""".split()
)
# Tensor methods that keep the dtype and only move or copy the elements: a mask stays a mask
# (`x[:, mask.view(-1)]`, torchani's neighbour list, is boolean indexing).
LAYOUT_METHODS = frozenset(
    """
    view view_as reshape reshape_as flatten squeeze unsqueeze expand expand_as permute transpose t
    contiguous clone detach flip movedim swapaxes narrow repeat roll unflatten
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
# `values` / `indices` of the named tuples `topk`, `sort`, `max(dim)`... return.
TENSOR_ATTRS = frozenset({"T", "mT", "H", "mH", "data", "grad", "real", "imag", "values", "indices"})
SHAPE_ATTRS = frozenset({"shape"})

# Python builtins whose results are never tensors.
NON_TENSOR_BUILTINS = frozenset(
    """
    len isinstance issubclass hasattr getattr callable id type str repr int float bool range
    enumerate zip list tuple dict set frozenset sorted reversed print format hash round divmod
    iter next super object vars dir
    """.split()
)

# NumPy callables whose results are not arrays (everything else in numpy.* is traced as a tensor).
NUMPY_NON_ARRAY_FUNCS = frozenset(
    {"dtype", "finfo", "iinfo", "shape", "ndim", "isscalar", "issubdtype", "result_type", "can_cast",
     "promote_types", "get_printoptions", "set_printoptions", "errstate", "seterr", "geterr"}
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
# Helpers named so in other packages (PyG's `is_in_onnx_export()`); not `is_tracing`, which
# transformers makes True under Dynamo.
IS_SCRIPTING_HELPER_NAMES = frozenset({"is_in_onnx_export"})

DISABLE_DECORATORS = frozenset(
    {
        "torch.compiler.disable",
        "torch._dynamo.disable",
        "torch._disable_dynamo",
        "torch._dynamo.skip",
        "torch.jit.unused",
        # A custom operator is one opaque node of the graph: Dynamo never traces its body, nor
        # the kernels and fake implementations registered for it.
        "torch.library.custom_op",
        "torch._library.custom_ops.custom_op",
        "torch.library.triton_op",
        "torch.library.impl",
        "torch.library.register_kernel",
        "torch.library.register_fake",
        "torch.library.impl_abstract",
    }
)
# `@my_op.register_fake`, `@my_op.register_kernel("cpu")`: what a custom operator object registers.
CUSTOM_OP_REGISTRATIONS = frozenset({"register_fake", "register_kernel", "register_autograd", "register_torch_dispatch", "register_vmap"})
COMPILE_DECORATORS = frozenset({"torch.compile", "torch._dynamo.optimize"})
# Recurrent modules Dynamo refuses (unless `allow_rnn`), and the bases that make a class one.
RNN_MODULES = frozenset({"torch.nn.LSTM", "torch.nn.GRU", "torch.nn.RNN"})
RNN_BASES = RNN_MODULES | {"torch.nn.RNNBase", "torch.nn.modules.rnn.RNNBase"}
# Bases of custom autograd functions: Dynamo traces their `forward` and `backward` from `.apply`.
AUTOGRAD_FUNCTION_BASES = frozenset({
    "torch.autograd.Function", "torch.autograd.function.Function", "torch.autograd.function.InplaceFunction",
})

# Base classes that are never nn.Modules (so a class deriving only from them is not a compile root).
NON_MODULE_BASES = frozenset(
    """
    object Exception BaseException ValueError RuntimeError TypeError KeyError dict list tuple set str
    int float Enum IntEnum enum.Enum enum.IntEnum NamedTuple typing.NamedTuple Protocol
    typing.Protocol Generic typing.Generic ABC abc.ABC dataclass
    """.split()
)
# torch.distributions' transform base, and the methods its `__call__`, `inv` and a transformed
# distribution's `log_prob` run (roots in `lint.regions`, their parameters tensors in the walk).
DISTRIBUTION_TRANSFORMS = frozenset({"torch.distributions.transforms.Transform", "torch.distributions.Transform"})
DISTRIBUTION_TRANSFORM_METHODS = ("_call", "_inverse", "log_abs_det_jacobian")
# Libraries whose classes are no nn.Module: a base from them does not make one (tabpfn's
# `TabPFNRegressor(RegressorMixin, BaseEstimator)` has a `forward` of its own).
NON_MODULE_BASE_PREFIXES = (
    "sklearn.", "numpy.", "pandas.", "typing.", "abc.", "enum.", "collections.", "dataclasses.",
    # other frameworks' modules (skrl's Warp backend: `import warp_nn.nn as nn`, `nn.Module`)
    "warp.", "warp_nn.", "jax.", "flax.", "haiku.", "equinox.", "mlx.", "tensorflow.", "keras.", "tf_keras.",
    "paddle.", "mindspore.", "oneflow.", "tinygrad.",
)


# Public methods of torch.Tensor (generated from torch 2.13 `dir(torch.Tensor)`; the lint path
# never imports torch). Used to tell `x.sum()` from `cache.get_seq_length()` on presumed tensors.
TENSOR_METHODS = frozenset(
    """
    abs abs_ absolute absolute_ acos acos_ acosh acosh_ add add_ addbmm addbmm_ addcdiv addcdiv_
    addcmul addcmul_ addmm addmm_ addmv addmv_ addr addr_ adjoint all allclose amax amin aminmax
    angle any apply_ arccos arccos_ arccosh arccosh_ arcsin arcsin_ arcsinh arcsinh_ arctan arctan2
    arctan2_ arctan_ arctanh arctanh_ argmax argmin argsort argwhere as_strided as_strided_
    as_strided_scatter as_subclass asin asin_ asinh asinh_ atan atan2 atan2_ atan_ atanh atanh_
    backward baddbmm baddbmm_ bernoulli bernoulli_ bfloat16 bincount bitwise_and bitwise_and_
    bitwise_left_shift bitwise_left_shift_ bitwise_not bitwise_not_ bitwise_or bitwise_or_
    bitwise_right_shift bitwise_right_shift_ bitwise_xor bitwise_xor_ bmm bool broadcast_to byte
    cauchy_ ccol_indices cdouble ceil ceil_ cfloat chalf char cholesky cholesky_inverse
    cholesky_solve chunk clamp clamp_ clamp_max clamp_max_ clamp_min clamp_min_ clip clip_ clone
    coalesce col_indices conj conj_physical conj_physical_ const_data_ptr contiguous copy_ copysign
    copysign_ corrcoef cos cos_ cosh cosh_ count_nonzero cov cpu cross crow_indices cuda cummax
    cummin cumprod cumprod_ cumsum cumsum_ data data_ptr deg2rad deg2rad_ dense_dim dequantize det
    detach detach_ device diag diag_embed diagflat diagonal diagonal_scatter diff digamma digamma_
    dim dim_order dist div div_ divide divide_ dot double dsplit dtype eig element_size eq eq_ equal
    erf erf_ erfc erfc_ erfinv erfinv_ exp exp2 exp2_ exp_ expand expand_as expm1 expm1_
    exponential_ fill_ fill_diagonal_ fix fix_ flatten flip fliplr flipud float float_power
    float_power_ floor floor_ floor_divide floor_divide_ fmax fmin fmod fmod_ frac frac_ frexp
    gather gcd gcd_ ge ge_ geometric_ geqrf ger get_device grad grad_dtype grad_fn greater greater_
    greater_equal greater_equal_ gt gt_ half hardshrink hash_tensor heaviside heaviside_ histc
    histogram hsplit hypot hypot_ i0 i0_ igamma igamma_ igammac igammac_ imag index index_add
    index_add_ index_copy index_copy_ index_fill index_fill_ index_put index_put_ index_reduce
    index_reduce_ index_select indices inner int int_repr inverse ipu is_coalesced is_complex
    is_conj is_contiguous is_cpu is_cuda is_distributed is_floating_point is_inference is_ipu
    is_leaf is_maia is_meta is_mkldnn is_mps is_mtia is_neg is_nested is_nonzero is_pinned
    is_quantized is_same_size is_set_to is_shared is_signed is_sparse is_sparse_csr is_vulkan is_xla
    is_xpu isclose isfinite isinf isnan isneginf isposinf isreal istft item itemsize kron kthvalue
    layout lcm lcm_ ldexp ldexp_ le le_ lerp lerp_ less less_ less_equal less_equal_ lgamma lgamma_
    log log10 log10_ log1p log1p_ log2 log2_ log_ log_normal_ log_softmax logaddexp logaddexp2
    logcumsumexp logdet logical_and logical_and_ logical_not logical_not_ logical_or logical_or_
    logical_xor logical_xor_ logit logit_ logsumexp long lstsq lt lt_ lu lu_solve map2_ map_
    masked_fill masked_fill_ masked_scatter masked_scatter_ masked_select matmul matrix_exp
    matrix_power max maximum mean median min minimum mm mode module_load moveaxis movedim msort mtia
    mul mul_ multinomial multiply multiply_ mv mvlgamma mvlgamma_ name nan_to_num nan_to_num_
    nanmean nanmedian nanquantile nansum narrow narrow_copy nbytes ndim ndimension ne ne_ neg neg_
    negative negative_ nelement new new_empty new_empty_strided new_full new_ones new_tensor
    new_zeros nextafter nextafter_ nonzero nonzero_static norm normal_ not_equal not_equal_ numel
    numpy orgqr ormqr outer output_nr permute pin_memory pinverse polygamma polygamma_ positive pow
    pow_ prelu prod put put_ q_per_channel_axis q_per_channel_scales q_per_channel_zero_points
    q_scale q_zero_point qr qscheme quantile rad2deg rad2deg_ random_ ravel real reciprocal
    reciprocal_ record_stream register_hook register_post_accumulate_grad_hook reinforce relu relu_
    remainder remainder_ renorm renorm_ repeat repeat_interleave requires_grad requires_grad_
    reshape reshape_as resize resize_ resize_as resize_as_ resize_as_sparse_ resolve_conj
    resolve_neg retain_grad retains_grad roll rot90 round round_ row_indices rsqrt rsqrt_ scatter
    scatter_ scatter_add scatter_add_ scatter_reduce scatter_reduce_ select select_scatter set_ sgn
    sgn_ shape share_memory_ short sigmoid sigmoid_ sign sign_ signbit sin sin_ sinc sinc_ sinh
    sinh_ size slice_inverse slice_scatter slogdet smm softmax solve sort sparse_dim sparse_mask
    sparse_resize_ sparse_resize_and_clear_ split split_with_sizes sqrt sqrt_ square square_ squeeze
    squeeze_ sspaddmm std stft storage storage_offset storage_type stride sub sub_ subtract
    subtract_ sum sum_to_size svd swapaxes swapaxes_ swapdims swapdims_ symeig t t_ take
    take_along_dim tan tan_ tanh tanh_ tensor_split tile to to_dense to_mkldnn to_padded_tensor
    to_sparse to_sparse_bsc to_sparse_bsr to_sparse_coo to_sparse_csc to_sparse_csr tolist topk
    trace transpose transpose_ triangular_solve tril tril_ triu triu_ true_divide true_divide_ trunc
    trunc_ type type_as unbind unflatten unfold uniform_ unique unique_consecutive unsafe_chunk
    unsafe_split unsafe_split_with_sizes unsqueeze unsqueeze_ untyped_storage values var vdot view
    view_as volatile vsplit where xlogy xlogy_ xpu zero_
    """.split()
)


# Unannotated parameters are presumed tensors in forward and in helpers called with tensors, but
# some names say they hold sizes, counts or flags (`num_hashes=None`, `inputs_shape`, `use_cache`).
_CONFIG_PARAM_NAME = re.compile(
    r"^(num|n|use|output|return|is|do|has|max|min)_"
    r"|_(size|sizes|len|length|dim|dims|shape|count|steps|idx|index|flag)$"
    r"|^(training|inplace|dim|axis|eps|dtype|device|global_step|epoch|current_epoch|iteration|cur_iter)$"
)


def names_a_config_value(param: str) -> bool:
    return bool(_CONFIG_PARAM_NAME.search(param))


# `x_list`, `season_list`, `feature_tuple`: a list or tuple of tensors, not one tensor.
_COLLECTION_PARAM_NAME = re.compile(r"_(list|lst|tuple|seq|dict)$|^(list|tuple|dict)_")


def names_a_collection(param: str) -> bool:
    return bool(_COLLECTION_PARAM_NAME.search(param))


# Evidence that a parameter with a `None` default (`mask=None`) holds a tensor when it is given:
# methods only tensors have (not those of lists, dicts, strings, numbers or modules: `index`,
# `copy`, `to`, `float`, ...), called on it; and methods of a tensor whose first argument is a
# tensor, given it (`x.masked_fill(mask, 0.0)`).
TENSOR_EVIDENCE_METHODS = TENSOR_METHODS - frozenset(
    """
    index count copy type size split sort values real imag conj to cpu cuda xpu ipu mtia float half
    double bfloat16 int long short bool byte char apply backward register_hook data name shape
    dtype device new requires_grad grad is_integer
    """.split()
)
# torch functions whose first argument is a size or data (`torch.arange(n)`, `torch.tensor(x)`):
# passing a parameter there says nothing about it being a tensor.
TORCH_FACTORIES = frozenset(
    "torch." + name
    for name in """
    arange range zeros ones empty full tensor as_tensor asarray scalar_tensor randn rand randint
    randperm linspace logspace eye empty_strided tril_indices triu_indices hann_window
    hamming_window blackman_window bartlett_window kaiser_window normal poisson Tensor LongTensor
    FloatTensor BoolTensor IntTensor HalfTensor DoubleTensor ByteTensor from_numpy frombuffer
    """.split()
)
TENSOR_ARG_METHODS = frozenset(
    """
    masked_fill masked_fill_ masked_scatter masked_scatter_ masked_select matmul mm bmm type_as
    expand_as view_as reshape_as logical_and logical_or logical_xor copy_
    """.split()
)
# NumPy functions on Python ints whose result Dynamo cannot turn back into a number (DYN106).
NUMPY_INT_REDUCTIONS = frozenset({"lcm", "gcd", "prod", "sum"})
