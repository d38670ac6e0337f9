"""Producing the agent's actual runs: custom agent functions, ADK agents, a simulated user, recordings."""
