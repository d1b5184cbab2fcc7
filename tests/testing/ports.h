// Loopback ports for tests: one nobody listens on (a connection is refused)
// and a check that a port can still be bound.
#ifndef SERVELAB_TESTS_TESTING_PORTS_H_
#define SERVELAB_TESTS_TESTING_PORTS_H_

namespace servelab::testing {

// A port the kernel just handed out and that nothing listens on now.
int ClosedLoopbackPort();

// True when 127.0.0.1:port can be bound right now.
bool CanBindLoopback(int port);

}  // namespace servelab::testing

#endif  // SERVELAB_TESTS_TESTING_PORTS_H_
