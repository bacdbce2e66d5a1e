#include "common/ids.h"

#include <openssl/rand.h>
#include <pwd.h>
#include <signal.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <iterator>
#include <sstream>

#include "absl/strings/str_format.h"
#include "common/status.h"

namespace roboloop {

std::string NewUuid() {
  unsigned char bytes[16];
  ROBOLOOP_CHECK_MSG(RAND_bytes(bytes, sizeof(bytes)) == 1, "OpenSSL RAND_bytes failed");
  bytes[6] = static_cast<unsigned char>((bytes[6] & 0x0f) | 0x40);  // version 4
  bytes[8] = static_cast<unsigned char>((bytes[8] & 0x3f) | 0x80);  // RFC 4122 variant
  std::string out;
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) out.push_back('-');
    absl::StrAppendFormat(&out, "%02x", bytes[i]);
  }
  return out;
}

int64_t NowUnixMicros() {
  struct timeval now;
  ::gettimeofday(&now, nullptr);
  return static_cast<int64_t>(now.tv_sec) * 1000000 + now.tv_usec;
}

std::string FormatTimeUtc(int64_t unix_micros) {
  int64_t seconds = unix_micros / 1000000;
  int64_t micros = unix_micros % 1000000;
  if (micros < 0) {
    micros += 1000000;
    seconds -= 1;
  }
  time_t as_time = static_cast<time_t>(seconds);
  struct tm parts;
  ::gmtime_r(&as_time, &parts);
  return absl::StrFormat("%04d-%02d-%02dT%02d:%02d:%02d.%06dZ", parts.tm_year + 1900,
                         parts.tm_mon + 1, parts.tm_mday, parts.tm_hour, parts.tm_min,
                         parts.tm_sec, static_cast<int>(micros));
}

namespace {

std::string LookUpUser() {
  struct passwd entry;
  struct passwd* found = nullptr;
  char buffer[4096];
  if (::getpwuid_r(::geteuid(), &entry, buffer, sizeof(buffer), &found) == 0 &&
      found != nullptr && found->pw_name != nullptr && found->pw_name[0] != '\0') {
    return found->pw_name;
  }
  const char* from_env = std::getenv("USER");
  if (from_env != nullptr && from_env[0] != '\0') return from_env;
  return "unknown";
}

std::string LookUpHostName() {
  char buffer[256] = {};
  if (::gethostname(buffer, sizeof(buffer) - 1) != 0 || buffer[0] == '\0') return "unknown";
  return buffer;
}

// What /proc/<pid>/stat says of a process: its state (field 3) and start time (field 22);
// {' ', 0} when it cannot be read. The fields after the command name, which may hold spaces
// and parentheses, start after its last ')'.
struct ProcStat {
  char state = ' ';
  int64_t start_ticks = 0;
};

ProcStat ReadProcStat(int64_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  const std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t end_of_name = stat.rfind(')');
  ProcStat result;
  if (end_of_name == std::string::npos) return result;
  std::istringstream fields(stat.substr(end_of_name + 1));
  std::string field;
  for (int i = 3; i <= 22 && fields >> field; ++i) {
    if (i == 3) result.state = field[0];
    if (i == 22) result.start_ticks = std::strtoll(field.c_str(), nullptr, 10);
  }
  return result;
}

}  // namespace

ProcessIdentity CurrentProcess() {
  const int64_t pid = ::getpid();
  return ProcessIdentity{pid, ReadProcStat(pid).start_ticks, HostName()};
}

bool ProcessIsGone(const ProcessIdentity& process) {
  if (process.pid <= 0 || process.host != HostName()) return false;
  if (::kill(static_cast<pid_t>(process.pid), 0) != 0 && errno == ESRCH) return true;
  const ProcStat stat = ReadProcStat(process.pid);
  if (stat.state == 'Z' || stat.state == 'X') return true;  // dead, not yet reaped
  return process.start_ticks != 0 && stat.start_ticks != 0 && stat.start_ticks != process.start_ticks;
}

std::string CurrentUser() {
  static const std::string* const user = new std::string(LookUpUser());
  return *user;
}

std::string HostName() {
  static const std::string* const host = new std::string(LookUpHostName());
  return *host;
}

}  // namespace roboloop
