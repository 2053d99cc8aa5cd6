// ConstantTimeEquals: compares a secret (an API key) with what a client
// sent in time that depends only on the secret's length, never on where the
// first difference is, so response timing cannot leak the secret byte by
// byte. Thread-safe: a pure function.
#ifndef TESSERA_BASE_CONSTANT_TIME_H_
#define TESSERA_BASE_CONSTANT_TIME_H_

#include <cstddef>
#include <string_view>

namespace tessera {

inline bool ConstantTimeEquals(std::string_view given,
                               std::string_view secret) {
  // Every byte of the secret is visited once, whatever `given` holds.
  unsigned diff = given.size() == secret.size() ? 0u : 1u;
  for (size_t i = 0; i < secret.size(); ++i) {
    const unsigned char g =
        i < given.size() ? static_cast<unsigned char>(given[i]) : 0u;
    diff |= g ^ static_cast<unsigned char>(secret[i]);
  }
  // Keep the compiler from turning the loop into an early exit.
  volatile unsigned sink = diff;
  return sink == 0;
}

}  // namespace tessera

#endif  // TESSERA_BASE_CONSTANT_TIME_H_
