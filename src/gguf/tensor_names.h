// Tensor names: Hugging Face's (model.layers.N.self_attn.q_proj.weight)
// and llama.cpp's GGUF names (blk.N.attn_q.weight), both ways, for the
// llama / qwen2 / qwen3 architectures:
//   model.embed_tokens.weight <-> token_embd.weight
//   model.norm.weight         <-> output_norm.weight
//   lm_head.weight            <-> output.weight
//   model.layers.N.input_layernorm          <-> blk.N.attn_norm
//   model.layers.N.self_attn.{q,k,v}_proj   <-> blk.N.attn_{q,k,v}
//   model.layers.N.self_attn.o_proj         <-> blk.N.attn_output
//   model.layers.N.self_attn.{q,k}_norm     <-> blk.N.attn_{q,k}_norm
//   model.layers.N.post_attention_layernorm <-> blk.N.ffn_norm
//   model.layers.N.mlp.{gate,up,down}_proj  <-> blk.N.ffn_{gate,up,down}
// (.weight and .bias alike).
//
// Pure functions, thread-safe.
#ifndef TESSERA_GGUF_TENSOR_NAMES_H_
#define TESSERA_GGUF_TENSOR_NAMES_H_

#include <optional>
#include <string>
#include <string_view>

namespace tessera::gguf {

// The GGUF name of a Hugging Face tensor name; nullopt for names without
// one (e.g. rotary_emb.inv_freq buffers).
std::optional<std::string> GgufTensorName(std::string_view hf_name);

// The Hugging Face name of a GGUF tensor name; nullopt for names without
// one (rope_freqs.weight, other architectures' tensors).
std::optional<std::string> HfTensorName(std::string_view gguf_name);

}  // namespace tessera::gguf

#endif  // TESSERA_GGUF_TENSOR_NAMES_H_
