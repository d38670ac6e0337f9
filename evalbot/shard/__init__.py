"""Sharded runs and the jobs of ``evalbot run --jobs``, one module per role: ``partition`` (which job scores which
cases, and what a part says it is), ``merge`` (the parts joined into one report, checked), ``parts`` (the reading of
untrusted part files) and ``jobnotes`` (what ``run --jobs`` jobs tell their parent, and the report it joins)."""
