"""Pydantic models of what crosses the agent boundary (DESIGN §4)."""
