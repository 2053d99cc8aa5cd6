// embedding, silu_and_mul, add, cast (contracts: tessera_plugin.h).

// embedding_<x>: ids I32 [T], table X [V, H] -> y X [T, H]. Work-items
// (i, t) over (H, T). An id outside [0, V) is reported once (by i == 0).
#define TSR_DEFINE_EMBEDDING(X)                                                          \
  __kernel void embedding_##X(__global int* st, __global const uchar* ids, tsr_layout lid, \
                              __global const uchar* table, tsr_layout lt,                \
                              __global uchar* y, tsr_layout ly) {                        \
    TSR_SKIP_IF_FAILED(st);                                                              \
    long i = get_global_id(0), t = get_global_id(1);                                     \
    long h = lt.shape[1], vocab = lt.shape[0];                                           \
    if (i >= h || t >= ly.shape[0]) return;                                              \
    int id = ld_i32(ids, lid.offset + t * lid.strides[0]);                               \
    if (id < 0 || id >= vocab) {                                                         \
      if (i == 0) tsr_fail(st, TSR_FAIL_EMBEDDING_ID, (int)t, id, (int)vocab, 0);        \
      return;                                                                            \
    }                                                                                    \
    float v = ld_##X(table, lt.offset + id * lt.strides[0] + i * lt.strides[1]);         \
    st_##X(y, ly.offset + t * ly.strides[0] + i * ly.strides[1], v);                     \
  }
TSR_DEFINE_EMBEDDING(f32)
TSR_DEFINE_EMBEDDING(bf16)
TSR_DEFINE_EMBEDDING(f16)

// silu_and_mul_<x>: x [.., 2I] -> y [.., I]; work-items (i, row).
#define TSR_DEFINE_SILU_AND_MUL(X)                                                         \
  __kernel void silu_and_mul_##X(__global int* st, __global const uchar* x, tsr_layout lx,  \
                                 __global uchar* y, tsr_layout ly) {                       \
    TSR_SKIP_IF_FAILED(st);                                                                \
    long i = get_global_id(0), row = get_global_id(1);                                     \
    long inter = tsr_cols(ly);                                                             \
    if (i >= inter || row >= tsr_rows(ly)) return;                                         \
    long xo = tsr_row_offset(lx, row), sx = tsr_col_stride(lx);                            \
    float a = ld_##X(x, xo + i * sx);                                                      \
    float b = ld_##X(x, xo + (i + inter) * sx);                                            \
    st_##X(y, tsr_row_offset(ly, row) + i * tsr_col_stride(ly), a / (1.0f + exp(-a)) * b); \
  }
TSR_DEFINE_SILU_AND_MUL(f32)
TSR_DEFINE_SILU_AND_MUL(bf16)

// add_<x>: y = a + b elementwise over any shape; one work-item per element.
#define TSR_DEFINE_ADD(X)                                                                  \
  __kernel void add_##X(__global int* st, __global const uchar* a, tsr_layout la,           \
                        __global const uchar* b, tsr_layout lb, __global uchar* y,          \
                        tsr_layout ly) {                                                    \
    TSR_SKIP_IF_FAILED(st);                                                                \
    long i = get_global_id(0);                                                             \
    if (i >= tsr_numel(ly)) return;                                                        \
    float v = ld_##X(a, tsr_elem_offset(la, i)) + ld_##X(b, tsr_elem_offset(lb, i));       \
    st_##X(y, tsr_elem_offset(ly, i), v);                                                  \
  }
TSR_DEFINE_ADD(f32)
TSR_DEFINE_ADD(bf16)

// cast_<x>_<y>: y = round_to_Y(x), any shape; one work-item per element.
#define TSR_DEFINE_CAST(X, Y)                                                              \
  __kernel void cast_##X##_##Y(__global int* st, __global const uchar* x, tsr_layout lx,    \
                               __global uchar* y, tsr_layout ly) {                         \
    TSR_SKIP_IF_FAILED(st);                                                                \
    long i = get_global_id(0);                                                             \
    if (i >= tsr_numel(ly)) return;                                                        \
    st_##Y(y, tsr_elem_offset(ly, i), ld_##X(x, tsr_elem_offset(lx, i)));                  \
  }
TSR_DEFINE_CAST(f32, f32)
TSR_DEFINE_CAST(f32, bf16)
TSR_DEFINE_CAST(f32, f16)
TSR_DEFINE_CAST(bf16, f32)
TSR_DEFINE_CAST(bf16, bf16)
TSR_DEFINE_CAST(bf16, f16)
TSR_DEFINE_CAST(f16, f32)
TSR_DEFINE_CAST(f16, bf16)
TSR_DEFINE_CAST(f16, f16)
