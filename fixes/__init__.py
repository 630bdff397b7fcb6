"""The fix stage: libcst-based autofixes and the machinery that applies them."""
