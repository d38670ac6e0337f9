"""A run against the baseline: the baseline file, deltas per case and criterion, the gate."""
