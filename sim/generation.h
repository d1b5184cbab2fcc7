// Serving one generation request on a prefill/decode/unified instance: the
// instance decides the durations, this waits on steady-clock timers and writes
// the OpenAI-format response (SSE chunks or one JSON body).
//
// Streaming writes are coalesced only when tokens are already overdue (the
// modelled time is shorter than the time to write), so at realistic time
// scales every token is its own write and at tiny ones the sim stays cheap.
#ifndef SERVELAB_SIM_GENERATION_H_
#define SERVELAB_SIM_GENERATION_H_

#include "sim/asio.h"
#include "sim/http_conn.h"
#include "sim/instance_model.h"
#include "sim/request.h"

namespace servelab::sim {

// Returns false when the connection must be closed (peer gone, dropped by a
// fault). Runs on the connection's strand-free single-threaded io_context.
// `request` and `meta` are moved from. (They are taken by reference, not by
// value: g++ 12 mishandles class-type temporaries passed by value to coroutines.)
asio::awaitable<bool> ServeGeneration(ClientConn& conn, InstanceModel& instance,
                                      GenerationRequest& request, RequestMeta& meta,
                                      bool keep_alive);

// The injected faults both an instance and the router answer the same way.
// kError: the error answer; returns whether the connection stays usable.
asio::awaitable<bool> AnswerInjectedError(ClientConn& conn, InstanceModel& instance,
                                          RequestState& r, bool keep_alive);
// kHang: holds the request (it counts as running) and never answers; ends
// only when the client goes away (any byte or EOF), as vLLM aborts a request
// whose client disconnected. The connection must then be closed.
asio::awaitable<void> HangUntilClientLeaves(ClientConn& conn, InstanceModel& instance,
                                            RequestState& r);

}  // namespace servelab::sim

#endif  // SERVELAB_SIM_GENERATION_H_
