"""Kind inference: what a value is (`lint.kinds`: a tensor, a presumed tensor, a size, a bool
tensor, not a tensor, unknown) at a point of the function walk, from the names bound so far,
the class's attributes and the file's (and other files') facts about what functions return."""

from __future__ import annotations

from typing import Optional

import libcst as cst

from . import kinds as K
from .kinds import B, C, N, P, S, T, U, TENSORISH
from .nodes import dotted, is_none, iter_code_nodes, operator_operands, param_list, self_dict_key


def torch_non_tensor(q: str) -> bool:
    if q.startswith(K.TORCH_NON_TENSOR_PREFIXES):
        return True
    # The C API gives flags and state (`torch._C._get_tracing_state()`, dispatch keys), except
    # its operator namespaces, which are the tensor ops behind `F.*`, `torch.linalg.*`, ...
    if q.startswith("torch._C.") and not q.startswith(K.TORCH_C_TENSOR_PREFIXES):
        return True
    last = q.rsplit(".", 1)[-1]
    # `torch.is_autocast_cpu_enabled()`, `torch.get_autocast_dtype()`: flags and settings.
    return q.count(".") == 1 and (last in K.TORCH_NON_TENSOR_FUNCS or last.startswith(("is_", "get_autocast")))


# NumPy's index tricks: subscripted, they build arrays.
_NUMPY_INDEX_GRIDS = frozenset({"numpy.ogrid", "numpy.mgrid", "numpy.r_", "numpy.c_"})
_STRING_NODES = (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString)
# Parameters every layer with weights has (`nn.Linear`, `nn.Conv2d`, norms).
_PARAMETER_NAMES = frozenset({"weight", "bias"})


def join_kinds(a: str, b: str) -> str:
    """Kind of a value that is either a or b (two branches)."""
    if a == b:
        return a
    if a in (T, B) or b in (T, B):
        return T  # a tensor on one path: `if mask is None: mask = torch.ones(...)`
    if a == P or b == P:
        return P  # a presumed tensor stays presumed (`flag if flag is not None else config.flag`)
    return U


def merge_kinds(a: dict[str, str], b: dict[str, str]) -> dict[str, str]:
    out = dict(a)
    for k, v in b.items():
        out[k] = join_kinds(out[k], v) if k in out else v
    return out


_INT_KEYWORDS = frozenset({"dim", "axis", "dims", "dim0", "dim1", "start_dim", "end_dim", "num_classes", "chunks", "groups"})


def int_only_params(fn: cst.FunctionDef) -> frozenset:
    """Parameters of `fn` used at least once and only where an int is meant (see
    FunctionContext._int_only_params)."""
    names = {p.name.value for p in param_list(fn.params)}
    uses: dict[str, int] = {}
    int_uses: dict[str, int] = {}

    def int_use(node) -> None:
        if type(node) is cst.Name and node.value in names:
            int_uses[node.value] = int_uses.get(node.value, 0) + 1

    for node in iter_code_nodes(fn.body):
        t = type(node)
        if t is cst.Name:
            if node.value in names:
                uses[node.value] = uses.get(node.value, 0) + 1
        elif t is cst.Call:
            if type(node.func) is cst.Name and node.func.value == "range":
                for arg in node.args:
                    int_use(arg.value)
            for arg in node.args:
                if arg.keyword is not None and arg.keyword.value in _INT_KEYWORDS:
                    int_use(arg.value)
        elif t in (cst.If, cst.While, cst.IfExp):
            # `if n == 1:` (a tensor there would break the graph); not `mask = x > 0`
            tests = [node.test]
            while tests:
                test = tests.pop()
                if type(test) is cst.BooleanOperation:
                    tests += [test.left, test.right]
                elif type(test) is cst.UnaryOperation and type(test.operator) is cst.Not:
                    tests.append(test.expression)
                elif type(test) is cst.Comparison:
                    operands = [test.left] + [c.comparator for c in test.comparisons]
                    if all(type(o) in (cst.Integer, cst.Name) for o in operands) and any(
                        type(o) is cst.Integer for o in operands
                    ) and not any(type(c.operator) in (cst.Is, cst.IsNot, cst.In, cst.NotIn) for c in test.comparisons):
                        for o in operands:
                            int_use(o)
        elif t is cst.Subscript:
            if type(node.value) is cst.Attribute and node.value.attr.value == "shape":
                for el in node.slice:
                    if type(el.slice) is cst.Index:
                        int_use(el.slice.value)
        elif t in (cst.Assign, cst.AugAssign, cst.AnnAssign, cst.For):
            # a parameter assigned to is another value from there on: not judged here
            targets = [tt.target for tt in node.targets] if t is cst.Assign else [node.target]
            for tgt in targets:
                for sub in iter_code_nodes(tgt):
                    if type(sub) is cst.Name and sub.value in names:
                        uses[sub.value] = uses.get(sub.value, 0) + 1000
    return frozenset(n for n, c in int_uses.items() if c == uses.get(n))


# Tensor methods whose positional arguments are sizes (`x.view(B, H, W, C)`).
_SIZE_ARG_METHODS = frozenset({
    "view", "reshape", "expand", "new_zeros", "new_ones", "new_empty", "new_full", "unflatten", "repeat",
})


def size_params(fn: cst.FunctionDef) -> frozenset:
    """Parameters passed as a size to a shape method (`x.view(B, H, W, C)`, `x.reshape((B, H, W))`):
    sizes handed to `forward(self, x, H, W)` (spandrel's FDAT), not tensors."""
    names = {p.name.value for p in param_list(fn.params)}
    found: set[str] = set()
    for node in iter_code_nodes(fn.body):
        if type(node) is not cst.Call or type(node.func) is not cst.Attribute or node.func.attr.value not in _SIZE_ARG_METHODS:
            continue
        for arg in node.args:
            if arg.keyword is not None or arg.star:
                continue
            values = [e.value for e in arg.value.elements] if type(arg.value) in (cst.Tuple, cst.List) else [arg.value]
            found.update(v.value for v in values if type(v) is cst.Name and v.value in names)
    return frozenset(found)


_CONTAINER_TYPES = frozenset({"list", "tuple", "dict", "List", "Tuple", "Dict", "typing.List", "typing.Tuple", "typing.Dict"})


def container_tested_params(fn: cst.FunctionDef) -> frozenset:
    """Parameters `fn` tests for a Python container anywhere (`isinstance(feats, list)`, also in a
    conditional expression): the function is written for a list as well as a tensor, so what its
    callers pass (ultralytics' `make_anchors(x["feats"], ...)` under a `dict[str, Tensor]`
    annotation that is wrong there) does not make it a tensor for sure."""
    names = {p.name.value for p in param_list(fn.params)}
    found: set[str] = set()
    for node in iter_code_nodes(fn.body):
        if type(node) is not cst.Call or type(node.func) is not cst.Name or node.func.value != "isinstance" \
                or len(node.args) != 2 or type(node.args[0].value) is not cst.Name or node.args[0].value.value not in names:
            continue
        cls = node.args[1].value
        types = [e.value for e in cls.elements] if type(cls) is cst.Tuple else [cls]
        if any(dotted(t) in _CONTAINER_TYPES for t in types):
            found.add(node.args[0].value.value)
    return frozenset(found)


class KindInference:
    """The kind questions of `FunctionContext` (`lint.walk`), which it mixes in: they read the
    walk's bindings (`env`, `numpy_names`, `local_types`), the class's facts (`tensor_attrs`,
    `all_attrs`, `class_info`), the file's (`fa`) and resolve names with `qualname` / `self_attr`."""

    def is_tensor(self, node: cst.BaseExpression) -> bool:
        return self.kind(node) in TENSORISH

    def is_numpy(self, node: cst.BaseExpression) -> bool:
        """Does the value come from NumPy (`np.random.rand(1)`, a name bound to one, an index of
        one)? Dynamo traces these as tensors, but a fix must not turn them into torch tensors."""
        while True:
            if type(node) is cst.Call:
                q = self.qualname(node.func)
                if q is not None and q.startswith("numpy."):
                    return True
                if type(node.func) is not cst.Attribute:
                    return False
                node = node.func.value
            elif type(node) in (cst.Attribute, cst.Subscript):
                if type(node) is cst.Attribute and self.qualname(node) in _NUMPY_INDEX_GRIDS:
                    return True  # `y, x = np.ogrid[-m:m + 1, -n:n + 1]` (doctr's Gaussian kernel)
                node = node.value
            elif type(node) is cst.Name:
                return node.value in self.numpy_names
            elif type(node) in (cst.BinaryOperation, cst.Comparison, cst.UnaryOperation):
                # `x.shape[-1] % n` with n from NumPy is a NumPy number; with a torch tensor
                # operand the result is a torch tensor.
                parts = operator_operands(node)
                numpy = [self.is_numpy(p) for p in parts]
                return any(numpy) and not any(self.is_tensor(p) and not n for p, n in zip(parts, numpy))
            else:
                return False

    def is_numpy_of_numbers(self, node: cst.BaseExpression) -> bool:
        """`np.ceil(h / 2)`, `np.sqrt(x.shape[0])`: NumPy math on Python numbers (sizes,
        constants; anything not known to be a tensor or an array). Dynamo traces the result as a 0-d tensor (an `if` on it breaks), but
        `int()` / `float()` of it does not break (probed on torch 2.13); NumPy's integer
        reductions (`np.lcm`, `np.prod`, ...) are DYN106's."""
        if type(node) in (cst.BinaryOperation, cst.UnaryOperation):
            # `2 * (n + np.floor(np.sqrt(40.0 * n)))` (MONAI's Bessel series): arithmetic of Python
            # numbers and such results is folded too (probed on torch 2.13).
            parts = (node.left, node.right) if type(node) is cst.BinaryOperation else (node.expression,)
            numpy_parts = [p for p in parts if self.kind(p) in TENSORISH]
            return bool(numpy_parts) and all(self.is_numpy_of_numbers(p) for p in numpy_parts)
        if type(node) is not cst.Call:
            return False
        q = self.qualname(node.func)
        if q is None or not q.startswith("numpy.") or q.count(".") != 1 or q.rsplit(".", 1)[1] in K.NUMPY_INT_REDUCTIONS:
            return False
        return bool(node.args) and all(
            not a.star and (self.kind(a.value) not in TENSORISH or self.is_numpy_of_numbers(a.value)) for a in node.args
        )

    def is_definite_tensor(self, node: cst.BaseExpression) -> bool:
        """A tensor for sure: not merely an unannotated parameter (see kinds.P)."""
        return self.kind(node) in (T, B)

    def is_tensor_value(self, node: cst.BaseExpression) -> bool:
        """A tensor, where a bare name must be one for sure: an unannotated parameter on its own
        is as often a flag (`if use_cache:`), a number or a list (`for W in parameters:`)."""
        return self.is_definite_tensor(node) if type(node) is cst.Name else self.is_tensor(node)

    def _returns_tensor(self, key: str) -> bool:
        found = bool(self.fa.returns_tensor.get(key))
        if self.probe_only:
            self.returns_read[key] = found
        return found

    def _returns_tuple(self, key: str) -> Optional[tuple]:
        found = self.fa.returns_tuple.get(key)
        if self.probe_only:
            self.tuples_read[key] = found
        return found

    def _passthrough(self, key: str) -> tuple:
        found = self.fa.passthrough.get(key) or ()
        if self.probe_only:
            self.passthrough_read[key] = found
        return found

    def _unpacks_tensors(self, value: Optional[cst.BaseExpression]) -> bool:
        """`q, k = x.chunk(2)` / `vals, idx = torch.topk(...)` hold tensors; tuples returned by
        helpers or submodules (`early_exit, mask, ... = prepare(...)`) mix flags and tensors."""
        if value is None:
            return True
        if type(value) is cst.Call:
            q = self.qualname(value.func)
            if q is not None and q.startswith("torch."):
                return True
            if type(value.func) is cst.Attribute:
                return self.kind(value.func.value) in TENSORISH
            return False
        return type(value) is not cst.Subscript or self.kind(value.value) in (T, B, P)

    def kind(self, node: cst.BaseExpression) -> str:
        if type(node) is cst.Name:
            v = node.value
            if v in ("True", "False", "None"):
                return N
            k = self.env.get(v, U)
            return U if k == "SELF" else k
        if type(node) in (cst.Integer, cst.Float, cst.Imaginary, cst.SimpleString, cst.ConcatenatedString, cst.FormattedString):
            return N
        if type(node) is cst.Attribute:
            attr = node.attr.value
            base = node.value
            if type(base) is cst.Name and self.env.get(base.value) == "SELF":
                if attr in self.tensor_attrs:
                    return T
                if attr == "training":
                    return N
                return U
            if attr in _PARAMETER_NAMES and self._submodule_attr(base):
                return T  # `self.sk.weight`: a submodule's parameter (SPAN's re-parameterisation)
            if type(base) is cst.Name and base.value in self.record_params:
                # `neighbors.distances` of `neighbors: Neighbors`, a NamedTuple / dataclass of the
                # file declaring `distances: Tensor` (torchani)
                field = self.fa.record_fields(self.record_params[base.value]).get(attr)
                if field is not None:
                    return field
            bk = self.kind(base)
            if bk in TENSORISH:
                if attr in K.SHAPE_ATTRS:
                    return S
                if attr in K.NON_TENSOR_ATTRS:
                    return N
                if attr in K.TENSOR_ATTRS:
                    return T if bk != P else P
                return U
            return U
        if type(node) is cst.Call:
            return self._call_kind(node)
        if type(node) is cst.Subscript:
            if self.self_items or self.tensor_items:
                key = self_dict_key(node)
                item = self.self_items.get(key)
                if item is not None:
                    return item  # `self.params = {"should_apply": mask}` earlier in this function
                if key in self.tensor_items:
                    return T  # `self.params["should_apply"]`, set to a torch tensor by a method of the class
            bk = self.kind(node.value)
            if bk in TENSORISH:
                return bk
            if bk == S:
                return S
            if bk == C:
                if any(type(el.slice) is cst.Slice for el in node.slice):
                    return C  # `keys[1:]`: a shorter list
                # `edge_index[0]` of a tuple of tensors; `x["lengths"]` of `x: dict[str, Tensor]`
                return T if self._tensor_container(node.value) else P
            return U
        if type(node) is cst.BinaryOperation:
            lk, rk = self.kind(node.left), self.kind(node.right)
            if lk in TENSORISH or rk in TENSORISH:
                if type(node.operator) in (cst.BitAnd, cst.BitOr, cst.BitXor) and B in (lk, rk):
                    return B
                return T if (lk in (T, B) or rk in (T, B)) else P
            if S in (lk, rk) and all(k in (S, N) or self._setting_attr(side) for k, side in ((lk, node.left), (rk, node.right))):
                return S  # `n % self.bucket`: a size with numbers or the module's settings
            if lk == N and rk == N:
                return N
            return U
        if type(node) is cst.UnaryOperation:
            if type(node.operator) is cst.Not:
                return N
            return self.kind(node.expression)
        if type(node) is cst.Comparison:
            if any(type(c.operator) in (cst.Is, cst.IsNot) for c in node.comparisons):
                return N
            if is_none(node.left) or any(is_none(c.comparator) for c in node.comparisons):
                return N  # `mem == None`: Dynamo answers it like `is None`, a Python bool
            if any(type(c.operator) in (cst.In, cst.NotIn) for c in node.comparisons):
                # `t in [1, 2]` compares the tensor with each item and takes bool() of each;
                # `k in ("a", "b")` looks for a string: k is none.
                if any(type(c.comparator) in (cst.Tuple, cst.List, cst.Set)
                       and any(type(e.value) in _STRING_NODES for e in c.comparator.elements) for c in node.comparisons):
                    return N
                return B if self.kind(node.left) in (T, B) else N
            sides = [node.left] + [c.comparator for c in node.comparisons]
            if any(type(side) in _STRING_NODES for side in sides):
                return N  # `mode == "spatial"`, `x.type() == "torch.cuda.HalfTensor"`: no tensor result
            kinds_ = [self.kind(side) for side in sides]
            if any(k in (T, B) for k in kinds_):
                return B
            if P in kinds_:
                # `self.bias.shape[-1] >= j`: a presumed tensor compared with a size is a size
                # (research code passes sizes to `forward(self, i, j)`)
                if S in kinds_:
                    return "SB"
                # `self.patches_resolution != H` (spandrel's DAT): a presumed tensor compared
                # only with the module's settings is as often a size or a flag: unknown.
                if all(k == P or self._setting_attr(side) for k, side in zip(kinds_, sides)):
                    return U
                if all(type(c.operator) in (cst.Equal, cst.NotEqual) for c in node.comparisons) and all(
                        k == P or self._global_object(side) for k, side in zip(kinds_, sides)):
                    # `ltype == SO3_type` (pypose), `mode == Mode.TRAIN`: a presumed tensor
                    # tested for equality with a name of the module (a sentinel, an enum member)
                    # is such an object itself, or a flag
                    return U
                return B
            if S in kinds_:
                return "SB"
            return N if all(k == N for k in kinds_) else U
        if type(node) is cst.BooleanOperation:
            lk, rk = self.kind(node.left), self.kind(node.right)
            if lk in TENSORISH or rk in TENSORISH:
                return T
            return U
        if type(node) is cst.IfExp:
            return join_kinds(self.kind(node.body), self.kind(node.orelse))
        if type(node) in (cst.Tuple, cst.List, cst.Dict, cst.Set, cst.ListComp, cst.DictComp, cst.SetComp):
            return N
        return U

    def _submodule_attr(self, node: cst.BaseExpression) -> bool:
        """`self.<attr>` assigned a module in the class (`nn.Conv2d(...)`, `Block(...)`)."""
        attr = self.self_attr(node)
        return attr is not None and attr in self.module_attrs and attr not in self.tensor_attrs

    def _global_object(self, node: cst.BaseExpression) -> bool:
        """`SO3_type`, `Mode.TRAIN`: a name not bound in the function (nor an attribute chain on
        one), and not one of torch's, NumPy's or `math`'s."""
        root = node
        while type(root) is cst.Attribute:
            root = root.value
        if type(root) is not cst.Name or root.value in self.env or root.value in ("True", "False", "None", "self"):
            return False
        q = self.qualname(node) or ""
        return not q.startswith(("torch", "numpy", "math", "jax"))

    def _setting_attr(self, node: cst.BaseExpression) -> bool:
        """`self.<attr>` assigned in the class but holding no tensor (a size, a flag, a mode)."""
        attr = self.self_attr(node)
        return attr is not None and attr in self.all_attrs and attr not in self.tensor_attrs and attr not in self.callable_attrs

    def _len_of_tensor(self, arg: cst.BaseExpression) -> bool:
        """`len(x)` is a size for a tensor, but not for the value of a submodule or helper call,
        taken for a tensor and as often a tuple of them (pytorch-metric-learning's
        `indices_tuple = self.miner(...)`; `if len(indices_tuple) == 3:`)."""
        # (ultralytics' `range(len(feats))` over feature levels: a bare parameter is no tensor here)
        return self.is_tensor_value(arg) and not self.from_module_call(arg)

    def _call_kind(self, node: cst.Call) -> str:
        func = node.func
        q = self.qualname(func)
        if q is not None:
            if q in ("abs", "pow") and node.args:
                # `abs(t)` is `t.abs()`, `pow(t, 2)` is `t ** 2`: what the first argument is
                # (MONAI's Bessel series tests `abs(bi) > 1.0e10` on a tensor).
                first = self.kind(node.args[0].value)
                return T if first == B else first
            if q in ("max", "min") and len(node.args) >= 2 and not any(a.star or a.keyword for a in node.args):
                # `max(idx.max() + 1, 4)`: Dynamo makes it a tensor op (probed: traced), and its
                # value is a tensor wherever one argument is.
                if any(self.is_definite_tensor(a.value) for a in node.args):
                    return T
            if "." not in q and q in K.NON_TENSOR_BUILTINS:
                if q == "len" and node.args and self._len_of_tensor(node.args[0].value):
                    return S
                if q == "int" and node.args and self.kind(node.args[0].value) == S:
                    return S
                return N
            if q.startswith("torch."):
                if q in ("torch.nn.functional", ) or torch_non_tensor(q):
                    return N
                if q.startswith("torch.nn.") and not q.startswith("torch.nn.functional."):
                    return U  # building modules
                last = q.rsplit(".", 1)[-1]
                if last in K.BOOL_TORCH_FUNCS or self._bool_dtype(node) or (last == "where" and self._selects_booleans(node)):
                    # `~torch.eye(n, dtype=torch.bool)` (x-clip's off-diagonal mask)
                    return B
                if last in ("is_tensor", "is_floating_point", "is_complex", "is_nonzero"):
                    return N
                return T
            if q.startswith(("math.", "time.", "random.", "os.", "warnings.", "logging.")):
                return N
            if q in K.EINOPS_TENSOR_FUNCS and node.args and not node.args[0].star:
                # `rearrange(coors, "b n d -> b n 1 d")` of a tensor is a tensor (equiformer), a
                # presumed one of a presumed one
                first = self.kind(node.args[0].value)
                if first == B and q in ("einops.rearrange", "einops.repeat"):
                    return B  # the same elements, moved: still a mask
                if first in (T, B, P):
                    return T if first == B else first
            known = self._known_call_kind(
                node, (self.fa.options.external_passthrough or {}).get(q), q in self.fa.options.external_returns
            )
            if known is not None:
                return known
            if q.startswith("numpy."):
                # Dynamo traces NumPy through torch: its results are tensors while compiling, so
                # `if np.sqrt(2.0) > 1:` breaks the graph like any tensor condition (probed).
                return N if q.rsplit(".", 1)[-1] in K.NUMPY_NON_ARRAY_FUNCS else T
        if type(func) is cst.Attribute:
            recv = func.value
            meth = func.attr.value
            if self.self_attr(func) is not None:
                methods = self.class_info.methods if self.class_info else []
                if meth in methods:
                    key = f"{self.cls}.{meth}"
                    known = self._known_call_kind(node, self._passthrough(key), self._returns_tensor(key), key)
                    if known is not None:
                        return known
                    # `h = self.mix(h)` with `mix` left to subclasses: presumably a tensor in, a tensor out.
                    if key in self.fa.abstract_methods and any(self.kind(a.value) in TENSORISH for a in node.args):
                        return P
                    return U
                if meth in self.all_attrs and meth not in self.tensor_attrs and meth not in self.callable_attrs:
                    return T  # a submodule call (not `self.fn = lambda ...: p`, a plain callable)
                return U
            submodule = self.self_attr(recv)
            if (
                submodule is not None
                and self.class_info is not None
                and submodule in self.class_info.attr_types
                and submodule not in self.tensor_attrs
                and any(self.kind(a.value) in TENSORISH for a in node.args)
            ):
                # `self.pe_layer.forward_with_coords(points, size)`: another method of a
                # submodule, given a tensor: presumably a tensor
                return P
            rk = self.kind(recv)
            if rk in TENSORISH:
                if meth == "type" and not node.args:
                    return N  # the type's name, a string
                if meth in K.SIZE_METHODS:
                    return S
                if meth in K.NON_TENSOR_METHODS:
                    return N
                if meth in K.MAPPING_METHODS:
                    # no tensor has them: a dict (a submodule's outputs), whose values may be tensors
                    return C if meth == "items" else U
                if meth in K.BOOL_METHODS or rk == B and meth in K.LAYOUT_METHODS or self._to_bool(node):
                    return B
                if rk == P and meth not in K.TENSOR_METHODS:
                    return U  # `cache.get_seq_length()`: a presumed tensor that is not one
                return T
            if rk == S and meth in ("numel",):
                return S
            if rk == S and meth == "is_integer":
                return "SB"  # `(n / k).is_integer()`: a test on a size
            if rk == U and meth in ("any", "all") and not any(a.keyword is not None and a.keyword.value == "axis" for a in node.args):
                # Only tensors and arrays have these methods (both tensors under Dynamo): a boolean
                # tensor whatever the receiver (torch-audiomentations' `params["should_apply"].any()`).
                return B
            if rk == U and (meth == "bool" and not node.args or self._to_bool(node)):
                # `.bool()`, `.to(dtype=torch.bool)`: a module has neither (its `.to()` takes
                # floating dtypes only): a boolean tensor (`dist.sample(...).to(dtype=torch.bool)`)
                return B
            return U
        if type(func) is cst.Name:
            name = func.value
            if name in self.local_types:
                return T
            if name in self.fa.local_functions:
                key = f"{self.fa.summary.module}.{name}"
                known = self._known_call_kind(node, self._passthrough(key), self._returns_tensor(key), key)
                return U if known is None else known
            return U
        if type(func) is cst.Subscript:
            if self._submodule_list_ref(func.value) is not None:
                return T
        return U

    def _selects_booleans(self, node: cst.Call) -> bool:
        """`torch.where(c, pos, pos.new([True]))` (FLAVA's positive pairs): both values boolean."""
        values = [a.value for a in node.args if a.keyword is None and not a.star]
        return len(values) == 3 and len(node.args) == 3 and all(self._boolean_value(v) for v in values[1:])

    def _boolean_value(self, node: cst.BaseExpression) -> bool:
        if type(node) is cst.Name and node.value in ("True", "False"):
            return True
        if type(node) is cst.Call and type(node.func) is cst.Attribute and node.func.attr.value in (
                "new", "new_tensor", "new_ones", "new_zeros", "new_empty"):
            # a new tensor of the receiver's dtype, unless another is asked for
            return self.kind(node.func.value) == B and not any(a.keyword is not None and a.keyword.value == "dtype" for a in node.args)
        return self.kind(node) == B

    def _bool_dtype(self, node: cst.Call) -> bool:
        """`torch.ones(n, dtype=torch.bool)`: a factory or conversion asked for booleans."""
        return any(a.keyword is not None and a.keyword.value == "dtype" and self.qualname(a.value) == "torch.bool"
                   for a in node.args)

    def _to_bool(self, node: cst.Call) -> bool:
        """`x.to(torch.bool)` / `x.to(dtype=torch.bool, device=...)`."""
        return type(node.func) is cst.Attribute and node.func.attr.value == "to" and any(
            self.qualname(a.value) == "torch.bool" for a in node.args if a.keyword is None or a.keyword.value == "dtype")

    def _known_call_kind(self, node: cst.Call, slots: Optional[tuple], returns_tensor: bool,
                         key: Optional[str] = None) -> Optional[str]:
        """A call of a function whose results are known (a method or function of the file, or
        one of another file's, `lint/hints.py`): the kinds of the parameters it gives back
        (`slots`, joined with a tensor when it returns one too), else a tensor when it returns
        one (a boolean one where every return of the file's function `key` is); None when
        neither is known."""
        if slots:
            return self._passthrough_kind(node, slots, returns_tensor)
        if returns_tensor and key is not None and self.fa.returns_bool.get(key):
            return B
        return T if returns_tensor else None

    def _passthrough_kind(self, node: cst.Call, slots: tuple, other_tensor: bool) -> str:
        """Kind of a call of a function returning some of its parameters as they came: the
        arguments' kinds there, joined (with a tensor when its other returns give one)."""
        out = T if other_tensor else None
        positional = []
        for arg in node.args:
            if arg.star:
                return T if other_tensor else U
            if arg.keyword is None:
                positional.append(arg.value)
        keywords = {a.keyword.value: a.value for a in node.args if a.keyword is not None}
        for pos, name, default_kind in slots:
            if name in keywords:
                k = self.kind(keywords[name])
            elif pos < len(positional):
                k = self.kind(positional[pos])
            else:
                k = default_kind
            out = k if out is None else join_kinds(out, k)
        return out or U
