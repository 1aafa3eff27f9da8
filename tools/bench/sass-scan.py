#!/usr/bin/env python3
"""Coarse order of the sm_90a instructions that matter for the FA3 overlap,
read straight from a cubin's .text sections, for machines without cuobjdump
or nvdisasm (the build machine has only ptxas).

Prints, per kernel, a run-length list `offset:CLASS[xN]` of HGMMA (A from
shared memory), HGMMA.rA (A from registers: P V), WARPGROUP.ARRIVE,
WARPGROUP.DEPBAR (the wgmma waits, in program order: after P V the first is
`wait_group 1`, the second `wait_group 0`), MUFU (EX2), F2FP (the P pack),
VOTE, BAR.RED and BRA. The classes come from the low 12 opcode bits of each
128-bit instruction, matched against cuobjdump -sass of CUDA 13 on the H200;
anything else is left out. A check of the FA3 order reads, in the loop:
HGMMA.rA ... DEPBAR MUFU ... DEPBAR ... F2FP (exponentials before the wait
for P V, the pack after it).

Usage: tools/bench/sass-scan.py KERNEL.cubin
"""
import struct
import sys

OPCODES = {0x308: 'MUFU', 0x23e: 'F2FP', 0x9c5: 'WARPGROUP', 0x9f0: 'HGMMA',
           0xdf0: 'HGMMA.rA', 0x947: 'BRA', 0x806: 'VOTE', 0xb1d: 'BAR.RED'}


def sections(data):
    shoff, = struct.unpack_from('<Q', data, 0x28)
    entsize, num, strndx = struct.unpack_from('<HHH', data, 0x3A)
    heads = [struct.unpack_from('<IIQQQQ', data, shoff + i * entsize)
             for i in range(num)]
    names = heads[strndx][4]
    for name, _, _, _, off, size in heads:
        end = data.index(b'\0', names + name)
        yield data[names + name:end].decode(), off, size


def scan(data, off, size):
    runs = []
    for pc in range(0, size - 15, 16):
        lo, = struct.unpack_from('<Q', data, off + pc)
        cls = OPCODES.get(lo & 0xfff)
        if cls is None:
            continue
        if cls == 'WARPGROUP':
            cls = 'DEPBAR' if (lo >> 47) & 1 else 'ARRIVE'
        if runs and runs[-1][1] == cls:
            runs[-1][2] += 1
        else:
            runs.append([pc, cls, 1])
    return ' '.join('%x:%s%s' % (pc, c, 'x%d' % n if n > 1 else '')
                    for pc, c, n in runs)


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    data = open(sys.argv[1], 'rb').read()
    if data[:4] != b'\x7fELF':
        sys.exit('%s: not an ELF cubin' % sys.argv[1])
    for name, off, size in sections(data):
        if name.startswith('.text.'):
            print('%s\n  %s' % (name[len('.text.'):], scan(data, off, size)))


if __name__ == '__main__':
    main()
