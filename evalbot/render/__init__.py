"""Showing results: PR comment, job summary, console text, annotations, JUnit, templates."""
