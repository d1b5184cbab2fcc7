#include "sim/http_request.h"

namespace servelab::sim {

IncomingRequest ToIncomingRequest(HttpRequest& message) {
  IncomingRequest request;
  request.method = std::string(message.method_string());
  std::string target(message.target());
  size_t q = target.find('?');
  request.path = target.substr(0, q);
  if (q != std::string::npos) request.query = target.substr(q + 1);
  request.body = std::move(message.body());
  request.request_id = std::string(message["x-request-id"]);
  request.load_tag = std::string(message["x-servelab-load"]);
  request.keep_alive = message.keep_alive();
  return request;
}

}  // namespace servelab::sim
