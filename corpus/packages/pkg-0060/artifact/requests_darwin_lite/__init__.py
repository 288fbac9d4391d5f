"""macOS-friendly requests defaults."""

DEFAULT_TIMEOUT = 10
