// Identifier and time helpers: random UUIDs, wall-clock microseconds, ISO-8601 formatting and
// the identity (user, host, pid) of the calling process. All functions are thread-safe.
#pragma once

#include <cstdint>
#include <string>

namespace roboloop {

// Returns a random (version 4, RFC 4122) UUID in lowercase 8-4-4-4-12 form, from OpenSSL's RNG.
std::string NewUuid();

// Returns the current wall-clock time in microseconds since the Unix epoch.
int64_t NowUnixMicros();

// Formats `unix_micros` as ISO-8601 UTC with microseconds, e.g. "2024-05-01T12:00:00.000042Z".
std::string FormatTimeUtc(int64_t unix_micros);

// Returns the login name of the effective user ($USER as fallback, "unknown" as last resort),
// looked up once per process.
std::string CurrentUser();

// Returns this machine's host name ("unknown" when it cannot be read), read once per process.
std::string HostName();

// A process as another process can later recognise it: its pid, when it started (clock ticks
// since boot, from /proc/<pid>/stat; 0 where unknown) and the host it runs on.
struct ProcessIdentity {
  int64_t pid = 0;
  int64_t start_ticks = 0;
  std::string host;
};

// The calling process.
ProcessIdentity CurrentProcess();

// True when `process` ran on this host and runs no more: its pid is free, a zombie, or taken
// by a process that started at another time. False when it runs, ran on another host (nothing can
// be told from here) or has no pid.
bool ProcessIsGone(const ProcessIdentity& process);

}  // namespace roboloop
