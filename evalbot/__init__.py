"""evalbot: evaluate LLM agents in CI with ADK-compatible criteria."""

__version__ = "0.1.0"
