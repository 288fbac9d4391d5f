"""One rep of one agent on one task, run sealed and judged by the three gates."""
