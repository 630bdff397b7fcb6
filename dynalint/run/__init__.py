"""How one `dynalint check` run goes, apart from what it finds (that is `dynalint.lint`).

- `discovery`: which files a run lints (paths, excludes, .gitignore, configuration roots).
- `engine`: the whole-tree path: phase 1 per file (in worker processes, through the cache),
  the cross-file rounds, compile regions, selection of findings.
- `incremental`: the same result after a few files changed, without redoing what crosses files.
- `cache`: the persistent cache of per-file analyses, packs, run records and incremental states.
- `importcache`: libcst's import at a third of its cost (the command line installs it).
- `atomic`: writes that readers see whole or not at all (cache files, fixed sources).

Nothing here imports torch or the user's code.
"""
