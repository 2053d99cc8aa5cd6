#!/usr/bin/env bash
# The plugin SDK as a vendor uses it (CTest: sdk_install):
#   1. `cmake --install` the build into a fresh prefix;
#   2. build examples/minimal_plugin out of tree (a copy of its folder, so
#      nothing of the source tree is reachable) with find_package
#      (TesseraPlugin) and tessera_add_plugin, and a second plugin that links
#      the installed plugin kit (Tessera::plugin_kit);
#   3. run the installed `tessera plugin-check` on the minimal plugin, install
#      it into <prefix>/lib/tessera/plugins and check that the installed
#      `tessera doctor` finds it there by default (and the cpu plugin too).
# Usage: sdk_install_test.sh BUILD_DIR SOURCE_DIR CMAKE_GENERATOR
set -euo pipefail
build=$1
source=$2
generator=$3
work=$(mktemp -d /tmp/tessera_sdk_XXXXXX)
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix
step() { echo "== $*"; }

step "cmake --install $build --prefix $prefix"
cmake --install "$build" --prefix "$prefix" >"$work/install.log"
for f in bin/tessera lib/tessera/plugins/libtessera_plugin_cpu.so \
         include/tessera/plugin/tessera_plugin.h lib/libtessera_plugin_kit.a \
         include/tessera/plugin_kit/kit/status.h \
         lib/cmake/TesseraPlugin/TesseraPluginConfig.cmake \
         lib/cmake/TesseraPlugin/TesseraPluginConfigVersion.cmake \
         lib/cmake/TesseraPlugin/tessera_plugin_exports.map; do
  [[ -e $prefix/$f ]] || { echo "FAILED: the install has no $f"; exit 1; }
done

step "build the minimal plugin out of tree against the SDK"
cp -r "$source/examples/minimal_plugin" "$work/minimal_src"
cmake -S "$work/minimal_src" -B "$work/minimal_build" -G "$generator" \
  -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$prefix" >"$work/configure.log" 2>&1 ||
  { cat "$work/configure.log"; echo "FAILED: configure against the SDK"; exit 1; }
grep -q "Tessera plugin SDK" "$work/configure.log" ||
  { cat "$work/configure.log"; echo "FAILED: the example did not use find_package(TesseraPlugin)"; exit 1; }
cmake --build "$work/minimal_build" >"$work/build.log" 2>&1 ||
  { cat "$work/build.log"; echo "FAILED: build against the SDK"; exit 1; }
lib=$work/minimal_build/libtessera_plugin_minimal.so
[[ -f $lib ]] || { echo "FAILED: no $lib"; exit 1; }
exported=$(nm -D --defined-only "$lib" | awk '{print $3}')
[[ $exported == tsr_get_plugin_api ]] ||
  { echo "FAILED: $lib exports more than tsr_get_plugin_api: $exported"; exit 1; }

step "a plugin linking the installed plugin kit"
mkdir -p "$work/kit_src"
cat >"$work/kit_src/CMakeLists.txt" <<'CMAKE'
cmake_minimum_required(VERSION 3.16)
project(kit_user LANGUAGES CXX)
set(CMAKE_CXX_STANDARD 17)
find_package(TesseraPlugin 1.7 CONFIG REQUIRED)
tessera_add_plugin(kit_user kit_user.cc)
target_link_libraries(tessera_plugin_kit_user PRIVATE Tessera::plugin_kit)
CMAKE
cat >"$work/kit_src/kit_user.cc" <<'CC'
// Calls into the kit's static library (not only its headers).
#include "kit/last_error.h"
#include "tessera/plugin/tessera_plugin.h"
extern "C" TSR_PLUGIN_EXPORT const tsr_plugin_api* tsr_get_plugin_api(
    const tsr_host_services*) {
  tessera::plugin_kit::Report("probe", tessera::plugin_kit::Status(
                                           TSR_ERR_UNSUPPORTED, "kit linked"));
  return nullptr;
}
CC
cmake -S "$work/kit_src" -B "$work/kit_build" -G "$generator" \
  -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$prefix" >"$work/kit.log" 2>&1 &&
  cmake --build "$work/kit_build" >>"$work/kit.log" 2>&1 ||
  { cat "$work/kit.log"; echo "FAILED: a plugin linking Tessera::plugin_kit"; exit 1; }
[[ -f $work/kit_build/libtessera_plugin_kit_user.so ]] ||
  { echo "FAILED: no libtessera_plugin_kit_user.so"; exit 1; }

step "the installed plugin-check on it"
"$prefix/bin/tessera" plugin-check "$lib" >"$work/check.log" 2>&1 ||
  { cat "$work/check.log"; echo "FAILED: plugin-check on the SDK-built plugin"; exit 1; }
tail -1 "$work/check.log"

step "install it beside the others; the installed doctor finds it"
cmake --install "$work/minimal_build" --prefix "$prefix" >/dev/null
installed=$prefix/lib/tessera/plugins/libtessera_plugin_minimal.so
[[ -f $installed ]] || { echo "FAILED: not installed to $installed"; exit 1; }
env -u TESSERA_PLUGIN_PATH -u TESSERA_DEVICE_PLUGIN -u TESSERA_PLATFORM \
  "$prefix/bin/tessera" doctor --platform minimal --json >"$work/doctor.json" 2>"$work/doctor.err" ||
  { cat "$work/doctor.json" "$work/doctor.err"; echo "FAILED: doctor --platform minimal"; exit 1; }
python3 - "$work/doctor.json" "$installed" "$prefix" <<'PY'
import json, os, sys
doc = json.load(open(sys.argv[1]))
installed, prefix = sys.argv[2], sys.argv[3]
assert doc["selected_plugin"] == "minimal", doc["selected_plugin"]
paths = {p["name"]: p["path"] for p in doc["plugins"]}
assert os.path.realpath(paths["minimal"]) == os.path.realpath(installed), paths
cpu = [p for p in doc["plugins"] if p["name"] == "cpu"]
assert cpu and os.path.realpath(cpu[0]["path"]).startswith(
    os.path.realpath(prefix) + "/lib/tessera/plugins/"), cpu
assert doc["conformance"]["status"] == "passed", doc["conformance"]
print("doctor: minimal selected from", paths["minimal"],
      "; quick conformance", doc["conformance"]["passed"], "passed")
PY
echo "OK: the SDK installs, builds a plugin out of tree, and the installed tools find it"
