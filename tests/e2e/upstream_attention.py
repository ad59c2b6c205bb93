"""FlashAttention in upstream PyPTO's example form: loop-carried state through
`pl.range(..., init_values=...)` with tuple unpacking, the first trip and the rest in an
`if`/`else` whose branches end in `pl.yield_` (with an `if` nested in each for the last
trip), `pl.matmul(..., b_trans=True, out_dtype=...)`, `pl.assemble` into the carried
tiles, `pl.cast(..., mode="round")`, `pl.row_max` and `pl.maximum`. Tile-level, one mixed
`pl.at` scope: the compiler makes it one cluster kernel."""

import pypto.language as pl

Q_ROWS, KV_ROWS, D = 32, 512, 128
BLOCK = 64
TRIPS = KV_ROWS // BLOCK
SCALE = 0.08838834764831845  # 1 / sqrt(128)


@pl.jit
def flash_attn(q: pl.Tensor, k: pl.Tensor, v: pl.Tensor, attn: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="flash_attn"):
        q_left = pl.move(pl.load(q, [0, 0], [Q_ROWS, D], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left)
        mi_initial = pl.create_tile([Q_ROWS, 1], pl.FP32)
        li_initial = pl.create_tile([Q_ROWS, 1], pl.FP32)
        oi_initial = pl.create_tile([Q_ROWS, D], pl.FP32)
        attn_initial = pl.create_tile([Q_ROWS, D], pl.FP32)
        for i, (mi_update, li_update, attn_update, oi_update) in pl.range(
            TRIPS, init_values=(mi_initial, li_initial, attn_initial, oi_initial)
        ):
            kj = pl.move(
                pl.load(k, [i * BLOCK, 0], [BLOCK, D], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right
            )
            vj = pl.move(
                pl.load(v, [i * BLOCK, 0], [BLOCK, D], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right
            )
            sij = pl.matmul(q_left, kj, out_dtype=pl.FP32, a_trans=False, b_trans=True)
            sij_1 = pl.mul(pl.move(sij, target_memory=pl.Mem.Vec), SCALE)
            tmp = pl.create_tile([Q_ROWS, BLOCK], pl.FP32)
            row_max = pl.row_max(sij_1, tmp)
            p_ij = pl.exp(pl.row_expand_sub(sij_1, row_max))
            l_ij = pl.row_sum(p_ij, tmp)
            tilda_pij = pl.cast(p_ij, target_type=pl.FP16, mode="round")
            p_left = pl.move(pl.move(tilda_pij, target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left)
            if i == 0:
                oi_87 = pl.move(pl.matmul(p_left, vj, out_dtype=pl.FP32), target_memory=pl.Mem.Vec)
                oi_90 = pl.assemble(oi_update, oi_87, [0, 0])
                if i == TRIPS - 1:
                    attn_94 = pl.row_expand_div(oi_90, l_ij)
                    attn_95 = pl.yield_(attn_94)
                else:
                    attn_95 = pl.yield_(attn_update)
                li_98 = pl.assemble(li_update, l_ij, [0, 0])
                mi_101 = pl.assemble(mi_update, row_max, [0, 0])
                mi_126, li_127, attn_128, oi_129 = pl.yield_(mi_101, li_98, attn_95, oi_90)
            else:
                mi_103 = pl.maximum(mi_update, row_max)
                t2_105 = pl.exp(pl.sub(mi_update, mi_103))
                t4_107 = pl.exp(pl.sub(row_max, mi_103))
                li_110 = pl.add(pl.mul(t2_105, li_update), pl.mul(t4_107, l_ij))
                li_113 = pl.assemble(li_update, li_110, [0, 0])
                q3_114 = pl.row_expand_mul(oi_update, t2_105)
                q1_115 = pl.move(pl.matmul(p_left, vj, out_dtype=pl.FP32), target_memory=pl.Mem.Vec)
                oi_117 = pl.add(q3_114, pl.row_expand_mul(q1_115, t4_107))
                oi_120 = pl.assemble(oi_update, oi_117, [0, 0])
                if i == TRIPS - 1:
                    attn_124 = pl.row_expand_div(oi_120, li_113)
                    attn_125 = pl.yield_(attn_124)
                else:
                    attn_125 = pl.yield_(attn_update)
                mi_126, li_127, attn_128, oi_129 = pl.yield_(mi_103, li_113, attn_125, oi_120)
            mi_final, li_final, attn_final, oi_final = pl.yield_(mi_126, li_127, attn_128, oi_129)
        pl.store(attn_final, [0, 0], attn)
    return attn
