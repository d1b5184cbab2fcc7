// The one place servelab-sim includes Boost.Asio. g++ 12 with Boost 1.74
// needs <utility> before <boost/asio.hpp> (std::exchange is otherwise
// undeclared inside Asio's coroutine support), so nobody includes Asio directly.
#ifndef SERVELAB_SIM_ASIO_H_
#define SERVELAB_SIM_ASIO_H_

// <utility> must come first (see above), so clang-format must not sort these.
// clang-format off
#include <utility>

#include <boost/asio.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
// clang-format on

namespace servelab::sim {
namespace asio = boost::asio;
using tcp = boost::asio::ip::tcp;
}  // namespace servelab::sim

#endif  // SERVELAB_SIM_ASIO_H_
