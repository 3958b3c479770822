"""Opening a run file whose writer was killed while it flushed.

An HDF5 file of the library's earliest format (superblock version 0 or 1, which
`granular.records.streaming` writes) states its end of allocation (EOA, bytes) in the
superblock; the library refuses to read an object at an address past it ("addr
overflow"). A flush writes the raw data, then the metadata cache's entries ring by
ring, the superblock's ring last, since the other entries' allocations move the EOA.
A writer killed after the new metadata reached the disk and before the superblock did
leaves a file whose objects are all on disk, one flush's worth of them past the EOA it
states: HDF5 cannot read what is there. The file is then longer than its stated EOA; a file
closed by HDF5 is cut to its EOA, so a longer file is one whose writer never closed it.

`open_for_reading` opens such a file through a read-only view (h5py's ``fileobj``
driver) whose superblock states the file's length as its EOA: every byte on disk
becomes addressable, nothing on disk is changed. What it then reads is the last
flush's metadata as far as it was written: datasets that disagree on the frame count
lose the frame being flushed (`granular.records.trajectory_format.frames_on_disk`), and
a pointer to an object never written still raises.

Superblock layout: The HDF Group, *HDF5 File Format Specification Version 2.0*, section
II.A ("Disk Format: Level 0A - Format Signature and Superblock"), versions 0 and 1.
"""

from __future__ import annotations

import contextlib
import io
import os
from pathlib import Path

#: HDF5's format signature, at byte 0 of a file without a user block.
SIGNATURE = b"\x89HDF\r\n\x1a\n"
#: Byte offset of the end-of-file (EOA) address in a version-0 superblock with 8-byte
#: offsets: signature (8), five version bytes and a reserved one, the sizes of offsets
#: and lengths (2), the group K values (4), the consistency flags (4), then the base,
#: free-space and end-of-file addresses (8 each): 8 + 8 + 4 + 4 + 8 + 8 = 40. Version 1
#: inserts the indexed storage K and 2 reserved bytes (4) before the base address.
EOA_OFFSET = {0: 40, 1: 44}


def stated_end(path) -> tuple[int, int] | None:
    """Where the superblock of the HDF5 file at ``path`` states its EOA, and the EOA
    (bytes, from byte 0); None for a layout this module does not read (a user block,
    superblock version 2 or later, offsets other than 8 bytes, a base address other
    than 0)."""
    with open(path, "rb") as handle:
        head = handle.read(EOA_OFFSET[1] + 8)
    if len(head) < EOA_OFFSET[1] + 8 or head[:8] != SIGNATURE:
        return None
    version, offset_size = head[8], head[13]
    if version not in EOA_OFFSET or offset_size != 8:
        return None
    at = EOA_OFFSET[version]
    if int.from_bytes(head[at - 16 : at - 8], "little") != 0:  # the base address
        return None
    return at, int.from_bytes(head[at : at + 8], "little")


@contextlib.contextmanager
def open_for_reading(path):
    """``with open_for_reading(path) as h5:`` an `h5py.File` read from ``path``; for a
    file longer than the EOA its superblock states (a writer killed during a flush),
    the file is read through `_StatedToLength`."""
    import h5py

    stated, length = stated_end(path), os.path.getsize(path)
    if stated is None or stated[1] >= length:
        with h5py.File(path, "r") as h5:
            yield h5
        return
    with _StatedToLength(path, stated[0], length) as view, h5py.File(view, "r") as h5:
        yield h5


class _StatedToLength(io.RawIOBase):
    """A read-only view of a file in which the 8 bytes at ``at`` (the superblock's EOA)
    read as ``length``, little-endian; every other byte is the file's."""

    def __init__(self, path, at: int, length: int):
        super().__init__()
        self._file = open(Path(path), "rb")
        self._patch = (at, int(length).to_bytes(8, "little"))

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        return self._file.seek(offset, whence)

    def tell(self) -> int:
        return self._file.tell()

    def readinto(self, buffer) -> int:
        start = self._file.tell()
        count = self._file.readinto(buffer)
        at, stated = self._patch
        first, last = max(start, at), min(start + count, at + len(stated))
        if first < last:
            memoryview(buffer)[first - start : last - start] = stated[first - at : last - at]
        return count

    def close(self) -> None:
        self._file.close()
        super().close()
