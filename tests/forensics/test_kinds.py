"""Every kind of finding ``verify`` can report has its entry in the catalogue of what
the broker does with it (rmqlab.forensics.kinds), and the catalogue names no kind that
nothing reports."""

from __future__ import annotations

import re
from pathlib import Path

from rmqlab.forensics.kinds import KINDS, kind_of
from rmqlab.format import record
from rmqlab.store import dledger

PACKAGE = Path(__file__).resolve().parents[2] / "rmqlab"


def reported_kinds() -> set[str]:
    """The kinds the source hands to a finding: literal names given to ``add`` or
    ``Finding``, the kind variable of pre-allocated files, the kinds a cause of a cut
    takes, and the record decoder's damage kinds (verify reports those by their constant)."""
    kinds = set()
    for path in (PACKAGE / "forensics" / "verify.py", PACKAGE / "spark" / "verify_job.py"):
        text = path.read_text()
        kinds |= set(re.findall(r'(?:\badd|\bFinding)\(\s*"([A-Z][A-Z0-9_]+)"', text))
        kinds |= set(re.findall(r'kind = "([A-Z][A-Z0-9_]+)" if', text)) | set(re.findall(r'else "([A-Z][A-Z0-9_]+)"\n', text))
        kinds |= set(re.findall(r'\.kind = "([A-Z][A-Z0-9_]+)"\n', text))  # a finding renamed by what the next start does
    # the cause of a cut (rmqlab.recovery.cause), which verify reports first
    cause = (PACKAGE / "recovery" / "cause.py").read_text()
    kinds |= set(re.findall(r'\bkind(?:, \w+)* = "([A-Z][A-Z0-9_]+)"', cause)) | set(re.findall(r'\bCause\("([A-Z][A-Z0-9_]+)"', cause))
    kinds |= set(re.findall(r'^(\w+) = "\1"$', cause, re.M))  # a cause named by a constant (SHORT_FILE)
    kinds |= {getattr(record, n) for n in ("BAD_MAGIC", "BAD_SIZE", "SIZE_MISMATCH", "BODY_CRC", "PROPERTY_CRC", "TRUNCATED", "BAD_BLANK")}
    kinds.add(dledger.DLEDGER_ENTRY)
    return kinds


def test_every_reported_kind_says_what_the_broker_does():
    kinds = reported_kinds()
    assert len(kinds) > 60  # the reading found verify's kinds
    missing = sorted(kinds - set(KINDS))
    assert not missing, f"kinds verify reports with no entry in rmqlab/forensics/kinds.py: {missing}"
    assert all(KINDS[k].title and KINDS[k].broker for k in kinds)


def test_the_catalogue_names_only_reported_kinds():
    assert sorted(set(KINDS) - reported_kinds()) == []


def test_an_unknown_kind_claims_nothing():
    k = kind_of("SOMETHING_NEW")
    assert k.title == "something new" and k.broker == ""
