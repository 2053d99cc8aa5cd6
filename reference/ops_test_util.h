// Shared helpers for the reference op tests (test-only header).
#ifndef TESSERA_REFERENCE_OPS_TEST_UTIL_H_
#define TESSERA_REFERENCE_OPS_TEST_UTIL_H_

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <vector>

#include "reference/reference_ops.h"

namespace tessera::reference {

inline Status RunOp(tsr_op_id op, std::vector<HostTensor> in,
                    std::vector<HostTensor> out, const void* params = nullptr) {
  return RunReferenceOp(op, 1, in, out, params);
}

inline OwnedTensor F32(std::vector<int64_t> shape, std::vector<double> v) {
  return OwnedTensor::FromValues(TSR_DTYPE_F32, std::move(shape), v);
}
inline OwnedTensor I32(std::vector<int64_t> shape, std::vector<double> v) {
  return OwnedTensor::FromValues(TSR_DTYPE_I32, std::move(shape), v);
}

MATCHER_P(ValuesNear, expected, "") {
  std::vector<double> got = arg.Values();
  if (got.size() != expected.size()) {
    *result_listener << "has " << got.size() << " values";
    return false;
  }
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::abs(got[i] - expected[i]) > 1e-5 * (1 + std::abs(expected[i]))) {
      *result_listener << "value " << i << " is " << got[i] << ", expected "
                       << expected[i];
      return false;
    }
  }
  return true;
}

}  // namespace tessera::reference

#endif  // TESSERA_REFERENCE_OPS_TEST_UTIL_H_
