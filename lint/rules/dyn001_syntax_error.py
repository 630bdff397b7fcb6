"""DYN001: the file does not parse.

## What it does
Reports a file that libcst cannot parse, at the position of the error, instead of stopping the run.

## Why it matters
A file that does not parse cannot be checked for graph breaks, and `torch.compile` cannot run it
either. The rest of the run goes on.

## Example
```python
def forward(self, x)
    return x
```

## Use instead
Fix the syntax error; `python -m py_compile FILE` shows the same position.
"""

from ..rule import Example, Rule, RuleContext


class SyntaxErrorRule(Rule):
    code = "DYN001"
    name = "syntax-error"
    summary = "File does not parse"
    node_types = ()
    invalid = (Example("def f(x)  # expect: DYN001\n    return x\n"),)
    valid = (Example("def f(x):\n    return x\n"),)

    def check(self, node, ctx: RuleContext) -> None:  # reported by the analyzer itself
        return None


RULE = SyntaxErrorRule
