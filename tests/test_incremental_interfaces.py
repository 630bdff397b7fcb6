"""Edits that change a file's interface but nothing any other file sees are re-linted from that
file alone (`dynalint.run.incremental._local_change`); every other interface change falls back to
the whole tree. Each step of one editing session is checked against a run without any cache:
the findings must be the same, and the path taken must be the expected one."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from tests.test_engine import WholeTreeRuns, findings, findings_incremental, write_tree

UTIL = """
def loud(x):
    print(x)

def whisper(x):
    breakpoint()
"""
OPS = """
import torch
from .util import loud

def normalize(x):
    return x / x.norm()

def clip(x):
    loud(torch.zeros(1))
    return x.clamp(-1, 1)

def gate(x, y=None):
    if y is not None and y.sum() > 0:  # a graph break only once a caller passes a tensor as y
        return x
    return -x

def report(x):
    print(x)
    loud(torch.zeros(1))  # as clip does: ops.py's call hints do not tell the two calls apart
"""
MODEL = """
import torch
from torch import nn

SCALE = float("2.0")  # a module-level call of a name that is not imported
from .ops import clip, gate, normalize

class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(4, 4)

    def forward(self, x):
        return self.proj(clip(x))

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.block = Block()

    def forward(self, x):
        h = normalize(x)
        h = self.block(h)
        if h.mean() > 0:
            h = h * 2
        g = normalize(x)
        if g.sum() > 0:  # a graph break only while normalize returns a tensor
            h = gate(h)
        return h

def train_step(model, x):
    loss = model(x).sum()
    print(loss.item())
    return loss
"""

LOCAL, WHOLE_TREE = "local", "whole tree"


def _append(rel: str, text: str):
    def edit(root: Path) -> None:
        p = root / rel
        p.write_text(p.read_text() + textwrap.dedent(text))
    return edit


def _replace(rel: str, old: str, new: str):
    def edit(root: Path) -> None:
        p = root / rel
        text = p.read_text()
        assert old in text, old
        p.write_text(text.replace(old, new, 1))
    return edit


def _edits(*edits):
    def edit(root: Path) -> None:
        for one in edits:
            one(root)
    return edit


# (what the step does, the edit, the path it must take, a finding it must bring or None)
STEPS = [
    ("a new function nobody calls", _append("pkg/model.py", "\ndef scale(x):\n    return x * 2\n"), LOCAL, None),
    ("forward calls it", _replace("pkg/model.py", "h = self.block(h)", "h = self.block(scale(h))"), LOCAL, None),
    ("it prints now", _replace("pkg/model.py", "    return x * 2", "    print(x)\n    return x * 2"), LOCAL, ("pkg/model.py", "DYN101")),
    ("it calls a new helper of its file", _append("pkg/model.py", "\ndef stop(x):\n    breakpoint()\n"), LOCAL, None),
    ("...which is called", _replace("pkg/model.py", "    print(x)\n", "    print(x)\n    stop(x)\n"), LOCAL, ("pkg/model.py", "DYN102")),
    ("a new import used in a live function", _replace("pkg/model.py", "import torch\n", "import math\nimport torch\n"), LOCAL, None),
    ("a new function in the helpers' file", _append("pkg/ops.py", "\ndef twice(x):\n    return normalize(normalize(x))\n"), LOCAL, None),
    # `show` does not exist yet: a call of an unknown name is no call edge, the interface stays
    ("a function called from another file calls an unknown name",
     _replace("pkg/ops.py", "    return x / x.norm()", "    show(x)\n    return x / x.norm()"), LOCAL, None),
    ("...defined now: live through that entry point",
     _append("pkg/ops.py", "\ndef show(x):\n    print(x.shape)\n"), LOCAL, ("pkg/ops.py", "DYN101")),
    ("a function of the helpers' file changes its calls",
     _replace("pkg/ops.py", "def twice(x):\n    return normalize(normalize(x))", "def twice(x):\n    return x"), LOCAL, None),
    # normalize and clip are entry points of ops.py (called from model.py); clip calls util.loud
    ("an entry point reaches another file's entry point through a function of its own",
     _replace("pkg/ops.py", "    show(x)\n", "    show(x)\n    clip(x)\n"), LOCAL, None),
    # exits are held to those of the last whole-tree run: back to them is still local
    ("that call is dropped again",
     _replace("pkg/ops.py", "    show(x)\n    clip(x)\n", "    show(x)\n"), LOCAL, ("pkg/util.py", "DYN101")),
    # report still calls loud: only the walk from the entry points sees that loud is dead now
    ("the last live call out of the file is dropped",
     _replace("pkg/ops.py", "    loud(torch.zeros(1))\n    return x.clamp", "    return x.clamp"), WHOLE_TREE, None),
    ("a new import of another file's function",
     _replace("pkg/model.py", "from .ops import clip, gate, normalize", "from .ops import clip, gate, normalize, report"), LOCAL, None),
    ("forward calls it", _replace("pkg/model.py", "        return h\n", "        report(h)\n        return h\n", ), WHOLE_TREE, ("pkg/ops.py", "DYN101")),
    ("a tensor passed to another file's function where it was not",
     _replace("pkg/model.py", "h = gate(h)", "h = gate(h, h)"), WHOLE_TREE, ("pkg/ops.py", "DYN120")),
    ("a function nobody calls is removed", _replace("pkg/ops.py", "\ndef twice(x):\n    return x\n", "\n"), LOCAL, None),
    # Only model.py looked `stop` up: its call of it goes too (an unknown name is no call edge)
    ("a function called in its file is removed", _replace("pkg/model.py", "\ndef stop(x):\n    breakpoint()\n", "\n"), LOCAL, None),
    ("a new class nobody uses", _append("pkg/model.py", "\nclass Plain:\n    def size(self):\n        return 3\n"), LOCAL, None),
    ("a new nn.Module whose forward stops in the debugger",
     _append("pkg/model.py", "\nclass Extra(nn.Module):\n    def forward(self, x):\n        self.halt(x)\n        return x * 2\n\n    def halt(self, x):\n        breakpoint()\n"),
     LOCAL, ("pkg/model.py", "DYN102")),
    ("...no nn.Module any more", _replace("pkg/model.py", "class Extra(nn.Module):", "class Extra:"), LOCAL, None),
    ("...a module again", _replace("pkg/model.py", "class Extra:", "class Extra(nn.Module):"), LOCAL, ("pkg/model.py", "DYN102")),
    ("...its forward stops calling its method",
     _replace("pkg/model.py", "        self.halt(x)\n        return x * 2", "        return x * 2"), LOCAL, None),
    # Block.forward calls self.proj: a method of a subclass of the same name is live
    ("a new class subclasses a class of the linted files",
     _append("pkg/model.py", "\nclass Wide(Block):\n    def proj(self, x):\n        breakpoint()\n        return x\n"),
     WHOLE_TREE, ("pkg/model.py", "DYN102")),
    ("...and then subclasses nn.Module instead", _replace("pkg/model.py", "class Wide(Block):", "class Wide(nn.Module):"), WHOLE_TREE, None),
    ("a class of the last whole-tree run becomes an nn.Module calling a method it lacks",
     _replace("pkg/model.py", "class Plain:\n    def size(self):\n        return 3\n",
              "class Plain(nn.Module):\n    def forward(self, x):\n        self.step(x)\n        return x\n"),
     LOCAL, None),
    # Net stores a Block, but no call of the project looks up a method named `extra`
    ("a method nobody calls is added to a class another class stores",
     _replace("pkg/model.py", "        return self.proj(clip(x))", "        return self.proj(clip(x))\n\n    def extra(self):\n        return 1"), LOCAL, None),
    # Block.forward calls self.proj (a submodule so far): the memo of the last whole-tree run
    # resolved that call to nothing
    ("...and one named like a call its forward makes, which stops in the debugger",
     _replace("pkg/model.py", "    def extra(self):\n        return 1", "    def extra(self):\n        return 1\n\n    def proj(self, x):\n        breakpoint()\n        return x"),
     WHOLE_TREE, ("pkg/model.py", "DYN102")),
    ("...which goes again", _replace("pkg/model.py", "\n\n    def proj(self, x):\n        breakpoint()\n        return x", ""), WHOLE_TREE, None),
    ("the module of the last whole-tree run gets that method, which stops in the debugger",
     _replace("pkg/model.py", "        self.step(x)\n        return x\n", "        self.step(x)\n        return x\n\n    def step(self, x):\n        breakpoint()\n"),
     LOCAL, ("pkg/model.py", "DYN102")),
    ("...and is no module any more", _replace("pkg/model.py", "class Plain(nn.Module):", "class Plain:"), LOCAL, None),
    ("a class out of other files' sight is removed", _replace("pkg/model.py", "class Plain:\n", "class _Gone:\n"), LOCAL, None),
    ("a compiled function is added", _append("pkg/model.py", "\n@torch.compile\ndef fast(x):\n    print(x)\n    return x\n"), WHOLE_TREE, ("pkg/model.py", "DYN101")),
    ("a helper no longer returns a tensor", _replace("pkg/ops.py", "    return x / x.norm()", "    return 1"), WHOLE_TREE, None),
    # names model.py looks for in ops.py before ops.py has them
    ("forward calls names ops.py does not define yet",
     _replace("pkg/model.py", "        report(h)\n", "        report(h)\n        later(h)\n        shout(h)\n"), LOCAL, None),
    ("...imported",
     _replace("pkg/model.py", "from .ops import clip, gate, normalize, report", "from .ops import clip, gate, later, normalize, report, shout"), WHOLE_TREE, None),
    ("...one defined now", _append("pkg/ops.py", "\ndef later(x):\n    breakpoint()\n"), WHOLE_TREE, ("pkg/ops.py", "DYN102")),
    ("...the other imported from util.py now",
     _replace("pkg/ops.py", "from .util import loud\n", "from .util import loud\nfrom .util import whisper as shout\n"),
     WHOLE_TREE, ("pkg/util.py", "DYN102")),
    ("forward uses a class it imports from ops.py, which does not define it yet",
     _replace("pkg/model.py", "        later(h)\n", "        later(h)\n        h = Gadget()(h)\n"), WHOLE_TREE, None),
    ("...imported", _replace("pkg/model.py", "gate, later, normalize", "gate, Gadget, later, normalize"), WHOLE_TREE, None),
    ("...defined now, as an nn.Module: a class another file looked for",
     _append("pkg/ops.py", "\nclass Gadget(torch.nn.Module):\n    def forward(self, x):\n        print(x.mean())\n        return x\n"),
     WHOLE_TREE, None),
    ("a class another class stores is removed", _replace("pkg/model.py", "class Block(nn.Module):", "class Brick(nn.Module):"), WHOLE_TREE, None),
    # Subclasses of a class of the same file, named by no other file: their methods resolve
    # within the file (`incremental._FileClasses`)
    ("an empty subclass of a module of its file", _append("pkg/model.py", "\nclass Deep(Net):\n    pass\n"), LOCAL, None),
    ("...gets a forward of its own, which stops in the debugger",
     _replace("pkg/model.py", "class Deep(Net):\n    pass\n",
              "class Deep(Net):\n    def forward(self, x):\n        breakpoint()\n        return super().forward(x)\n"),
     LOCAL, ("pkg/model.py", "DYN102")),
    # Net.forward calls self.block(...): a subclass's method of that name is live through it
    ("...and a method its base's forward calls through self",
     _replace("pkg/model.py", "        return super().forward(x)\n",
              "        return super().forward(x)\n\n    def block(self, h):\n        print(h.shape)\n        return h\n"),
     WHOLE_TREE, None),
    ("...which the last whole-tree run resolved to: the subclass is removed",
     _replace("pkg/model.py", "class Deep(Net):\n", "class _Deep:\n"), WHOLE_TREE, None),
    ("a subclass of another file's class", _append("pkg/model.py", "\nclass Gizmo(Gadget):\n    pass\n"), WHOLE_TREE, None),
    ("another file's class gains a method nobody calls",
     _replace("pkg/ops.py", "        print(x.mean())\n        return x\n", "        print(x.mean())\n        return x\n\n    def spare(self):\n        return 0\n"),
     LOCAL, None),
    ("the subclass's forward calls a method its base lacks",
     _replace("pkg/model.py", "class Gizmo(Gadget):\n    pass\n", "class Gizmo(Gadget):\n    def forward(self, x):\n        return self.tune(x)\n"),
     WHOLE_TREE, None),
    # `tune` is a name the last whole-tree run looked up (in Gizmo's MRO): the new method is live
    ("...which the base in the other file gains, and it stops in the debugger",
     _replace("pkg/ops.py", "    def spare(self):\n        return 0\n", "    def spare(self):\n        return 0\n\n    def tune(self, x):\n        breakpoint()\n        return x\n"),
     WHOLE_TREE, ("pkg/ops.py", "DYN102")),
    ("...and the method nobody calls goes", _replace("pkg/ops.py", "    def spare(self):\n        return 0\n\n", ""), LOCAL, ("pkg/ops.py", "DYN102")),
    # Its methods are the same: only the changed base tells that Gizmo is no module any more
    ("...the base stops being an nn.Module", _replace("pkg/ops.py", "class Gadget(torch.nn.Module):", "class Gadget:"), WHOLE_TREE, None),
    ("a helper returning a tensor", _append("pkg/util.py", "\nimport torch\n\ndef lift(x):\n    return torch.ones(2) * x\n"), LOCAL, None),
    ("another file's function nobody calls calls it",
     _append("pkg/model.py", "\nfrom .util import lift\n\ndef dormant(x):\n    y = lift(x)\n    if y.sum() > 0:\n        return y\n    return x\n"),
     WHOLE_TREE, None),
    # model.py looked `lift` up (its "returns" facts): removing it is never local
    ("...the helper is removed", _replace("pkg/util.py", "\ndef lift(x):\n    return torch.ones(2) * x\n", ""), WHOLE_TREE, None),
    ("a new function in util.py", _append("pkg/util.py", "\ndef hush(x):\n    print(x.sum())\n"), LOCAL, None),
    ("model.py imports it", _replace("pkg/model.py", "import math\n", "import math\nfrom .util import hush\n"), LOCAL, None),
    ("a new module calls it, and so does a function nobody calls",
     _append("pkg/model.py", "\nclass Quiet(nn.Module):\n    def forward(self, x):\n        hush(torch.zeros(1))\n        return x\n\ndef unused(x):\n    hush(torch.zeros(1))\n"
             "\nclass Mix:\n    def forward(self, x):\n        breakpoint()\n        return x\n"),
     WHOLE_TREE, None),
    # The file still calls hush, with the same tensor (from `unused`): only what Quiet.forward
    # reached last time tells
    ("...the module's forward drops the call as the class gains a method",
     _replace("pkg/model.py", "        hush(torch.zeros(1))\n        return x\n\ndef unused", "        return x\n\n    def spare(self):\n        return 0\n\ndef unused"),
     WHOLE_TREE, None),
    # Mix is no module: its forward is a root only through the new subclass
    ("an empty subclass makes a module of a class of the file and nn.Module",
     _append("pkg/model.py", "\nclass Both(Mix, nn.Module):\n    pass\n"), WHOLE_TREE, ("pkg/model.py", "DYN102")),
    # No live function called hush at the last whole-tree run: resolving it needs the project
    ("a subclass of a module of its file whose forward calls another file's function",
     _append("pkg/model.py", "\nclass Kin(Net):\n    def forward(self, x):\n        hush(torch.zeros(1))\n        return x\n"),
     WHOLE_TREE, None),
    # `unused` still calls hush with a tensor: only the entry Kin.forward was tells
    ("...whose forward goes: it inherits its base's",
     _replace("pkg/model.py", "class Kin(Net):\n    def forward(self, x):\n        hush(torch.zeros(1))\n        return x\n",
              "class Kin(Net):\n    pass\n"),
     WHOLE_TREE, None),
    # Both new: the second one's method is live through the first one's call
    ("a subclass and its subclass, whose method the first one's forward calls through self",
     _append("pkg/model.py", "\nclass Tapped(Net):\n    def forward(self, x):\n        return self.tap(x)\n\n    def tap(self, x):\n        return x\n"
             "\nclass Leaky(Tapped):\n    def tap(self, x):\n        print(x.max())\n        return x\n"),
     LOCAL, None),
    # Plug resolves its calls as if it had no subclass (an own class): not with one
    ("an own class and a subclass of it, whose method the own class's forward calls through self",
     _append("pkg/model.py", "\nclass Plug(nn.Module):\n    def forward(self, x):\n        return self.tap(x)\n"
             "\nclass Probe(Plug):\n    def tap(self, x):\n        print(x.min())\n        return x\n"),
     WHOLE_TREE, None),
    # Functions stored on self and called through the attribute (`lint.regions`, attr_callables)
    ("a module storing a function of its file on self and calling it",
     _append("pkg/model.py", "\ndef blurt(x):\n    print(x.sum())\n    return x\n\nclass Stash(nn.Module):\n"
             "    def __init__(self):\n        super().__init__()\n        self.fn = blurt\n\n"
             "    def forward(self, x):\n        return self.fn(x)\n"),
     WHOLE_TREE, ("pkg/model.py", "DYN101")),
    ("a dict of functions in another file", _append("pkg/util.py", "\ndef snooze(x):\n    breakpoint()\n\nKERNELS = {\"snooze\": snooze}\n"),
     WHOLE_TREE, None),
    ("...the module stores an item of it and calls it",
     _edits(_replace("pkg/model.py", "        self.fn = blurt\n", "        self.fn = blurt\n        self.kernel = KERNELS[\"snooze\"]\n"),
            _replace("pkg/model.py", "        return self.fn(x)\n", "        return self.kernel(self.fn(x))\n"),
            _append("pkg/model.py", "\nfrom .util import KERNELS\n")),
     WHOLE_TREE, ("pkg/util.py", "DYN102")),
    ("...the dict names another function now", _replace("pkg/util.py", "{\"snooze\": snooze}", "{\"snooze\": hush}"), WHOLE_TREE, None),
    ("...the module calls a method it stores instead",
     _edits(_replace("pkg/model.py", "        self.fn = blurt\n", "        self.fn = self.shout_out\n"),
            _replace("pkg/model.py", "        return self.kernel(self.fn(x))\n",
                     "        return self.kernel(self.fn(x))\n\n    def shout_out(self, x):\n        breakpoint()\n        return x\n")),
     WHOLE_TREE, ("pkg/model.py", "DYN102")),
]


# Steps after which a file has no finding left (it had some before).
LOSES = {"the last live call out of the file is dropped": "pkg/util.py"}
# Steps after which a file has no finding of a code left (it had one before).
LOSES_CODE = {
    "...no nn.Module any more": ("pkg/model.py", "DYN102"),
    "...its forward stops calling its method": ("pkg/model.py", "DYN102"),
    "...and then subclasses nn.Module instead": ("pkg/model.py", "DYN102"),
    "...and is no module any more": ("pkg/model.py", "DYN102"),
    "...which the last whole-tree run resolved to: the subclass is removed": ("pkg/model.py", "DYN102"),
}
assert LOSES_CODE.keys() <= {step[0] for step in STEPS}
assert LOSES.keys() <= {step[0] for step in STEPS}


@pytest.fixture(scope="module", params=["serial", "parallel"])
def session(request, tmp_path_factory):
    """One editing session per way of running a changed file's analyses: one after the other,
    or side by side in forked workers (as for a big file; forced here for small ones)."""
    root = tmp_path_factory.mktemp("src")
    cache_dir = tmp_path_factory.mktemp("cache")
    write_tree(root, {"pkg/__init__.py": "", "pkg/util.py": UTIL, "pkg/ops.py": OPS, "pkg/model.py": MODEL})
    findings_incremental(root, cache_dir)
    with pytest.MonkeyPatch.context() as patch:
        if request.param == "parallel":
            import dynalint.run.incremental

            patch.setattr(dynalint.run.incremental, "PARALLEL_MIN_CHARS", 0)
        yield root, cache_dir, 1 if request.param == "serial" else 2


@pytest.mark.parametrize("step", STEPS, ids=[s[0] for s in STEPS])
def test_each_edit_gives_the_findings_of_a_run_without_cache(session, monkeypatch, step):
    root, cache_dir, jobs = session
    _what, edit, path, brings = step
    edit(root)
    whole = WholeTreeRuns(monkeypatch)
    warm = findings_incremental(root, cache_dir, jobs=jobs)
    assert warm == findings(root, None)
    assert (whole.count == 0) == (path == LOCAL), f"expected the {path} path"
    if brings is not None:
        assert brings in [(f[0], f[3]) for f in warm]
    if _what in LOSES:
        assert LOSES[_what] not in [f[0] for f in warm]
    if _what in LOSES_CODE:
        assert LOSES_CODE[_what] not in [(f[0], f[3]) for f in warm]
    assert findings_incremental(root, cache_dir, jobs=jobs) == warm and whole.count <= 1  # the state was kept


def test_a_forward_added_to_a_stored_module_is_a_root(tmp_path, monkeypatch):
    """`forward` is looked up without any call naming it (a submodule call, the roots): adding
    one to a class another file stores is never local, though no edge names it."""
    root, cache_dir = tmp_path / "src", tmp_path / "cache"
    write_tree(root, {
        "pkg/__init__.py": "",
        "pkg/pad.py": "import torch\n\nclass Pad(torch.nn.Module):\n    def pad(self, x):\n        return x\n",
        "pkg/wrap.py": (
            "from torch import nn\nfrom .pad import Pad\n\nclass Wrap(nn.Module):\n    def __init__(self):\n"
            "        super().__init__()\n        self.p = Pad()\n\n    def forward(self, x):\n        return self.p(x)\n"
        ),
    })
    assert findings_incremental(root, cache_dir) == findings(root, None) == []
    pad = root / "pkg/pad.py"
    pad.write_text(pad.read_text() + "\n    def forward(self, x):\n        breakpoint()\n        return x\n")
    whole = WholeTreeRuns(monkeypatch)
    warm = findings_incremental(root, cache_dir)
    assert warm == findings(root, None) and [(f[0], f[3]) for f in warm] == [("pkg/pad.py", "DYN102")]
    assert whole.count == 1


def test_the_file_resolver_answers_as_the_project_does():
    """`_local_change` resolves a file's classes with the same `ClassResolver` as the whole-tree
    path (`Project`), restricted to the file: on a file whose classes name only each other and
    torch, both answer every question alike (MRO, module-ness, methods, subclasses, call targets),
    and a name under another linted module is a LookupError for the file's resolver."""
    from dynalint.lint.analyzer import analyze_source
    from dynalint.lint.regions import Project
    from dynalint.run.incremental import _FileClasses

    source = textwrap.dedent("""
        import torch
        from torch import nn

        class Base(nn.Module):
            def __init__(self):
                super().__init__()
                self.inner = Leaf()
                self.blocks = nn.ModuleList([Leaf(), Leaf()])

            def forward(self, x):
                return self.step(self.inner(x))

            def step(self, x):
                return self.blocks(x)

        class Leaf(nn.Module):
            def forward(self, x):
                return x * 2

        class Mid(Base):
            def step(self, x):
                return super().step(x) + self.inner.forward(x)

        class Top(Mid):
            def extra(self):
                return self.step(1)

        class Plain:
            def step(self):
                return 0
    """)
    summary = analyze_source(source, "pkg/m.py", "pkg.m")
    project = Project([summary])
    local = _FileClasses(summary.to_cache(), {"pkg", "pkg.m", "pkg.other"})
    classes = sorted(summary.classes)
    assert classes == ["pkg.m.Base", "pkg.m.Leaf", "pkg.m.Mid", "pkg.m.Plain", "pkg.m.Top"]
    edges = [(q, fn.cls, e) for q, fn in summary.functions.items() if fn.cls for e in fn.edges if e[0] != "name"]
    assert {e[0] for _, _, e in edges} == {"self", "selfattr", "super", "prop"}
    for cls in classes:
        assert local.mro(cls) == project.mro(cls), cls
        assert local.is_module(cls) == project.is_module(cls), cls
        assert local.subclasses(cls) == project.subclasses(cls), cls
        for name in ("forward", "step", "extra", "missing"):
            assert local.find_method(cls, name) == project.find_method(cls, name), (cls, name)
    for q, cls, edge in edges:
        assert local.method_targets(cls, edge) == project.resolve_edge(summary.functions[q], edge), (q, edge)
    assert project.is_module("pkg.m.Top") and not project.is_module("pkg.m.Plain")
    assert project.method_targets("pkg.m.Base", ("self", "step")) == ["pkg.m.Base.step", "pkg.m.Mid.step"]
    with pytest.raises(LookupError):
        local.mro("pkg.other.Thing")
