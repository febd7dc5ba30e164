"""ragtui: a keyboard-driven terminal workspace for research over your own documents."""

__version__ = "0.1.0"
