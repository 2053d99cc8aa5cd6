/* A helper library the missing-dependency plugin links to. The build keeps
 * it in a folder of its own and gives the plugin no rpath to it, so at run
 * time the dynamic loader cannot find it. */
__attribute__((visibility("default"))) int tessera_missing_dep_value(void) {
  return 7;
}
