"""Pydantic models of the file formats evalbot reads and writes."""
