"""DYN002: the file cannot be read, decoded or analysed.

## What it does
Reports a file that cannot be opened (permissions, a broken link, a symlink loop) or decoded
(bytes that are not valid in the file's declared or default UTF-8 encoding), naming the reason,
instead of stopping the run. A file whose analysis fails inside dynalint (nesting too deep even
for the large stack deep files are analysed on, or a bug) is reported the same way, with a
one-line reason.

## Why it matters
A file dynalint cannot read is a file nobody checked for graph breaks; the rest of the run goes
on and the exit code says something needs attention.

## Example
A file saved as Latin-1 without a `# -*- coding: latin-1 -*-` line.

## Use instead
Save the file as UTF-8 (or declare its encoding), or fix its permissions.
"""

from ..rule import Example, Rule, RuleContext


class UnreadableFile(Rule):
    code = "DYN002"
    name = "unreadable-file"
    summary = "File cannot be read, decoded or analysed"
    node_types = ()
    # Reported by the engine when reading fails; an example cannot be written as source text.
    invalid = ()
    valid = (Example("x = 1\n"),)

    def check(self, node, ctx: RuleContext) -> None:
        return None


RULE = UnreadableFile
