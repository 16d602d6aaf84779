#!/usr/bin/python3
"""AVX2 and AVX-512 instructions only inside the kernels' paths (docs/building.md).

Disassembles the binary (objdump -d) and sorts every instruction beyond the baseline x86-64-v2
into the function that holds it: AVX-512 (a zmm register or a mask register k0-k7, or an
EVEX-only mnemonic), AVX or AVX2 (a ymm register, or any VEX mnemonic, v...), and the scalar
instructions x86-64-v3 adds (BMI1, BMI2, LZCNT, MOVBE). A function may hold them only when it is
in the code of one of the paths' objects (by address, from the link map): kern_avx2.c.o and rng_avx2.c.o (AVX2 and x86-64-v3, no
AVX-512), kern_avx512.c.o and rng_avx512.c.o (anything). Every other function, the portable
path's included, must hold none. The paths' objects must hold their instructions (a check that
cannot fail is none): at least one AVX-512 instruction in the AVX-512 path's functions and one
AVX2 instruction in the AVX2 path's.

usage: tests/isa_check.py BINARY MAP   (MAP: the linker's map of BINARY, build/aimsweep.map)
Exit 0 when the binary keeps to this, 1 with a line per offending function otherwise.
"""
import re
import subprocess
import sys

V3_SCALAR = {"andn", "bextr", "blsi", "blsmsk", "blsr", "bzhi", "mulx", "pdep", "pext", "rorx",
             "sarx", "shlx", "shrx", "lzcnt", "tzcnt", "movbe"}
NOT_VECTOR = {"verr", "verw", "vmcall", "vmlaunch", "vmresume", "vmxoff", "vmxon", "vmread",
              "vmwrite", "vmptrld", "vmptrst", "vmclear", "vmfunc"}
MASK = re.compile(r"%k[0-7]\b|\{%k[0-7]\}")


def kind(mnemonic, operands):
    """0 baseline, 1 x86-64-v3 (AVX, AVX2, FMA, BMI...), 2 AVX-512."""
    if "%zmm" in operands or MASK.search(operands) or re.search(r"%[xy]mm(1[6-9]|2\d|3[01])\b", operands):
        return 2
    if mnemonic.startswith("k") and MASK.search(operands):
        return 2
    if "%ymm" in operands:
        return 1
    if mnemonic.startswith("v") and mnemonic not in NOT_VECTOR:
        return 1
    if mnemonic in V3_SCALAR:
        return 1
    return 0


def path_ranges(mapfile):
    """The address ranges of the paths' objects' code in the binary, from the linker's map, each
    with the highest kind its functions may hold."""
    levels = {"kern_avx512.c.o": 2, "rng_avx512.c.o": 2, "kern_avx2.c.o": 1, "rng_avx2.c.o": 1}
    entry = re.compile(r"^\s*(\.\S+)?\s+0x([0-9a-f]+)\s+0x([0-9a-f]+)\s+\S*\((\S+\.o)\)$")
    ranges, section = [], None
    for line in open(mapfile):
        m = entry.match(line.rstrip("\n"))
        if not m:
            name = line.split()
            section = name[0] if len(name) == 1 and name[0].startswith(".") else None
            continue
        sec = m.group(1) or section
        section = None
        start, size, obj = int(m.group(2), 16), int(m.group(3), 16), m.group(4)
        if sec and sec.startswith(".text") and size and obj in levels:
            ranges.append((start, start + size, levels[obj]))
    return ranges


def main():
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    binary, mapfile = sys.argv[1], sys.argv[2]
    ranges = path_ranges(mapfile)
    dis = subprocess.run(["objdump", "-d", "--no-show-raw-insn", binary], capture_output=True,
                         text=True, check=True).stdout
    func, level, found, seen, funcs = None, 0, {}, {1: 0, 2: 0}, set()
    head = re.compile(r"^([0-9a-f]+) <([^>]+)>:$")
    for line in dis.splitlines():
        m = head.match(line)
        if m:
            addr, func = int(m.group(1), 16), m.group(2)
            level = max([lv for lo, hi, lv in ranges if lo <= addr < hi], default=0)
            if level:
                funcs.add(func)
            continue
        parts = line.split("\t")
        if func is None or len(parts) < 2:
            continue
        ins = parts[1].strip().split(None, 1)
        if not ins:
            continue
        k = kind(ins[0], ins[1] if len(ins) > 1 else "")
        if not k:
            continue
        if level >= k:
            seen[k] += 1
            continue
        found.setdefault(func, [0, 0, ""])
        found[func][k - 1] += 1
        found[func][2] = found[func][2] or parts[1].strip()
    bad = 0
    for f, (v3, v4, example) in sorted(found.items()):
        print(f"{f}: {v4} AVX-512 and {v3} AVX/AVX2/x86-64-v3 instructions outside the kernels' "
              f"paths (e.g. {example})")
        bad += 1
    print(f"isa_check: {len(funcs)} functions of the AVX2 and AVX-512 paths hold {seen[1]} AVX2 and "
          f"{seen[2]} AVX-512 instructions; {bad} other functions hold some")
    if not ranges or seen[1] == 0 or seen[2] == 0:
        print("isa_check: no AVX2 or no AVX-512 instructions in the paths' functions: the check "
              "reads nothing")
        return 1
    return 1 if bad else 0


sys.exit(main())
