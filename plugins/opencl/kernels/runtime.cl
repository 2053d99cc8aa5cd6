// Kernels behind the plugin's own stream work (not ops): memset and
// device-to-device copies, which a failed stream must skip like any other
// work, and the snapshot an event takes of its stream's status.

// dst[offset .. offset + size) = value, one byte per work-item.
__kernel void tsr_fill_bytes(__global int* st, __global uchar* dst, ulong offset, ulong size,
                             uchar value) {
  TSR_SKIP_IF_FAILED(st);
  ulong i = get_global_id(0);
  if (i < size) dst[offset + i] = value;
}

// dst[dst_offset + i] = src[src_offset + i] for i < size, one byte per
// work-item (the buffers are distinct cl_mem objects or disjoint ranges).
__kernel void tsr_copy_bytes(__global int* st, __global uchar* dst, ulong dst_offset,
                             __global const uchar* src, ulong src_offset, ulong size) {
  TSR_SKIP_IF_FAILED(st);
  ulong i = get_global_id(0);
  if (i < size) dst[dst_offset + i] = src[src_offset + i];
}

// Like tsr_copy_bytes for 16-byte aligned offsets and sizes: one uint4 per
// work-item.
__kernel void tsr_copy_vec16(__global int* st, __global uint4* dst, ulong dst_offset,
                             __global const uint4* src, ulong src_offset, ulong count) {
  TSR_SKIP_IF_FAILED(st);
  ulong i = get_global_id(0);
  if (i < count) dst[dst_offset + i] = src[src_offset + i];
}

// event record: copies the stream's 8-int status record into the event's.
__kernel void tsr_snapshot_status(__global const int* st, __global int* snapshot) {
  int i = get_global_id(0);
  if (i < 8) snapshot[i] = st[i];
}
