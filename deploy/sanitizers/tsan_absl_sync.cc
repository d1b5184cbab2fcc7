// Linked into every program of a TSan build (deploy/test.sh --sanitize
// thread), never into a normal one.
//
// Debian's Abseil is not built with TSan, so absl::Mutex locks and unlocks
// where TSan cannot see them, and every access a Mutex guards would be
// reported as a race. These definitions take the place of the library's entry
// points (the program's own symbols come before a shared library's), call the
// library's code found with dlsym(RTLD_NEXT), and tell TSan what each call
// means: an unlock releases, a lock acquires, a wait releases and acquires
// again, and a condition the library evaluates under the lock acquires
// first. Only what servelab calls is covered (docs/design.md §13).
#include <dlfcn.h>
#include <sanitizer/tsan_interface.h>

#include <cstdlib>
#include <cstring>
#include <string>

#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"

namespace {

#define SERVELAB_STRINGIFY_INNER(x) #x
#define SERVELAB_STRINGIFY(x) SERVELAB_STRINGIFY_INNER(x)

// The library's definition of absl::<inline namespace>::<rest>, where `rest`
// is the mangled tail, e.g. "5Mutex4LockEv"; `nested` is "N", or "NK" for a
// const member function.
template <typename Fn>
Fn Real(const char* rest, const char* nested = "N") {
  const char* inline_namespace = SERVELAB_STRINGIFY(ABSL_OPTION_INLINE_NAMESPACE_NAME);
  const std::string name = std::string("_Z") + nested + "4absl" +
                           std::to_string(std::strlen(inline_namespace)) + inline_namespace + rest;
  void* f = dlsym(RTLD_NEXT, name.c_str());
  if (f == nullptr) std::abort();  // An Abseil without this function: fail loudly.
  return reinterpret_cast<Fn>(f);
}

// A condition the library evaluates under the lock, out of TSan's sight, on
// the waiting thread or on the one unlocking: acquire first, and release
// after, since the library may then give the lock up without a call here.
struct AcquiringCondition {
  absl::Mutex* mu;
  const absl::Condition* cond;
};

bool EvalAcquired(void* arg) {
  auto* c = static_cast<AcquiringCondition*>(arg);
  __tsan_acquire(c->mu);
  const bool met = c->cond->Eval();
  __tsan_release(c->mu);
  return met;
}

}  // namespace

namespace absl {
ABSL_NAMESPACE_BEGIN

void Mutex::Lock() {
  static const auto real = Real<void (*)(Mutex*)>("5Mutex4LockEv");
  real(this);
  __tsan_acquire(this);
}

bool Mutex::TryLock() {
  static const auto real = Real<bool (*)(Mutex*)>("5Mutex7TryLockEv");
  const bool locked = real(this);
  if (locked) __tsan_acquire(this);
  return locked;
}

void Mutex::Unlock() {
  static const auto real = Real<void (*)(Mutex*)>("5Mutex6UnlockEv");
  __tsan_release(this);
  real(this);
}

void Mutex::ReaderLock() {
  static const auto real = Real<void (*)(Mutex*)>("5Mutex10ReaderLockEv");
  real(this);
  __tsan_acquire(this);
}

void Mutex::ReaderUnlock() {
  static const auto real = Real<void (*)(Mutex*)>("5Mutex12ReaderUnlockEv");
  __tsan_release(this);
  real(this);
}

void Mutex::LockWhen(const Condition& cond) {
  static const auto real =
      Real<void (*)(Mutex*, const Condition&)>("5Mutex8LockWhenERKNS0_9ConditionE");
  AcquiringCondition acquiring{this, &cond};
  real(this, Condition(&EvalAcquired, &acquiring));
  __tsan_acquire(this);
}

// Await gives the lock up while it waits: what this thread wrote is
// released, and what others wrote meanwhile is acquired on return.
void Mutex::Await(const Condition& cond) {
  static const auto real =
      Real<void (*)(Mutex*, const Condition&)>("5Mutex5AwaitERKNS0_9ConditionE");
  AcquiringCondition acquiring{this, &cond};
  __tsan_release(this);
  real(this, Condition(&EvalAcquired, &acquiring));
  __tsan_acquire(this);
}

bool Mutex::AwaitWithTimeout(const Condition& cond, absl::Duration timeout) {
  static const auto real = Real<bool (*)(Mutex*, const Condition&, absl::Duration)>(
      "5Mutex16AwaitWithTimeoutERKNS0_9ConditionENS0_8DurationE");
  AcquiringCondition acquiring{this, &cond};
  __tsan_release(this);
  const bool met = real(this, Condition(&EvalAcquired, &acquiring), timeout);
  __tsan_acquire(this);
  return met;
}

void Notification::Notify() {
  static const auto real = Real<void (*)(Notification*)>("12Notification6NotifyEv");
  __tsan_release(this);
  real(this);
}

void Notification::WaitForNotification() const {
  static const auto real =
      Real<void (*)(const Notification*)>("12Notification19WaitForNotificationEv", "NK");
  real(this);
  __tsan_acquire(const_cast<Notification*>(this));
}

bool Notification::WaitForNotificationWithTimeout(absl::Duration timeout) const {
  static const auto real = Real<bool (*)(const Notification*, absl::Duration)>(
      "12Notification30WaitForNotificationWithTimeoutENS0_8DurationE", "NK");
  const bool notified = real(this, timeout);
  if (notified) __tsan_acquire(const_cast<Notification*>(this));
  return notified;
}

ABSL_NAMESPACE_END
}  // namespace absl
