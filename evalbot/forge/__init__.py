"""Code-host access: the Forge protocol (base) and its PyGithub implementation (pygithub)."""
