"""`dynalint migrate`: lint a codebase, fix it, verify the fixes on the user's models, report.

command (the click command and the run), models (MODELS.py, read without importing it), git (the
safety net), code (original and fixed texts), state (what a second run may reuse), verify (the
model jobs, blame and reverts), report and render (report.json, report.md, report.html).
"""
