"""Reading git's index file format, as far as a snapshot needs: the extensions after the entries
(a split index names its shared part in "link"), for any index version and hash size.
Standard library only."""

from __future__ import annotations

__all__ = ["extensions", "shared_index"]


def extensions(data: bytes) -> tuple[dict[bytes, bytes], int]:
    """An index file's extensions by signature ("link", "sdir", ...), read after its entries
    (their names may hold any bytes, a signature's too), and its hash size; ({}, 0) if none or
    not an index we can read. The hash size is the one that makes the extensions end exactly at
    the trailing checksum."""
    if b"link" not in data and b"sdir" not in data:
        return {}, 0  # the usual index: no entry walk
    if len(data) < 12 or data[:4] != b"DIRC" or int.from_bytes(data[4:8], "big") not in (2, 3, 4):
        return {}, 0
    version, count = int.from_bytes(data[4:8], "big"), int.from_bytes(data[8:12], "big")
    for hash_size in (20, 32):  # SHA-1, SHA-256
        found = _extensions_after(data, version, count, hash_size)
        if found is not None:
            return found, hash_size
    return {}, 0


def _extensions_after(data: bytes, version: int, count: int, hash_size: int) -> dict[bytes, bytes] | None:
    """The extensions, with entries of this hash size; None if the file does not parse so."""
    end, at = len(data) - hash_size, 12
    for _ in range(count):
        start = at
        at += 40 + hash_size  # stat data, then the object id
        if at + 2 > end:
            return None
        extended = version >= 3 and data[at] & 0x40
        at += 4 if extended else 2  # flags (and extended flags)
        if version == 4:  # a varint (how much of the previous name is kept), then the rest
            while at < end and data[at] & 0x80:
                at += 1
            at += 1
        nul = data.find(b"\0", at, end)
        if nul < 0:
            return None
        # Version 4: the name's NUL; 2 and 3: NULs pad the entry to a multiple of 8 bytes.
        at = nul + 1 if version == 4 else start + ((nul - start + 8) & ~7)
    found: dict[bytes, bytes] = {}
    while at + 8 <= end:
        size = int.from_bytes(data[at + 4 : at + 8], "big")
        if at + 8 + size > end:
            return None
        found.setdefault(data[at : at + 4], data[at + 8 : at + 8 + size])
        at += 8 + size
    return found if at == end else None


def shared_index(extensions: dict[bytes, bytes], hash_size: int) -> str:
    """The shared index a split index names (its "link" extension starts with the shared part's
    hash), as a file name; "" if none."""
    link = extensions.get(b"link", b"")
    return f"sharedindex.{link[:hash_size].hex()}" if hash_size and len(link) >= hash_size else ""
