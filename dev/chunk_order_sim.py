"""chunk_order_sim.py: the canonical chunk-major float order of the dp4a GEMV and gemm_mma v2 (issue 26), simulated
in float32: the per-chunk xor butterfly over 32 lanes (offsets 1, 2, 4, 8, 16; lane l holds block 32j + l, +0.0 past
nb) against the GEMM's pairwise stack (push leaf, combine while the two top entries have equal level) and against
v2's layout of it (8-leaf subtrees, then levels 3 and 4 as two registers), each followed by the in-order chunk sum.
Random leaves (with some -0.0, huge and tiny values), nb = 1..100. Then reduce.cuh's chunk_tree32_n (N values a lane,
recursive halving) and its owner map chunk_tree_n_idx against the butterfly of each index, N = 2..64. Prints the
numbers of mismatches (want 0)."""
import numpy as np

f32 = np.float32


def add(a, b):
    return f32(f32(a) + f32(b))


def butterfly(leaves):  # 32 lanes, offsets 1, 2, 4, 8, 16; returns every lane's value
    v = [f32(x) for x in leaves]
    for o in (1, 2, 4, 8, 16):
        v = [add(v[l], v[l ^ o]) for l in range(32)]
    assert all(np.float32(x).tobytes() == np.float32(v[0]).tobytes() for x in v)  # every lane the same bits
    return v[0]


def stack_tree(leaves):  # the pairwise stack: entries (value, level)
    st = []
    for x in leaves:
        e = (f32(x), 0)
        while st and st[-1][1] == e[1]:
            l = st.pop()
            e = (add(l[0], e[0]), e[1] + 1)
        st.append(e)
    assert len(st) == 1 and st[0][1] == 5
    return st[0][0]


def v2_tree(leaves):  # gemm_mma v2: 4 substeps of 8 leaves: an unrolled 8-leaf tree, then L3 / L4 registers
    L3 = L4 = None
    for s in range(4):
        v = [f32(x) for x in leaves[8 * s: 8 * s + 8]]
        a = add(v[0], v[1]); b = add(v[2], v[3]); c = add(v[4], v[5]); d = add(v[6], v[7])
        sub = add(add(a, b), add(c, d))
        if s == 0: L3 = sub
        elif s == 1: L4 = add(L3, sub)
        elif s == 2: L3 = sub
        else: T = add(L4, add(L3, sub))
    return T


def chunk_sum(leafs, nb, tree):
    acc = None
    for j in range((nb + 31) // 32):
        lv = [leafs[32 * j + l] if 32 * j + l < nb else f32(0.0) for l in range(32)]
        t = tree(lv)
        acc = t if acc is None else add(acc, t)
    return acc


rng = np.random.default_rng(1)
bad = 0
for trial in range(20):
    for nb in range(1, 101):
        x = (rng.standard_normal(nb) * np.exp(rng.uniform(-20, 20, nb))).astype(np.float32)
        x[rng.random(nb) < 0.05] = f32(-0.0)
        r = [chunk_sum(x, nb, t).tobytes() for t in (butterfly, stack_tree, v2_tree)]
        bad += r[0] != r[1] or r[0] != r[2]
print("mismatches:", bad, "of", 20 * 100)


# chunk_tree32_n: recursive halving over 32 lanes holding N values each
def idx_of(N, lane, i=0):
    idx, n = i, N
    for s in range(5):
        if n >= 2:
            idx += (n >> 1) * ((lane >> s) & 1)
            n >>= 1
    return idx


def halving(V, N):  # V[l][i], 32 lanes x N values -> each lane's values after chunk_tree32_n<N>
    v = [list(V[l]) for l in range(32)]
    for s in range(5):
        o, n = 1 << s, N >> s
        new = []
        for l in range(32):
            p = l ^ o
            if n >= 2:
                half, up, pup = n // 2, (l >> s) & 1, (p >> s) & 1
                new.append([add(v[l][i + half] if up else v[l][i], v[p][i] if pup else v[p][i + half]) for i in range(half)])
            else:
                new.append([add(v[l][0], v[p][0])])
        v = new
    return v


bad = 0
for N in (2, 4, 8, 16, 32, 64):
    for trial in range(30):
        V = (rng.standard_normal((32, N)) * np.exp(rng.uniform(-10, 10, (32, N)))).astype(np.float32)
        V[rng.random((32, N)) < 0.05] = f32(-0.0)
        ref = [butterfly([V[l, i] for l in range(32)]) for i in range(N)]
        v = halving(V, N)
        K, seen = (N // 32 if N >= 32 else 1), set()
        for l in range(32 if N >= 32 else N):
            for i in range(K):
                idx = idx_of(N, l, i)
                seen.add(idx)
                bad += np.float32(v[l][i]).tobytes() != np.float32(ref[idx]).tobytes()
        assert seen == set(range(N))
print("chunk_tree32_n mismatches:", bad, "of", 30 * 126)


# The unit gather of the tma and warp kernels (2ff687e): a unit's U chunks x R rows of leaves (lane l holds block
# 32u + l of chunk u, index u*R + r), one chunk_tree32_n<U*R>, then lane r (r < R, row chunk_tree_n_idx<R>(0, r))
# reads chunk u's sum of its row from lane chunk_tree_n_idx<U*R>(0, u*R + r) (the bit reversal is its own inverse)
# and adds it in chunk order; a chunk past the row's end (here: past nc chunks) is not added. Against the butterfly a
# chunk, added in order from -0.0.

bad = 0
for U, R in ((4, 1), (4, 2), (2, 2), (2, 1), (1, 2)):
    N = U * R
    for trial in range(40):
        nc = int(rng.integers(1, U + 1))  # chunks of this unit that exist
        V = (rng.standard_normal((32, N)) * np.exp(rng.uniform(-10, 10, (32, N)))).astype(np.float32)
        V[rng.random((32, N)) < 0.05] = f32(-0.0)
        for u in range(nc, U):
            V[:, u * R:(u + 1) * R] = f32(0.0)  # past the end: +0.0 leaves
        v = halving(V, N)
        for r_lane in range(R):
            rr = idx_of(R, r_lane)
            acc = f32(-0.0)
            ref = f32(-0.0)
            for u in range(U):
                src = idx_of(N, u * R + rr)
                assert idx_of(N, src) == u * R + rr  # the lane read holds that index
                if u < nc:
                    acc = add(acc, v[src][0])
                    ref = add(ref, butterfly([V[l, u * R + rr] for l in range(32)]))
            bad += np.float32(acc).tobytes() != np.float32(ref).tobytes()
print("unit gather mismatches:", bad, "of", 40 * (1 + 2 + 2 + 1 + 2), "rows")
