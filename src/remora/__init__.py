"""Remora: verified, reviewable improvements to Python code from small local models."""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["__version__"]
