// servelab: the CLI. Everything is in servelab_client (commands.h).
#include <iostream>

#include "client/commands.h"

int main(int argc, char** argv) {
  return servelab::client::RunCli(argc, argv, std::cout, std::cerr);
}
