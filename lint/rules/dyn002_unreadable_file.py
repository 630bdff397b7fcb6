"""DYN002: the file cannot be read or decoded.

## What it does
Reports a file that cannot be opened (permissions, a broken link) or decoded (bytes that are not
valid in the file's declared or default UTF-8 encoding), naming the reason, instead of stopping
the run.

## Why it matters
A file dynalint cannot read is a file nobody checked for graph breaks; the rest of the run goes
on and the exit code says something needs attention.

## Example
A file saved as Latin-1 without a `# -*- coding: latin-1 -*-` line.

## Use instead
Save the file as UTF-8 (or declare its encoding), or fix its permissions.
"""

from ..rule import Example, Rule


class UnreadableFile(Rule):
    code = "DYN002"
    name = "unreadable-file"
    summary = "File cannot be read or decoded"
    node_types = ()
    # Reported by the engine when reading fails; an example cannot be written as source text.
    invalid = ()
    valid = (Example("x = 1\n"),)

    def check(self, node, ctx):
        return None


RULE = UnreadableFile
