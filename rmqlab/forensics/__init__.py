"""Forensics: read-only inspection of captured stores — annotated hex views, verify,
salvage of records recovery would throw away, and diffs between captures."""
