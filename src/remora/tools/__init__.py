"""Sandboxed .pym tools and the host capabilities they call."""
