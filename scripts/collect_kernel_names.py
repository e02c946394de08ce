#!/usr/bin/env python3
"""Collects real mangled kernel names into test/data/names/ (one per line).

Two sources:

  LIB_OR_DIR...      ELF shared libraries (or folders searched for *.so*):
                     the names are the NUL-terminated strings of the
                     read-only data sections (.rodata, .lrodata) that are
                     whole mangled names.  A CUDA library keeps there the
                     device function names it registers with the runtime
                     (__cudaRegisterFunction), that is its kernel names.
                     Of those, the names kept are the ones c++filt turns
                     into a function ("...(...)"), which drops data and
                     local-entity names.  Writes <prefix><library>.txt.
  --nsys FILE...     Nsight Systems SQLite exports: the distinct mangledName
                     values of CUPTI_ACTIVITY_KIND_KERNEL that c++filt
                     demangles.  Writes <prefix><file stem>.txt.

Each file is sorted and, past --max names, thinned to --max evenly spaced
ones, so every library is represented and the corpus stays small.  c++filt
(binutils) runs once per source.  Prints one line per file written:
"path: N names (of M)".

usage:
  scripts/collect_kernel_names.py --out test/data/names [--max 1000] [--prefix P] LIB_OR_DIR...
  scripts/collect_kernel_names.py --out test/data/names --nsys FILE.sqlite...
"""
import argparse
import mmap
import os
import re
import sqlite3
import struct
import subprocess
import sys

# Longest name c++filt reads from its standard input as one token (longer
# ones could not be compared; libiberty demangles none over 1,024 bytes).
MAX_NAME = 32766
NAME_RE = re.compile(rb"(?<=\x00)_Z[A-Za-z0-9_$.]{1,%d}(?=\x00)" % (MAX_NAME - 2))


def die(msg):
    print(f"collect_kernel_names: {msg}", file=sys.stderr)
    sys.exit(1)


def rodata_sections(path, data):
    """(offset, size) of the .rodata/.lrodata sections of a 64-bit ELF."""
    if data[:4] != b"\x7fELF" or data[4] != 2:
        return None
    endian = "<" if data[5] == 1 else ">"
    shoff, = struct.unpack_from(endian + "Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from(endian + "HHH", data, 0x3A)
    if shoff == 0 or shnum == 0 or shoff + shnum * shentsize > len(data):
        return None

    def sh(i):
        b = shoff + i * shentsize
        name, typ = struct.unpack_from(endian + "II", data, b)
        off, size = struct.unpack_from(endian + "QQ", data, b + 0x18)
        return name, typ, off, size

    _, _, stroff, strsize = sh(shstrndx)
    out = []
    for i in range(shnum):
        name, typ, off, size = sh(i)
        end = data.find(b"\x00", stroff + name, stroff + strsize)
        sname = data[stroff + name:end]
        if sname in (b".rodata", b".lrodata") and typ == 1 and off + size <= len(data):
            out.append((off, size))
    return out


def names_of_library(path):
    with open(path, "rb") as f:
        try:
            data = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        except ValueError:
            return None
        with data:
            secs = rodata_sections(path, data)
            if secs is None:
                return None
            found = set()
            for off, size in secs:
                # One byte before the section so a name at its start matches.
                start = off - 1 if off > 0 else off
                for m in NAME_RE.finditer(data, start, off + size):
                    found.add(m.group().decode("ascii"))
            return found


def cxxfilt(names):
    """c++filt's output for each name (one process for all)."""
    if not names:
        return []
    try:
        p = subprocess.run(["c++filt"], input="\n".join(names) + "\n", capture_output=True,
                           text=True, check=True)
    except FileNotFoundError:
        die("c++filt not found (Debian package binutils)")
    out = p.stdout.split("\n")
    if len(out) < len(names):
        die("c++filt returned fewer lines than names")
    return out[:len(names)]


def thin(names, most):
    names = sorted(names)
    if most <= 0 or len(names) <= most:
        return names
    step = len(names) / most
    return [names[int(i * step)] for i in range(most)]


def write(out_dir, stem, kept, total):
    path = os.path.join(out_dir, stem + ".txt")
    with open(path, "w") as f:
        for n in kept:
            f.write(n + "\n")
    print(f"{path}: {len(kept)} names (of {total})")


def library_stem(path):
    base = os.path.basename(path)
    return base.split(".so")[0]


def from_libraries(args):
    files = []
    for p in args.inputs:
        if os.path.isdir(p):
            for root, _, fs in os.walk(p):
                for f in sorted(fs):
                    if ".so" in f:
                        files.append(os.path.join(root, f))
        else:
            files.append(p)
    seen = set()
    for f in files:
        real = os.path.realpath(f)
        if real in seen or not os.path.isfile(real):
            continue
        seen.add(real)
        found = names_of_library(real)
        if not found:
            continue
        cand = sorted(found)
        dem = cxxfilt(cand)
        kernels = [n for n, d in zip(cand, dem) if d != n and d.endswith(")")]
        if not kernels:
            continue
        write(args.out, args.prefix + library_stem(real), thin(kernels, args.max), len(kernels))


def from_nsys(args):
    for f in args.inputs:
        db = sqlite3.connect(f"file:{f}?immutable=1", uri=True)
        try:
            rows = db.execute(
                "SELECT DISTINCT s.value FROM CUPTI_ACTIVITY_KIND_KERNEL k "
                "JOIN StringIds s ON s.id = k.mangledName").fetchall()
        except sqlite3.Error as e:
            die(f"{f}: {e}")
        finally:
            db.close()
        cand = sorted({r[0] for r in rows if r[0] and r[0].startswith("_Z")})
        dem = cxxfilt(cand)
        kept = [n for n, d in zip(cand, dem) if d != n]
        stem = os.path.splitext(os.path.basename(f))[0]
        write(args.out, args.prefix + stem, thin(kept, args.max), len(kept))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True, help="folder for the .txt files")
    ap.add_argument("--max", type=int, default=1000, help="names per file at most (0: all)")
    ap.add_argument("--prefix", default="", help="prefix of the file names")
    ap.add_argument("--nsys", action="store_true", help="inputs are nsys SQLite exports")
    ap.add_argument("inputs", nargs="+")
    args = ap.parse_args()
    if not os.path.isdir(args.out):
        die(f"{args.out}: not a folder")
    if args.nsys:
        from_nsys(args)
    else:
        from_libraries(args)


if __name__ == "__main__":
    main()
