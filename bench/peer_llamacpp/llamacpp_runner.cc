// llamacpp_runner: times llama.cpp on one prompt the way
// `tessera bench --one-batch --batch-size 1` times Tessera, and decodes
// greedily, so bench/peer_llamacpp.sh can compare the two on the same GGUF
// weights in the same run.
//
// llama.cpp comes from the pinned npm package @node-llama-cpp/linux-x64
// (prebuilt libllama / libggml*.so, CPU backends chosen at run time); the
// library is dlopen()ed at run time, so nothing links against node_modules.
// Structs passed by value (llama_model_params, llama_context_params,
// llama_batch) and the function types come from the llama.h of that exact
// release (extracted at configure time, see CMakeLists.txt), never from
// hand-written copies.
//
// What is timed (mirrors src/cli/bench_one_batch.cc):
//   prefill: one llama_decode over the B prompts of P ids (sequence ids
//            0..B-1; llama.cpp splits it into ubatches of up to 512) +
//            greedy argmax of each prompt's last position;
//   decode:  G steps, each one llama_decode of the B last ids + argmax.
// B = --batch-size (default 1); each sequence has its own KV stream.
// The weights are read into memory at load (no mmap), like Tessera copies
// them to the device before timing; nothing is warmed up. With
// --random-prompt P --seed S the prompt ids are drawn exactly as Tessera's
// bench draws them (std::mt19937_64(S), uniform in [0, vocab)).
//
// Output: one JSON object on stdout. --tokenize TEXT instead prints the ids
// llama.cpp's tokenizer gives TEXT (with BOS when the model adds one).
// --quantize TYPE --out FILE instead writes the model quantized by
// llama.cpp's own quantizer (llama_model_quantize; TYPE q4_0, q4_1, q5_0,
// q5_1, q8_0, q4_k_s, q4_k_m, q5_k_s, q5_k_m or q6_k, as llama-quantize
// names them) and prints {"out": FILE} — so tests load real llama.cpp
// K-quant files, not only ones Tessera wrote. --teacher-forced 1,2,3
// instead feeds the ids in one batch and prints {"argmax": [...]}, the
// top-1 id after every position (for accuracy comparisons).
// --cpu-variant V loads only ggml's CPU build libggml-cpu-V.so (e.g.
// haswell: AVX2 + FMA, no AVX-512) instead of the best one this CPU runs,
// so llama.cpp can be held to the same ISA as TESSERA_CPU_ISA holds Tessera.
// Exit 0: done; 2: bad flags; 1: llama.cpp failed.
#include <dlfcn.h>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "llama.h"

namespace {

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// The llama.cpp entry points used, resolved from the shared library.
struct LlamaApi {
  decltype(&::llama_backend_init) backend_init = nullptr;
  decltype(&::llama_backend_free) backend_free = nullptr;
  decltype(&::ggml_backend_load_all_from_path) load_backends = nullptr;
  decltype(&::ggml_backend_load) load_backend = nullptr;
  decltype(&::llama_log_set) log_set = nullptr;
  decltype(&::llama_print_system_info) system_info = nullptr;
  decltype(&::llama_model_default_params) model_default_params = nullptr;
  decltype(&::llama_context_default_params) context_default_params = nullptr;
  decltype(&::llama_model_load_from_file) model_load = nullptr;
  decltype(&::llama_model_free) model_free = nullptr;
  decltype(&::llama_init_from_model) init_from_model = nullptr;
  decltype(&::llama_free) free_context = nullptr;
  decltype(&::llama_model_get_vocab) model_get_vocab = nullptr;
  decltype(&::llama_vocab_n_tokens) vocab_n_tokens = nullptr;
  decltype(&::llama_tokenize) tokenize = nullptr;
  decltype(&::llama_batch_get_one) batch_get_one = nullptr;
  decltype(&::llama_batch_init) batch_init = nullptr;
  decltype(&::llama_batch_free) batch_free = nullptr;
  decltype(&::llama_decode) decode = nullptr;
  decltype(&::llama_get_logits_ith) get_logits_ith = nullptr;
  decltype(&::llama_model_quantize_default_params) quantize_default_params =
      nullptr;
  decltype(&::llama_model_quantize) quantize = nullptr;
};

// llama-quantize's names of the file types --quantize writes.
std::optional<llama_ftype> ParseFtype(const std::string& name) {
  static const std::pair<const char*, llama_ftype> kTypes[] = {
      {"q4_0", LLAMA_FTYPE_MOSTLY_Q4_0},     {"q4_1", LLAMA_FTYPE_MOSTLY_Q4_1},
      {"q5_0", LLAMA_FTYPE_MOSTLY_Q5_0},     {"q5_1", LLAMA_FTYPE_MOSTLY_Q5_1},
      {"q8_0", LLAMA_FTYPE_MOSTLY_Q8_0},     {"q4_k_s", LLAMA_FTYPE_MOSTLY_Q4_K_S},
      {"q4_k_m", LLAMA_FTYPE_MOSTLY_Q4_K_M}, {"q5_k_s", LLAMA_FTYPE_MOSTLY_Q5_K_S},
      {"q5_k_m", LLAMA_FTYPE_MOSTLY_Q5_K_M}, {"q6_k", LLAMA_FTYPE_MOSTLY_Q6_K},
  };
  for (const auto& [n, t] : kTypes) {
    if (name == n) return t;
  }
  return std::nullopt;
}

// dlopen()s the libllama*.so in `dir` and resolves every entry point.
// Returns an error message, empty on success.
std::string LoadLlama(const std::string& dir, LlamaApi& api,
                      std::string& library) {
  namespace fs = std::filesystem;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    // libllama.so or libllama.vX.Y.Z.so, not libllama-common.so.
    if (name.rfind("libllama.", 0) == 0 && name.size() > 3 &&
        name.compare(name.size() - 3, 3, ".so") == 0) {
      library = entry.path().string();
    }
  }
  if (ec || library.empty()) {
    return fmt::format(
        "no libllama*.so in '{}'; run `npm ci --ignore-scripts` in the "
        "repository root (it installs @node-llama-cpp/linux-x64) or pass "
        "--lib-dir",
        dir);
  }
  void* handle = ::dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    return fmt::format("dlopen({}) failed: {}", library, ::dlerror());
  }
  std::string missing;
  auto resolve = [&](auto& fn, const char* symbol) {
    // dlsym on the handle also searches libllama's dependencies (libggml).
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(
        ::dlsym(handle, symbol));
    if (fn == nullptr)
      missing += std::string(missing.empty() ? "" : ", ") + symbol;
  };
  resolve(api.backend_init, "llama_backend_init");
  resolve(api.backend_free, "llama_backend_free");
  resolve(api.load_backends, "ggml_backend_load_all_from_path");
  resolve(api.load_backend, "ggml_backend_load");
  resolve(api.log_set, "llama_log_set");
  resolve(api.system_info, "llama_print_system_info");
  resolve(api.model_default_params, "llama_model_default_params");
  resolve(api.context_default_params, "llama_context_default_params");
  resolve(api.model_load, "llama_model_load_from_file");
  resolve(api.model_free, "llama_model_free");
  resolve(api.init_from_model, "llama_init_from_model");
  resolve(api.free_context, "llama_free");
  resolve(api.model_get_vocab, "llama_model_get_vocab");
  resolve(api.vocab_n_tokens, "llama_vocab_n_tokens");
  resolve(api.tokenize, "llama_tokenize");
  resolve(api.batch_get_one, "llama_batch_get_one");
  resolve(api.batch_init, "llama_batch_init");
  resolve(api.batch_free, "llama_batch_free");
  resolve(api.decode, "llama_decode");
  resolve(api.get_logits_ith, "llama_get_logits_ith");
  resolve(api.quantize_default_params, "llama_model_quantize_default_params");
  resolve(api.quantize, "llama_model_quantize");
  if (!missing.empty()) {
    return fmt::format(
        "{} lacks {}; it is not the llama.cpp release this runner was built "
        "against (reinstall the pinned npm packages and rebuild)",
        library, missing);
  }
  return "";
}

bool g_verbose = false;

void LogCallback(enum ggml_log_level level, const char* text, void*) {
  if (g_verbose || level == GGML_LOG_LEVEL_ERROR) std::fputs(text, stderr);
}

int32_t Argmax(const float* logits, int32_t n) {
  return int32_t(std::max_element(logits, logits + n) - logits);
}

std::optional<std::vector<llama_token>> ParseIds(const std::string& text) {
  std::vector<llama_token> ids;
  size_t at = 0;
  while (at < text.size()) {
    size_t comma = text.find(',', at);
    if (comma == std::string::npos) comma = text.size();
    std::string item = text.substr(at, comma - at);
    char* end = nullptr;
    long v = std::strtol(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || v < 0) return std::nullopt;
    ids.push_back(llama_token(v));
    at = comma + 1;
  }
  return ids;
}

double Percentile(std::vector<double> sorted, double q) {
  if (sorted.empty()) return 0.0;
  std::sort(sorted.begin(), sorted.end());
  size_t rank = size_t(std::ceil(q * double(sorted.size())));
  return sorted[std::clamp<size_t>(rank, 1, sorted.size()) - 1];
}

void Usage() {
  std::fputs(
      "usage: llamacpp_runner --model FILE.gguf [--lib-dir DIR] [--threads N]\n"
      "         (--prompt-ids 1,2,3 | --random-prompt P [--seed S])\n"
      "         [--decode-steps G] [--batch-size B] [--cpu-variant V] [--verbose]\n"
      "       llamacpp_runner --model FILE.gguf --tokenize TEXT\n"
      "       llamacpp_runner --model FILE.gguf --quantize TYPE --out FILE\n",
      stderr);
}

}  // namespace

int main(int argc, char** argv) {
  std::string model_path;
  std::string lib_dir = TESSERA_LLAMACPP_LIB_DIR;
  if (const char* env = std::getenv("TESSERA_LLAMACPP_LIB_DIR")) lib_dir = env;
  int threads = 2;
  std::string prompt_ids;
  int64_t random_prompt = 0;
  uint64_t seed = 0;
  int64_t decode_steps = 32;
  int64_t batch_size = 1;
  std::optional<std::string> tokenize_text;
  std::string quantize_type, quantize_out, teacher_forced;
  std::string cpu_variant;  // e.g. "haswell": that one CPU build, not the best
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        fmt::print(stderr, "error: {} needs a value\n", arg);
        std::exit(2);
      }
      return argv[++i];
    };
    if (arg == "--model")
      model_path = value();
    else if (arg == "--lib-dir")
      lib_dir = value();
    else if (arg == "--cpu-variant")
      cpu_variant = value();
    else if (arg == "--threads")
      threads = std::atoi(value().c_str());
    else if (arg == "--prompt-ids")
      prompt_ids = value();
    else if (arg == "--random-prompt")
      random_prompt = std::atoll(value().c_str());
    else if (arg == "--seed")
      seed = std::strtoull(value().c_str(), nullptr, 10);
    else if (arg == "--decode-steps")
      decode_steps = std::atoll(value().c_str());
    else if (arg == "--batch-size")
      batch_size = std::atoll(value().c_str());
    else if (arg == "--tokenize")
      tokenize_text = value();
    else if (arg == "--quantize")
      quantize_type = value();
    else if (arg == "--out")
      quantize_out = value();
    else if (arg == "--teacher-forced")
      teacher_forced = value();
    else if (arg == "--verbose")
      g_verbose = true;
    else if (arg == "--help" || arg == "-h") {
      Usage();
      return 0;
    } else {
      fmt::print(stderr, "error: unknown flag {}\n", arg);
      Usage();
      return 2;
    }
  }
  const bool quantize = !quantize_type.empty();
  if (quantize && (quantize_out.empty() || !ParseFtype(quantize_type))) {
    fmt::print(stderr,
               "error: --quantize wants one of q4_0, q4_1, q5_0, q5_1, q8_0, "
               "q4_k_s, q4_k_m, q5_k_s, q5_k_m, q6_k, and --out FILE\n");
    return 2;
  }
  if (model_path.empty() || threads < 1 || decode_steps < 0 || batch_size < 1 ||
      (!tokenize_text && !quantize && teacher_forced.empty() &&
       prompt_ids.empty() == (random_prompt <= 0))) {
    fmt::print(
        stderr,
        "error: need --model, --threads >= 1, --decode-steps >= 0, "
        "--batch-size >= 1 and "
        "exactly one of --prompt-ids / --random-prompt (or --tokenize)\n");
    Usage();
    return 2;
  }

  LlamaApi api;
  std::string library;
  if (std::string error = LoadLlama(lib_dir, api, library); !error.empty()) {
    fmt::print(stderr, "error: {}\n", error);
    return 1;
  }
  api.log_set(LogCallback, nullptr);
  if (cpu_variant.empty()) {
    api.load_backends(lib_dir.c_str());  // every backend; ggml scores the CPU builds
  } else {
    const std::string path = lib_dir + "/libggml-cpu-" + cpu_variant + ".so";
    if (api.load_backend(path.c_str()) == nullptr) {
      fmt::print(stderr,
                 "error: cannot load {} (--cpu-variant {}: the names are the "
                 "libggml-cpu-*.so files in {}; this CPU must support it)\n",
                 path, cpu_variant, lib_dir);
      return 1;
    }
  }
  api.backend_init();

  if (quantize) {
    llama_model_quantize_params qparams = api.quantize_default_params();
    qparams.nthread = threads;
    qparams.ftype = *ParseFtype(quantize_type);
    if (api.quantize(model_path.c_str(), quantize_out.c_str(), &qparams) != 0) {
      fmt::print(stderr,
                 "error: llama_model_quantize({} -> {}, {}) failed (rerun "
                 "with --verbose for its log)\n",
                 model_path, quantize_out, quantize_type);
      return 1;
    }
    std::printf("%s\n", nlohmann::json({{"out", quantize_out}}).dump().c_str());
    return 0;
  }

  llama_model_params mparams = api.model_default_params();
  mparams.n_gpu_layers = 0;
  mparams.load_mode = LLAMA_LOAD_MODE_NONE;  // read into memory, no mmap
  mparams.vocab_only = tokenize_text.has_value();
  llama_model* model = api.model_load(model_path.c_str(), mparams);
  if (model == nullptr) {
    fmt::print(stderr,
               "error: llama.cpp could not load {} (rerun with --verbose for "
               "its log)\n",
               model_path);
    return 1;
  }
  const llama_vocab* vocab = api.model_get_vocab(model);
  const int32_t n_vocab = api.vocab_n_tokens(vocab);

  if (tokenize_text) {
    std::vector<llama_token> ids(tokenize_text->size() + 8);
    int32_t n = api.tokenize(vocab, tokenize_text->data(),
                             int32_t(tokenize_text->size()), ids.data(),
                             int32_t(ids.size()), /*add_special=*/true,
                             /*parse_special=*/false);
    if (n < 0) {
      fmt::print(stderr, "error: llama_tokenize failed ({})\n", n);
      return 1;
    }
    ids.resize(size_t(n));
    std::printf("%s\n", nlohmann::json({{"tokens", ids}}).dump().c_str());
    api.model_free(model);
    return 0;
  }

  if (!teacher_forced.empty()) {
    auto ids = ParseIds(teacher_forced);
    if (!ids || ids->empty()) {
      fmt::print(stderr, "error: --teacher-forced wants comma-separated ids\n");
      return 2;
    }
    const int32_t n = int32_t(ids->size());
    llama_context_params cparams = api.context_default_params();
    cparams.n_ctx = uint32_t(n + 1);
    cparams.n_batch = uint32_t(n);
    cparams.n_ubatch = uint32_t(std::min<int32_t>(n, 512));
    cparams.n_threads = threads;
    cparams.n_threads_batch = threads;
    cparams.no_perf = true;
    llama_context* ctx = api.init_from_model(model, cparams);
    if (ctx == nullptr) {
      fmt::print(stderr, "error: llama_init_from_model failed\n");
      return 1;
    }
    llama_batch batch = api.batch_init(n, 0, 1);
    for (int32_t i = 0; i < n; ++i) {
      batch.token[i] = (*ids)[size_t(i)];
      batch.pos[i] = i;
      batch.n_seq_id[i] = 1;
      batch.seq_id[i][0] = 0;
      batch.logits[i] = 1;
    }
    batch.n_tokens = n;
    if (api.decode(ctx, batch) != 0) {
      fmt::print(stderr, "error: llama_decode failed\n");
      return 1;
    }
    std::vector<int32_t> argmax;
    for (int32_t i = 0; i < n; ++i) {
      argmax.push_back(Argmax(api.get_logits_ith(ctx, i), n_vocab));
    }
    api.batch_free(batch);
    api.free_context(ctx);
    api.model_free(model);
    std::printf("%s\n", nlohmann::json({{"argmax", argmax}}).dump().c_str());
    return 0;
  }

  // prompts[b]: --prompt-ids for every sequence, or drawn exactly as
  // Tessera's bench --one-batch draws them (src/cli/bench_one_batch.cc:
  // one std::mt19937_64(S), uniform in [0, vocab), sequence after sequence).
  std::vector<std::vector<llama_token>> prompts(static_cast<size_t>(batch_size));
  if (!prompt_ids.empty()) {
    auto parsed = ParseIds(prompt_ids);
    if (!parsed || parsed->empty()) {
      fmt::print(stderr, "error: --prompt-ids wants comma-separated ids\n");
      return 2;
    }
    for (auto& prompt : prompts) prompt = *parsed;
  } else {
    std::mt19937_64 gen(seed);
    std::uniform_int_distribution<int32_t> token(0, n_vocab - 1);
    for (auto& prompt : prompts) {
      prompt.resize(size_t(random_prompt));
      for (auto& id : prompt) id = token(gen);
    }
  }
  for (llama_token id : prompts[0]) {
    if (id >= n_vocab) {
      fmt::print(stderr, "error: prompt id {} >= vocab size {}\n", id, n_vocab);
      return 2;
    }
  }
  const std::vector<llama_token>& prompt = prompts[0];
  const int32_t prompt_len = int32_t(prompt.size());
  const int32_t total_prompt = prompt_len * int32_t(batch_size);

  llama_context_params cparams = api.context_default_params();
  // Each sequence's KV stream holds n_ctx / n_seq_max positions.
  cparams.n_ctx = uint32_t(batch_size * (prompt_len + decode_steps + 1));
  cparams.n_batch = uint32_t(total_prompt);
  cparams.n_ubatch = uint32_t(std::min<int32_t>(total_prompt, 512));
  cparams.n_seq_max = uint32_t(batch_size);
  cparams.n_threads = threads;
  cparams.n_threads_batch = threads;
  cparams.no_perf = true;
  llama_context* ctx = api.init_from_model(model, cparams);
  if (ctx == nullptr) {
    fmt::print(stderr, "error: llama_init_from_model failed\n");
    return 1;
  }

  // One batch of every sequence's tokens: tokens[b] at positions
  // pos0 + i in sequence b, logits for each sequence's last token only.
  llama_batch batch = api.batch_init(total_prompt, 0, 1);
  std::vector<int32_t> last_index(static_cast<size_t>(batch_size));  // in the batch
  auto fill = [&](const std::vector<std::vector<llama_token>>& tokens, int32_t pos0) {
    batch.n_tokens = 0;
    for (size_t b = 0; b < tokens.size(); ++b) {
      for (size_t i = 0; i < tokens[b].size(); ++i) {
        const int32_t at = batch.n_tokens++;
        batch.token[at] = tokens[b][i];
        batch.pos[at] = pos0 + int32_t(i);
        batch.n_seq_id[at] = 1;
        batch.seq_id[at][0] = llama_seq_id(b);
        batch.logits[at] = i + 1 == tokens[b].size();
        if (batch.logits[at]) last_index[b] = at;
      }
    }
  };
  // The argmax of each sequence's last token's logits.
  auto argmax_all = [&]() {
    std::vector<std::vector<llama_token>> next(static_cast<size_t>(batch_size));
    for (int64_t b = 0; b < batch_size; ++b) {
      next[size_t(b)] = {Argmax(api.get_logits_ith(ctx, last_index[size_t(b)]), n_vocab)};
    }
    return next;
  };

  std::vector<llama_token> generated;  // sequence 0's
  const auto prefill_start = Clock::now();
  fill(prompts, 0);
  if (int32_t rc = api.decode(ctx, batch); rc != 0) {
    fmt::print(stderr, "error: llama_decode (prefill) returned {}\n", rc);
    return 1;
  }
  std::vector<std::vector<llama_token>> last = argmax_all();
  const double prefill_seconds = SecondsSince(prefill_start);
  generated.push_back(last[0][0]);

  std::vector<double> step_ms;
  const auto decode_start = Clock::now();
  for (int64_t s = 0; s < decode_steps; ++s) {
    const auto step_start = Clock::now();
    fill(last, prompt_len + int32_t(s));
    if (int32_t rc = api.decode(ctx, batch); rc != 0) {
      fmt::print(stderr, "error: llama_decode (step {}) returned {}\n", s, rc);
      return 1;
    }
    last = argmax_all();
    generated.push_back(last[0][0]);
    step_ms.push_back(SecondsSince(step_start) * 1e3);
  }
  const double decode_seconds = SecondsSince(decode_start);
  api.batch_free(batch);

  double mean_ms = 0.0;
  for (double ms : step_ms) mean_ms += ms;
  if (!step_ms.empty()) mean_ms /= double(step_ms.size());
  nlohmann::ordered_json out = {
      {"engine", "llama.cpp"},
      {"library", library},
      {"model", model_path},
      {"threads", threads},
      {"batch_size", batch_size},
      {"input_len", prompt.size()},
      {"output_len", decode_steps},
      {"prefill_seconds", prefill_seconds},
      {"prefill_tokens_per_s", double(total_prompt) / prefill_seconds},
      {"decode_seconds", decode_seconds},
      {"decode_tokens_per_s",
       decode_seconds > 0 ? double(batch_size * decode_steps) / decode_seconds
                          : 0.0},
      {"step_ms",
       {{"mean", mean_ms},
        {"p50", Percentile(step_ms, 0.50)},
        {"p99", Percentile(step_ms, 0.99)}}},
      {"prompt_ids_head",
       std::vector<llama_token>(
           prompt.begin(),
           prompt.begin() + std::min<size_t>(8, prompt.size()))},
      {"output_ids", generated},
      {"system_info", api.system_info()},
  };
  std::printf("%s\n", out.dump().c_str());

  api.free_context(ctx);
  api.model_free(model);
  api.backend_free();
  return 0;
}
