"""gemm_mma_v2_sim.py: gemm_mma.cu v2's data movement and fragment mapping, replayed byte for byte on the CPU, against
the chunk-order one-column GEMV (reduce.cuh) computed straight from the decoded blocks; every output compared by bits.

Replays: mm2_issue_w / mm2_issue_x (16- and 8-byte pieces into a stage, zero-filled past a partial group, past nb and
clamped rows / columns), mm2_afrag (the permuted k: Q8_0R bytes 8tg..8tg+7, Q4_0R nibble bytes 8(tg&1).. low or high),
the B loads (8 bytes at 32t + 8tg of a column's hi / lo), the (d, Σq) pairs, mma.m16n8k32 as the PTX ISA lays out
its fragments (A row-major 16x32 from a0..a3, B 32x8 from b0, b1, D 16x8 to d0..d3), the epilogue's leaf and its
8-leaf tree, the level-3/4 registers across steps and the chunk sums. Q4_0R and Q8_0R (Q4_KR's fma is not replayed:
numpy has no fused multiply-add in float32). Not replayed: cp.async timing, the pipeline's stage rotation (the same
bytes land in whichever stage), bank conflicts. Run: python3 dev/gemm_mma_v2_sim.py (prints mismatches; want 0)."""
import numpy as np

f32 = np.float32
rng = np.random.default_rng(7)
XCOL = 544


def fadd(a, b): return f32(f32(a) + f32(b))
def fmul(a, b): return f32(f32(a) * f32(b))


def repack_rows(T, nb, n_out):
    """Random repacked rows (tcu.h): groups of 8 blocks = 16 bytes of f16 scales, then the quants (16 or 32 a block);
    a last partial group of k blocks is 16 + QB·k bytes, its unused scale slots zero. Rows padded to 16 bytes."""
    QB = 16 if T == 'q4' else 32
    GB = 16 + 8 * QB
    ng = (nb + 7) // 8
    rowb = (nb // 8) * GB + ((16 + QB * (nb % 8)) if nb % 8 else 0)
    stride = (rowb + 15) & ~15
    W = np.zeros((n_out, stride + 64), np.uint8)  # slack past the end, never read by a correct kernel
    for r in range(n_out):
        for g in range(ng):
            k = min(8, nb - 8 * g)
            sc = np.zeros(8, np.float16)
            sc[:k] = (rng.uniform(-0.02, 0.02, k) + 0.001).astype(np.float16)
            base = g * GB
            W[r, base:base + 16] = np.frombuffer(sc.tobytes(), np.uint8)
            W[r, base + 16: base + 16 + QB * k] = rng.integers(0, 256, QB * k, dtype=np.uint8)
    return W, stride, GB, QB


def block_vals(T, W, r, b, GB, QB):
    g, t = b // 8, b % 8
    dw = f32(np.frombuffer(W[r, g * GB + 2 * t: g * GB + 2 * t + 2].tobytes(), np.float16)[0])
    q = W[r, g * GB + 16 + QB * t: g * GB + 16 + QB * (t + 1)].astype(np.int64)
    if T == 'q4':
        e = np.concatenate([q & 15, q >> 4])  # element i low nibble of byte i, element i + 16 high
    else:
        e = q.astype(np.int8).astype(np.int64)
    return dw, e


def x16(m, nb):
    x = rng.standard_normal((m, nb * 32)) * np.where(rng.random((m, nb * 32)) < 0.01, 40, 1)
    if nb >= 2: x[min(3, m - 1), 32:64] = 0
    hi = np.zeros((m, nb * 32), np.int8); lo = np.zeros_like(hi); ds = np.zeros((m, nb, 2), np.int64)
    for c in range(m):
        for b in range(nb):
            v = x[c, 32 * b: 32 * b + 32].astype(np.float32)
            a = np.max(np.abs(v))
            d = f32(a / f32(32512.0))
            idv = f32(f32(32512.0) / a) if a != 0 else f32(0)
            q = np.rint(v * idv).astype(np.int64).clip(-32512, 32512)
            l = ((q & 0xFF) ^ 0x80) - 0x80
            hi[c, 32 * b: 32 * b + 32] = (q - l) // 256
            lo[c, 32 * b: 32 * b + 32] = l
            ds[c, b] = (np.frombuffer(np.float32(d).tobytes(), np.int32)[0], q.sum())
    return hi, lo, ds


def leaf(T, dw, dx, isum):
    return fmul(fmul(dw, dx), f32(isum))


def gemv_chunk(T, W, GB, QB, hi, lo, ds, nb, r, c):
    """The one-column GEMV's chunk order from the decoded blocks: leaves, the 32-lane butterfly, chunks in order."""
    acc = f32(-0.0)
    for j in range((nb + 31) // 32):
        v = []
        for l in range(32):
            b = 32 * j + l
            if b >= nb: v.append(f32(0.0)); continue
            dw, e = block_vals(T, W, r, b, GB, QB)
            q = 256 * hi[c, 32 * b: 32 * b + 32].astype(np.int64) + lo[c, 32 * b: 32 * b + 32]
            isum = int((e * q).sum()) - (8 * int(ds[c, b, 1]) if T == 'q4' else 0)
            assert (e * q).sum() == sum(int(a) * int(bq) for a, bq in zip(e, q))
            dx = np.frombuffer(np.int32(ds[c, b, 0]).tobytes(), np.float32)[0]
            v.append(leaf(T, dw, dx, isum))
        for o in (1, 2, 4, 8, 16):
            v = [fadd(v[l], v[l ^ o]) for l in range(32)]
        acc = fadd(acc, v[0])
    return acc


def u32(b): return int.from_bytes(bytes(b), 'little')
def s8x4(w): return [((w >> (8 * i)) & 0xFF) - (256 if (w >> (8 * i)) & 0x80 else 0) for i in range(4)]


def build_stage(T, W, GB, QB, hi, lo, ds, nb, n_out, m, r0, c0, BM, BN, SW, g):
    """Group g's bytes as mm2_issue_w / mm2_issue_x put them in a stage (zeros past a partial group and past nb)."""
    ws = np.zeros(BM * SW, np.uint8); xs = np.zeros(BN * XCOL, np.uint8); dsd = np.zeros((8, BN, 2), np.int64)
    left = nb - 8 * g
    gbytes = GB if left >= 8 else (16 + QB * left if left > 0 else 0)
    for rr in range(BM):
        r = min(r0 + rr, n_out - 1)
        for p in range(GB // 16):
            if 16 * p < gbytes:
                ws[rr * SW + 16 * p: rr * SW + 16 * p + 16] = W[r, g * GB + 16 * p: g * GB + 16 * p + 16]
    for cc in range(BN):
        c = min(c0 + cc, m - 1)
        for pl, P in ((0, hi), (1, lo)):
            for p in range(16):
                b = 8 * g + p // 2
                if b < nb:
                    src = P[c, 32 * b + 16 * (p & 1): 32 * b + 16 * (p & 1) + 16].view(np.uint8)
                    xs[cc * XCOL + 256 * pl + 16 * p: cc * XCOL + 256 * pl + 16 * p + 16] = src
        for t in range(8):
            if 8 * g + t < nb: dsd[t, cc] = ds[c, 8 * g + t]
    return ws, xs, dsd


def warp_sub(T, QB, SW, stage, rw0, cw0, nt):
    """mm2_sub: one warp's 8-leaf subtrees of n8 tile nt, {(lane, e): value}, from every lane's registers."""
    ws, xs, dsd = stage
    q0 = {}; q1 = {}; q2 = {}; sub = {}
    for t in range(8):
        A = np.zeros((16, 32), np.int64); Bh = np.zeros((32, 8), np.int64); Bl = np.zeros_like(Bh)
        for lane in range(32):
            gid, tg = lane >> 2, lane & 3
            xc = (cw0 + 8 * nt + gid) * XCOL + 8 * tg
            bh = (u32(xs[xc + 32 * t: xc + 32 * t + 4]), u32(xs[xc + 32 * t + 4: xc + 32 * t + 8]))
            bl = (u32(xs[xc + 256 + 32 * t: xc + 260 + 32 * t]), u32(xs[xc + 260 + 32 * t: xc + 264 + 32 * t]))
            a = [0] * 4
            for h in range(2):
                qa = (rw0 + gid + 8 * h) * SW + 16 + QB * t
                if T == 'q8':
                    a[h] = u32(ws[qa + 8 * tg: qa + 8 * tg + 4]); a[2 + h] = u32(ws[qa + 8 * tg + 4: qa + 8 * tg + 8])
                else:
                    ux, uy = u32(ws[qa + 8 * (tg & 1): qa + 8 * (tg & 1) + 4]), u32(ws[qa + 8 * (tg & 1) + 4: qa + 8 * (tg & 1) + 8])
                    sh = 4 * (tg >> 1)
                    a[h] = (ux >> sh) & 0x0F0F0F0F; a[2 + h] = (uy >> sh) & 0x0F0F0F0F
            # PTX: a0 A[gid][4tg+i], a1 A[gid+8][4tg+i], a2 A[gid][16+4tg+i], a3 A[gid+8][16+4tg+i]
            for i, v in enumerate(s8x4(a[0])): A[gid, 4 * tg + i] = v
            for i, v in enumerate(s8x4(a[1])): A[gid + 8, 4 * tg + i] = v
            for i, v in enumerate(s8x4(a[2])): A[gid, 16 + 4 * tg + i] = v
            for i, v in enumerate(s8x4(a[3])): A[gid + 8, 16 + 4 * tg + i] = v
            # b0 B[4tg+i][gid], b1 B[16+4tg+i][gid]
            for i, v in enumerate(s8x4(bh[0])): Bh[4 * tg + i, gid] = v
            for i, v in enumerate(s8x4(bh[1])): Bh[16 + 4 * tg + i, gid] = v
            for i, v in enumerate(s8x4(bl[0])): Bl[4 * tg + i, gid] = v
            for i, v in enumerate(s8x4(bl[1])): Bl[16 + 4 * tg + i, gid] = v
        Dh, Dl = A @ Bh, A @ Bl
        for lane in range(32):
            gid, tg = lane >> 2, lane & 3
            dd = [dsd[t, cw0 + 8 * nt + 2 * tg], dsd[t, cw0 + 8 * nt + 2 * tg + 1]]
            dws = []
            for h in range(2):
                g0 = (rw0 + gid + 8 * h) * SW
                dws.append(f32(np.frombuffer(ws[g0 + 2 * t: g0 + 2 * t + 2].tobytes(), np.float16)[0]))
            for e in range(4):
                row, col = gid + 8 * (e >> 1), 2 * tg + (e & 1)  # d0..d3
                isum = int(Dh[row, col]) * 256 + int(Dl[row, col])
                if T == 'q4': isum -= 8 * int(dd[e & 1][1])
                dx = np.frombuffer(np.int32(dd[e & 1][0]).tobytes(), np.float32)[0]
                p = leaf(T, dws[e >> 1], dx, isum)
                key = (lane, e)
                if t % 2 == 0: q0[key] = p
                else:
                    v = fadd(q0[key], p)
                    if t in (1, 5): q1[key] = v
                    elif t == 3: q2[key] = fadd(q1[key], v)
                    else: sub[key] = fadd(q2[key], fadd(q1[key], v))
    return sub


def v2(T, W, stride, GB, QB, hi, lo, ds, nb, n_out, m, WR, WC, NT, KW):
    SW = 288 if T == 'q8' else 144
    BM, BN = 16 * WR, 8 * NT * WC
    y = np.full((m, n_out), np.nan, np.float32)
    KS, KT = ((nb + 7) // 8 + KW - 1) // KW, (4 // KW) * ((nb + 31) // 32)
    for r0 in range(0, n_out, BM):
        for c0 in range(0, m, BN):
            acc = {}; l3 = {}; l4 = {}
            for k in range(KT):
                live = k < KS
                stages = [build_stage(T, W, GB, QB, hi, lo, ds, nb, n_out, m, r0, c0, BM, BN, SW, KW * k + q)
                          if live else None for q in range(KW)]
                for wi in range(WR * WC):
                    rw0, cw0 = 16 * (wi % WR), 8 * NT * (wi // WR)
                    for nt in range(NT):
                        subs = [warp_sub(T, QB, SW, stages[q], rw0, cw0, nt) if live else {} for q in range(KW)]
                        for lane in range(32):
                            for e in range(4):
                                K = (wi, nt, lane, e)
                                sq = [subs[q].get((lane, e), f32(0.0)) for q in range(KW)]
                                if KW == 1:
                                    sv, s = sq[0], k & 3
                                    if s == 0: l3[K] = sv
                                    elif s == 1: l4[K] = fadd(l3[K], sv)
                                    elif s == 2: l3[K] = sv
                                    else: acc[K] = fadd(acc.get(K, f32(-0.0)), fadd(l4[K], fadd(l3[K], sv)))
                                elif KW == 2:
                                    s01 = fadd(sq[0], sq[1])
                                    if k & 1 == 0: l4[K] = s01
                                    else: acc[K] = fadd(acc.get(K, f32(-0.0)), fadd(l4[K], s01))
                                else:
                                    acc[K] = fadd(acc.get(K, f32(-0.0)), fadd(fadd(sq[0], sq[1]), fadd(sq[2], sq[3])))
            for (wi, nt, lane, e), v in acc.items():
                rw0, cw0 = 16 * (wi % WR), 8 * NT * (wi // WR)
                gid, tg = lane >> 2, lane & 3
                r, c = r0 + rw0 + gid + 8 * (e >> 1), c0 + cw0 + 8 * nt + 2 * tg + (e & 1)
                if r < n_out and c < m: y[c, r] = v
    return y


bad = total = 0
for T, nb, n_out, m, WR, WC, NT, KW in (('q4', 80, 70, 17, 4, 1, 4, 1), ('q8', 33, 45, 7, 2, 2, 4, 1),
                                        ('q4', 24, 20, 33, 2, 2, 4, 1), ('q8', 40, 16, 9, 4, 1, 1, 1),
                                        ('q4', 80, 40, 9, 2, 1, 1, 4), ('q8', 33, 20, 16, 2, 2, 1, 4),
                                        ('q4', 80, 33, 12, 2, 2, 1, 2), ('q8', 24, 16, 5, 2, 1, 1, 2)):
    W, stride, GB, QB = repack_rows(T, nb, n_out)
    hi, lo, ds = x16(m, nb)
    y = v2(T, W, stride, GB, QB, hi, lo, ds, nb, n_out, m, WR, WC, NT, KW)
    for c in range(m):
        for r in range(n_out):
            want = gemv_chunk(T, W, GB, QB, hi, lo, ds, nb, r, c)
            total += 1
            if np.float32(y[c, r]).tobytes() != np.float32(want).tobytes():
                bad += 1
                if bad < 5: print('mismatch', T, nb, n_out, m, (WR, WC, NT), 'row', r, 'col', c, y[c, r], want)
    print(T, 'nb', nb, 'rows', n_out, 'm', m, 'warps', WR, 'x', WC, 'x', KW, 'NT', NT, 'done')
print('mismatches:', bad, 'of', total)
