// ConvertCheckpointToGguf: a Hugging Face checkpoint directory (config.json,
// safetensors, tokenizer.json) as a GGUF file llama.cpp loads, for
// comparing Tessera with llama.cpp on exactly the same weights.
//
// Architectures: LlamaForCausalLM -> "llama", Qwen2ForCausalLM -> "qwen2",
// Qwen3ForCausalLM -> "qwen3". Metadata written (<arch> = that name):
//   general.architecture, general.name (the folder name), general.file_type,
//   general.quantization_version (2);
//   <arch>.vocab_size, context_length (max_position_embeddings),
//   embedding_length (H), block_count (L), feed_forward_length (I),
//   attention.head_count (Hq), attention.head_count_kv (Hk),
//   attention.key_length and value_length (D), rope.dimension_count (D),
//   attention.layer_norm_rms_epsilon, rope.freq_base;
//   tokenizer.* (gguf_vocab.h).
// Tensors (HF name -> GGUF name; shapes as in weight_spec.h):
//   model.embed_tokens.weight -> token_embd.weight
//   model.norm.weight         -> output_norm.weight
//   lm_head.weight            -> output.weight (omitted when tied: llama.cpp
//                                then reuses token_embd)
//   model.layers.N.input_layernorm          -> blk.N.attn_norm
//   model.layers.N.self_attn.{q,k,v}_proj   -> blk.N.attn_{q,k,v}
//   model.layers.N.self_attn.o_proj         -> blk.N.attn_output
//   model.layers.N.self_attn.{q,k}_norm     -> blk.N.attn_{q,k}_norm
//   model.layers.N.post_attention_layernorm -> blk.N.ffn_norm
//   model.layers.N.mlp.{gate,up,down}_proj  -> blk.N.ffn_{gate,up,down}
//   (.weight and .bias alike), and for Llama 3 rope scaling a
//   rope_freqs.weight F32 [D/2] of per-frequency divisors (llama.cpp divides
//   each base frequency by it: default inv_freq / scaled inv_freq).
// Types: 2-D weights become `type`; 1-D tensors (norms, biases) stay F32.
// A Q8_0 weight whose rows do not fill 32-element blocks is stored F16
// instead (a note says which).
//
// Rotary layout: Hugging Face rotates dims (i, i + D/2) of each head
// ("NEOX" in ggml terms). llama.cpp runs "llama" with the interleaved
// rotation of pairs (2i, 2i + 1), so for Llama the rows of q_proj and
// k_proj (and their biases) are permuted within each head: GGUF row
// h*D + 2i + j takes HF row h*D + j*D/2 + i (j in {0, 1}). llama.cpp runs
// qwen2 and qwen3 with the NEOX rotation, so their rows are copied as is.
//
// Unsupported (Unimplemented, naming the reason): Qwen2 with
// Hq * D != H, Qwen3 with attention biases, Llama 3 rope scaling on Qwen.
//
// Thread-safety: independent calls may run concurrently.
#ifndef TESSERA_GGUF_CONVERT_H_
#define TESSERA_GGUF_CONVERT_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "gguf/gguf_format.h"
#include "gguf/gguf_vocab.h"
#include "gguf/gguf_writer.h"
#include "gguf/tensor_names.h"

namespace tessera::gguf {

struct ConvertResult {
  std::string architecture;  // "llama", "qwen2" or "qwen3"
  size_t num_tensors = 0;
  uint64_t tensor_bytes = 0;  // data bytes written
  VocabSummary vocab;
  std::vector<std::string> notes;  // fallbacks and caveats, one per line
};

// Converts `model_dir` into `out_path` with 2-D weights as `type`.
// Errors: those of Checkpoint::Open / Validate, gguf_vocab.h, the writer,
// and Unimplemented for the unsupported cases above.
StatusOr<ConvertResult> ConvertCheckpointToGguf(
    const std::string& model_dir, const std::string& out_path, TensorType type,
    const GgufWriter::Progress& progress = {});

// For the interleaved rotary layout: the HF row that GGUF row `row` of a
// q/k projection with heads of `head_dim` rows takes (see file comment).
int64_t InterleavedRopeSourceRow(int64_t row, int64_t head_dim);

}  // namespace tessera::gguf

#endif  // TESSERA_GGUF_CONVERT_H_
