// Clang thread-safety annotations (-Wthread-safety), as TSR_* macros.
//
// They document which mutex guards which member and which functions must or
// must not hold it; clang checks them at compile time, other compilers see
// nothing. Use them with tessera::Mutex (base/mutex.h): std::mutex from
// libstdc++ carries no capability attribute, so clang could not check it.
//
//   class Counter {
//    public:
//     void Add() TSR_EXCLUDES(mu_) { MutexLock lock(&mu_); ++n_; }
//    private:
//     void AddLocked() TSR_REQUIRES(mu_) { ++n_; }
//     Mutex mu_;
//     int n_ TSR_GUARDED_BY(mu_) = 0;
//   };
#ifndef TESSERA_BASE_THREAD_ANNOTATIONS_H_
#define TESSERA_BASE_THREAD_ANNOTATIONS_H_

#if defined(__clang__)
#define TSR_THREAD_ANNOTATION_(x) __attribute__((x))
#else
#define TSR_THREAD_ANNOTATION_(x)
#endif

// A class that is a lock ("mutex") or a scoped holder of one.
#define TSR_CAPABILITY(name) TSR_THREAD_ANNOTATION_(capability(name))
#define TSR_SCOPED_CAPABILITY TSR_THREAD_ANNOTATION_(scoped_lockable)

// A data member read and written only with `mu` held.
#define TSR_GUARDED_BY(mu) TSR_THREAD_ANNOTATION_(guarded_by(mu))
// A pointer member whose pointee is guarded by `mu`.
#define TSR_PT_GUARDED_BY(mu) TSR_THREAD_ANNOTATION_(pt_guarded_by(mu))

// Lock ordering: this mutex is taken after / before the listed ones.
#define TSR_ACQUIRED_AFTER(...) \
  TSR_THREAD_ANNOTATION_(acquired_after(__VA_ARGS__))
#define TSR_ACQUIRED_BEFORE(...) \
  TSR_THREAD_ANNOTATION_(acquired_before(__VA_ARGS__))

// The caller must hold / must not hold the listed mutexes.
#define TSR_REQUIRES(...) \
  TSR_THREAD_ANNOTATION_(requires_capability(__VA_ARGS__))
#define TSR_REQUIRES_SHARED(...) \
  TSR_THREAD_ANNOTATION_(requires_shared_capability(__VA_ARGS__))
#define TSR_EXCLUDES(...) TSR_THREAD_ANNOTATION_(locks_excluded(__VA_ARGS__))

// The function takes / releases the listed mutexes (or `this`).
#define TSR_ACQUIRE(...) TSR_THREAD_ANNOTATION_(acquire_capability(__VA_ARGS__))
#define TSR_ACQUIRE_SHARED(...) \
  TSR_THREAD_ANNOTATION_(acquire_shared_capability(__VA_ARGS__))
#define TSR_RELEASE(...) TSR_THREAD_ANNOTATION_(release_capability(__VA_ARGS__))
#define TSR_RELEASE_SHARED(...) \
  TSR_THREAD_ANNOTATION_(release_shared_capability(__VA_ARGS__))
#define TSR_TRY_ACQUIRE(...) \
  TSR_THREAD_ANNOTATION_(try_acquire_capability(__VA_ARGS__))

// The function returns a reference to the given mutex.
#define TSR_RETURN_CAPABILITY(x) TSR_THREAD_ANNOTATION_(lock_returned(x))
// Tells the analysis the mutex is held here (checked at run time, if at all).
#define TSR_ASSERT_CAPABILITY(x) TSR_THREAD_ANNOTATION_(assert_capability(x))

// Turns the analysis off for one function; say why next to it.
#define TSR_NO_THREAD_SAFETY_ANALYSIS \
  TSR_THREAD_ANNOTATION_(no_thread_safety_analysis)

#endif  // TESSERA_BASE_THREAD_ANNOTATIONS_H_
