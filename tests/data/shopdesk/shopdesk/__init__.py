"""Back-office helpers of the shop."""

__version__ = "0.3.0"
