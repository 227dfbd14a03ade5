"""fastdecode.decode_positions: records at known positions, no walk of the chain —
the same rows as a whole-file scan, and a clear error at a position where no record
starts."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from rmqlab.scan import decode as fd
from rmqlab.format.record import RecordError

from tests.support import REFERENCE

FILE = REFERENCE / "v2ipv6" / "store" / "commitlog" / "00000000000000000000"


def _scan(buf):
    t = pa.Table.from_batches(list(fd.decode_file(buf, 0, file=str(FILE))))
    return t.filter(pa.compute.equal(t.column("kind"), fd.KIND_MESSAGE))


@pytest.mark.parametrize("batch_rows", [1, 7, 1 << 15])
def test_positions_give_the_scans_rows(batch_rows):
    buf = FILE.read_bytes()
    whole = _scan(buf)
    pos = np.asarray(whole.column("physical_offset").to_numpy())
    some = pos[::3]
    got = pa.Table.from_batches(list(fd.decode_positions(buf, some, file=str(FILE), batch_rows=batch_rows)))
    assert got.to_pylist() == whole.take(pa.array(np.arange(0, len(pos), 3))).to_pylist()
    narrow = pa.Table.from_batches(list(fd.decode_positions(buf, pos, file=str(FILE), columns=["physical_offset", "topic"], include_body=False)))
    assert narrow.column("topic").to_pylist() == whole.column("topic").to_pylist()
    assert narrow.column("body").null_count == len(pos)


def test_a_position_inside_a_record_is_refused_with_its_offset():
    buf = FILE.read_bytes()
    pos = np.asarray(_scan(buf).column("physical_offset").to_numpy())
    wrong = np.concatenate((pos[:5], [pos[5] + 4], pos[6:10]))
    got = []
    with pytest.raises(RecordError) as err:
        for b in fd.decode_positions(buf, wrong, file=str(FILE)):
            got.extend(b.column("physical_offset").to_pylist())
    assert err.value.offset == int(pos[5]) + 4 and str(FILE) in str(err.value)
    assert got == pos[:5].tolist()  # the records before it came through
    with pytest.raises(ValueError):
        list(fd.decode_positions(buf, pos[::-1]))
