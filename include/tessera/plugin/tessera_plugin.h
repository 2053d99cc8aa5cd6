/*
 * tessera_plugin.h — the Tessera device-plugin C ABI, major version 1.
 *
 * A device plugin is a shared library that exports exactly one symbol,
 *
 *     const tsr_plugin_api* tsr_get_plugin_api(const tsr_host_services* host);
 *
 * returning a pointer to a constant table of function pointers that stays
 * valid until the library is unloaded. The host calls it once, right after
 * dlopen. Everything the host needs from a chip goes through that table:
 * device management, memory, copies, streams, events, ops and (optionally)
 * graphs and collectives. This header is C99, has no dependencies beyond
 * <stddef.h>/<stdint.h>, and is frozen per major version: minors only append.
 *
 * Rules that hold for every entry (docs/PLUGIN_ABI.md explains them at length):
 *
 *  1. Versioning. Every table and every argument struct begins with
 *     `uint32_t struct_size`, set by whoever fills the struct to sizeof() of
 *     the struct as *it* was compiled. A reader uses only the fields that fit
 *     in min(struct_size, its own sizeof). Fields are only ever appended, in
 *     minor versions. The host accepts a plugin whose abi_major equals
 *     TSR_PLUGIN_ABI_MAJOR and whose abi_minor is >= TSR_PLUGIN_ABI_MINOR_FLOOR.
 *     The first three fields of tsr_plugin_api (struct_size, abi_major,
 *     abi_minor) keep their place in every major version, so a host can read
 *     and diagnose a plugin built for a different major.
 *  2. Errors. Every fallible entry returns tsr_status (TSR_OK == 0). On a
 *     non-OK return, last_error() on the same thread returns a readable,
 *     NUL-terminated message that stays valid until the next call into the
 *     plugin on that thread. Nothing aborts, throws or longjmps across the
 *     boundary: bad arguments, invalid handles and impossible allocations are
 *     errors, never crashes.
 *  3. Asynchrony. A stream is an in-order queue of work on one device.
 *     Launches, async copies, memsets and event records enqueue and return
 *     without waiting for the device. An error that happens while queued work
 *     runs is sticky on the stream: stream_synchronize (and event_synchronize
 *     on a later event) returns it; the stream's later work is skipped.
 *  4. Optional entries may be NULL; the host applies the default documented at
 *     the entry, in one place. Required entries are never NULL.
 *  5. Threads. Every entry may be called from any host thread. Calls on
 *     different streams may run concurrently; the host does not call
 *     into one stream from two threads at once.
 *  6. Ownership. Handles (tsr_buffer, tsr_stream, tsr_event, tsr_kernel,
 *     tsr_graph, tsr_comm) are created by the plugin and destroyed by the host
 *     with the matching destroy/free entry; destroying waits for nothing, so
 *     the host synchronises first. Pointers passed in are borrowed for the
 *     duration of the call unless the entry says otherwise.
 */
#ifndef TESSERA_PLUGIN_TESSERA_PLUGIN_H_
#define TESSERA_PLUGIN_TESSERA_PLUGIN_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------ */
/* Versions                                                                  */
/* ------------------------------------------------------------------------ */

#define TSR_PLUGIN_ABI_MAJOR 1
/* Minor history: 1.0 the v1 ops; 1.1 adds TSR_DTYPE_I8 weights, linear
 * v2 (weight-only int8) and stream_busy_ns; 1.2 adds the first fused op,
 * decoder_layer (TSR_OP_DECODER_LAYER); 1.3 adds ranks in different
 * processes to the comm table (comm_get_unique_id, comm_init_rank) and
 * reduce_scatter; 1.4 adds decoder_layer v2 (the layer of one
 * tensor-parallel rank, its two all-reduces inside) and embedding v2 (a
 * vocabulary shard); 1.5 adds linear v3 (int8 weights AND activations,
 * integer dot products: w8a8) and decoder_layer v3 (v2 with its int8
 * projections as linear v3); 1.6 adds linear v4 (4-bit weights packed two
 * per byte, Q4_0's layout, times int8 activations: w4a8) and
 * decoder_layer v4 (v3 with those weights); 1.7 adds
 * tsr_buffer_info.device_address (alignment and placement observable on a
 * device whose memory the host cannot see) and the optional memory_stats
 * entry (bytes in use, peak, limit per device); 1.8 adds linear v5 (6-bit
 * weights in Q6_K's super-blocks times int8 activations: w6a8). A plugin
 * need not list any op of a later minor. */
#define TSR_PLUGIN_ABI_MINOR 8
/* The oldest minor of this major that the host still accepts. */
#define TSR_PLUGIN_ABI_MINOR_FLOOR 0

#define TSR_PLUGIN_ENTRY_SYMBOL "tsr_get_plugin_api"

#if defined(_WIN32)
#define TSR_PLUGIN_EXPORT __declspec(dllexport)
#else
#define TSR_PLUGIN_EXPORT __attribute__((visibility("default")))
#endif

/* ------------------------------------------------------------------------ */
/* Status                                                                    */
/* ------------------------------------------------------------------------ */

typedef int32_t tsr_status;
enum {
  TSR_OK = 0,
  TSR_ERR_INVALID_ARGUMENT = 1, /* a bad pointer, shape, dtype, size, index */
  TSR_ERR_INVALID_HANDLE = 2,   /* a handle this plugin did not create, or freed */
  TSR_ERR_OUT_OF_MEMORY = 3,    /* allocation impossible or failed */
  TSR_ERR_UNSUPPORTED = 4,      /* entry, op, dtype or option not supported */
  TSR_ERR_NOT_FOUND = 5,        /* no such device / op */
  TSR_ERR_DEVICE = 6,           /* the driver or device failed */
  TSR_ERR_NOT_READY = 7,        /* query entries: work still pending (not an error) */
  TSR_ERR_INTERNAL = 8          /* a bug in the plugin */
};

/* ------------------------------------------------------------------------ */
/* Element types                                                             */
/* ------------------------------------------------------------------------ */

typedef int32_t tsr_dtype;
enum {
  TSR_DTYPE_INVALID = 0,
  TSR_DTYPE_F32 = 1,
  TSR_DTYPE_F16 = 2,  /* IEEE binary16 */
  TSR_DTYPE_BF16 = 3, /* bfloat16: the top 16 bits of an f32 */
  TSR_DTYPE_I32 = 4,
  TSR_DTYPE_I64 = 5,
  TSR_DTYPE_U8 = 6,
  TSR_DTYPE_I8 = 7,   /* since 1.1: weight-only int8 (linear v2) */
  TSR_DTYPE_COUNT_V1 = 8
};

/* ------------------------------------------------------------------------ */
/* Opaque handles (all owned by the plugin, see rule 6)                     */
/* ------------------------------------------------------------------------ */

typedef struct tsr_buffer_s* tsr_buffer; /* a device or pinned-host allocation */
typedef struct tsr_stream_s* tsr_stream; /* an in-order work queue on one device */
typedef struct tsr_event_s* tsr_event;   /* a marker recorded on a stream */
typedef struct tsr_kernel_s* tsr_kernel; /* a resolved (op, version, dtypes) entry */
typedef struct tsr_graph_s* tsr_graph;   /* a captured sequence of stream work */
typedef struct tsr_comm_s* tsr_comm;     /* one rank of a communicator */

/* ------------------------------------------------------------------------ */
/* Host services, passed to tsr_get_plugin_api                              */
/* ------------------------------------------------------------------------ */

typedef int32_t tsr_log_level;
enum { TSR_LOG_DEBUG = 0, TSR_LOG_INFO = 1, TSR_LOG_WARN = 2, TSR_LOG_ERROR = 3 };

typedef struct tsr_host_services {
  uint32_t struct_size;
  uint32_t abi_major; /* the host's TSR_PLUGIN_ABI_MAJOR */
  uint32_t abi_minor; /* the host's TSR_PLUGIN_ABI_MINOR */
  /* Opaque context passed back to log. */
  void* host_context;
  /* Writes one log line (no trailing newline needed). May be called from any
   * thread. `message` is borrowed for the call. May be NULL: then the plugin
   * stays silent. */
  void (*log)(void* host_context, tsr_log_level level, const char* message);
} tsr_host_services;

/* ------------------------------------------------------------------------ */
/* Manifest: readable before probe and init                                 */
/* ------------------------------------------------------------------------ */

/* Capability bits in tsr_plugin_manifest.capabilities. */
#define TSR_CAP_PINNED_HOST ((uint64_t)1 << 0) /* TSR_MEM_PINNED_HOST allocations */
#define TSR_CAP_HOST_VISIBLE_DEVICE_MEM ((uint64_t)1 << 1) /* device buffers have a host address */
#define TSR_CAP_GRAPHS ((uint64_t)1 << 2)      /* graph entries non-NULL */
#define TSR_CAP_COLLECTIVES ((uint64_t)1 << 3) /* comm entries non-NULL */
#define TSR_CAP_FUSED_OPS ((uint64_t)1 << 4)   /* op ids >= TSR_OP_FUSED_BASE listed */

typedef struct tsr_plugin_manifest {
  uint32_t struct_size;
  const char* name;         /* short, lowercase, [a-z0-9_]: "cpu", "opencl" */
  const char* version;      /* the plugin's own version, e.g. "1.0.0" */
  const char* description;  /* one line for people */
  uint32_t abi_major;       /* the ABI it was built against ...            */
  uint32_t abi_minor;       /* ... (== TSR_PLUGIN_ABI_MAJOR/MINOR then)   */
  uint32_t min_host_abi_minor; /* the oldest host minor it works with */
  /* What the plugin needs at run time beyond libc, for people and `doctor`,
   * e.g. "OpenCL ICD loader (libOpenCL.so.1) and one OpenCL 1.2 platform". */
  const char* requirements;
  uint64_t capabilities;    /* TSR_CAP_* */
} tsr_plugin_manifest;

/* ------------------------------------------------------------------------ */
/* Init                                                                      */
/* ------------------------------------------------------------------------ */

typedef struct tsr_option {
  const char* key;   /* e.g. "threads" */
  const char* value; /* e.g. "4" */
} tsr_option;

typedef struct tsr_init_args {
  uint32_t struct_size;
  /* key=value options; unknown keys are an error (TSR_ERR_INVALID_ARGUMENT)
   * naming the key and listing the known ones. Well-known keys:
   *   threads=N          worker threads per device (CPU-like plugins)
   *   devices=N          number of virtual devices (the cpu plugin)
   *   comm_timeout_ms=N  since 1.3: how long a collective or comm_init_rank
   *                      waits for a peer before failing (default 60000) */
  const tsr_option* options;
  size_t num_options;
  /* Visible-device filter, applied by the plugin before it numbers devices:
   * when num_visible_devices >= 0, only the physical devices whose indices
   * are listed (in that order) are exposed, as ordinals 0..n-1; indices the
   * plugin does not have are ignored. num_visible_devices == -1 means all. */
  const int32_t* visible_devices;
  int32_t num_visible_devices;
} tsr_init_args;

/* ------------------------------------------------------------------------ */
/* Devices                                                                   */
/* ------------------------------------------------------------------------ */

typedef int32_t tsr_device_type;
enum { TSR_DEVICE_CPU = 0, TSR_DEVICE_GPU = 1, TSR_DEVICE_ACCELERATOR = 2 };

typedef struct tsr_device_properties {
  uint32_t struct_size;       /* set by the caller */
  char name[128];             /* out */
  char vendor[64];            /* out */
  char driver_version[64];    /* out; "" if none */
  tsr_device_type type;       /* out */
  int32_t physical_index;     /* out: the index before visible-device filtering */
  uint64_t memory_total;      /* out: bytes */
  uint64_t memory_free;       /* out: bytes, best estimate */
  uint64_t alignment;         /* out: minimum alignment of every buffer, bytes */
  uint32_t compute_units;     /* out: cores / SMs / CUs */
  uint32_t reserved0;
  uint64_t dtype_mask;        /* out: bit (1 << tsr_dtype) per supported dtype */
} tsr_device_properties;

/* ------------------------------------------------------------------------ */
/* Memory                                                                    */
/* ------------------------------------------------------------------------ */

typedef int32_t tsr_mem_kind;
enum {
  TSR_MEM_DEVICE = 0,      /* device memory */
  TSR_MEM_PINNED_HOST = 1  /* page-locked host memory, host-addressable */
};

typedef struct tsr_buffer_info {
  uint32_t struct_size;  /* set by the caller */
  int32_t device;        /* out */
  tsr_mem_kind kind;     /* out */
  uint32_t reserved0;
  uint64_t size;         /* out: bytes requested at allocation */
  uint64_t reserved_size;/* out: bytes actually reserved (>= size) */
  void* host_pointer;    /* out: host address, or NULL if not host-visible */
  /* --- since 1.7: written only when struct_size covers it --- */
  /* out: the buffer's first byte in the device's own address space (what a
   * kernel on the device sees; for host-visible memory the value of
   * host_pointer), or 0 when the device has no flat address space (e.g.
   * OpenCL buffer objects). It must honour buffer_alloc's alignment, which
   * is how `tessera plugin-check` checks alignment on memory the host cannot
   * see. */
  uint64_t device_address;
} tsr_buffer_info;
/* The size of the 1.0 struct: a plugin must accept any struct_size from it
 * up (a host built against 1.0-1.6 passes this much) and write no byte past
 * min(struct_size, its own sizeof). */
#define TSR_BUFFER_INFO_V1_0_SIZE 40u

/* since 1.7: what memory_stats reports for one device. */
typedef struct tsr_memory_stats {
  uint32_t struct_size;        /* set by the caller */
  uint32_t reserved0;
  uint64_t bytes_in_use;       /* out: device memory the plugin holds now: the
                                * host's live buffers (reserved sizes) plus
                                * its own scratch, caches and pools */
  uint64_t peak_bytes_in_use;  /* out: the most bytes_in_use has been since
                                * init */
  uint64_t bytes_limit;        /* out: the most the plugin can hold on the
                                * device (0: unknown) */
} tsr_memory_stats;

/* ------------------------------------------------------------------------ */
/* Tensors                                                                   */
/* ------------------------------------------------------------------------ */

#define TSR_MAX_DIMS 6

/* A strided view into a buffer. Element (i0, .., in-1) lives at byte
 * offset + (i0*strides[0] + ... + in-1*strides[n-1]) * dtype_size. Strides
 * are in elements and non-negative; shape[k] >= 0. A rank-0 tensor is a
 * scalar. Ops state below which arguments must have a unit innermost stride. */
typedef struct tsr_tensor {
  uint32_t struct_size;
  tsr_dtype dtype;
  tsr_buffer buffer;
  uint64_t offset; /* bytes from the start of buffer */
  int32_t ndim;    /* 0..TSR_MAX_DIMS */
  int32_t reserved0;
  int64_t shape[TSR_MAX_DIMS];
  int64_t strides[TSR_MAX_DIMS];
} tsr_tensor;

/* ------------------------------------------------------------------------ */
/* Ops (v1). Fixed ids; the contract of each is written here and checked by  */
/* `tessera plugin-check` against reference/. Arguments are listed as       */
/* inputs then outputs; "T" is the number of tokens, "H" the hidden size.   */
/* Unless stated, all float math accumulates in at least f32, inputs and    */
/* outputs do not alias, and output tensors are fully overwritten.           */
/* ------------------------------------------------------------------------ */

typedef uint32_t tsr_op_id;
enum {
  /* embedding v1: in  ids I32 [T], table X [V, H]; out y X [T, H].
   *   y[t] = table[ids[t]]. X in {F32, BF16, F16}. An id outside [0, V) is a
   *   sticky stream error (TSR_ERR_INVALID_ARGUMENT). params: none (NULL).
   * embedding v2 (since 1.4; the same id): a vocabulary shard, for
   *   tensor parallelism. in ids I32 [T], table X [S, H] holding rows
   *   [params.row_begin, params.row_begin + S) of the whole table;
   *   out y X [T, H]. y[t] = table[ids[t] - row_begin] when the id falls in
   *   the shard, else zeros (every id is valid: the ranks' results summed
   *   by an all_reduce give the whole table's rows). Signatures as v1's.
   *   params: tsr_embedding_shard_params. */
  TSR_OP_EMBEDDING = 1,
  /* rms_norm v1: in x X [.., H], w X [H]; out y X [.., H] (same shape as x).
   *   y = x / sqrt(mean(x^2 over H) + eps) * w. Leading dims are any.
   *   params: tsr_rms_norm_params. y may alias x exactly. */
  TSR_OP_RMS_NORM = 2,
  /* add_rms_norm v1: in x X [.., H], residual X [.., H], w X [H];
   *   out y X [.., H], residual_out X [.., H].
   *   residual_out = x + residual (rounded to X); y = rms_norm(residual_out).
   *   residual_out may alias residual exactly. params: tsr_rms_norm_params. */
  TSR_OP_ADD_RMS_NORM = 3,
  /* linear v1: in x A [T, K], w W [N, K] (row-major, Hugging Face layout),
   *   optional bias A [N]; out y A [T, N]. y = x w^T (+ bias).
   *   Signatures (A, W, A): A in {F32, BF16}, W in {F32, BF16, F16} with
   *   W == A or W == F16. num_inputs is 2 or 3 (bias). w needs a unit
   *   innermost stride. params: none (NULL).
   * linear v2 (since 1.1; the same id, version 2): weight-only int8.
   *   in x A [T, K], w I8 [N, K], w_scale F32 [N, K / G], optional bias A [N];
   *   out y A [T, N]. G is params.group_size: G >= 1 divides K (G == K is
   *   one scale per output channel).
   *     y[t, n] = sum_k x[t, k] * (w[n, k] * w_scale[n, k / G]) (+ bias[n]),
   *   accumulated in at least f32 and rounded once to A.
   *   Signatures (A, I8, F32, A) and (A, I8, F32, A, A) with A in
   *   {F32, BF16}: num_inputs is 3 or 4 (bias). w needs a unit innermost
   *   stride; x, w_scale, bias and y may have any strides. With K == 0,
   *   w_scale is [N, 0], y = bias (or 0) and any G >= 1 is accepted.
   *   params: tsr_linear_w8_params. A plugin that does not list linear v2
   *   leaves it to the host's cpu fallback.
   * linear v3 (since 1.5; the same id, version 3): w8a8, int8 weights and
   *   activations (llama.cpp's Q8_0 x Q8_0 product). Tensors, signatures,
   *   strides, params and the K == 0 case are v2's. Each row of x is
   *   quantised inside the op in blocks of G along K (block b holds
   *   k in [b G, (b + 1) G)), all in f32 with IEEE rounding:
   *     a[t, b]  = max |x[t, k]| over the block (x's values as given)
   *     s[t, b]  = a[t, b] / 127.0f
   *     q[t, k]  = x[t, k] * (127.0f / a[t, b]) rounded to the nearest
   *                integer, ties to even (the f32 product, then the
   *                rounding); 0 where a[t, b] == 0. |q| <= 127.
   *     y[t, n]  = sum_b s[t, b] * w_scale[n, b] * (sum_{k in b} q[t, k] w[n, k])
   *                (+ bias[n])
   *   The inner sums are exact integers (the products fit int32 for any
   *   G <= 2^16); the outer sum is accumulated in at least f32 and rounded
   *   once to A. So q is bit-exact across plugins and only the outer
   *   accumulation order differs. A plugin that does not list linear v3
   *   leaves it to the host's cpu fallback.
   * linear v4 (since 1.6; the same id, version 4): w4a8, 4-bit weights
   *   (llama.cpp's Q4_0 x Q8_0 product). in x A [T, K], w U8 [N, K / 2]
   *   (packed), w_scale F16 [N, K / G] (Q4_0's scales), optional bias
   *   A [N]; out y A [T, N].
   *   K % 32 == 0 and G % 32 == 0 (G divides K; G == K is one scale per
   *   output channel). Packing, per block of 32 consecutive weights of a
   *   row (16 bytes, block c at byte offset 16 c of the row): byte j holds
   *   weight 32 c + j in its low nibble and weight 32 c + j + 16 in its
   *   high nibble; a nibble u in [0, 15] is the weight u - 8, so
   *     W[n, k] = (nibble(n, k) - 8) * w_scale[n, k / G].
   *   x is quantised exactly as in v3 (blocks of G), and
   *     y[t, n] = sum_b s[t, b] * w_scale[n, b] *
   *               (sum_{k in b} q[t, k] (nibble(n, k) - 8)) (+ bias[n])
   *   with v3's exactness rules. Signatures (A, U8, F16, A) and
   *   (A, U8, F16, A, A) with A in {F32, BF16}; strides and K == 0 as v2
   *   (w's rows are whole bytes: a unit innermost stride). params:
   *   tsr_linear_w8_params. A plugin that does not list linear v4 leaves it
   *   to the host's cpu fallback.
   * linear v5 (since 1.8; the same id, version 5): w6a8, 6-bit weights in
   *   llama.cpp's Q6_K super-blocks (its Q6_K x Q8 product). in x A [T, K],
   *   w U8 [N, (K / 256) * 208], w_scale F16 [N, K / 256], optional bias
   *   A [N]; out y A [T, N]. K % 256 == 0. Row n of w is K / 256 blocks of
   *   208 bytes, block c (weights 256 c .. 256 c + 255) being a Q6_K
   *   block without its trailing f16 d: u8 ql[128], u8 qh[64], i8 sc[16];
   *   w_scale[n, c] is that d. Weight i = 256 c + 128 h + 32 j + l
   *   (h in {0, 1}, j in [0, 4), l in [0, 32)) has the 6-bit value
   *     u = (ql[64 h + 32 (j & 1) + l] >> (4 (j >> 1))) & 15
   *         | ((qh[32 h + l] >> (2 j)) & 3) << 4
   *   and W[n, i] = w_scale[n, c] * sc[i % 256 / 16] * (u - 32).
   *   params.group_size G (x's quantisation block, as v3) is 32, 64, 128
   *   or 256, so a block of x lies in one super-block c(b):
   *     y[t, n] = sum_b s[t, b] * w_scale[n, c(b)] *
   *               (sum_{i in b} q[t, i] sc[n, i / 16] (u[n, i] - 32))
   *               (+ bias[n])
   *   with v3's exactness rules (the inner sums are exact integers below
   *   2^31). Signatures (A, U8, F16, A) and (A, U8, F16, A, A) with A in
   *   {F32, BF16}; strides and K == 0 as v2 (w's rows are whole blocks:
   *   a unit innermost stride). params: tsr_linear_w8_params. A plugin
   *   that does not list linear v5 leaves it to the host's cpu fallback. */
  TSR_OP_LINEAR = 4,
  /* rope v1: in positions I32 [T], inv_freq F32 [R/2], q X [T, Hq, D],
   *   k X [T, Hk, D]; out q_out X [T, Hq, D], k_out X [T, Hk, D].
   *   Rotates the first R <= D dims of every head by angle
   *   positions[t] * inv_freq[i]; dims R..D-1 pass through. The host computes
   *   inv_freq (so default, llama3 and other scalings are host policy).
   *   TSR_ROPE_NEOX pairs (i, i + R/2); TSR_ROPE_INTERLEAVED pairs (2i, 2i+1).
   *   q_out/k_out may alias q/k exactly. params: tsr_rope_params. */
  TSR_OP_ROPE = 5,
  /* kv_store v1: in k X [T, Hk, D], v X [T, Hk, D], slots I32 [T];
   *   out k_cache X [S, Hk, D], v_cache X [S, Hk, D] (one layer's pool,
   *   updated in place: only rows named in slots are written).
   *   k_cache[slots[t]] = k[t]; v likewise. slots[t] == -1 skips token t
   *   (padding); any other slot outside [0, S) is a sticky stream error.
   *   A paged pool is S = num_pages * page_size slots; slot =
   *   page * page_size + offset_in_page. params: none (NULL). */
  TSR_OP_KV_STORE = 6,
  /* paged_attention v1: a ragged batch of B sequences, prefill over a cached
   *   prefix and decode in one call.
   *   in  q X [T, Hq, D]          queries of all sequences, concatenated
   *       k_cache X [S, Hk, D]    the pool kv_store wrote (this layer)
   *       v_cache X [S, Hk, D]
   *       block_table I32 [B, P]  page ids of each sequence, in order
   *       seq_lens I32 [B]        context length of each sequence, new
   *                               tokens included (their K/V already stored)
   *       query_start I32 [B+1]   query rows of sequence b are
   *                               [query_start[b], query_start[b+1])
   *   out o X [T, Hq, D].
   *   For sequence b with n = query_start[b+1]-query_start[b] new tokens and
   *   L = seq_lens[b], query j (0 <= j < n) sits at position p = L - n + j and
   *   attends causally to positions 0..p, whose K/V live at slot
   *   block_table[b][pos / page_size] * page_size + pos % page_size.
   *   Query head h reads KV head h / (Hq / Hk) (GQA; Hq % Hk == 0).
   *   o = softmax(scale * q k^T) v over those positions. With
   *   sliding_window W > 0 only positions p-W+1..p are attended. Rows of o
   *   past query_start[B] (query_start[B] <= T) are left untouched.
   *   params: tsr_paged_attention_params. */
  TSR_OP_PAGED_ATTENTION = 7,
  /* silu_and_mul v1: in x X [.., 2I]; out y X [.., I].
   *   y = silu(x[.., :I]) * x[.., I:], silu(a) = a / (1 + exp(-a)).
   *   params: none (NULL). */
  TSR_OP_SILU_AND_MUL = 8,
  /* add v1: in a X [shape], b X [shape]; out y X [shape]. y = a + b.
   *   y may alias a or b exactly. params: none (NULL). */
  TSR_OP_ADD = 9,
  /* cast v1: in x X [shape]; out y Y [shape], X, Y in {F32, BF16, F16}.
   *   Round to nearest even. params: none (NULL). */
  TSR_OP_CAST = 10,
  /* argmax v1: in logits X [B, V], X in {F32, BF16}; out ids I32 [B].
   *   Ties go to the lowest index. params: none (NULL). */
  TSR_OP_ARGMAX = 11,
  /* sample v1: in logits F32 [B, V], temperature F32 [B], top_k I32 [B],
   *   top_p F32 [B], min_p F32 [B], uniform F32 [B]; out ids I32 [B].
   *   Per row, deterministic given `uniform` (which the host draws from the
   *   request's seeded generator, so a seeded request samples the same
   *   tokens whatever else is in the batch):
   *     - temperature <= 0: argmax (ties to the lowest index);
   *     - else p = softmax(logits / temperature); order ids by p descending,
   *       ties by lower id; keep the first top_k (top_k <= 0 or >= V: all);
   *       then the shortest prefix whose mass (of the probabilities p, not
   *       renormalised after top_k) reaches top_p (at least one id;
   *       top_p >= 1: all); then drop ids with p < min_p * p_max (min_p <= 0:
   *       none; the first id is always kept); renormalise; return the first
   *       id in that order whose cumulative probability exceeds
   *       uniform * total (the last kept id if rounding leaves none).
   *       params: none (NULL). */
  TSR_OP_SAMPLE = 12,
  /* logprobs v1: in logits F32 [B, V], ids I32 [B];
   *   out logprob F32 [B], and optionally top_ids I32 [B, K],
   *   top_logprobs F32 [B, K] (num_outputs 1 or 3; K >= 0).
   *   logprob[b] = log_softmax(logits[b])[ids[b]]; top_* hold the K largest
   *   log-probabilities in descending order, ties to the lower id.
   *   params: none (NULL). */
  TSR_OP_LOGPROBS = 13,

  TSR_OP_COUNT_V1 = 14, /* ids 1..13 are v1 */
  /* Ids from here on are fused ops, each declared by a spec in a later minor.
   * A fused op runs what a fixed sequence of v1 ops would, in one launch; a
   * host uses it only when the selected plugin lists it (it never falls
   * back to another plugin: the host runs the op sequence instead), so a
   * plugin lists one only where it is faster. Its signature lists dtype
   * CLASSES, as its spec says, not one dtype per argument, and its launch
   * may pass more than TSR_MAX_OP_ARGS tensors. An optional argument that
   * is absent is passed as a tensor with dtype TSR_DTYPE_INVALID (its
   * other fields are ignored). */
  TSR_OP_FUSED_BASE = 1000,
  /* decoder_layer v1 (since 1.2): one pre-norm decoder layer (Llama, Qwen2,
   *   Qwen3) over a ragged batch, as paged_attention's, in one launch.
   *   Signature: 3 dtype classes (X, W, KV): activations X in {F32, BF16};
   *   linear weights W in {X, F16, I8} (I8: linear v2 with F32 scales);
   *   KV cache KV in {F32, BF16}.
   *   in  0 residual X [T, H]        the hidden state entering the layer
   *       1 positions I32 [T]        2 slots I32 [T]
   *       3 block_table I32 [B, P]   4 seq_lens I32 [B]
   *       5 query_start I32 [B+1]    (as paged_attention)
   *       6 inv_freq F32 [R/2]       (as rope)
   *       7 input_norm X [H]
   *       8 w_qkv W [(Hq + 2 Hk) D, H]   9 w_qkv_scale F32 [(Hq+2Hk)D, H/G]
   *      10 qkv_bias X [(Hq + 2 Hk) D]  11 q_norm X [D]   12 k_norm X [D]
   *      13 w_o W [H, Hq D]             14 w_o_scale F32 [H, Hq D / G]
   *      15 o_bias X [H]                16 post_norm X [H]
   *      17 w_gate_up W [2 I, H]        18 w_gate_up_scale F32 [2I, H/G]
   *      19 w_down W [H, I]             20 w_down_scale F32 [H, I / G]
   *   out 0 residual_out X [T, H] (may alias residual exactly)
   *       1 k_cache KV [S, Hk, D]    2 v_cache KV [S, Hk, D] (in place, as
   *                                  kv_store's)
   *   Optional, absent when the model has none: qkv_bias, o_bias, and
   *   q_norm with k_norm (both or neither). The *_scale inputs are present
   *   exactly when W is I8 (G = params.weight_group_size). Weights, norms,
   *   biases and scales need a unit innermost stride and no gaps; residual
   *   and residual_out rows may be strided; the metadata is contiguous.
   *   The result is that of this v1 op sequence, each intermediate rounded
   *   to X (to KV where it lives in the cache dtype):
   *     n    = rms_norm(residual, input_norm)
   *     qkv  = linear(n, w_qkv [, w_qkv_scale], qkv_bias)  [T, (Hq+2Hk) D]
   *     q, k, v = the [T, Hq, D], [T, Hk, D], [T, Hk, D] column blocks
   *     if q_norm: q = rms_norm(q, q_norm); k = rms_norm(k, k_norm)
   *     q, k = rope(positions, inv_freq, q, k)  (params.rope_style)
   *     if KV != X: q, k, v = cast(q, k, v) to KV
   *     kv_store(k, v, slots) into k_cache, v_cache
   *     a    = paged_attention(q, k_cache, v_cache, block_table, seq_lens,
   *                            query_start)  (cast back to X if KV != X)
   *     h    = linear(a as [T, Hq D], w_o [, w_o_scale], o_bias)
   *     n2, r = add_rms_norm(h, residual, post_norm)
   *     g    = silu_and_mul(linear(n2, w_gate_up [, w_gate_up_scale]))
   *     residual_out = add(linear(g, w_down [, w_down_scale]), r)
   *   with linear v1 for W in {X, F16} and v2 for I8. Rows of residual_out
   *   past query_start[B] are unspecified. params: tsr_decoder_layer_params
   *   up to logit_softcap (v1 reads no further).
   * decoder_layer v2 (since 1.4; the same id and tensors): one
   *   tensor-parallel rank's layer. params.comm is a communicator of this
   *   plugin (comm_init_rank or comm_init_all) of which this launch is one
   *   rank, on a stream of that rank's device; NULL means no parallelism
   *   (then v2 is v1). The tensors are the rank's shard (Megatron style):
   *   w_qkv holds its Hq query heads and Hk KV heads (the params' Hq, Hk
   *   are local), w_o the matching input columns [H, Hq D], w_gate_up its
   *   I gate rows then its I up rows, w_down the matching columns [H, I];
   *   o_bias is passed by one rank only. The result is v1's sequence with
   *   two in-place all_reduce SUMs over comm inserted:
   *     h = all_reduce(h)          after the o projection, before the
   *                                add_rms_norm;
   *     d = all_reduce(linear(g, w_down [, w_down_scale]))  before the
   *                                final add.
   *   They obey the collectives contract (ordering, matching, failure):
   *   every rank launches the same layers in the same order, and a dead
   *   peer is the stream's sticky TSR_ERR_DEVICE. A comm that is not a live
   *   communicator of this plugin, or one whose rank lives on another
   *   device than the stream, is TSR_ERR_INVALID_HANDLE /
   *   TSR_ERR_INVALID_ARGUMENT at the launch. Recorded in a graph like any
   *   collective. params: tsr_decoder_layer_params, all of it.
   * decoder_layer v3 (since 1.5; the same id and tensors): v2 with W == I8
   *   only, each of the four projections computed as linear v3 (w8a8,
   *   activations quantised per row in blocks of weight_group_size)
   *   instead of v2. weight_group_size may also be 0 in v3: per channel,
   *   each projection's G is its own K (one scale per weight row, the
   *   activations quantised per row: SGLang's w8a8_int8), so each *_scale
   *   is [N, 1]. params: tsr_decoder_layer_params, all of it (comm NULL:
   *   no parallelism).
   * decoder_layer v4 (since 1.6; the same id and tensors): v3 with W == U8,
   *   4-bit weights packed as linear v4's (each weight [N, K / 2] bytes for
   *   a projection of K inputs, its *_scale F16 [N, K / G]), each projection
   *   computed as linear v4; weight_group_size is G (a multiple of 32
   *   dividing every K) or 0 (per channel, as v3). The signature's W class
   *   is U8. params: as v3.
   */
  TSR_OP_DECODER_LAYER = TSR_OP_FUSED_BASE
};

typedef uint32_t tsr_rope_style;
enum { TSR_ROPE_NEOX = 0, TSR_ROPE_INTERLEAVED = 1 };

typedef struct tsr_rms_norm_params {
  uint32_t struct_size;
  float eps;
} tsr_rms_norm_params;

typedef struct tsr_rope_params {
  uint32_t struct_size;
  tsr_rope_style style;
} tsr_rope_params;

typedef struct tsr_paged_attention_params {
  uint32_t struct_size;
  float scale;            /* usually 1/sqrt(D) */
  int32_t page_size;      /* slots per page, >= 1 */
  int32_t sliding_window; /* 0: none; else attend to the last W positions only */
  float logit_softcap;    /* 0: none; else s = cap * tanh(s / cap) */
} tsr_paged_attention_params;

/* embedding v2 (since 1.4). */
typedef struct tsr_embedding_shard_params {
  uint32_t struct_size;
  int32_t reserved;   /* 0 */
  int64_t row_begin;  /* the shard's first vocabulary row, >= 0 */
} tsr_embedding_shard_params;

/* linear v2 (since 1.1), v3 (since 1.5) and v4 (since 1.6). */
typedef struct tsr_linear_w8_params {
  uint32_t struct_size;
  int32_t group_size; /* G: weights per scale along K; >= 1, divides K */
} tsr_linear_w8_params;

/* decoder_layer v1 (since 1.2). Hq, Hk, D are restated here and checked
 * against the tensors' shapes. */
typedef struct tsr_decoder_layer_params {
  uint32_t struct_size;
  float rms_norm_eps;         /* every rms_norm of the layer */
  tsr_rope_style rope_style;
  int32_t num_q_heads;        /* Hq */
  int32_t num_kv_heads;       /* Hk; Hq % Hk == 0 */
  int32_t head_dim;           /* D */
  int32_t weight_group_size;  /* W == I8 (v4: U8): G, divides every K
                                 (v3, v4 also 0: per channel, G = each
                                 projection's K); else ignored */
  /* As tsr_paged_attention_params. */
  float attn_scale;
  int32_t page_size;
  int32_t sliding_window;
  float logit_softcap;
  /* Since 1.4, read by decoder_layer v2 only: the tensor-parallel
   * communicator (NULL: none). */
  tsr_comm comm;
} tsr_decoder_layer_params;

/* The number of tensors decoder_layer v1 takes. */
#define TSR_DECODER_LAYER_NUM_INPUTS 21
#define TSR_DECODER_LAYER_NUM_OUTPUTS 3

#define TSR_MAX_OP_ARGS 12

/* One entry of a plugin's op table: an op id, its version and the dtype of
 * each argument (inputs then outputs, as listed in the op's contract; an
 * optional argument that is present uses its own slot, e.g. linear with bias
 * has 4 dtypes). A fused op lists its spec's dtype classes instead. */
typedef struct tsr_op_signature {
  uint32_t struct_size;
  tsr_op_id op;
  uint32_t version;
  uint32_t num_args;
  tsr_dtype dtypes[TSR_MAX_OP_ARGS];
} tsr_op_signature;

/* ------------------------------------------------------------------------ */
/* Collectives (optional; all NULL unless TSR_CAP_COLLECTIVES)              */
/* ------------------------------------------------------------------------ */

typedef int32_t tsr_reduce_op;
enum { TSR_REDUCE_SUM = 0, TSR_REDUCE_MAX = 1, TSR_REDUCE_MIN = 2 };

/* since 1.3: what comm_get_unique_id returns and the host hands, as opaque
 * bytes, to every rank of one communicator (like ncclUniqueId). Its
 * meaning is the plugin's (a shared-memory name, an address, a nonce). */
#define TSR_COMM_UNIQUE_ID_BYTES 128
typedef struct tsr_comm_unique_id {
  uint8_t bytes[TSR_COMM_UNIQUE_ID_BYTES];
} tsr_comm_unique_id;

/* since 1.3: the arguments of comm_init_rank. */
typedef struct tsr_comm_init_rank_args {
  uint32_t struct_size;
  const tsr_comm_unique_id* id; /* from comm_get_unique_id, same on every rank */
  int32_t num_ranks;            /* >= 1 */
  int32_t rank;                 /* 0 .. num_ranks-1, each taken exactly once */
  int32_t device;               /* this rank's device (a local ordinal) */
  /* Which host ("node") the rank runs on, 0 .. num_nodes-1, as the host
   * was told (--nnodes / --node-rank), never guessed from hostnames: ranks
   * of one node may use node-local transports (shared memory, a chip's
   * own links), ranks of different nodes always use the network. */
  int32_t node;
  int32_t num_nodes;            /* >= 1 */
} tsr_comm_init_rank_args;

/* Contract of the comm table (docs/PLUGIN_ABI.md "Collectives: the
 * contract"; plugin-check's `collectives` and `collectives_mp` groups):
 *  - Ordering. Every collective (all_reduce, all_gather, broadcast,
 *    reduce_scatter) and every send/recv is ENQUEUED on `stream`, a stream
 *    of the rank's device, and runs in that stream's order like a launch:
 *    it reads its inputs after the stream's earlier work and later work
 *    sees its outputs. The call itself need not wait for the peers; a
 *    plugin that cannot run host-side work in stream order may instead
 *    complete the collective before returning (after the stream's earlier
 *    work) and refuse it while the stream captures a graph.
 *    Every rank issues the same collectives, with matching dtype, counts,
 *    op and root, in the same order; a rank's collectives run in the order
 *    of its calls (issue them from one thread, on one stream at a time or
 *    ordered by events). A mismatch found at run time is the stream's
 *    sticky error (TSR_ERR_INVALID_ARGUMENT), never a wrong answer.
 *  - Buffers: contiguous tensors of any memory this plugin allocated on the
 *    rank's device (TSR_MEM_DEVICE or TSR_MEM_PINNED_HOST); the plugin
 *    stages through its own comm buffers where its CCL needs registered
 *    memory, so the host never allocates comm buffers itself. In-place use
 *    (send == recv, the same buffer and offset) is valid for all_reduce;
 *    for all_gather when send is rank r's slice of recv; for
 *    reduce_scatter when recv is rank r's slice of send. Other overlaps
 *    are undefined.
 *  - Reductions: f32, bf16, f16 accumulate in at least f32 and round once;
 *    i32 wraps; every rank gets bit-identical results.
 *  - Graphs: with TSR_CAP_GRAPHS, collectives enqueued on a capturing
 *    stream are recorded like launches; every replay runs them again, and
 *    replays pair up across ranks by order exactly like eager calls (each
 *    rank replays its graph once per step). Checked at capture like eager.
 *  - Concurrency: different communicators may be used from different
 *    threads at once; one communicator (one rank) from one thread at a
 *    time. comm_destroy waits for nothing: the host synchronises the
 *    rank's streams first.
 *  - Failure: a peer that died, never joined or stopped issuing the
 *    matching call makes the waiting rank's collective fail with
 *    TSR_ERR_DEVICE (the stream's sticky error, naming the peer when
 *    known) within the plugin's comm_timeout_ms init option (default
 *    60000); comm_init_rank fails the same way when a rank does not join
 *    in time. Nothing waits forever. After such a failure the communicator
 *    is broken: later calls fail, the host destroys it. */
typedef struct tsr_comm_api {
  uint32_t struct_size;
  /* Creates one communicator over `num_devices` devices of this plugin in
   * this process (like ncclCommInitAll): comms_out[i] is rank i, on
   * devices[i]. A single device is a valid, trivial communicator. */
  tsr_status (*comm_init_all)(const int32_t* devices, int32_t num_devices,
                              tsr_comm* comms_out);
  tsr_status (*comm_destroy)(tsr_comm comm);
  /* Enqueue on `stream` (on the rank's device). Every rank must call the
   * same collectives in the same order, each on its own stream. Buffers are
   * contiguous tensors of identical shape and dtype on every rank. */
  tsr_status (*all_reduce)(tsr_comm comm, tsr_stream stream,
                           const tsr_tensor* send, const tsr_tensor* recv,
                           tsr_reduce_op op);
  /* recv holds num_ranks * send elements, rank-major. */
  tsr_status (*all_gather)(tsr_comm comm, tsr_stream stream,
                           const tsr_tensor* send, const tsr_tensor* recv);
  /* In place on `buffer`: every rank ends with root's contents. */
  tsr_status (*broadcast)(tsr_comm comm, tsr_stream stream,
                          const tsr_tensor* buffer, int32_t root);
  /* Point to point: sends and receives between two ranks pair up in order,
   * with equal dtype and count. send may complete before the matching recv
   * starts (eager) or wait for it; a rank must not depend on either. */
  tsr_status (*send)(tsr_comm comm, tsr_stream stream, const tsr_tensor* t,
                     int32_t peer);
  tsr_status (*recv)(tsr_comm comm, tsr_stream stream, const tsr_tensor* t,
                     int32_t peer);

  /* --- since 1.3: read only when struct_size covers them; NULL = absent
   * (then the plugin is refused for ranks in different processes) --- */
  /* Creates a fresh id for one communicator. Called once, by one process
   * (the host gives the bytes to the others); needs init. Cheap: creates
   * no shared resources yet (comm_init_rank of rank 0 does). */
  tsr_status (*comm_get_unique_id)(tsr_comm_unique_id* out);
  /* Joins rank args->rank of the communicator named by args->id (like
   * ncclCommInitRank). Blocks until all num_ranks ranks joined, or fails
   * within comm_timeout_ms naming the ranks still missing. The ranks may
   * live in different processes, on different nodes, or in one process
   * (each joining from its own thread). */
  tsr_status (*comm_init_rank)(const tsr_comm_init_rank_args* args,
                               tsr_comm* out);
  /* send holds num_ranks * recv elements; rank r receives the reduction
   * over ranks of send's slice r (elements [r*n, (r+1)*n), n = recv's
   * count). Reduce op and dtypes as all_reduce. */
  tsr_status (*reduce_scatter)(tsr_comm comm, tsr_stream stream,
                               const tsr_tensor* send, const tsr_tensor* recv,
                               tsr_reduce_op op);
} tsr_comm_api;

/* ------------------------------------------------------------------------ */
/* Graphs (optional; all NULL unless TSR_CAP_GRAPHS)                         */
/* ------------------------------------------------------------------------ */

/* Contract (docs/PLUGIN_ABI.md "Graphs: the contract", checked by
 * plugin-check's `graphs` group): between begin_capture and end_capture,
 * launches, device-to-device copies and memsets enqueued on `stream` are
 * recorded, not run; argument checks happen at capture. Buffers, offsets,
 * shapes and params are fixed into the graph; buffer CONTENTS are read when
 * a replay runs, and a replay computes exactly what the same work enqueued
 * eagerly computes. While a stream captures, stream_synchronize,
 * stream_query, event_record on it, stream_wait_event by it and a second
 * begin_capture fail with TSR_ERR_INVALID_ARGUMENT (so does end_capture on
 * a stream that is not capturing). launch may use any non-capturing stream
 * of the graph's device and is ordered there like eager work; a kernel
 * failing in a replay is that stream's sticky error. Buffers a graph uses
 * stay allocated until it is destroyed; destroy may be called while a
 * replay is queued (the replay still runs). */
typedef struct tsr_graph_api {
  uint32_t struct_size;
  /* Between begin and end, work enqueued on `stream` is recorded instead of
   * run. Buffers and shapes are fixed into the graph. */
  tsr_status (*begin_capture)(tsr_stream stream);
  tsr_status (*end_capture)(tsr_stream stream, tsr_graph* out);
  tsr_status (*launch)(tsr_graph graph, tsr_stream stream);
  tsr_status (*destroy)(tsr_graph graph);
} tsr_graph_api;

/* ------------------------------------------------------------------------ */
/* The plugin table                                                          */
/* ------------------------------------------------------------------------ */

typedef struct tsr_plugin_api {
  /* --- identical in every major version --- */
  uint32_t struct_size;
  uint32_t abi_major;
  uint32_t abi_minor;
  uint32_t reserved0;

  /* --- v1.0 --- */
  const tsr_plugin_manifest* manifest; /* static; valid while loaded */

  /* The message of the most recent failed call on this thread (see rule 2).
   * Never NULL; "" if none. */
  const char* (*last_error)(void);

  /* Cheap hardware check, before init: 0 = absent (the host skips the
   * plugin), otherwise a preference score (the cpu plugin returns 10;
   * a discrete GPU ~100). Must not allocate device resources. */
  int32_t (*probe)(void);

  /* Initialises the plugin once; a second call is TSR_ERR_INVALID_ARGUMENT.
   * `args` may be NULL (all defaults). */
  tsr_status (*init)(const tsr_init_args* args);
  /* Releases everything; after it only manifest/probe/init are valid. */
  tsr_status (*shutdown)(void);

  tsr_status (*device_count)(int32_t* count_out);
  tsr_status (*device_properties)(int32_t device, tsr_device_properties* props);

  /* Allocates `size` bytes (size 0 is valid and yields a distinct handle)
   * aligned to max(alignment, the device's alignment); alignment must be 0
   * or a power of two. TSR_MEM_PINNED_HOST needs TSR_CAP_PINNED_HOST. */
  tsr_status (*buffer_alloc)(int32_t device, tsr_mem_kind kind, uint64_t size,
                             uint64_t alignment, tsr_buffer* out);
  tsr_status (*buffer_free)(tsr_buffer buffer);
  tsr_status (*buffer_info)(tsr_buffer buffer, tsr_buffer_info* info);

  tsr_status (*stream_create)(int32_t device, tsr_stream* out);
  tsr_status (*stream_destroy)(tsr_stream stream);
  /* Waits for all work enqueued so far; returns the stream's sticky error. */
  tsr_status (*stream_synchronize)(tsr_stream stream);
  /* TSR_OK when idle, TSR_ERR_NOT_READY while work is pending, or the
   * sticky error. */
  tsr_status (*stream_query)(tsr_stream stream);

  tsr_status (*event_create)(int32_t device, tsr_event* out);
  tsr_status (*event_destroy)(tsr_event event);
  /* Captures the work enqueued on `stream` so far; re-recording replaces
   * the capture. An event never recorded counts as complete. */
  tsr_status (*event_record)(tsr_event event, tsr_stream stream);
  /* Work enqueued on `stream` after this call starts only after `event`'s
   * captured work finished (the event may belong to another stream). Does
   * not block the caller. */
  tsr_status (*stream_wait_event)(tsr_stream stream, tsr_event event);
  tsr_status (*event_synchronize)(tsr_event event);
  tsr_status (*event_query)(tsr_event event); /* OK / NOT_READY / error */

  /* Copies. With stream == NULL the copy is synchronous: it returns when the
   * data has arrived (and waits for nothing else). With a stream it is
   * enqueued; the host memory must stay valid and untouched until the
   * stream passes the copy (pinned host memory makes that cheap). */
  tsr_status (*copy_host_to_device)(tsr_stream stream, tsr_buffer dst,
                                    uint64_t dst_offset, const void* src,
                                    uint64_t size);
  tsr_status (*copy_device_to_host)(tsr_stream stream, void* dst,
                                    tsr_buffer src, uint64_t src_offset,
                                    uint64_t size);
  /* Between any two buffers of this plugin (devices may differ). */
  tsr_status (*copy_device_to_device)(tsr_stream stream, tsr_buffer dst,
                                      uint64_t dst_offset, tsr_buffer src,
                                      uint64_t src_offset, uint64_t size);
  tsr_status (*memset)(tsr_stream stream, tsr_buffer dst, uint64_t offset,
                       uint8_t value, uint64_t size);

  /* The op table: a static array valid while loaded. */
  tsr_status (*list_ops)(const tsr_op_signature** ops_out, size_t* count_out);
  /* Resolves a signature once, for launches on `device`. TSR_ERR_NOT_FOUND
   * when the plugin lacks it. Kernels live until shutdown. */
  tsr_status (*resolve_op)(int32_t device, const tsr_op_signature* signature,
                           tsr_kernel* out);
  /* Enqueues one op on `stream`. Tensors and params are copied by the call
   * (the host may reuse them when it returns); the buffers they point to
   * must stay alive until the stream passes the op. Shape and dtype checks
   * happen here and fail synchronously. `params` is the op's POD struct (or
   * NULL), params_size its size as the host compiled it. */
  tsr_status (*launch)(tsr_kernel kernel, tsr_stream stream,
                       const tsr_tensor* inputs, size_t num_inputs,
                       const tsr_tensor* outputs, size_t num_outputs,
                       const void* params, size_t params_size);

  /* Optional sub-tables: NULL when absent. */
  const tsr_comm_api* comm;
  const tsr_graph_api* graph;

  /* --- since 1.1: the host reads these only when struct_size covers them;
   * each may be NULL (absent) --- */
  /* Cumulative nanoseconds `stream` spent running its enqueued work
   * (kernels, copies, memsets), counting work that has finished, since the
   * stream was created; never decreases. For profiling: the wall time of a
   * synchronized stretch of work minus its busy time is the time the device
   * waited for the host (launch and scheduling overhead). */
  tsr_status (*stream_busy_ns)(tsr_stream stream, uint64_t* ns_out);

  /* --- since 1.7: read only when struct_size covers it; NULL = absent --- */
  /* The device's memory figures (tsr_memory_stats). Called from any thread
   * at any time between init and shutdown, concurrently with everything;
   * must not block on queued work. `tessera doctor` prints them and the
   * server exports them on /metrics (tessera:device_memory_*_bytes). */
  tsr_status (*memory_stats)(int32_t device, tsr_memory_stats* stats);
} tsr_plugin_api;

/* The one exported symbol. `host` is borrowed for the plugin's lifetime
 * (the host keeps it alive until after shutdown). Returns NULL only if the
 * plugin cannot run at all (then the host reports that). */
typedef const tsr_plugin_api* (*tsr_get_plugin_api_fn)(
    const tsr_host_services* host);

TSR_PLUGIN_EXPORT const tsr_plugin_api* tsr_get_plugin_api(
    const tsr_host_services* host);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* TESSERA_PLUGIN_TESSERA_PLUGIN_H_ */
