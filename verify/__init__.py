"""The verify stage: prove fixes with torch._dynamo.explain in a child process."""
