// Mutex and MutexLock: std::mutex with clang thread-safety annotations.
//
// Mutex is a capability, so members declared TSR_GUARDED_BY(mu_) are checked
// by clang's -Wthread-safety. MutexLock holds it for a scope. Not recursive.
// native() exposes the std::mutex for std::condition_variable_any users.
#ifndef TESSERA_BASE_MUTEX_H_
#define TESSERA_BASE_MUTEX_H_

#include <mutex>

#include "base/thread_annotations.h"

namespace tessera {

class TSR_CAPABILITY("mutex") Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  void Lock() TSR_ACQUIRE() { mu_.lock(); }
  void Unlock() TSR_RELEASE() { mu_.unlock(); }
  bool TryLock() TSR_TRY_ACQUIRE(true) { return mu_.try_lock(); }

  std::mutex& native() { return mu_; }

 private:
  std::mutex mu_;
};

class TSR_SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex* mu) TSR_ACQUIRE(mu) : mu_(mu) { mu_->Lock(); }
  ~MutexLock() TSR_RELEASE() { mu_->Unlock(); }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

 private:
  Mutex* const mu_;
};

}  // namespace tessera

#endif  // TESSERA_BASE_MUTEX_H_
