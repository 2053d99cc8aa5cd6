// Shared definitions of the OpenCL plugin's kernels (OpenCL C 1.2). The
// plugin concatenates common.cl and every other kernels/*.cl into one
// program, built once per device (binaries cached on disk).
//
// Conventions every kernel follows:
//  - Argument 0 is `__global int* st`, the stream's status record. A kernel
//    returns at once when st[0] != 0 (a sticky error: the stream skips its
//    later work) and reports a bad-data error with tsr_fail().
//  - A tensor is passed as two arguments: its buffer `__global uchar* x`
//    (the start of the cl_mem) and `tsr_layout lx`, whose offset, shape and
//    strides are in elements (the host divides the byte offset by the
//    element size). Element (i0..in-1) is at lx.offset + sum ik*strides[k].
//  - F16 and BF16 are stored as ushort (no cl_khr_fp16 needed): ld_* widen
//    to float, st_* round to nearest even; all math is in float.
//  - Per-dtype kernels are instantiated by macros and named <op>_<dtype>,
//    e.g. add_bf16; the host picks the name from the launch's dtypes.

typedef struct {
  long offset;      // elements from the start of the buffer
  long ndim;        // 0..6
  long shape[6];
  long strides[6];  // elements
} tsr_layout;

// Error kinds reported through tsr_fail (the host words each:
// opencl/kernel_errors.cc). Argument meanings listed per kind.
#define TSR_FAIL_EMBEDDING_ID 1     // a = t, b = id, c = V
#define TSR_FAIL_KV_SLOT 2          // a = t, b = slot, c = S
#define TSR_FAIL_ATTN_QUERY_RANGE 3 // a = seq, b = lo, c = hi, d = T
#define TSR_FAIL_ATTN_LEN_SHORT 4   // a = seq, b = new tokens, c = seq_len
#define TSR_FAIL_ATTN_LEN_TABLE 5   // a = seq, b = seq_len, c = pages, d = page_size
#define TSR_FAIL_ATTN_PAGE 6        // a = seq, b = page index, c = page id, d = slots
#define TSR_FAIL_LOGPROBS_ID 7      // a = row, b = id, c = V

// Records the first error of the stream: st[0] = 1 (TSR_ERR_INVALID_ARGUMENT),
// st[1] = kind, st[2..5] = a..d. Later failures keep the first.
inline void tsr_fail(__global int* st, int kind, int a, int b, int c, int d) {
  if (atomic_cmpxchg((volatile __global int*)st, 0, 1) == 0) {
    st[1] = kind;
    st[2] = a;
    st[3] = b;
    st[4] = c;
    st[5] = d;
  }
}

// Element offset of row `row` (row-major over all dims but the innermost).
inline long tsr_row_offset(tsr_layout l, long row) {
  if (l.ndim == 2) return l.offset + row * l.strides[0];  // row < shape[0]
  long off = l.offset;
  for (int i = (int)l.ndim - 2; i >= 0; --i) {
    long d = l.shape[i];
    off += (row % d) * l.strides[i];
    row /= d;
  }
  return off;
}

// Element offset of the element with row-major linear index `i`.
inline long tsr_elem_offset(tsr_layout l, long i) {
  if (l.ndim == 1) return l.offset + i * l.strides[0];  // i < shape[0]
  long off = l.offset;
  for (int k = (int)l.ndim - 1; k >= 0; --k) {
    long d = l.shape[k];
    off += (i % d) * l.strides[k];
    i /= d;
  }
  return off;
}

// Rows = product of all dims but the innermost; cols = the innermost.
inline long tsr_rows(tsr_layout l) {
  long n = 1;
  for (int i = 0; i + 1 < (int)l.ndim; ++i) n *= l.shape[i];
  return n;
}
inline long tsr_cols(tsr_layout l) { return l.ndim == 0 ? 1 : l.shape[l.ndim - 1]; }
inline long tsr_col_stride(tsr_layout l) { return l.ndim == 0 ? 1 : l.strides[l.ndim - 1]; }
inline long tsr_numel(tsr_layout l) {
  long n = 1;
  for (int i = 0; i < (int)l.ndim; ++i) n *= l.shape[i];
  return n;
}

// Loads (element offsets, from the buffer start) widened to float.
inline float ld_f32(__global const uchar* b, long i) { return ((__global const float*)b)[i]; }
inline float ld_bf16(__global const uchar* b, long i) {
  return as_float(((uint)((__global const ushort*)b)[i]) << 16);
}
inline float ld_f16(__global const uchar* b, long i) {
  return vload_half((size_t)i, (__global const half*)b);
}
inline int ld_i32(__global const uchar* b, long i) { return ((__global const int*)b)[i]; }

// Stores from float, rounding to nearest even (NaN stays a quiet NaN).
inline void st_f32(__global uchar* b, long i, float v) { ((__global float*)b)[i] = v; }
inline ushort tsr_f32_to_bf16(float v) {
  uint u = as_uint(v);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (ushort)((u >> 16) | 0x40u);
  u += 0x7fffu + ((u >> 16) & 1u);
  return (ushort)(u >> 16);
}
inline void st_bf16(__global uchar* b, long i, float v) {
  ((__global ushort*)b)[i] = tsr_f32_to_bf16(v);
}
inline void st_f16(__global uchar* b, long i, float v) {
  vstore_half_rte(v, (size_t)i, (__global half*)b);
}
inline void st_i32(__global uchar* b, long i, int v) { ((__global int*)b)[i] = v; }

// Kernels return early once the stream has failed.
#define TSR_SKIP_IF_FAILED(st) \
  if ((st)[0] != 0) return
