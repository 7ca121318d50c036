#!/usr/bin/env python3
"""Makes the symbols of a static library of Mach-O objects private, except
the ones to export, so that a dylib linked from it exports only those.

    macho_hide.py --keep-header include/cgram.h IN.a OUT.a
    macho_hide.py --keep-none IN.a OUT.a

Why: rustc tells the linker which symbols a cdylib exports
(-exported_symbols_list), and zig, the linker that builds macOS binaries on
Linux here, ignores that list; the dylib would export every Rust symbol of
the standard library and the crates. So scripts/install.sh links the dylib
from the static library after this script has turned every defined
external symbol but the header's functions into a private external one
(the N_PEXT bit, what `__attribute__((visibility("hidden")))` sets): still
visible between the objects of the link, never exported from the dylib.
--keep-none hides all of them (the llama.cpp drop-in links cgram in and
exports only llama.cpp's entry points).

Only the one-byte type of each symbol table entry changes, so the archive
is patched in place and keeps its layout and index. Both BSD (`#1/len`
names) and GNU archive member names are read.
"""

import argparse
import re
import struct
import sys

MH_MAGIC_64 = 0xFEEDFACF
LC_SYMTAB = 0x2
N_STAB = 0xE0
N_PEXT = 0x10
N_TYPE = 0x0E
N_EXT = 0x01
N_UNDF = 0x0


def header_functions(path):
    """The functions the header declares (CGRAM_API ... name(...))."""
    text = open(path, encoding="utf-8").read()
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    return set(re.findall(r"\bCGRAM_API\b[^;(]*?\b(cg_\w+)\s*\(", text))


def hide_object(obj, keep):
    """Sets N_PEXT on the defined external symbols of one Mach-O object
    not in `keep` (Mach-O names, with the leading underscore). Returns the
    number hidden."""
    magic, _cpu, _sub, _filetype, ncmds = struct.unpack_from("<IiiII", obj, 0)
    if magic != MH_MAGIC_64:
        raise ValueError("not a 64-bit little-endian Mach-O object")
    offset = 32  # sizeof(mach_header_64)
    hidden = 0
    for _ in range(ncmds):
        cmd, size = struct.unpack_from("<II", obj, offset)
        if cmd == LC_SYMTAB:
            symoff, nsyms, stroff, _strsize = struct.unpack_from("<IIII", obj, offset + 8)
            for i in range(nsyms):
                entry = symoff + 16 * i  # sizeof(nlist_64)
                strx, ntype = struct.unpack_from("<IB", obj, entry)
                defined_external = (
                    not ntype & N_STAB and ntype & N_EXT and ntype & N_TYPE != N_UNDF
                )
                if not defined_external or ntype & N_PEXT:
                    continue
                start = stroff + strx
                name = bytes(obj[start : obj.index(b"\0", start)]).decode("utf-8", "replace")
                if name not in keep:
                    obj[entry + 4] = ntype | N_PEXT
                    hidden += 1
        offset += size
    return hidden


def archive_members(data):
    """(name, start, end) of each member's contents."""
    if data[:8] != b"!<arch>\n":
        raise ValueError("not an ar archive")
    offset = 8
    while offset + 60 <= len(data):
        name = data[offset : offset + 16].decode("ascii", "replace").rstrip()
        size = int(data[offset + 48 : offset + 58].decode("ascii").strip())
        start, end = offset + 60, offset + 60 + size
        if name.startswith("#1/"):
            length = int(name[3:])
            name = data[start : start + length].split(b"\0")[0].decode("utf-8", "replace")
            start += length
        yield name, start, end
        offset = end + (end & 1)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    keep_arg = ap.add_mutually_exclusive_group(required=True)
    keep_arg.add_argument("--keep-header", help="export the functions this C header declares")
    keep_arg.add_argument("--keep-none", action="store_true", help="export nothing")
    ap.add_argument("input")
    ap.add_argument("output")
    args = ap.parse_args()

    keep = set()
    if args.keep_header:
        keep = {"_" + f for f in header_functions(args.keep_header)}
        if not keep:
            sys.exit(f"macho_hide.py: no functions found in {args.keep_header}")
    data = bytearray(open(args.input, "rb").read())
    objects = hidden = 0
    for _name, start, end in archive_members(data):
        if end - start >= 32 and struct.unpack_from("<I", data, start)[0] == MH_MAGIC_64:
            obj = bytearray(data[start:end])
            hidden += hide_object(obj, keep)
            data[start:end] = obj
            objects += 1
    if objects == 0:
        sys.exit(f"macho_hide.py: no Mach-O objects in {args.input}")
    with open(args.output, "wb") as f:
        f.write(data)
    print(
        f"macho_hide.py: {hidden} symbols made private in {objects} objects; "
        f"{len(keep)} kept exported"
    )


if __name__ == "__main__":
    main()
