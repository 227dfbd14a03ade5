"""Layer 4 — the store engine: put, dispatch, flush, clean (Java ``DefaultMessageStore``).

Everything here writes; the read side lives in :mod:`rmqlab.store`.
"""
