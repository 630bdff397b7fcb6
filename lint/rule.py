"""What a rule is: a code, docs (the module docstring), node types it looks at, examples and probes.

A rule never walks the tree itself. The analyzer walks only the code Dynamo would trace (compile
regions, live branches) and calls `check(node, ctx)` for every node whose type the rule names, with
`ctx` knowing which names hold tensors at that point. That keeps one pass per file for all rules.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass
from typing import TYPE_CHECKING, AbstractSet, Any, Callable, ClassVar, ContextManager, Iterator, Mapping, Optional, Protocol

if TYPE_CHECKING:  # pragma: no cover
    import libcst as cst
    from .summary import ClassInfo


class RuleContext(Protocol):
    """What a rule's `check(node, ctx)` (and the fix generators it calls) may ask and do: the
    whole rule API. `lint.walk.FunctionContext` implements it; rules see nothing else of the
    walk, so the walk can change without touching them (`tests/test_rule_api.py` checks that
    rules and fixes use only these names).

    Kinds are `lint.kinds.Kind` constants (plain strings, see there)."""

    # -- where ------------------------------------------------------------------------------
    @property
    def filename(self) -> str: ...

    @property
    def module(self) -> "cst.Module":
        """The file's tree."""

    @property
    def fn(self) -> "cst.FunctionDef":
        """The function being walked."""

    @property
    def statement(self) -> "Optional[cst.CSTNode]":
        """The innermost simple statement line (or compound statement header) being checked."""

    @property
    def is_root(self) -> bool:
        """Is the function where compiling starts (`forward`, a compiled function), not a helper?"""

    @property
    def tensor_params(self) -> "AbstractSet[str]":
        """The function's parameters bound to a tensor or a presumed one."""

    def is_parameter(self, name: str) -> bool:
        """Does `name` still hold the value the function's parameter of that name received?"""

    def in_assignment_target(self) -> bool:
        """Is the node being checked (part of) an assignment target (`x[mask] = v`)?"""

    def is_augmented_target(self, node: "cst.CSTNode") -> bool:
        """Is `node` the target of an augmented assignment being walked (`x[mask] += v`)?"""

    def enclosing_tests(self) -> "tuple[cst.BaseExpression, ...]":
        """The tests of the `if` statements whose body is being walked, outermost first."""

    def ancestors(self) -> "tuple[cst.CSTNode, ...]":
        """The nodes around the one being checked, outermost first: statements, compound
        statements whose header or block is being walked (`try`, `for`, `with`; an `if` while its
        test is), and expressions (`x if t else y`, `a and b`)."""

    def iter_ancestors(self) -> "Iterator[cst.CSTNode]":
        """The same nodes, innermost first, without copying them (a search that stops early
        costs what it reads; do not walk the tree while iterating)."""

    def innermost_statement(self) -> "Optional[cst.CSTNode]":
        """The innermost statement around the node being checked (`Raise`, `Assign`, a simple
        statement line, the `if` whose test is walked...), found without reading the
        expressions between (a long `a and b and ...` nests N deep)."""

    def assuming(self, test: "cst.BaseExpression", holds: bool = True) -> "ContextManager[None]":
        """A context in which kinds are those where `test` held (or failed): the right side of
        `isinstance(proto, tuple) and len(proto) == 2` reads the length of a tuple."""

    def static_truth(self, test: "cst.BaseExpression") -> Optional[bool]:
        """A test's value while Dynamo traces: True/False for `is_compiling()`-style guards (and
        `and`/`or`/`not` of them), None when it depends on the run."""

    # -- names and values -------------------------------------------------------------------
    def qualname(self, node: "cst.BaseExpression") -> Optional[str]:
        """The dotted name an expression resolves to through the file's imports (None for locals)."""

    def call_name(self, node: "cst.Call") -> Optional[str]:
        """The dotted name a call's function resolves to."""

    def self_attr(self, node: "cst.BaseExpression") -> Optional[str]:
        """`attr` when node is `self.attr` (the method's own instance), else None."""

    def kind(self, node: "cst.BaseExpression") -> str:
        """What the value is: a `lint.kinds.Kind` constant."""

    def bind_comprehension(self, node: "cst.BaseExpression") -> None:
        """Bind the loop names of a comprehension (`[r.sum() for r in x]`) before the walk reaches
        it, so that a rule checking an enclosing call can ask the kind of its element."""

    def is_tensor(self, node: "cst.BaseExpression") -> bool:
        """A tensor, a boolean tensor or a presumed tensor."""

    def is_definite_tensor(self, node: "cst.BaseExpression") -> bool:
        """A tensor for sure: not merely an unannotated parameter (see `Kind.PRESUMED`)."""

    def is_tensor_value(self, node: "cst.BaseExpression") -> bool:
        """A tensor, where a bare name must be one for sure (an unannotated parameter on its own
        is as often a flag, a number or a list)."""

    def from_module_call(self, node: "cst.BaseExpression") -> bool:
        """Is node a call of a submodule, method or helper, or a name bound to one's value? Taken
        for a tensor, such a value is as often a tuple or list of them."""

    def is_numpy(self, node: "cst.BaseExpression") -> bool:
        """Does the value come from NumPy?"""

    def is_numpy_of_numbers(self, node: "cst.BaseExpression") -> bool:
        """NumPy math on Python numbers (`np.ceil(h / 2)`)."""

    def is_logger(self, node: "cst.BaseExpression") -> bool:
        """A `logging` logger (the module, `logging.getLogger(...)` results, `logger`)."""

    # -- class and file facts ---------------------------------------------------------------
    @property
    def tensor_attrs(self) -> AbstractSet[str]:
        """Attributes of the method's class that hold tensors (buffers, parameters, torch results)."""

    @property
    def buffer_attrs(self) -> AbstractSet[str]:
        """Attributes of the method's class set to `nn.Buffer(...)`."""

    @property
    def rnn_attrs(self) -> AbstractSet[str]:
        """Attributes of the method's class (or a subclass in the file) holding `nn.LSTM/GRU/RNN`."""

    @property
    def in_rnn_class(self) -> bool:
        """Is the method's class one of the file's subclasses of `nn.LSTM/GRU/RNN`?"""

    @property
    def lock_attrs(self) -> AbstractSet[str]:
        """Attributes of the method's class holding threading locks."""

    @property
    def module_attrs(self) -> AbstractSet[str]:
        """Attributes of the method's class set to a module in `__init__`."""

    @property
    def sequence_attrs(self) -> AbstractSet[str]:
        """Attributes of the method's class holding Python sequences (lists, tuples, ModuleLists)."""

    @property
    def lock_names(self) -> AbstractSet[str]:
        """Module-level names bound to threading locks."""

    @property
    def numpy_attrs(self) -> "Mapping[str, str]":
        """Attributes of the method's class set to NumPy math (`self.hop = np.prod(rates)`), with
        the function's name ("prod")."""

    @property
    def class_decorators(self) -> "tuple[cst.Decorator, ...]":
        """The decorators of the method's class (none for a plain function)."""

    @property
    def file_classes(self) -> "Mapping[str, ClassInfo]":
        """The classes the file defines, by qualified name (their bases and methods)."""

    # -- reporting --------------------------------------------------------------------------
    def rule_state(self, code: str) -> dict:
        """A rule's scratch space for the function being walked (memos kept between its nodes)."""

    def report(self, rule: "Rule", node: "cst.CSTNode", message: str, data: Optional[dict] = None, fix: Any = None) -> None:
        """Report `node`; `fix` is a fix generator's result (see `fixes/base.py`) or None."""

# Fix providers. The lint layer never imports the fix generators (`dynalint.fixes`, the layer
# above it): a rule offers a fix by name, `offer_fix("guard", ctx, node, self.code)`, and
# `dynalint.fixes.providers` fills this table when imported, which the app (`dynalint.run.engine`)
# does before it lints. With no provider loaded under a name, the finding simply has no fix.
_FIX_PROVIDERS: dict[str, Callable[..., Any]] = {}


def register_fix_provider(name: str, provider: Callable[..., Any]) -> None:
    """`provider(ctx, *args)` -> a fix (see `fixes/base.py`) or None; rules call it by `name`."""
    _FIX_PROVIDERS[name] = provider


def offer_fix(name: str, ctx: RuleContext, *args: Any) -> Any:
    """The fix the provider registered as `name` makes for these arguments; None without one."""
    provider = _FIX_PROVIDERS.get(name)
    return None if provider is None else provider(ctx, *args)


# What Dynamo does with an example, as checked by tests/test_probes.py on the installed torch.
BREAKS = "break"  # at least one graph-break reason
CLEAN = "clean"  # one graph, no break reasons
RECOMPILES = "recompile"  # compiled with dynamic=True, a second input shape compiles the frame again
NO_RECOMPILE = "no_recompile"


@dataclass(frozen=True)
class Example:
    """A snippet that is both a lint test case and a Dynamo probe.

    Lines that must be reported end with `# expect: CODE`. `inputs` is evaluated with torch in scope
    to build the probe's arguments; `dynamo` is what Dynamo must do with it (None: not probed, with
    `why` saying why).
    """

    code: str
    dynamo: str | None = None
    inputs: str = "(torch.randn(4, 4),)"
    # For RECOMPILES probes: a second argument tuple with other shapes.
    inputs2: str = "(torch.randn(8, 8),)"
    # Calls made on the target for a probe (recompile probes on module state call it several times).
    calls: int = 1
    why: str = ""
    # The code after `dynalint check --fix --unsafe-fixes` (as Fixit's expected_replacement): the
    # tests apply the fixes and compare, and probe that the fixed code breaks less with equal outputs.
    fixed: str | None = None
    # Graphs Dynamo makes of the fixed code: 1 (it compiles whole), or more where the fix moves
    # work out of the graph (`@torch.compiler.disable` on a helper: one break per call remains).
    fixed_graphs: int = 1
    # Modules the probe imports beyond torch (`scipy`): the probe test skips where one is missing.
    needs: tuple = ()

    @property
    def source(self) -> str:
        return textwrap.dedent(self.code).lstrip("\n")

    @property
    def fixed_source(self) -> str | None:
        return None if self.fixed is None else textwrap.dedent(self.fixed).lstrip("\n")

    def expected(self) -> list[tuple[int, str]]:
        out = []
        for row, line in enumerate(self.source.splitlines(), start=1):
            if "# expect:" in line:
                for code in line.split("# expect:", 1)[1].replace(",", " ").split():
                    out.append((row, code.strip()))
        return sorted(out)


# The `## Fix` section of the guard rules' docs (DYN101, DYN103, DYN104): one text, three rules.
GUARD_FIX_DOC = """## Fix (safe or unsafe, by file)
The autofix puts the call (and the adjacent calls that need it) under
`if not torch.compiler.is_compiling():`, or under the file's own `is_torchdynamo_compiling()`
when it imports that helper. Eager runs are unchanged, so the fix is **safe** (unsafe where the
project supports torch before 2.3). A file that imports no torch at module level may have to work
without torch (a library's import helpers, NumPy code paths of a package with an optional torch
backend): the guard there asks `sys.modules` instead, `if not (sys.modules.get("torch") and
sys.modules["torch"].compiler.is_compiling()):` with `import sys` above it (torch never imported
means not compiling; traced without a break). A call on a path the file keeps for torch before 2.3 (a branch
of a torch-version or `is_compiling` test, the `except` of a `try` that calls `is_compiling`)
gets no fix: `torch.compiler.is_compiling` does not exist there.
"""

# `dynalint rules` marks, and what each declared `fixable` value allows a finding's fix to be.
FIX_MARKS = {"safe": "[*]", "unsafe": "[u]", "safe or unsafe": "[~]"}
FIX_APPLICABILITIES = {None: (), "safe": ("safe",), "unsafe": ("unsafe",), "safe or unsafe": ("safe", "unsafe")}


def probed_section(code: str) -> str:
    """`## Probed on`: the torch versions this rule's Dynamo probes ran on (lint/probed.py)."""
    from .probed import PROBED

    record = PROBED.get(code)
    if not record:
        return ""
    lines = []
    for version, r in record.items():
        line = f"- torch {version}: {r['held']} of {r['total']} examples behave as documented"
        if r["differs"]:
            line += " (not: " + "; ".join(r["differs"]) + ")"
        lines.append(line)
    return "\n\n## Probed on\n" + "\n".join(lines) + "\n(`python bench/probe_versions.py` on each torch adds its record.)"


class Rule:
    code: ClassVar[str]
    name: ClassVar[str]
    summary: ClassVar[str]
    # "error" for graph breaks, "warning" for recompiles, "info" for host syncs.
    severity: ClassVar[str] = "error"
    node_types: ClassVar[tuple[type, ...]] = ()
    # Dynamo's break types this rule predicts: (GB id, gb_type) pairs from torch's
    # torch/_dynamo/graph_break_registry.json, copied here because the lint path never imports torch
    # (tests check them against the installed torch's registry and its probes). Required for DYN1xx.
    gb_types: ClassVar[tuple[tuple[str, str], ...]] = ()
    # The applicability of the fixes this rule offers (never every finding gets one): None (no
    # fix), "safe", "unsafe", or "safe or unsafe" (decided per finding; the docstring's `## Fix`
    # section says when). `FIX_MARKS` gives each its mark in `dynalint rules`.
    fixable: ClassVar[str | None] = None
    invalid: ClassVar[tuple[Example, ...]] = ()
    valid: ClassVar[tuple[Example, ...]] = ()

    @classmethod
    def docs(cls) -> str:
        import sys

        return textwrap.dedent(sys.modules[cls.__module__].__doc__ or "").strip() + probed_section(cls.code)

    def check(self, node: "cst.CSTNode", ctx: RuleContext) -> None:
        """Called for every node of the types in `node_types` on the live code of a compile
        region; reports through `ctx.report`."""
        raise NotImplementedError
