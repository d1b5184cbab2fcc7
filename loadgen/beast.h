// The one place loadgen includes Boost.Asio and Beast. g++ 12 with Boost
// 1.74 needs <utility> before <boost/asio.hpp> (std::exchange is otherwise
// undeclared in Asio's coroutine support). Only load_runner.cc includes this,
// to keep Boost's compile time in one translation unit.
#ifndef SERVELAB_LOADGEN_BEAST_H_
#define SERVELAB_LOADGEN_BEAST_H_

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
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
// clang-format on

namespace servelab::loadgen {
namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = boost::beast::http;
using tcp = boost::asio::ip::tcp;
}  // namespace servelab::loadgen

#endif  // SERVELAB_LOADGEN_BEAST_H_
