/*
 * libtsr_faulty_early_event.so: the real plugin, except that an event
 * completes as soon as it is recorded — event_record validates its
 * arguments as the real plugin does, then re-records the event on an idle
 * stream of the event's device, so the event captures nothing. plugin-check
 * must fail streams.event_covers_prior_work, and every check that fails
 * because of it must name the event as the cause.
 */
#include <pthread.h>

#include "shim.h"

#define MAX_EVENTS 4096
#define MAX_DEVICES 64

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static tsr_event g_events[MAX_EVENTS]; /* live events and their devices */
static int32_t g_event_devices[MAX_EVENTS];
static int g_num_events;
static tsr_stream g_idle[MAX_DEVICES]; /* per device, created on first use */

static tsr_status shim_event_create(int32_t device, tsr_event* out) {
  tsr_status status = g_real->event_create(device, out);
  if (status != TSR_OK) return status;
  pthread_mutex_lock(&g_mu);
  if (g_num_events < MAX_EVENTS) {
    g_events[g_num_events] = *out;
    g_event_devices[g_num_events] = device;
    ++g_num_events;
  }
  pthread_mutex_unlock(&g_mu);
  return status;
}

static tsr_status shim_event_destroy(tsr_event event) {
  pthread_mutex_lock(&g_mu);
  for (int i = 0; i < g_num_events; ++i) {
    if (g_events[i] == event) {
      g_events[i] = g_events[g_num_events - 1];
      g_event_devices[i] = g_event_devices[g_num_events - 1];
      --g_num_events;
      break;
    }
  }
  pthread_mutex_unlock(&g_mu);
  return g_real->event_destroy(event);
}

/* The idle stream of `event`'s device, or NULL. Called under g_mu. */
static tsr_stream idle_stream_of(tsr_event event) {
  for (int i = 0; i < g_num_events; ++i) {
    if (g_events[i] != event) continue;
    const int32_t device = g_event_devices[i];
    if (device < 0 || device >= MAX_DEVICES) return NULL;
    if (g_idle[device] == NULL &&
        g_real->stream_create(device, &g_idle[device]) != TSR_OK) {
      g_idle[device] = NULL;
    }
    return g_idle[device];
  }
  return NULL;
}

static tsr_status shim_event_record(tsr_event event, tsr_stream stream) {
  tsr_status status = g_real->event_record(event, stream);
  if (status != TSR_OK) return status;
  pthread_mutex_lock(&g_mu);
  tsr_stream idle = idle_stream_of(event);
  if (idle != NULL) status = g_real->event_record(event, idle);
  pthread_mutex_unlock(&g_mu);
  return status;
}

static tsr_status shim_shutdown(void) {
  pthread_mutex_lock(&g_mu);
  for (int d = 0; d < MAX_DEVICES; ++d) g_idle[d] = NULL; /* freed by shutdown */
  g_num_events = 0;
  pthread_mutex_unlock(&g_mu);
  return g_real->shutdown();
}

TSR_PLUGIN_EXPORT const tsr_plugin_api* tsr_get_plugin_api(
    const tsr_host_services* host) {
  tsr_plugin_api* table =
      shim_load(host, "faulty_early_event",
                "test plugin: an event completes when it is recorded");
  if (table == NULL) return NULL;
  table->event_create = shim_event_create;
  table->event_destroy = shim_event_destroy;
  table->event_record = shim_event_record;
  table->shutdown = shim_shutdown;
  return table;
}
