"""How the benchmarks start dynalint: the command and the environment of each timed child."""

from __future__ import annotations

import os
import sys
from pathlib import Path

# Children run as a user's shell would start them: with bytecode caching on (this machine's
# environment sets PYTHONDONTWRITEBYTECODE, which would make every run compile dynalint's
# modules again; an unmeasured first run writes the bytecode) and without DYNALINT_* settings.
CHILD_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE" and not k.startswith("DYNALINT_")}


def dynalint_command() -> list[str]:
    """The console script next to this interpreter (what `pip install` put there), not the first
    on PATH, which may be a version manager's shim whose own start-up would be counted."""
    script = Path(sys.executable).parent / ("dynalint.exe" if os.name == "nt" else "dynalint")
    if script.is_file():
        return [str(script)]
    return [sys.executable, "-c", "import sys; from dynalint.cli import main; sys.exit(main())"]
