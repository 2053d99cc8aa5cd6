/* A well-formed plugin for hardware this machine does not have: probe()
 * returns 0 and last_error() says why. Tessera must list it as
 * "no-hardware" with that reason and never initialise it. Every entry
 * exists (the table is valid) but, as the hardware is absent, each reports
 * TSR_ERR_DEVICE. */
#include <stddef.h>

#include <tessera/plugin/tessera_plugin.h>

static const char* g_error = "";

static const char* LastError(void) { return g_error; }

static int32_t Probe(void) {
  g_error = "no Widget accelerator found (/dev/widget0 does not exist)";
  return 0;
}

static tsr_status Absent(void) {
  g_error = "the Widget accelerator is not present";
  return TSR_ERR_DEVICE;
}

/* One stub per required entry, each with the entry's own signature. */
/* clang-format off */
static tsr_status Init(const tsr_init_args* a) { (void)a; return Absent(); }
static tsr_status Shutdown(void) { return Absent(); }
static tsr_status DeviceCount(int32_t* n) { (void)n; return Absent(); }
static tsr_status DeviceProperties(int32_t d, tsr_device_properties* p) {
  (void)d; (void)p; return Absent();
}
static tsr_status BufferAlloc(int32_t d, tsr_mem_kind k, uint64_t s,
                              uint64_t a, tsr_buffer* o) {
  (void)d; (void)k; (void)s; (void)a; (void)o; return Absent();
}
static tsr_status BufferFree(tsr_buffer b) { (void)b; return Absent(); }
static tsr_status BufferInfo(tsr_buffer b, tsr_buffer_info* i) {
  (void)b; (void)i; return Absent();
}
static tsr_status StreamCreate(int32_t d, tsr_stream* o) {
  (void)d; (void)o; return Absent();
}
static tsr_status StreamOp(tsr_stream s) { (void)s; return Absent(); }
static tsr_status EventCreate(int32_t d, tsr_event* o) {
  (void)d; (void)o; return Absent();
}
static tsr_status EventOp(tsr_event e) { (void)e; return Absent(); }
static tsr_status EventRecord(tsr_event e, tsr_stream s) {
  (void)e; (void)s; return Absent();
}
static tsr_status StreamWaitEvent(tsr_stream s, tsr_event e) {
  (void)s; (void)e; return Absent();
}
static tsr_status CopyH2D(tsr_stream s, tsr_buffer d, uint64_t o,
                          const void* src, uint64_t n) {
  (void)s; (void)d; (void)o; (void)src; (void)n; return Absent();
}
static tsr_status CopyD2H(tsr_stream s, void* d, tsr_buffer src, uint64_t o,
                          uint64_t n) {
  (void)s; (void)d; (void)src; (void)o; (void)n; return Absent();
}
static tsr_status CopyD2D(tsr_stream s, tsr_buffer d, uint64_t dof,
                          tsr_buffer src, uint64_t sof, uint64_t n) {
  (void)s; (void)d; (void)dof; (void)src; (void)sof; (void)n;
  return Absent();
}
static tsr_status Memset(tsr_stream s, tsr_buffer d, uint64_t o, uint8_t v,
                         uint64_t n) {
  (void)s; (void)d; (void)o; (void)v; (void)n; return Absent();
}
static tsr_status ListOps(const tsr_op_signature** o, size_t* n) {
  (void)o; (void)n; return Absent();
}
static tsr_status ResolveOp(int32_t d, const tsr_op_signature* s,
                            tsr_kernel* o) {
  (void)d; (void)s; (void)o; return Absent();
}
static tsr_status Launch(tsr_kernel k, tsr_stream s, const tsr_tensor* i,
                         size_t ni, const tsr_tensor* o, size_t no,
                         const void* p, size_t ps) {
  (void)k; (void)s; (void)i; (void)ni; (void)o; (void)no; (void)p; (void)ps;
  return Absent();
}

/* clang-format on */

static const tsr_plugin_manifest kManifest = {
    sizeof(tsr_plugin_manifest),
    "widget",
    "0.1.0",
    "Test plugin for a Widget accelerator that is never present",
    TSR_PLUGIN_ABI_MAJOR,
    TSR_PLUGIN_ABI_MINOR,
    0,
    "a Widget accelerator and its driver (/dev/widget0)",
    0};

static const tsr_plugin_api kApi = {sizeof(tsr_plugin_api),
                                    TSR_PLUGIN_ABI_MAJOR,
                                    TSR_PLUGIN_ABI_MINOR,
                                    0,
                                    &kManifest,
                                    LastError,
                                    Probe,
                                    Init,
                                    Shutdown,
                                    DeviceCount,
                                    DeviceProperties,
                                    BufferAlloc,
                                    BufferFree,
                                    BufferInfo,
                                    StreamCreate,
                                    StreamOp,
                                    StreamOp,
                                    StreamOp,
                                    EventCreate,
                                    EventOp,
                                    EventRecord,
                                    StreamWaitEvent,
                                    EventOp,
                                    EventOp,
                                    CopyH2D,
                                    CopyD2H,
                                    CopyD2D,
                                    Memset,
                                    ListOps,
                                    ResolveOp,
                                    Launch,
                                    NULL,
                                    NULL};

TSR_PLUGIN_EXPORT const tsr_plugin_api* tsr_get_plugin_api(
    const tsr_host_services* host) {
  (void)host;
  return &kApi;
}
