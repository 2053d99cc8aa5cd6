// rms_norm and add_rms_norm: one work-group per row of H elements; each
// work-item owns the columns c = lid, lid + size, ... in both passes (so an
// output aliasing its input is read before it is written by the same item).
// Every item reaches every barrier, so a failed stream makes the loops empty
// instead of returning early.

#define TSR_NORM_GROUP 64

// The sum over the work-group of `v` (all items get it); `scratch` holds
// TSR_NORM_GROUP floats.
inline float tsr_group_sum(float v, __local float* scratch) {
  int lid = get_local_id(0), n = get_local_size(0);
  scratch[lid] = v;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int s = n / 2; s > 0; s >>= 1) {
    if (lid < s) scratch[lid] += scratch[lid + s];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  float total = scratch[0];
  barrier(CLK_LOCAL_MEM_FENCE);
  return total;
}

// rms_norm_<x>: x [.., H], w [H] -> y [.., H]; one group per row.
#define TSR_DEFINE_RMS_NORM(X)                                                             \
  __kernel __attribute__((reqd_work_group_size(TSR_NORM_GROUP, 1, 1))) void rms_norm_##X(   \
      __global int* st, __global const uchar* x, tsr_layout lx, __global const uchar* w,    \
      tsr_layout lw, __global uchar* y, tsr_layout ly, float eps) {                         \
    __local float scratch[TSR_NORM_GROUP];                                                 \
    /* no early return: every item must reach the barriers (skip: no-op) */                \
    const bool skip = st[0] != 0;                                                          \
    long row = get_group_id(0);                                                            \
    int lid = get_local_id(0);                                                             \
    long h = tsr_cols(lx), xo = tsr_row_offset(lx, row), sx = tsr_col_stride(lx);          \
    long yo = tsr_row_offset(ly, row), sy = tsr_col_stride(ly);                            \
    float sum = 0.0f;                                                                      \
    for (long c = lid; !skip && c < h; c += TSR_NORM_GROUP) {                                       \
      float v = ld_##X(x, xo + c * sx);                                                    \
      sum += v * v;                                                                        \
    }                                                                                      \
    float inv = rsqrt(tsr_group_sum(sum, scratch) / (float)h + eps);                       \
    for (long c = lid; !skip && c < h; c += TSR_NORM_GROUP) {                                       \
      float v = ld_##X(x, xo + c * sx) * inv * ld_##X(w, lw.offset + c * lw.strides[0]);   \
      st_##X(y, yo + c * sy, v);                                                           \
    }                                                                                      \
  }
TSR_DEFINE_RMS_NORM(f32)
TSR_DEFINE_RMS_NORM(bf16)

// add_rms_norm_<x>: residual_out = round_X(x + residual); y = rms_norm of it.
#define TSR_DEFINE_ADD_RMS_NORM(X)                                                         \
  __kernel __attribute__((reqd_work_group_size(TSR_NORM_GROUP, 1, 1))) void                \
      add_rms_norm_##X(__global int* st, __global const uchar* x, tsr_layout lx,            \
                       __global const uchar* r, tsr_layout lr, __global const uchar* w,     \
                       tsr_layout lw, __global uchar* y, tsr_layout ly,                     \
                       __global uchar* ro, tsr_layout lro, float eps) {                     \
    __local float scratch[TSR_NORM_GROUP];                                                 \
    /* no early return: every item must reach the barriers (skip: no-op) */                \
    const bool skip = st[0] != 0;                                                          \
    long row = get_group_id(0);                                                            \
    int lid = get_local_id(0);                                                             \
    long h = tsr_cols(lx), xo = tsr_row_offset(lx, row), sx = tsr_col_stride(lx);          \
    long ro_ = tsr_row_offset(lr, row), sr = tsr_col_stride(lr);                           \
    long oo = tsr_row_offset(lro, row), so = tsr_col_stride(lro);                          \
    long yo = tsr_row_offset(ly, row), sy = tsr_col_stride(ly);                            \
    float sum = 0.0f;                                                                      \
    for (long c = lid; !skip && c < h; c += TSR_NORM_GROUP) {                                       \
      st_##X(ro, oo + c * so, ld_##X(x, xo + c * sx) + ld_##X(r, ro_ + c * sr));           \
      float v = ld_##X(ro, oo + c * so);                                                   \
      sum += v * v;                                                                        \
    }                                                                                      \
    float inv = rsqrt(tsr_group_sum(sum, scratch) / (float)h + eps);                       \
    for (long c = lid; !skip && c < h; c += TSR_NORM_GROUP) {                                       \
      float v = ld_##X(ro, oo + c * so) * inv * ld_##X(w, lw.offset + c * lw.strides[0]);  \
      st_##X(y, yo + c * sy, v);                                                           \
    }                                                                                      \
  }
TSR_DEFINE_ADD_RMS_NORM(f32)
TSR_DEFINE_ADD_RMS_NORM(bf16)
