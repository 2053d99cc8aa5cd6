// RaiseListenBacklog: deepens the accept queue of a socket this process
// already listens on. cpp-httplib (Debian's build) listens with a backlog
// of 5, so a burst of clients connecting at once (the router's clients, a
// decode server registering many requests) gets connection errors; Linux
// lets listen() be called again on a listening socket to change it.
// Thread-safe; best effort (false when no listening socket has that port).
#ifndef TESSERA_BASE_LISTEN_BACKLOG_H_
#define TESSERA_BASE_LISTEN_BACKLOG_H_

namespace tessera {

bool RaiseListenBacklog(int port, int backlog = 4096);

}  // namespace tessera

#endif  // TESSERA_BASE_LISTEN_BACKLOG_H_
