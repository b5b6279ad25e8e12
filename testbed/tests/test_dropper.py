"""dropper.py's classic-BPF programs: the assembled instructions, and what they do to frames
(run here by a small interpreter of the instructions they use)."""

import struct

import pytest

import dropper

OK, SHOT = dropper.TC_ACT_OK, dropper.TC_ACT_SHOT


def parse(bytecode):
    """`N,code jt jf k,...` into [(code, jt, jf, k)], checking N."""
    head, *ins = bytecode.split(",")
    assert int(head) == len(ins)
    return [tuple(int(x) for x in i.split()) for i in ins]


def execute(bytecode, frame, rand):
    """Runs a classic-BPF program on `frame` as the kernel would, SKF_AD_RANDOM = `rand`."""
    prog, a, x, mem, pc = parse(bytecode), 0, 0, [0] * 16, 0
    m32 = 0xFFFFFFFF

    def load(off, size):
        if off == dropper.SKF_AD_RANDOM:
            return rand
        if off + size > len(frame):
            return None  # the kernel ends the program: return 0 (TC_ACT_OK)
        return int.from_bytes(frame[off:off + size], "big")

    while True:
        code, jt, jf, k = prog[pc]
        pc += 1
        sizes = {dropper.LD_W_ABS: 4, dropper.LD_H_ABS: 2, dropper.LD_B_ABS: 1}
        if code in sizes:
            a = load(k, sizes[code])
        elif code == dropper.LD_W_IND:
            a = load(x + k, 4)
        elif code == dropper.LDX_MSH:
            v = load(k, 1)
            if v is None:
                return OK
            x = 4 * (v & 0xF)
            continue
        elif code == dropper.LD_IMM:
            a = k
        elif code == dropper.LD_MEM:
            a = mem[k]
        elif code == dropper.ST:
            mem[k] = a
        elif code == dropper.TAX:
            x = a
        elif code == dropper.ALU_MUL_K:
            a = (a * k) & m32
        elif code == dropper.ALU_RSH_K:
            a = a >> k
        elif code == dropper.ALU_XOR_X:
            a = a ^ x
        elif code in (dropper.JEQ_K, dropper.JGT_K, dropper.JGE_K):
            cond = {dropper.JEQ_K: a == k, dropper.JGT_K: a > k, dropper.JGE_K: a >= k}[code]
            pc += jt if cond else jf
        elif code == dropper.RET_K:
            return k
        else:
            raise AssertionError(f"opcode {code:#x} not expected")
        if a is None:
            return OK


def udp4(src, dst, sport, dport, shim=False):
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 28, 0, 0, 64, 17, 0, bytes(src), bytes(dst))
    udp = struct.pack("!HHHH", sport, dport, 8, 0)
    return eth(0x0800, shim) + ip + udp


def udp6(src, dst, sport, dport, shim=False):
    ip = struct.pack("!IHBB16s16s", 6 << 28, 8, 17, 64, bytes(src), bytes(dst))
    return eth(0x86DD, shim) + ip + struct.pack("!HHHH", sport, dport, 8, 0)


def eth(ethertype, shim):
    macs = bytes(12)
    if shim:
        # EtherType 0x88B5, then Canary's 8-byte shim, whose last 2 bytes are the frame's own.
        return macs + struct.pack("!H", 0x88B5) + bytes(6) + struct.pack("!H", ethertype)
    return macs + struct.pack("!H", ethertype)


def test_the_plain_dropper_is_four_instructions_around_its_threshold():
    # A = random; if A > THR pass else drop; THR = loss * 2^32 - 1 (docs/testbed.md).
    thr = round(0.3 * 2**32) - 1
    assert dropper.random_drop(0.3) == (
        f"4,32 0 0 {dropper.SKF_AD_RANDOM},37 1 0 {thr},6 0 0 2,6 0 0 0")
    assert dropper.random_drop(0.0) == "1,6 0 0 0"
    assert dropper.threshold(1.0) == 2**32 - 1
    assert dropper.threshold(0.0) is None
    b = dropper.random_drop(0.3)
    assert execute(b, udp4([10, 0, 0, 1], [10, 0, 0, 2], 1, 2), thr) == SHOT
    assert execute(b, udp4([10, 0, 0, 1], [10, 0, 0, 2], 1, 2), thr + 1) == OK
    assert execute(dropper.random_drop(1.0), b"\0" * 60, 2**32 - 1) == SHOT


def test_a_share_of_one_is_the_plain_dropper_and_nothing_to_drop_passes_everything():
    assert dropper.flow_share_drop(0.2, 1.0, 7) == dropper.random_drop(0.2)
    assert dropper.flow_share_drop(0.2, 0.0, 7) == "1,6 0 0 0"
    assert dropper.flow_share_drop(0.0, 0.5, 7) == "1,6 0 0 0"


def test_the_share_program_starts_by_finding_the_ip_header_behind_the_shim():
    ins = parse(dropper.flow_share_drop(1.0, 0.5, 7))
    assert ins[0] == (dropper.LD_H_ABS, 0, 0, 12)
    assert ins[1][0] == dropper.JEQ_K and ins[1][3] == 0x88B5
    assert ins[2] == (dropper.LD_H_ABS, 0, 0, 20)  # the frame's own EtherType in the shim
    # Every jump lands inside the program, and it ends with the random tail.
    for i, (code, jt, jf, _) in enumerate(ins):
        if code in (dropper.JEQ_K, dropper.JGT_K, dropper.JGE_K):
            assert i + 1 + max(jt, jf) < len(ins)
    assert ins[-3:] == [(dropper.JGT_K, 1, 0, 2**32 - 1), (dropper.RET_K, 0, 0, SHOT),
                        (dropper.RET_K, 0, 0, OK)]
    # The seed is loaded once per header kind (shim or not, IPv4 or IPv6).
    assert [k for c, _, _, k in ins if c == dropper.LD_IMM] == [7] * 4


def flows(n):
    return [([10, 0, i // 4, 2], [10, 1, i % 4, 3], 1000 + i, 4000 + 7 * i) for i in range(n)]


@pytest.mark.parametrize("make", [udp4, udp6])
def test_a_share_drops_whole_flows_the_same_with_and_without_the_shim(make):
    b = dropper.flow_share_drop(1.0, 0.5, dropper.link_seed("edge1_0", "agg1_1"))
    dropped = set()
    for k, (src, dst, sp, dp) in enumerate(flows(64)):
        if make is udp6:
            src, dst = [0xFD, 0] + src * 3 + [0] * 2, [0xFD, 0] + dst * 3 + [0] * 2
        verdicts = {execute(b, make(src, dst, sp, dp, shim), r)
                    for shim in (False, True) for r in (0, 2**31, 2**32 - 2)}
        assert len(verdicts) == 1, f"flow {k}: {verdicts}"
        if verdicts == {SHOT}:
            dropped.add(k)
    assert 20 <= len(dropped) <= 44, len(dropped)
    other = dropper.flow_share_drop(1.0, 0.5, dropper.link_seed("agg1_1", "edge1_0"))
    theirs = {k for k, (s, d, sp, dp) in enumerate(flows(64))
              if make is udp4 and execute(other, udp4(s, d, sp, dp), 0) == SHOT}
    if make is udp4:
        assert theirs != dropped


def test_a_share_lets_frames_without_a_five_tuple_pass():
    b = dropper.flow_share_drop(1.0, 0.5, 1)
    arp = eth(0x0806, False) + bytes(28)
    assert execute(b, arp, 0) == OK
    assert execute(b, eth(0x0806, True) + bytes(28), 0) == OK


def test_link_seeds_are_the_crc_of_the_directed_link():
    import zlib
    assert dropper.link_seed("a", "b") == zlib.crc32(b"a->b")
    assert dropper.link_seed("a", "b") != dropper.link_seed("b", "a")


def test_a_flow_in_the_share_drops_at_the_faults_rate():
    b = dropper.flow_share_drop(0.2, 0.5, 3)
    thr = dropper.threshold(0.2)
    hit = next(f for f in flows(64)
               if execute(dropper.flow_share_drop(1.0, 0.5, 3), udp4(*f), 0) == SHOT)
    assert execute(b, udp4(*hit), thr) == SHOT
    assert execute(b, udp4(*hit), thr + 1) == OK
