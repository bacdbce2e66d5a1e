// Test helper: a TCP port on the loopback interface that nothing listens on right now.
#pragma once

namespace roboloop::testing {

// Binds port 0 on 127.0.0.1, reads the port the kernel chose and closes the socket again, so a
// server started next can usually take it (another process may race for it).
int FreePort();

}  // namespace roboloop::testing
