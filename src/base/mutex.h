// Mutex and MutexLock: std::mutex with clang thread-safety annotations.
//
// Mutex is a capability, so members declared TSR_GUARDED_BY(mu_) are checked
// by clang's -Wthread-safety. MutexLock holds it for a scope. Not recursive.
// CondVar waits on a Mutex the caller holds (the analysis sees the lock
// held throughout, as it is on return). native() exposes the std::mutex.
#ifndef TESSERA_BASE_MUTEX_H_
#define TESSERA_BASE_MUTEX_H_

#include <chrono>
#include <condition_variable>
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

// A condition variable for Mutex. Wait* require the mutex held; it is
// released while waiting and held again on return (spurious wake-ups
// happen: callers re-check their condition, or use the predicate forms).
class CondVar {
 public:
  void Wait(Mutex* mu) TSR_REQUIRES(mu) {
    std::unique_lock<std::mutex> lock(mu->native(), std::adopt_lock);
    cv_.wait(lock);
    lock.release();
  }
  // Returns false on timeout.
  template <class Rep, class Period>
  bool WaitFor(Mutex* mu, std::chrono::duration<Rep, Period> timeout)
      TSR_REQUIRES(mu) {
    std::unique_lock<std::mutex> lock(mu->native(), std::adopt_lock);
    const bool woke = cv_.wait_for(lock, timeout) == std::cv_status::no_timeout;
    lock.release();
    return woke;
  }
  void Signal() { cv_.notify_one(); }
  void SignalAll() { cv_.notify_all(); }

 private:
  std::condition_variable cv_;
};

}  // namespace tessera

#endif  // TESSERA_BASE_MUTEX_H_
