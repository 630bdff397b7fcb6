"""dynalint: find and fix code that breaks torch.compile graphs."""

__version__ = "0.1.0"

# Rule docs live in the repository; `dynalint rule CODE` prints the same text offline.
DOCS_URL = "https://github.com/dynalint/dynalint/blob/main/docs/rules.md#{anchor}"


def rule_url(code: str) -> str:
    return DOCS_URL.format(anchor=code.lower())
