"""The lint stage: a libcst pass over the code that runs under torch.compile."""
