// Test helper: a `roboloop serve ...` process on a unix socket that a test can kill (any
// signal, SIGKILL included) and start again with the same arguments.
#pragma once

#include <string>
#include <vector>

#include "tests/util/subprocess.h"

namespace roboloop::testing {

class ServedProcess {
 public:
  // Starts `roboloop <args>` in `cwd` and waits until `socket` accepts connections.
  ServedProcess(std::vector<std::string> args, std::string socket, std::string cwd);
  // Stops the process with SIGTERM (when running) and waits for it.
  ~ServedProcess();
  ServedProcess(const ServedProcess&) = delete;
  ServedProcess& operator=(const ServedProcess&) = delete;

  // True once the socket accepted a connection (after the constructor or Restart).
  bool ready() const { return ready_; }
  // Sends `signal` and waits for the process to end; returns its result.
  ProgramResult Stop(int signal);
  // Starts the process again with the same arguments (after Stop) and waits for its socket;
  // returns ready().
  bool Restart();

 private:
  void Start();

  std::vector<std::string> argv_;
  std::string socket_;
  std::string cwd_;
  RunningProgram running_;
  bool ready_ = false;
};

}  // namespace roboloop::testing
