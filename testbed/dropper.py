"""Classic-BPF programs that drop frames at random, for `tc filter ... bpf da bytecode`.

This kernel has no sch_netem, so the testbed injects loss with a filter in the clsact hook. A
filter returns TC_ACT_SHOT (2) to drop a frame and TC_ACT_OK (0) to pass it.

`random_drop(loss)` drops every frame with probability `loss`. `flow_share_drop(loss, share,
seed)` drops only frames of the flows whose 5-tuple hashes (with `seed`, one per link) below
`share`: the same flows every time, other flows on another link, as `flows:` in a fault file
means. Frames it cannot read a 5-tuple from (ARP, LLDP) pass.

Written by hand: no Python package assembles classic BPF, and the programs are a few dozen
instructions. The opcodes are linux/filter.h's.
"""
import zlib

# linux/filter.h: class | size | mode, class | op | source.
LD_W_ABS, LD_H_ABS, LD_B_ABS, LD_W_IND = 0x20, 0x28, 0x30, 0x40
LD_IMM, LD_MEM, LDX_MSH, ST = 0x00, 0x60, 0xB1, 0x02
ALU_MUL_K, ALU_RSH_K, ALU_XOR_X = 0x24, 0x74, 0xAC
JEQ_K, JGT_K, JGE_K = 0x15, 0x25, 0x35
RET_K, TAX = 0x06, 0x07
SKF_AD_RANDOM = 0xFFFFF000 + 56

TC_ACT_OK, TC_ACT_SHOT = 0, 2

ETHERTYPE_IPV4, ETHERTYPE_IPV6, ETHERTYPE_CANARY = 0x0800, 0x86DD, 0x88B5
ETH, SHIM = 14, 8
PROTO_TCP, PROTO_UDP = 6, 17

# Multipliers of murmur3's 32-bit finalizer and the golden ratio: odd, with well-spread bits.
GOLDEN, MIX1, MIX2 = 0x9E3779B1, 0x85EBCA6B, 0xC2B2AE35


class Program:
    """Instructions with symbolic forward jumps, assembled into tc's `bytecode` string."""

    def __init__(self):
        self.ins = []      # [code, jt, jf, k], jt/jf a label or an offset
        self.labels = {}

    def op(self, code, k=0, jt=0, jf=0):
        self.ins.append([code, jt, jf, k & 0xFFFFFFFF])

    def label(self, name):
        self.labels[name] = len(self.ins)

    def bytecode(self):
        out = []
        for i, (code, jt, jf, k) in enumerate(self.ins):
            offs = []
            for j in (jt, jf):
                if isinstance(j, str):
                    j = self.labels[j] - i - 1
                if not 0 <= j <= 255:
                    raise ValueError(f"instruction {i}: jump {j} out of classic BPF's range")
                offs.append(j)
            out.append(f"{code} {offs[0]} {offs[1]} {k}")
        if len(out) > 4096:
            raise ValueError("classic BPF allows 4096 instructions")
        return f"{len(out)}," + ",".join(out)


def threshold(p):
    """The largest u32 t such that P(u32 <= t) = p for a uniform u32, or None when p = 0."""
    t = min(round(p * 2**32), 2**32) - 1
    return None if t < 0 else t


def _random_tail(prog, loss):
    """Drops with probability `loss`: A = random u32; drop iff A <= threshold."""
    t = threshold(loss)
    if t is None:
        prog.op(RET_K, TC_ACT_OK)
        return
    prog.op(LD_W_ABS, SKF_AD_RANDOM)
    prog.op(JGT_K, t, jt="pass", jf=0)
    prog.op(RET_K, TC_ACT_SHOT)
    prog.label("pass")
    prog.op(RET_K, TC_ACT_OK)


def random_drop(loss):
    prog = Program()
    _random_tail(prog, loss)
    return prog.bytecode()


def _mix_in(prog, load):
    """h = (h ^ word) * GOLDEN, h in A, using M[0] and X; `load` puts the word in A."""
    prog.op(ST, 0)
    load()
    prog.op(TAX)
    prog.op(LD_MEM, 0)
    prog.op(ALU_XOR_X)
    prog.op(ALU_MUL_K, GOLDEN)


def _xorshift(prog, bits):
    """h ^= h >> bits."""
    prog.op(ST, 0)
    prog.op(ALU_RSH_K, bits)
    prog.op(TAX)
    prog.op(LD_MEM, 0)
    prog.op(ALU_XOR_X)


def _hash_ip(prog, base, v6):
    """A = hash of the 5-tuple of the IP header at `base`, then a jump to `decide`."""
    words = range(base + 8, base + 40, 4) if v6 else (base + 12, base + 16)
    for off in words:
        _mix_in(prog, lambda off=off: prog.op(LD_W_ABS, off))
    _mix_in(prog, lambda: prog.op(LD_B_ABS, base + (6 if v6 else 9)))
    if v6:
        # Ports follow a fixed 40-byte header (the testbed's flows carry no extension headers).
        _mix_in(prog, lambda: prog.op(LD_W_ABS, base + 40))
    else:
        def ports():
            prog.op(LDX_MSH, base)          # X = 4 * IHL: options move the ports
            prog.op(LD_W_IND, base)         # A = the 4 bytes at base + X
        _mix_in(prog, ports)
    prog.op(JEQ_K, 0, jt="decide", jf="decide")


def flow_share_drop(loss, share, seed):
    """Drops with probability `loss` the frames of the flows whose hash falls below `share`."""
    cut = threshold(share)
    if cut is None or threshold(loss) is None:
        prog = Program()
        prog.op(RET_K, TC_ACT_OK)
        return prog.bytecode()
    if cut == 2**32 - 1:
        return random_drop(loss)
    prog = Program()
    # Fabric links carry the Canary shim; host links carry the frame as the host sent it.
    prog.op(LD_H_ABS, 12)
    prog.op(JEQ_K, ETHERTYPE_CANARY, jt=0, jf="plain")
    prog.op(LD_H_ABS, ETH + SHIM - 2)
    prog.op(JEQ_K, ETHERTYPE_IPV4, jt="v4_shim", jf=0)
    prog.op(JEQ_K, ETHERTYPE_IPV6, jt="v6_shim", jf="pass")
    prog.label("plain")
    prog.op(JEQ_K, ETHERTYPE_IPV4, jt="v4", jf=0)
    prog.op(JEQ_K, ETHERTYPE_IPV6, jt="v6", jf="pass")
    for name, base, v6 in (("v4_shim", ETH + SHIM, False), ("v6_shim", ETH + SHIM, True),
                           ("v4", ETH, False), ("v6", ETH, True)):
        prog.label(name)
        prog.op(LD_IMM, seed)
        _hash_ip(prog, base, v6)
    prog.label("decide")
    # Finalize (murmur3's avalanche) so every input bit reaches the top bits compared below.
    _xorshift(prog, 16)
    prog.op(ALU_MUL_K, MIX1)
    _xorshift(prog, 13)
    prog.op(ALU_MUL_K, MIX2)
    _xorshift(prog, 16)
    prog.op(JGT_K, cut, jt="pass", jf=0)
    _random_tail(prog, loss)
    return prog.bytecode()


def link_seed(x, y):
    """One seed per directed link, so a share picks other flows on another link."""
    return zlib.crc32(f"{x}->{y}".encode())
