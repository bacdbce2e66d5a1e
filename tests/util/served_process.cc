#include "tests/util/served_process.h"

#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <thread>

namespace roboloop::testing {
namespace {

// True when a server listens on the unix socket `path` (a stale socket file refuses).
bool Accepts(const std::string& path) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::strncpy(address.sun_path, path.c_str(), sizeof(address.sun_path) - 1);
  const bool connected = ::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0;
  ::close(fd);
  return connected;
}

}  // namespace

ServedProcess::ServedProcess(std::vector<std::string> args, std::string socket, std::string cwd)
    : socket_(std::move(socket)), cwd_(std::move(cwd)) {
  argv_ = {RoboloopBinary()};
  argv_.insert(argv_.end(), args.begin(), args.end());
  Start();
}

ServedProcess::~ServedProcess() {
  if (running_.pid > 0) Stop(SIGTERM);
}

void ServedProcess::Start() {
  running_ = StartProgram(argv_, {}, cwd_);
  ready_ = false;
  for (int i = 0; i < 600 && running_.pid > 0 && !ready_; ++i) {
    ready_ = Accepts(socket_);
    if (!ready_) std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
}

ProgramResult ServedProcess::Stop(int signal) {
  ::kill(running_.pid, signal);
  ProgramResult result = FinishProgram(running_);
  running_ = RunningProgram();
  ready_ = false;
  return result;
}

bool ServedProcess::Restart() {
  Start();
  return ready_;
}

}  // namespace roboloop::testing
