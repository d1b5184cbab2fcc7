// AtOnce: one step over independent instances, run on all of them at the
// same time, so the step costs the slowest instance rather than the sum
// (docs/design.md §6, drain checks and cache resets).
#ifndef SERVELAB_DAEMON_CORE_AT_ONCE_H_
#define SERVELAB_DAEMON_CORE_AT_ONCE_H_

#include <future>
#include <type_traits>
#include <vector>

namespace servelab::core {

// `fn(item)` for every item, the first on the calling thread and each other
// on a thread of its own; the results in the items' order. `fn` must be safe
// to call concurrently.
template <typename T, typename Fn>
auto AtOnce(const std::vector<T>& items, Fn fn) {
  using Result = std::invoke_result_t<Fn&, const T&>;
  std::vector<std::future<Result>> others;
  for (size_t i = 1; i < items.size(); ++i) {
    others.push_back(std::async(std::launch::async, [&fn, &item = items[i]] { return fn(item); }));
  }
  std::vector<Result> results;
  results.reserve(items.size());
  if (!items.empty()) results.push_back(fn(items.front()));
  for (std::future<Result>& other : others) results.push_back(other.get());
  return results;
}

}  // namespace servelab::core

#endif  // SERVELAB_DAEMON_CORE_AT_ONCE_H_
