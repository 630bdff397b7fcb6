"""DYN105: call that Dynamo cannot trace (`time.time()`, Python's `random`, RNG state, ...).

## What it does
Finds calls into modules Dynamo skips: `time.time()`, `time.perf_counter()`, `time.monotonic()`,
Python's `random` functions Dynamo does not model (`random.gauss`, `random.choice`,
`random.getstate`, ...), NumPy random functions Dynamo cannot map to torch
(`np.random.permutation`) or maps to code that reads a tensor value (`np.random.choice`),
`torch.get_rng_state()` / `torch.set_rng_state()`, seeding (`torch.manual_seed()`,
`torch.cuda.manual_seed()`, `torch.initial_seed()`, `torch.default_generator.manual_seed()`),
`input()`, `open()`, the standard library's C and OS functions (`pickle.dumps`, `json.dumps`,
`os.path.exists`, `os.getpid`, `hashlib.md5`, `uuid.uuid4`, `datetime.now()`, ...), thread settings (`torch.get_num_threads()`, `torch.set_num_threads()`),
TorchScript futures (`torch.jit.fork` / `wait`) and `torch.jit.isinstance`, `torch.quasirandom.SobolEngine`,
`ctx.mark_dirty()` in a custom autograd function's `forward` (from torch 2.13; 2.11 traces it),
`t.as_subclass(cls)` (even to `torch.Tensor`), `m.register_forward_hook()` /
`register_forward_pre_hook()` called in compiled code, the legacy `torch.autograd.Variable(t)` (safe
fix: `t.detach()`, which is what it returns), RNN packing (`pack_padded_sequence`, `pad_packed_sequence`),
`torch.utils.checkpoint.checkpoint_sequential`, sparse tensors (`torch.sparse.mm`, `torch.spmm`,
`torch.sparse_coo_tensor`, `x.to_sparse()`, `x._values()`: torch.compile does not support them), SciPy functions (`linear_sum_assignment(cost)` in a Hungarian matcher; a
SciPy ufunc breaks even on a Python number), PyWavelets (`pywt.dwt_coeff_len`, compiled code),
tqdm progress bars (even disabled), `joblib.Parallel`, `opt_einsum.contract` (use `torch.einsum`),
NumPy functions `torch._numpy` does not implement (`np.asanyarray`, `np.isin`, `np.insert`,
`np.interp`, ...: `NUMPY_UNSUPPORTED`, measured by `bench/probe_numpy.py`), a `torch.Generator`
passed to a random op (`torch.randn(..., generator=g)`: "Failed to convert args/kwargs to
proxy"), created (`torch.Generator(device=d)`: "An opaque object was created") or seeded
(`rng.manual_seed(s)`: "torch.Generator method") in compiled code, `torch.distributions` built with `validate_args=True`, and calls of `nn.LSTM` /
`nn.GRU` / `nn.RNN` submodules (Dynamo does not trace cuDNN RNNs).
Also finds a branch, a `range()`, an index or Python arithmetic (`random.randint(0, n) * 2`) on a
number drawn with Python's `random` (`if random.random() < p:`, `p = rng.randrange(n)` then `if
i > p:`). A number drawn under an `if` and tested later is not followed: on a call that skips
the draw nothing breaks.

## Why it breaks the graph
These functions live in files Dynamo does not trace ("Attempted to call function marked as
skipped"). The graph ends before the call and a new one starts after it. `math.*` and the NumPy
random functions that `torch._numpy` implements (`np.random.rand`, `randn`, `randint`, `uniform`,
`normal`, `shuffle`, ...) *are* traced and are not reported; others, such as
`np.random.permutation`, are "unsupported by PyTorch" and break. `np.random.choice` is
implemented there too, but its implementation reads a sampled tensor value, so it breaks
("Data dependent operator") whatever its arguments (wav2vec2's SpecAugment masking).

Python's `random` depends on the torch version. Dynamo draws `random.uniform()`,
`random.randint()`, `random.randrange()` and the methods of a `random.Random(seed)` object itself on torch 2.13 and
2.14.1, as numbers it feeds into the graph; from 2.14 it does so for `random.random()`,
`random.shuffle()`, `random.sample()` and `random.seed()` too, which 2.13 skips (a break at the
call). A drawn number is data to Dynamo: using it with a tensor (`x * random.random()`) is traced,
but branching on it, `range()` of it, indexing with it, or Python arithmetic on it with a number
(`random.randint(0, n) * 2 - n`: "unimplemented builtin op on tensor arguments") breaks on both
versions ("Data-dependent branching" on an `UnspecializedPythonVariable`). The linter follows the torch the
code targets: `target-torch` in `[tool.dynalint]`, else the installed torch (read from its
package metadata, never imported); with neither, it reports what breaks on any probed version.

## Example
```python
def forward(self, x):
    t0 = time.perf_counter()
    y = self.body(x)
    self.elapsed = time.perf_counter() - t0
    if random.random() < self.layer_dropout:   # breaks on 2.13 and 2.14
        y = y * 0
    return y
```

## Use instead
Time and seed outside the compiled region (around the call of the compiled model); use
`torch.rand` instead of `random.random()` for randomness inside the model, and
`torch.where(torch.rand(()) < p, ...)` instead of branching on a draw.

## Fix (unsafe): a generator
`generator=g` becomes `generator=None if torch.compiler.is_compiling() else g`: eager runs are
unchanged; compiled, the draw comes from the global generator (seeded by `torch.manual_seed`), so
a run seeded through `g` draws other numbers. Offered for a generator the module or file holds
(`self.generator`), not for one the caller passes in (a parameter: given for reproducible draws,
which the fix would silently drop) nor one created in the function (its creation breaks anyway).

## Fix (safe, then unsafe): LayerDrop with Python's draw
`dropout_probability = random.uniform(0, 1)` (or `random.random()` where Dynamo draws it) then
`if self.training and (dropout_probability < self.layerdrop): continue`, as transformers' MusicGen
decoders write LayerDrop. The safe fix tests the probability first, `(self.layerdrop > 0 and
dropout_probability < self.layerdrop)`: the draw lies in [0, 1), so the test has the same value
for every probability, the draw is still made (Python's random stream is unchanged), and with the
default probability 0 Dynamo decides the branch without it: no break. Behind a positive
probability the unsafe fix makes the draw with `torch.rand([])` (torch's generator, not Python's)
and turns the skip into a select, as DYN120's LayerDrop fix does: the layer runs and
`torch.where(dropout_probability < self.layerdrop, h, layer_output)` keeps its output when it is
not dropped (a dropped layer still costs its compute and gets zero gradients). A draw made in the
test itself, `if self.training and random.random() < self.layerdrop: continue` (research code;
on torch 2.13 the call itself is what breaks), gets the select with `torch.rand([])` in the test's
place, drawn after the layer runs.

## Fix (unsafe): host-side helpers
In a helper that compiled code calls and that works on Python and NumPy values only (random
planning, index bookkeeping: no parameter holds a tensor, no torch call makes one), the autofix
puts `@torch.compiler.disable` on the helper, where the break is reached on every call (not after
an early `return`, in a branch, loop or comprehension: a call that skips it would gain a break).
Each call then costs one break and the helper runs as plain Python, instead of a break at the call
plus one at every unsupported step inside (wav2vec2-family SpecAugment planning,
`_compute_mask_indices`). Eager runs are unchanged; unsafe because what Dynamo compiled of the
helper now runs eagerly, and NumPy random draws there come from NumPy again (Dynamo draws them from
torch's generator). Findings of DYN110, DYN120, DYN121 and DYN130 in such a helper get the same fix
when they have none of their own.

A helper that returns early on some calls (`if not self.training: return zeros`) keeps that path
traced: the autofix moves what follows the last such `return` into a new method or function with
`@torch.compiler.disable` (the parameters and the names bound before the `return` passed along),
where every call past the `return` breaks there with more work after it, or where that part calls
a function of the file that breaks (Dynamo traces each such call as a frame of its own). BigBird's
random-attention planning, train mode on torch 2.13: 28 breaks -> 11, eval mode still one graph.
"""

from typing import Optional

import libcst as cst

from .. import fastcst
from ..draws import and_operands
from ..nodes import dotted, is_none
from ..rule import BREAKS, CLEAN, Example, Rule, RuleContext, offer_fix
from ..target import installed_torch, target_torch

UNTRACEABLE = frozenset(
    {
        "time.time",
        "time.time_ns",
        "time.perf_counter",
        "time.perf_counter_ns",
        "time.monotonic",
        "time.monotonic_ns",
        "time.process_time",
        "time.sleep",
        "torch.get_rng_state",
        "torch.set_rng_state",
        # Seeding: skipped functions (probed on 2.13.0 and 2.14.1; `torch.seed()` is traced).
        "torch.manual_seed",
        "torch.random.manual_seed",
        "torch.cuda.manual_seed",
        "torch.cuda.manual_seed_all",
        "torch.initial_seed",
        "torch.default_generator.manual_seed",
        "torch.default_generator.seed",
        "input",
        "open",
        # Skipped functions (probed on 2.13.0 and 2.14.1): packing for RNNs, and checkpointing a
        # Sequential in segments (Enformer), which Dynamo skips even without reentrant autograd.
        "torch.nn.utils.rnn.pack_padded_sequence",
        "torch.nn.utils.rnn.pad_packed_sequence",
        "torch.nn.utils.rnn.pack_sequence",
        "torch.utils.checkpoint.checkpoint_sequential",
        # Thread settings and TorchScript's futures (torchkbnufft's NUFFT), probed on 2.13.0 and
        # 2.14.1: "torch.* op returned non-Tensor" / skipped functions.
        "torch.get_num_threads",
        "torch.set_num_threads",
        "torch.get_num_interop_threads",
        "torch.set_num_interop_threads",
        "torch.jit.fork",
        "torch.jit.wait",
        # TorchScript's type refinement (torchmultimodal's CoCa) and the Sobol engine (botorch's
        # QMC samplers): skipped functions, probed on 2.13.0 and 2.14.1.
        "torch.jit.isinstance",
        "torch.quasirandom.SobolEngine",
        # The standard library's C functions and ones that reach the OS, probed on 2.13.0 and
        # 2.14.1 (skipped functions, "Unsupported method call"; gpytorch's caching decorator
        # keys its cache with `pickle.dumps(kwargs)` around every cached method).
        "pickle.dumps",
        "pickle.loads",
        "json.dumps",
        "json.loads",
        "os.getpid",
        "os.cpu_count",
        "os.listdir",
        "os.path.exists",
        "os.path.isfile",
        "os.path.isdir",
        "hashlib.md5",
        "hashlib.sha1",
        "hashlib.sha256",
        "uuid.uuid1",
        "uuid.uuid4",
        "datetime.datetime.now",
        "datetime.datetime.utcnow",
        "threading.get_ident",
        "zlib.crc32",
        "base64.b64encode",
        "base64.b64decode",
        "socket.gethostname",
        "statistics.mean",
    }
)
# The legacy `Variable(t)` constructor: a skipped builtin (`_LegacyVariableBase.__new__`, probed on
# 2.13.0 and 2.14.1); it returns `t.detach()` (pypots' BRITS, GRU-D: `self.W * Variable(self.m)`).
LEGACY_VARIABLE = frozenset({"torch.autograd.Variable", "torch.autograd.variable.Variable"})
# NumPy functions torch._numpy does not implement: Dynamo breaks at the call ("attempted to trace
# numpy function unsupported by PyTorch"), whatever the arguments (constants too). Measured on
# torch 2.13.0 and 2.14.1 by `python bench/probe_numpy.py`, which calls each on an array in a
# `fullgraph=True` function (the names numpy has and torch._numpy lacks, less those that traced).
NUMPY_UNSUPPORTED = frozenset(
    """
    apply_along_axis apply_over_axes argpartition array2string array_repr array_str asanyarray
    asarray_chkfinite asfortranarray asmatrix astype base_repr binary_repr bitwise_count block
    bmat busday_count busday_offset compress cumulative_prod cumulative_sum datetime_as_string
    datetime_data delete digitize ediff1d einsum_path extract format_float_positional
    format_float_scientific frexp frombuffer fromfile fromfunction fromiter frompyfunc
    fromregex fromstring genfromtxt get_include get_printoptions getbufsize geterr geterrcall
    histogram_bin_edges info insert interp intersect1d is_busday isdtype isfortran isin isnat
    iterable ix_ lexsort load loadtxt mask_indices matrix_transpose matvec may_share_memory
    mintypecode nanargmax nanargmin nancumprod nancumsum nanmax nanmean nanmedian nanmin
    nanpercentile nanprod nanquantile nanstd nansum nanvar nested_iters packbits partition
    piecewise place poly polyadd polyder polydiv polyfit polyint polymul polysub polyval
    printoptions promote_types putmask ravel_multi_index require roots save savetxt savez
    savez_compressed select set_printoptions setbufsize setdiff1d seterr seterrcall setxor1d
    shares_memory show_config show_runtime sort_complex spacing test trapezoid trim_zeros
    typename union1d unique_all unique_counts unique_inverse unique_values unpackbits
    unravel_index unstack unwrap vecdot vecmat
    """.split()
)
# torch's random functions and in-place random methods that take `generator=`.
_RANDOM_FUNCTIONS = frozenset("rand randn randint randperm bernoulli multinomial normal poisson rand_like randn_like randint_like".split())
_RANDOM_METHODS = frozenset("uniform_ normal_ random_ bernoulli_ exponential_ geometric_ cauchy_ log_normal_ multinomial bernoulli".split())
# Sparse tensors: torch.compile does not support them ("Attempted to wrap sparse Tensor"); the
# functions that make or take them, and the methods only a sparse tensor (or making one) has.
SPARSE_FUNCTIONS = frozenset(
    """torch.sparse.mm torch.sparse.addmm torch.sparse.sum torch.sparse.softmax torch.sparse.log_softmax
    torch.spmm torch.smm torch.hspmm torch.sparse_coo_tensor torch.sparse_csr_tensor torch.sparse_csc_tensor
    torch.sparse_bsr_tensor torch.sparse_compressed_tensor torch.sparse.FloatTensor torch.sparse.LongTensor""".split()
)
SPARSE_METHODS = frozenset({"_values", "_indices", "coalesce", "to_sparse", "to_sparse_coo", "to_sparse_csr"})
SPARSE_ADVICE = ("torch.compile does not support sparse tensors and breaks the graph; do the sparse work outside the "
                 "compiled region, or use a dense or `index_add_` / `scatter_add_` formulation")
# Python's random module, as Dynamo handles it (probed on torch 2.13.0 and 2.14.1): functions it
# draws itself (as numbers fed into the graph) on both, those it draws from 2.14 on (2.13 skips
# them: a break at the call), and any other function, which it skips on both.
RANDOM_PREFIX = "random."
RANDOM_DRAWN = frozenset({"uniform", "randint", "randrange", "Random"})
RANDOM_DRAWN_SINCE = {(2, 14): frozenset({"random", "shuffle", "sample", "seed"})}
# NumPy's random functions that torch._numpy implements without reading tensor values (Dynamo
# traces these); any other `numpy.random.*` call (`permutation`, `default_rng`, ...) is
# "unsupported by PyTorch", and `choice` is a "Data dependent operator": both break.
NUMPY_RANDOM_TRACED = frozenset(
    {"normal", "rand", "randint", "randn", "random", "random_sample", "sample", "seed", "shuffle", "uniform"}
)
# Does the installed torch draw `random.random()` itself? (Which examples hold: see below.)
_DRAWS_RANDOM = (installed_torch() or (0, 0)) >= (2, 14)


# Tensor methods whose arguments are sizes: a drawn size there is data to Dynamo.
_DRAWN_SIZE_METHODS = frozenset({"repeat", "view", "reshape", "expand", "narrow", "split", "chunk", "unflatten", "new_zeros", "new_ones", "new_empty"})


def _unconditional_or_default(node: cst.Assign, ctx: RuleContext) -> bool:
    """Is the assignment made on every call (of its branch), or only as the default of the name
    it binds (`if n is None: n = ...`, the innermost test)?"""
    tests = ctx.enclosing_tests()
    if not tests:
        return True
    names = {t.target.value for t in node.targets if type(t.target) is cst.Name}
    t = tests[-1]
    return (
        type(t) is cst.Comparison and len(t.comparisons) == 1 and type(t.comparisons[0].operator) is cst.Is
        and type(t.left) is cst.Name and t.left.value in names
        and type(t.comparisons[0].comparator) is cst.Name and t.comparisons[0].comparator.value == "None"
    )


def _random_function(q: str) -> Optional[str]:
    """`random.uniform` -> "uniform"; None for anything else."""
    if q.startswith(RANDOM_PREFIX) and q.count(".") == 1:
        return q[len(RANDOM_PREFIX):]
    return None


def _drawn_from_since(name: str) -> Optional[tuple[int, int]]:
    """The first torch version where Dynamo draws `random.<name>()` itself ((0, 0): all probed
    versions), None where it skips it everywhere probed."""
    if name in RANDOM_DRAWN:
        return (0, 0)
    for since, names in RANDOM_DRAWN_SINCE.items():
        if name in names:
            return since
    return None


def _is_draw(node, ctx, state: dict) -> bool:
    """A call returning a number Dynamo draws itself (probed) on the target torch:
    `random.uniform(...)`, `random.randint(...)`, `random.random()` (from 2.14; 2.13 skips the
    call, which is reported as such, and the number after the break is a constant), or a method
    of a `random.Random(...)` object (`rng.randrange(n)`). With no known target, both readings."""
    if type(node) is not cst.Call:
        return False
    q = ctx.call_name(node)
    if q is not None:
        name = _random_function(q)
        if name is None or name in ("Random", "seed", "shuffle"):
            return False
        since = _drawn_from_since(name)
        if since is None:
            return False  # skipped: the call breaks, and the number after it is a constant
        target = target_torch()
        return since == (0, 0) or target is None or target >= since
    func = node.func
    return (type(func) is cst.Attribute and type(func.value) is cst.Name
            and func.value.value in state.get("generators", ()))


# Expressions a drawn number flows through as a number (not into calls, containers or indexes).
_NUMERIC = (cst.BinaryOperation, cst.UnaryOperation, cst.Comparison, cst.BooleanOperation, cst.ComparisonTarget)
_NUMBER_BUILTINS = frozenset({"abs", "int", "float", "round"})


def _mentions_draw(expr, ctx, state: dict, arithmetic: Optional[list] = None) -> bool:
    """Does expr compute with a drawn number: a draw call or a name bound to one, reached only
    through arithmetic, comparisons and `and`/`or`/`not` (`exists(i)` or `xs[i]` are not)?
    `arithmetic`, when given, collects the binary operations the search passed through (all of
    them when the answer is no)."""
    drawn = state.get("drawn", ())
    stack = [expr]
    while stack:
        sub = stack.pop()
        t = type(sub)
        if arithmetic is not None and t is cst.BinaryOperation:
            arithmetic.append(sub)
        if t is cst.Name:
            if sub.value in drawn:
                return True
        elif t is cst.Call:
            if _is_draw(sub, ctx, state):
                return True
            if type(sub.func) is cst.Name and sub.func.value in _NUMBER_BUILTINS and ctx.call_name(sub) == sub.func.value:
                stack.extend(a.value for a in sub.args)  # `abs(value_h) > 0` (StyleGAN2's DiffAugment)
        elif t in _NUMERIC:
            stack.extend(fastcst.children(sub))
    return False


# Methods of an RNN module that run its cuDNN-style kernels or prepare them.
_RNN_METHODS = frozenset({"forward", "flatten_parameters"})


_GENERATOR_METHODS = frozenset({"manual_seed", "seed", "set_state", "get_state", "initial_seed", "graphsafe_set_state"})


_TORCH_GENERATOR = frozenset({"torch.Generator", "torch._C.Generator"})


def _torch_generator_built(value: cst.BaseExpression, ctx: RuleContext) -> bool:
    """`torch.Generator(...)`, or it seeded in place (`torch.Generator(device=d).manual_seed(s)`)."""
    if type(value) is cst.Call and type(value.func) is cst.Attribute and value.func.attr.value == "manual_seed":
        value = value.func.value
    return type(value) is cst.Call and ctx.call_name(value) in _TORCH_GENERATOR


def _none_while_compiling(value: cst.BaseExpression, ctx: RuleContext) -> bool:
    """`None`, or `None if torch.compiler.is_compiling() else g` (the fix's own form)."""
    if type(value) is cst.IfExp:
        truth = ctx.static_truth(value.test)
        if truth is not None:
            return is_none(value.body if truth else value.orelse)
    return is_none(value)


MARK_DIRTY_BREAKS_SINCE = (2, 13)


def _autograd_ctx(value: cst.BaseExpression, ctx: RuleContext) -> bool:
    """`ctx` in `def forward(ctx, ...)`, a static method: the context of a custom autograd function."""
    fn = ctx.fn
    if type(value) is not cst.Name or fn is None or fn.name.value != "forward":
        return False
    if not any(type(d.decorator) is cst.Name and d.decorator.value == "staticmethod" for d in fn.decorators):
        return False
    params = fn.params.params
    return bool(params) and params[0].name.value == value.value


class UntraceableCall(Rule):
    code = "DYN105"
    name = "untraceable-call"
    summary = "Call into a module Dynamo skips"
    # Dynamo's break types this rule predicts (torch/_dynamo/graph_break_registry.json, torch 2.13).
    fixable = "safe or unsafe"
    gb_types = (
        ("GB0007", "Attempted to call function marked as skipped"),
        ("GB0014", "Attempted to wrap RNN, GRU, or LSTM"),
        ("GB0015", "Attempted to wrap sparse Tensor"),
        ("GB0033", "Data dependent operator"),
        ("GB0124", "Unsupported Tensor.item() call with capture_scalar_outputs=False"),
        ("GB0156", "Unsupported method call"),  # a SciPy ufunc
        ("GB0170", "Data-dependent branching"),
        ("GB0294", "attempted to trace numpy function unsupported by PyTorch"),
        ("GB0055", "Failed to convert args/kwargs to proxy"),
        ("GB0213", "unimplemented builtin op on tensor arguments"),  # torch 2.11: a branch on a Random draw
        ("GB4841", "Unsupported python_type() call"),
        ("GB0363", "An opaque object was created in the middle of the program."),  # torch.Generator(...)
        ("GB7650", "torch.Generator method"),
        ("GB0008", "Attempted to inline function marked as skipped"),  # tqdm
        ("GB0116", "Unexpected type in sourceless builder"),  # joblib.Parallel
        ("GB0142", "Unsupported context manager"),
        ("GB8335", "Generator reconstruction with mutations"),  # joblib.Parallel over a generator
        ("GB2019", "Unsupported autograd.Function context `mark_dirty`"),
        ("GB0001", "Argument of `as_subclass` must be a non-dispatcher-style tensor subclass"),
        ("GB0013", "Attempted to represent unregistered RemovableHandle"),
        ("GB0467", "setattr() on unsupported type"),
        ("GB0092", "Reconstruction failure"),  # after the mark_dirty break, the in-place result
        ("GB0208", "torch.* op returned non-Tensor"),  # torch.get_num_threads()
    )
    node_types = (cst.Call, cst.Assign, cst.If, cst.IfExp, cst.While, cst.Subscript, cst.BinaryOperation)

    def check(self, node: cst.CSTNode, ctx: RuleContext) -> None:
        t = type(node)
        if t is cst.BinaryOperation:
            self._check_arithmetic(node, ctx)
            return
        if t is cst.Call:
            self._check_call(node, ctx)
            return
        state = ctx.rule_state(self.code)
        if t is cst.Assign:
            value = node.value
            if type(value) is cst.Call and ctx.call_name(value) == "random.Random":
                kind = "generators"
            elif _torch_generator_built(value, ctx):
                kind = "torch_generators"  # its methods break, and the construction (reported there)
            elif _unconditional_or_default(node, ctx) and _mentions_draw(value, ctx, state):
                # A draw bound under an `if` (`if self.quantize_dropout: i = rng.randrange(n)`)
                # may not happen on a given call: a branch on it is not reported (precision first).
                # A default drawn for a missing argument (`if inject_index is None: inject_index =
                # random.randint(...)`) is drawn on every call that leaves it out.
                kind = "drawn"
            else:
                return
            names = state.setdefault(kind, set())
            for target in node.targets:
                if type(target.target) is cst.Name:
                    names.add(target.target.value)
            return
        if t is cst.Subscript:
            # Probed on a tensor (`y[random.randint(0, 3)]`: "Data dependent operator").
            if not ctx.is_tensor(node.value):
                return
            if any(type(el.slice) is cst.Index and _mentions_draw(el.slice.value, ctx, state) for el in node.slice):
                ctx.report(self, node, "indexing with a number drawn with Python's `random` breaks the graph "
                                       "(Dynamo traces the draw as data); draw the index with `torch.randint`")
            return
        if _mentions_draw(node.test, ctx, state):
            fix = self._draw_fix(node, ctx) if t is cst.If else None
            ctx.report(self, node.test, "branching on a number drawn with Python's `random` breaks the graph "
                                        "(Dynamo traces the draw as data); use `torch.where(torch.rand(()) < p, ...)` "
                                        "or draw outside the compiled region", fix=fix)

    def _check_call(self, node, ctx):
        func = node.func
        if type(func) is cst.Attribute and func.attr.value in ("register_forward_hook", "register_forward_pre_hook"):
            # transformer-lens' bridge registers a hook on a submodule in `forward`: Dynamo cannot
            # hold the RemovableHandle it returns (GB0013, probed on 2.13.0 and 2.14.1)
            ctx.report(self, node, f"`{func.attr.value}()` in compiled code breaks the graph (Dynamo cannot hold the "
                                   "handle it returns); register hooks once, outside the compiled call")
            return
        if type(func) is cst.Attribute and func.attr.value == "as_subclass" and len(node.args) == (
                2 if dotted(func.value) in ("torch.Tensor", "Tensor") else 1):
            # pina's `x.as_subclass(torch.Tensor)`, pypose's `Tensor.as_subclass(self, Tensor)`:
            # "Argument of `as_subclass` must be a non-dispatcher-style tensor subclass" (GB0001,
            # probed on 2.13.0 and 2.14.1), even of a plain tensor to `torch.Tensor`
            ctx.report(self, node, "`as_subclass()` breaks the graph (Dynamo does not trace it); convert outside the "
                                   "compiled region, or pass plain tensors in")
            return
        if type(func) is cst.Attribute and func.attr.value == "mark_dirty" and _autograd_ctx(func.value, ctx):
            # fairscale's model-parallel copies (every parallel layer of Meta's Llama reference
            # code): "Unsupported autograd.Function context `mark_dirty`", probed on 2.13.0 and
            # 2.14.1; torch 2.11 traces it (probed on the GPU machine), 2.12 is not measured.
            target = target_torch()
            if target is not None and target < MARK_DIRTY_BREAKS_SINCE:
                return
            ctx.report(self, node, "`ctx.mark_dirty()` in a custom autograd function breaks the graph (Dynamo does not "
                                   "support it); return a new tensor instead of modifying the input in place")
            return
        generator = next((a for a in node.args if a.keyword is not None and a.keyword.value == "generator"), None)
        if generator is not None and not _none_while_compiling(generator.value, ctx) and self._random_op(node, ctx):
            # torchtune's LayerDropout `torch.bernoulli(p, generator=self.generator)`, diffusers'
            # `randn_tensor(..., generator=g)`: probed on 2.13.0 and 2.14.1.
            value = generator.value
            local = type(value) is cst.Name and value.value in ctx.rule_state(self.code).get("torch_generators", ())
            # No fix for a generator the caller passes (norse's `poisson_encode(..., generator=g)`:
            # seeded for reproducible draws, which the global generator would silently replace) or
            # one built here (its construction breaks anyway).
            fixable = not local and not (type(value) is cst.Name and ctx.is_parameter(value.value))
            ctx.report(self, node, "a `torch.Generator` passed to a random op: Dynamo cannot put it in the graph and "
                                   "breaks it at every draw; draw from the global generator under compile "
                                   "(seed it with `torch.manual_seed`), or draw outside the compiled region",
                       fix=offer_fix("generator", ctx, generator, self.code) if fixable else None)
            return
        if ctx.call_name(node) in _TORCH_GENERATOR:
            # FrEIA's mixture sampling: "An opaque object was created in the middle of the program"
            # (GB0363), probed on 2.13.0 and 2.14.1.
            ctx.report(self, node, "a `torch.Generator` created in compiled code breaks the graph (Dynamo cannot "
                                   "create it inside the graph); create it outside (in `__init__`, or by the caller), "
                                   "or draw from the global generator")
            return
        if (type(func) is cst.Attribute and func.attr.value in _GENERATOR_METHODS and type(func.value) is cst.Name
                and func.value.value in ctx.rule_state(self.code).get("torch_generators", ())):
            # "torch.Generator method: a stateful RNG operation that cannot be soundly traced" (GB7650)
            ctx.report(self, node, f"`.{func.attr.value}()` of a `torch.Generator` cannot be traced and breaks the "
                                   "graph; seed it outside the compiled region")
            return
        if ctx.self_attr(func) in ctx.rnn_attrs:
            ctx.report(self, node, f"`self.{func.attr.value}` is an RNN module: Dynamo does not trace it and breaks the graph; `torch._dynamo.config.allow_rnn = True` makes it trace (`dynalint verify --try-settings` checks it)")
            return
        if type(func) is cst.Attribute and func.attr.value in _RNN_METHODS and (
            ctx.self_attr(func.value) in ctx.rnn_attrs
            or (ctx.in_rnn_class and type(func.value) is cst.Call and ctx.qualname(func.value.func) == "super")
        ):
            # `self.lstm.flatten_parameters()` (tianshou), `super().forward(x, hx)` in a subclass of
            # nn.LSTM (pytorch-forecasting): probed, Dynamo gives up at the call.
            ctx.report(self, node, f"`{func.attr.value}()` of an RNN module: Dynamo does not trace it and breaks the graph; `torch._dynamo.config.allow_rnn = True` makes it trace (`dynalint verify --try-settings` checks it)")
            return
        if type(func) is cst.Attribute and func.attr.value in SPARSE_METHODS and ctx.is_tensor(func.value):
            ctx.report(self, node, f"`.{func.attr.value}()`: {SPARSE_ADVICE}")
            return
        if (
            type(func) is cst.Attribute and func.attr.value in _DRAWN_SIZE_METHODS and ctx.is_tensor(func.value)
            and any(_mentions_draw(a.value, ctx, ctx.rule_state(self.code)) for a in node.args)
        ):
            # StyleGAN2's style mixing (gfpgan, basicsr): `latent.repeat(1, inject_index, 1)` with
            # `inject_index = random.randint(1, n - 1)`
            ctx.report(self, node, f"`.{func.attr.value}()` with a size drawn with Python's `random` breaks the graph "
                                   "(Dynamo traces the draw as data); draw it outside the compiled region and pass it in")
            return
        q = ctx.call_name(node)
        if q is not None and q.startswith("torch.distributions.") and any(
            a.keyword is not None and a.keyword.value == "validate_args" and type(a.value) is cst.Name and a.value.value == "True"
            for a in node.args
        ):
            # torch-audiomentations' `Uniform(low, high, validate_args=True)`: the checks call
            # functions Dynamo skips (probed on 2.13.0 and 2.14.1); the default does not.
            ctx.report(self, node, f"`{q.rsplit('.', 1)[1]}(..., validate_args=True)`: Dynamo skips the argument "
                                   "checks and breaks the graph; build the distribution without `validate_args=True` "
                                   "in compiled code (or outside the compiled region)")
            return
        if q in LEGACY_VARIABLE:
            plain = len(node.args) == 1 and node.args[0].keyword is None and not node.args[0].star
            ctx.report(self, node, "`Variable(...)` (the legacy constructor) cannot be traced by Dynamo and breaks the "
                                   "graph; it returns the tensor detached: use `t.detach()`, or `t` where it needs no "
                                   "gradient anyway", fix=offer_fix("variable_detach", ctx, node, self.code) if plain else None)
            return
        if q in SPARSE_FUNCTIONS:
            # recbole's LightGCN / NGCF propagation, pykeen's RGCN (probed on 2.13.0 and 2.14.1)
            ctx.report(self, node, f"`{q}()`: {SPARSE_ADVICE}")
            return
        if q is None:
            if (
                type(func) is cst.Attribute
                and func.attr.value in ("seed", "manual_seed")
                and type(func.value) is cst.Subscript
                and ctx.qualname(func.value.value) == "torch.cuda.default_generators"
            ):
                # Reformer: `torch.cuda.default_generators[i].seed()` ("torch.Generator method")
                ctx.report(self, node, f"`torch.cuda.default_generators[...].{func.attr.value}()` cannot be traced by "
                                       "Dynamo and breaks the graph; seed outside the compiled region")
            return
        if q == "range" and any(_mentions_draw(a.value, ctx, ctx.rule_state(self.code)) for a in node.args):
            ctx.report(self, node, "`range()` of a number drawn with Python's `random` breaks the graph "
                                   "(Dynamo traces the draw as data); draw the count outside the compiled region")
            return
        name = _random_function(q)
        if name in ("randint", "randrange", "uniform") and any(
                a.keyword is None and ctx.is_definite_tensor(a.value) for a in node.args):
            # soundstorm's `randrange(0, min_seq_len - 1)` with `min_seq_len = mask.sum(-1).amin()`:
            # Dynamo draws these only from Python numbers ("Attempted to call function marked as
            # skipped: Random.randrange", probed on 2.13.0 and 2.14.1)
            ctx.report(self, node, f"`{q}()` with a tensor bound is skipped by Dynamo and breaks the graph; draw with "
                                   "`torch.randint` / `torch.rand`, or pass Python numbers")
            return
        if name is not None:
            if _is_draw(node, ctx, ctx.rule_state(self.code)) and self._in_test(node, ctx):
                return  # a draw on this target: the branch on it is reported, on this line
            since = _drawn_from_since(name)
            if since is None:
                ctx.report(self, node, f"`{q}()` cannot be traced by Dynamo and breaks the graph; call it outside the compiled region")
                return
            if since == (0, 0):
                return
            target = target_torch()
            if target is not None and target >= since:
                return
            # `if self.training and random.random() < p: continue` (LayerDrop): the select draws with torch.
            fix = offer_fix("layer_drop", ctx, node, self.code) if self._in_test(node, ctx) else None
            ctx.report(self, node, f"`{q}()` is skipped by Dynamo before torch {since[0]}.{since[1]} and breaks the "
                                   f"graph there (traced from {since[0]}.{since[1]}); use `torch.rand` or call it outside "
                                   "the compiled region", fix=fix)
            return
        untraced_numpy = (q.startswith("numpy.random.") and q.count(".") == 2 and q.rsplit(".", 1)[1] not in NUMPY_RANDOM_TRACED) \
            or (q.startswith("numpy.") and q.count(".") == 1 and q[6:] in NUMPY_UNSUPPORTED)
        if q in UNTRACEABLE or untraced_numpy:
            ctx.report(self, node, f"`{q}()` cannot be traced by Dynamo and breaks the graph; call it outside the compiled region")
        elif q.startswith("pywt."):
            # PyWavelets is compiled (Cython): probed, `pywt.dwt_coeff_len(n, 4, mode)` and
            # `pywt.Wavelet("db2")` break ("Unsupported method call") on 2.13.0 and 2.14.1.
            ctx.report(self, node, f"`{q}()` cannot be traced by Dynamo (PyWavelets is compiled code) and breaks the "
                                   "graph; compute it outside the compiled region (in `__init__`) or in Python "
                                   "(`dwt_coeff_len(n, L, mode)` is `(n + L - 1) // 2` for the padded modes)")
        elif q.startswith("tqdm."):
            # Probed on 2.13.0 and 2.14.1: `trange(n)`, `tqdm(it, disable=True)`: "Attempted to
            # call function marked as skipped" (k-diffusion's samplers loop over one).
            ctx.report(self, node, f"`{q}()` (a progress bar) is skipped by Dynamo and breaks the graph, even "
                                   "disabled; loop over the plain iterable in compiled code and show progress outside")
        elif q.startswith("opt_einsum."):
            # Probed on 2.13.0 and 2.14.1: `contract("ij,jk->ik", a, b)` breaks four times
            # ("Unsupported method call", skipped functions; equiformer's basis contraction).
            ctx.report(self, node, f"`{q}()` cannot be traced by Dynamo and breaks the graph; use `torch.einsum`, "
                                   "which traces (and uses opt_einsum's path optimisation itself when it is installed)")
        elif q == "joblib.Parallel":
            # Probed on 2.13.0: "Unsupported context manager" and an object Dynamo cannot wrap
            # (memorizing-transformers' KNN memories search and add through it).
            ctx.report(self, node, "`joblib.Parallel` cannot be traced by Dynamo and breaks the graph; run the "
                                   "parallel work outside the compiled region")
        elif q.startswith("scipy."):
            # Probed: `linear_sum_assignment(cost)` ("marked as skipped"), a SciPy ufunc of an
            # array or of a Python float ("Unsupported method call").
            ctx.report(self, node, f"`{q}()` cannot be traced by Dynamo (SciPy) and breaks the graph; "
                                   "call it outside the compiled region or use a torch equivalent")

    def _check_arithmetic(self, node: cst.BinaryOperation, ctx) -> None:
        """`random.randint(0, n) * 2 - n` (StyleGAN2's DiffAugment): Dynamo traces the draw as data,
        and Python arithmetic on it with anything but a tensor breaks ("unimplemented builtin op
        on tensor arguments", probed on 2.13.0 and 2.14.1); `x * random.randint(...)` traces.
        One finding per expression, on its outermost arithmetic."""
        state = ctx.rule_state(self.code)
        done = state.setdefault("arithmetic", set())
        if id(node) in done:
            return
        passed: list = []
        if not _mentions_draw(node, ctx, state, passed):
            # No draw in it, nor in the arithmetic it holds: those are not asked again (each
            # level of `k + k + ... + k` searching its left side again cost N squared).
            done.update(map(id, passed))
            return
        sides = (node.left, node.right)
        drawn = [_mentions_draw(side, ctx, state) for side in sides]
        if not any(drawn) or any(ctx.is_tensor(side) for side in sides):
            return  # `x * random.uniform(...)`: tensor arithmetic, traced
        done.update(id(n) for n in fastcst.iter_nodes(node) if type(n) is cst.BinaryOperation)
        ctx.report(self, node, "arithmetic on a number drawn with Python's `random` breaks the graph (Dynamo traces "
                               "the draw as data, and Python arithmetic on it only with a tensor); draw it with "
                               "`torch.randint` / `torch.rand` and keep it a tensor, or draw outside the compiled region")

    @staticmethod
    def _random_op(node: cst.Call, ctx) -> bool:
        """A torch random function, or a tensor's in-place random method (`x.normal_(...)`)."""
        q = ctx.call_name(node)
        if q is not None and q.startswith("torch.") and q.count(".") == 1 and q[6:] in _RANDOM_FUNCTIONS:
            return True
        func = node.func
        return type(func) is cst.Attribute and func.attr.value in _RANDOM_METHODS and ctx.is_tensor(func.value)

    def _draw_fix(self, node: cst.If, ctx):
        """LayerDrop with Python's draw (`p = random.uniform(0, 1)` then `if self.training and p <
        self.layerdrop: continue`, MusicGen): test the probability first (safe, as DYN120 does for
        `torch.rand`), then, behind a positive probability, run the layer and select its output
        with the draw made by `torch.rand([])` (unsafe: fixes/layer_drop.py)."""
        for operand in and_operands(node.test):
            if type(operand) is cst.Comparison:
                fix = offer_fix("uniform_draw", ctx, operand, self.code, True)
                if fix is not None:
                    return fix
        return offer_fix("layer_drop", ctx, node.test, self.code)

    @staticmethod
    def _in_test(node, ctx) -> bool:
        """Is node inside the test of an enclosing if / while / conditional expression?"""
        for anc in reversed(ctx.ancestors()):
            ta = type(anc)
            if ta is cst.If or ta is cst.While or ta is cst.IfExp:
                if any(sub is node for sub in fastcst.iter_nodes(anc.test)):
                    return True
        return False

    invalid = (
        Example(
            # transformer-lens' bridge: a hook registered and removed around a submodule call.
            """
            import torch
            from torch import nn

            class M(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.lin = nn.Linear(4, 4)

                def forward(self, x):
                    handle = self.lin.register_forward_pre_hook(lambda m, a: None)  # expect: DYN105
                    y = self.lin(x)
                    handle.remove()
                    return y
            """,
            dynamo=BREAKS,
            inputs="(torch.randn(2, 4),)",
        ),
        Example(
            # soundstorm's mask schedule: a bound from the mask's lengths.
            """
            from random import randrange
            import torch

            @torch.compile
            def f(x, seq_mask):
                min_seq_len = seq_mask.sum(dim=-1).amin()
                t = randrange(0, min_seq_len - 1)  # expect: DYN105
                return x[:, t:] * 2
            """,
            dynamo=BREAKS,
            inputs="(torch.randn(2, 10), torch.ones(2, 10, dtype=torch.bool))",
        ),
        Example(
            # asteroid's SingleRNN: the RNN class picked from `nn` by its name.
            """
            import torch
            from torch import nn

            class M(nn.Module):
                def __init__(self, rnn_type="LSTM"):
                    super().__init__()
                    assert rnn_type.upper() in ["RNN", "LSTM", "GRU"]
                    self.rnn = getattr(nn, rnn_type.upper())(4, 8, batch_first=True)

                def forward(self, x):
                    out, _ = self.rnn(x + 1)  # expect: DYN105
                    return out * 2
            """,
            dynamo=BREAKS,
            inputs="(torch.randn(1, 5, 4),)",
        ),
        Example(
            # pina's spline: `x.as_subclass(torch.Tensor)` to drop a tensor subclass.
            """
            import torch

            @torch.compile
            def f(x):
                plain = x.as_subclass(torch.Tensor)  # expect: DYN105
                return plain * 2
            """,
            dynamo=BREAKS,
        ),
        Example(
            # fairscale's model-parallel copy: the input marked dirty and modified in place.
            """
            import torch
            from torch import nn


            class CopyToRegion(torch.autograd.Function):
                @staticmethod
                def forward(ctx, x):
                    ctx.mark_dirty(x)  # expect: DYN105
                    return x.mul_(2)

                @staticmethod
                def backward(ctx, grad):
                    return grad * 2


            class M(nn.Module):
                def forward(self, x):
                    y = x * 1
                    return CopyToRegion.apply(y) + 1
            """,
            dynamo=BREAKS,
            inputs="(torch.randn(3),)",
        ),
        Example(
            """
            import torch

            @torch.compile
            def f(x):
                y = x * 2
                engine = torch.quasirandom.SobolEngine(3, scramble=True, seed=0)  # expect: DYN105
                if torch.jit.isinstance(y, torch.Tensor):  # expect: DYN105
                    y = y + 1
                return y + engine.draw(4).sum()
            """,
            dynamo=BREAKS,
            inputs="(torch.randn(3),)",
        ),
        Example(
            # gpytorch's caching: the cache key of a cached value is pickled in compiled code.
            """
            import pickle
            import torch
            from torch import nn


            class M(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.cache = {}

                def forward(self, x, **kwargs):
                    key = pickle.dumps(kwargs)  # expect: DYN105
                    if key not in self.cache:
                        self.cache[key] = 2
                    return x * self.cache[key]
            """,
            dynamo=BREAKS,
            inputs="(torch.randn(3),)",
        ),
        Example(
            # pypots' BRITS: a buffer wrapped in the legacy Variable; torchkbnufft's thread count.
            """
            import torch
            from torch import nn
            from torch.autograd import Variable

            class M(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.w = nn.Parameter(torch.ones(4, 4))
                    self.register_buffer("m", torch.ones(4, 4).triu())

                def forward(self, x):
                    h = x @ (self.w * Variable(self.m))  # expect: DYN105
                    return h * torch.get_num_threads()  # expect: DYN105
            """,
            dynamo=BREAKS,
            inputs="(torch.randn(2, 4),)",
            fixed="""
                import torch
                from torch import nn
                from torch.autograd import Variable

                class M(nn.Module):
                    def __init__(self):
                        super().__init__()
                        self.w = nn.Parameter(torch.ones(4, 4))
                        self.register_buffer("m", torch.ones(4, 4).triu())

                    def forward(self, x):
                        h = x @ (self.w * self.m.detach())  # expect: DYN105
                        return h * torch.get_num_threads()  # expect: DYN105
            """,
        ),
        Example(
            # StyleGAN2's style mixing (gfpgan, basicsr): the split point, unless given, is drawn
            # with `random`.
            """
            import random
            import torch

            @torch.compile
            def f(latent, inject_index=None):
                if latent.dim() == 3:
                    if inject_index is None:
                        inject_index = random.randint(1, latent.shape[1] - 1)
                    first = latent[:, 0:1].repeat(1, inject_index, 1)  # expect: DYN105
                    return first.sum() * 2
                return latent
            """,
            dynamo=BREAKS,
            inputs="(torch.randn(2, 6, 4),)",
        ),
        Example(
            # stanza's PackedLSTM: nn.LSTM unless recurrent dropout is asked for (its default 0).
            """
            import torch
            from torch import nn

            class DropLSTM(nn.Module):
                def __init__(self, n, rec_dropout):
                    super().__init__()
                    self.cell = nn.LSTMCell(n, n)

                def forward(self, x):
                    return self.cell(x[0])

            class M(nn.Module):
                def __init__(self, n=8, rec_dropout=0):
                    super().__init__()
                    if rec_dropout == 0:
                        self.lstm = nn.LSTM(n, n)
                    else:
                        self.lstm = DropLSTM(n, rec_dropout)

                def forward(self, x):
                    return self.lstm(x)[0] * 2  # expect: DYN105
            """,
            dynamo=BREAKS,
            inputs="(torch.randn(5, 2, 8),)",
        ),
        Example(
            # recbole's DIEN: packing around an RNN; the attribute built as nn.GRU in one branch of
            # __init__ and as the file's own module in another is not reported as an RNN.
            """
            import torch
            from torch import nn
            from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

            class DynamicRNN(nn.Module):
                def forward(self, x):
                    return x

            class M(nn.Module):
                def __init__(self, kind="own"):
                    super().__init__()
                    if kind == "gru":
                        self.rnn = nn.GRU(4, 4, batch_first=True)
                    else:
                        self.rnn = DynamicRNN()

                def forward(self, x, lengths):
                    packed = pack_padded_sequence(x * 2, lengths, batch_first=True, enforce_sorted=False)  # expect: DYN105
                    out, _ = pad_packed_sequence(packed, batch_first=True)  # expect: DYN105
                    return self.rnn(out) * 3
            """,
            dynamo=BREAKS,
            inputs="(torch.randn(2, 3, 4), [3, 2])",
        ),
        Example(
            # Enformer with use_checkpointing=True.
            """
            import torch
            from torch import nn
            from torch.utils.checkpoint import checkpoint_sequential

            class M(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.trunk = nn.Sequential(nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 4))

                def forward(self, x):
                    return checkpoint_sequential(self.trunk, 2, x * 2, use_reentrant=False) * 3  # expect: DYN105
            """,
            dynamo=BREAKS,
            inputs="(torch.randn(3, 4),)",
        ),
        Example(
            # recbole's LightGCN: propagation over a sparse adjacency matrix.
            """
            import torch
            from torch import nn

            class M(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.adj = torch.sparse_coo_tensor(torch.tensor([[0, 1, 2], [1, 2, 0]]), torch.ones(3), (3, 3))

                def forward(self, x):
                    h = torch.sparse.mm(self.adj, x * 2)  # expect: DYN105
                    return h * 3
            """,
            dynamo=BREAKS,
            inputs="(torch.randn(3, 4),)",
        ),
        Example(
            # A SciPy ufunc, even of a Python number ("Unsupported method call").
            """
            import torch
            import scipy.special

            @torch.compile
            def f(x, order=3.0):
                return x * float(scipy.special.gammaln(order))  # expect: DYN105
            """,
            dynamo=BREAKS,
            needs=("scipy",),
        ),
        Example(
            # pytorch-forecasting's `class LSTM(RNN, nn.LSTM)` and tianshou's `flatten_parameters()`.
            """
            import torch
            from torch import nn

            class MaskedLSTM(nn.LSTM):
                def forward(self, x, hx=None):
                    out, state = super().forward(x, hx)  # expect: DYN105
                    return out * 1, state

            class M(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.proj = nn.Linear(4, 4)
                    self.rnn = MaskedLSTM(4, 4, batch_first=True)

                def forward(self, x):
                    h = self.proj(x)
                    self.rnn.flatten_parameters()  # expect: DYN105
                    y, _ = self.rnn(h)  # expect: DYN105
                    return y * 2
            """,
            dynamo=BREAKS,
            inputs="(torch.randn(2, 3, 4),)",
        ),
        Example(
            # A Hungarian matcher (DETR's losses, denoising-diffusion-pytorch's immiscible noise).
            """
            import torch
            from scipy.optimize import linear_sum_assignment

            @torch.compile
            def f(x):
                cost = torch.cdist(x, x * 2)
                rows, cols = linear_sum_assignment(cost.detach())  # expect: DYN105
                return x[torch.as_tensor(cols)] + 1
            """,
            dynamo=BREAKS,
            needs=("scipy",),
        ),
        Example(
            # A host-side planning helper: one break per call once it runs outside the graph.
            """
            import numpy as np
            import torch


            def plan(n, k):
                perm = np.random.permutation(n)  # expect: DYN105
                order = np.argsort(perm * 2 + 1)
                if order[0] > 1:  # expect: DYN120
                    order = order[::-1]
                return order[:k].copy()


            @torch.compile
            def f(x):
                h = x * 2
                idx = torch.from_numpy(plan(x.shape[-1], 2))
                return h[:, idx]
            """,
            dynamo=BREAKS,
            fixed="""
                import numpy as np
                import torch


                @torch.compiler.disable
                def plan(n, k):
                    perm = np.random.permutation(n)  # expect: DYN105
                    order = np.argsort(perm * 2 + 1)
                    if order[0] > 1:  # expect: DYN120
                        order = order[::-1]
                    return order[:k].copy()


                @torch.compile
                def f(x):
                    h = x * 2
                    idx = torch.from_numpy(plan(x.shape[-1], 2))
                    return h[:, idx]
            """,
            fixed_graphs=2,
        ),
        Example(
            # The same after an early return: the eval path stays traced, the rest runs outside.
            """
            import numpy as np
            import torch


            class M(torch.nn.Module):
                def plan(self, n, k):
                    out = np.zeros((4, k), dtype=np.int64)
                    if not self.training:
                        return out
                    perm = np.random.permutation(n)  # expect: DYN105
                    for row in range(4):
                        out[row] = perm[row:row + k]
                    return out

                def forward(self, x):
                    h = x * 2
                    idx = torch.from_numpy(self.plan(x.shape[-1], 2))
                    return h[:, idx].sum(-1)
            """,
            dynamo=BREAKS,
            fixed="""
                import numpy as np
                import torch


                class M(torch.nn.Module):
                    def plan(self, n, k):
                        out = np.zeros((4, k), dtype=np.int64)
                        if not self.training:
                            return out
                        return self._plan_outside_graph(n, k, out)

                    @torch.compiler.disable
                    def _plan_outside_graph(self, n, k, out):
                        perm = np.random.permutation(n)  # expect: DYN105
                        for row in range(4):
                            out[row] = perm[row:row + k]
                        return out

                    def forward(self, x):
                        h = x * 2
                        idx = torch.from_numpy(self.plan(x.shape[-1], 2))
                        return h[:, idx].sum(-1)
            """,
            fixed_graphs=3,
        ),
        Example(
            """
            import time
            import torch

            @torch.compile
            def f(x):
                y = x * 2
                t0 = time.perf_counter()  # expect: DYN105
                return y + t0
            """,
            dynamo=BREAKS,
        ),
        Example(
            """
            from random import random

            import torch
            from torch import nn

            class M(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.proj = nn.Linear(4, 4)
                    self.layer_dropout = 0.5

                def forward(self, x):
                    # Layer dropout drawn with Python's random (x_transformers): breaks on 2.13 and 2.14.
                    x = self.proj(x)
                    if random() < self.layer_dropout:  # expect: DYN105
                        x = x * 2
                    return x + 1
            """,
            dynamo=BREAKS,
        ),
        Example(
            """
            import torch

            @torch.compile
            def f(x):
                y = x * 2
                state = torch.get_rng_state()  # expect: DYN105
                return y + state.float().mean()
            """,
            dynamo=BREAKS,
        ),
        Example(
            """
            import torch
            from torch import nn

            class M(nn.Module):
                seed = 0

                def forward(self, x):
                    # Reformer's reversible layers reseed before each sublayer
                    torch.manual_seed(self.seed)  # expect: DYN105
                    return torch.dropout(x, 0.5, True) * 2
            """,
            dynamo=BREAKS,
        ),
        Example(
            """
            import torch
            from torch import nn

            class M(nn.Module):
                def forward(self, x):
                    if torch.cuda.is_available():
                        i = torch.cuda.current_device()
                        self.seed = torch.cuda.default_generators[i].seed()  # expect: DYN105
                    return x * 2
            """,
            why="needs a CUDA device: probed on an H100 with torch 2.11 (\"Unsupported method call\"); the CPU generator's `torch.default_generator.seed()` breaks on 2.13 and 2.14.1 (\"torch.Generator method\")",
        ),
    )
    invalid = invalid + (
        Example(
            """
            import torch
            from torch import nn

            class M(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.proj = nn.Linear(4, 4)
                    self.rnn = nn.LSTM(4, 4, batch_first=True)

                def forward(self, x):
                    y = self.proj(x)
                    out, _ = self.rnn(y)  # expect: DYN105
                    return self.proj(out)
            """,
            dynamo=BREAKS,
            inputs="(torch.randn(2, 3, 4),)",
        ),
        Example(
            """
            import torch
            from torch import nn

            class RNNBase(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.rnn = nn.Identity()

                def forward(self, x):
                    out, _ = self.rnn(x)  # expect: DYN105
                    return out

            class M(RNNBase):  # the subclass makes `self.rnn` an LSTM
                def __init__(self):
                    super().__init__()
                    self.rnn = nn.GRU(4, 4, batch_first=True)
            """,
            dynamo=BREAKS,
            inputs="(torch.randn(2, 3, 4),)",
        ),
        Example(
            """
            import numpy as np
            import torch

            @torch.compile
            def f(x):
                order = np.random.permutation(np.arange(4))  # expect: DYN105
                return x + 1
            """,
            dynamo=BREAKS,
        ),
        Example(
            """
            import numpy as np
            import torch

            @torch.compile
            def f(x):
                keep = np.random.choice(np.arange(8), 3, replace=False)  # expect: DYN105
                return x * 2 + 1
            """,
            dynamo=BREAKS,
        ),
    )
    invalid = invalid + (
        Example(
            """
            import random
            import torch

            @torch.compile
            def f(x):
                # A Random object's draws are traced as data; branching on one breaks (2.13 and 2.14).
                y = x * 2
                rng = random.Random(0)
                i = rng.randrange(0, 3)
                if i > 1:  # expect: DYN105
                    y = y + 1
                return y
            """,
            dynamo=BREAKS,
        ),
        Example(
            """
            import random
            import torch

            @torch.compile
            def f(x):
                y = x * 2
                return y * random.gauss(0.0, 1.0)  # expect: DYN105
            """,
            dynamo=BREAKS,
        ),
        Example(
            """
            import random
            import torch

            @torch.compile
            def f(x):
                y = x * 2
                return y[random.randint(0, 3)]  # expect: DYN105
            """,
            dynamo=BREAKS,
        ),
    )
    invalid = invalid + (
        Example(
            # LayerDrop with Python's draw (MusicGen): the safe fix tests the probability first (with
            # the default 0 the branch is decided without the draw); the unsafe one then draws with
            # `torch.rand([])`, runs the layer and selects its output.
            """
            import random
            import torch
            from torch import nn


            class M(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.layers = nn.ModuleList([nn.Linear(4, 4) for _ in range(2)])
                    self.layerdrop = 0.0

                def forward(self, x):
                    h = x * 2
                    for layer in self.layers:
                        dropout_probability = random.uniform(0, 1)
                        if self.training and (dropout_probability < self.layerdrop):  # expect: DYN105
                            continue

                        h = layer(h)
                    return h
            """,
            dynamo=BREAKS,
            fixed="""
                import random
                import torch
                from torch import nn


                class M(nn.Module):
                    def __init__(self):
                        super().__init__()
                        self.layers = nn.ModuleList([nn.Linear(4, 4) for _ in range(2)])
                        self.layerdrop = 0.0

                    def forward(self, x):
                        h = x * 2
                        for layer in self.layers:
                            dropout_probability = torch.rand([])
                            layer_output = layer(h)
                            h = torch.where(dropout_probability < self.layerdrop, h, layer_output) if self.training and self.layerdrop > 0 else layer_output  # expect: DYN105
                        return h
            """,
        ),
    )
    invalid = invalid + (
        Example(
            # LayerDrop drawn in the test itself (research code): the select draws with torch.
            """
            import random
            import torch
            from torch import nn


            class M(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.layers = nn.ModuleList([nn.Linear(4, 4) for _ in range(2)])
                    self.layerdrop = 0.0

                def forward(self, x):
                    h = x * 2
                    for layer in self.layers:
                        if self.training and random.random() < self.layerdrop:  # expect: DYN105
                            continue
                        h = layer(h)
                    return h
            """,
            dynamo=BREAKS,
            fixed="""
                import random
                import torch
                from torch import nn


                class M(nn.Module):
                    def __init__(self):
                        super().__init__()
                        self.layers = nn.ModuleList([nn.Linear(4, 4) for _ in range(2)])
                        self.layerdrop = 0.0

                    def forward(self, x):
                        h = x * 2
                        for layer in self.layers:
                            layer_output = layer(h)
                            h = torch.where(torch.rand([]) < self.layerdrop, h, layer_output) if self.training else layer_output  # expect: DYN105
                        return h
            """,
        ),
    )
    # `random.random()` as a value: skipped (a break) before torch 2.14, traced from 2.14. The linter
    # follows the installed torch here (no `target-torch`), so the example is invalid or valid by it.
    _random_value = """
            import random
            import torch

            @torch.compile
            def f(x):
                y = x * 2
                return y * random.random(){mark}
            """
    if _DRAWS_RANDOM:
        _random_value_examples = (Example(_random_value.format(mark=""), dynamo=CLEAN),)
    else:
        invalid = invalid + (Example(_random_value.format(mark="  # expect: DYN105"), dynamo=BREAKS),)
        _random_value_examples = ()
    # A generator passed to a random op (torchtune's LayerDropout); the fix draws from the global
    # generator while compiling (the example's output does not depend on the numbers drawn).
    _generator = """
        import torch

        GEN = torch.Generator().manual_seed(0)

        @torch.compile
        def f(x):
            noise = torch.randn(x.shape, generator={value})  # expect: DYN105
            return x + 0 * noise
        """
    invalid = invalid + (Example(
        # k-diffusion's samplers: a progress bar over the steps.
        """
        import torch
        from tqdm.auto import trange

        @torch.compile
        def f(x):
            x = x * 2
            for i in trange(3, disable=True):  # expect: DYN105
                x = x + i
            return x
        """,
        dynamo=BREAKS, needs=("tqdm",),
    ), Example(
        # equiformer's basis contraction.
        """
        import torch
        from opt_einsum import contract

        @torch.compile
        def f(x):
            x = x * 2
            return contract("ij,jk->ik", x, x) + 1  # expect: DYN105
        """,
        dynamo=BREAKS, needs=("opt_einsum",),
    ), Example(
        """
        import joblib
        import torch

        @torch.compile
        def f(x):
            x = x * 2
            out = joblib.Parallel(n_jobs=1)(joblib.delayed(abs)(i) for i in range(3))  # expect: DYN105
            return x + sum(out)
        """,
        dynamo=BREAKS, needs=("joblib",),
    ))
    invalid = invalid + (Example(_generator.format(value="GEN"), dynamo=BREAKS,
                                 fixed=_generator.format(value="None if torch.compiler.is_compiling() else GEN")),)
    # FrEIA's mixture sampling: a generator built and seeded in compiled code. The construction, the
    # seeding and the draw each break; no fix (the caller's seed is the point of it).
    invalid = invalid + (Example(
        """
        import torch

        @torch.compile
        def f(x, seed: int):
            rng = torch.Generator(device=x.device)  # expect: DYN105
            rng.manual_seed(seed)  # expect: DYN105
            u = torch.rand(x.shape, generator=rng)  # expect: DYN105
            fixed = torch.Generator(device=x.device).manual_seed(42)  # expect: DYN105
            return x + u + torch.rand(x.shape, generator=fixed)  # expect: DYN105
        """,
        dynamo=BREAKS,
        inputs="(torch.rand(3), 3)",
    ), Example(
        # norse's Poisson encoding: a generator the caller passes (for reproducible draws) gets no fix.
        """
        import torch

        def encode(x, generator=None):
            return torch.rand(x.shape, generator=generator) < x  # expect: DYN105

        @torch.compile
        def f(x, g):
            return encode(x, generator=g).float()
        """,
        dynamo=BREAKS,
        inputs="(torch.rand(3), torch.Generator().manual_seed(7))",
    ))
    # StyleGAN2's DiffAugment offset: Python arithmetic on a drawn number breaks (on 2.13 and 2.14.1).
    invalid = invalid + (Example(
        """
        import random
        import torch

        @torch.compile
        def f(x):
            shift = random.randint(0, 4) * 2 - 4  # expect: DYN105
            return x + shift
        """,
        dynamo=BREAKS,
    ),)
    # pytorch_wavelets' DWT: PyWavelets' output length, computed in forward.
    invalid = invalid + (Example(
        """
        import pywt
        import torch

        @torch.compile
        def f(x):
            n = pywt.dwt_coeff_len(x.shape[-1], 4, mode="zero")  # expect: DYN105
            return x[..., :n] * 2
        """,
        dynamo=BREAKS, needs=("pywt",), inputs="(torch.rand(2, 16),)",
    ),)
    # A distribution that validates its arguments (torch-audiomentations' gain); without
    # `validate_args=True` the same draw traces.
    _distribution = """
        import torch

        @torch.compile
        def f(x):
            low, high = x.min(), x.max() + 1
            dist = torch.distributions.Uniform(low, high{validate}){mark}
            return x + dist.rsample()
        """
    invalid = invalid + (Example(_distribution.format(validate=", validate_args=True", mark="  # expect: DYN105"), dynamo=BREAKS),)
    _distribution_valid = (Example(_distribution.format(validate="", mark=""), dynamo=CLEAN),)
    # A NumPy function torch._numpy lacks (pytorch_wavelets' reflect padding): a break even on constants.
    invalid = invalid + (Example(
        """
        import numpy as np
        import torch

        @torch.compile
        def f(x):
            y = x.sin()
            edges = np.asanyarray([1.0, 2.0])  # expect: DYN105
            return y + edges.sum()
        """,
        dynamo=BREAKS,
    ),)
    valid = (
        Example(
            # vit-pytorch's CaiT keeps one layer: Dynamo draws `random.randrange` itself (2.13, 2.14.1).
            """
            import random
            import torch

            @torch.compile
            def f(x):
                keep = random.randrange(x.shape[0])
                return x * 2 + keep
            """,
            dynamo=CLEAN,
        ),
        Example(
            """
            import math
            import numpy as np
            import torch

            @torch.compile
            def f(x):
                return x * math.sqrt(x.shape[0]) + np.sqrt(2.0)
            """,
            dynamo=CLEAN,
        ),
        Example(
            """
            import numpy as np
            import torch

            @torch.compile
            def f(x):
                noise = np.random.rand(3)  # traced through torch._numpy
                return x + 1
            """,
            dynamo=CLEAN,
        ),
        Example(
            """
            import random
            import torch

            @torch.compile
            def f(x):
                # Drawn by Dynamo itself on torch 2.13 and 2.14: numbers in the graph, no break.
                y = x * 2
                rng = random.Random(0)
                return y * random.uniform(0.5, 1.5) * random.randint(1, 3) * rng.random()
            """,
            dynamo=CLEAN,
        ),
    ) + _random_value_examples + _distribution_valid

RULE = UntraceableCall
