// The rendezvous store of the network transport (net_comm.h): a tiny
// key-value service over TCP that Gloo's connectFullMesh uses to swap the
// ranks' listening addresses (what torch.distributed's TCPStore is to
// PyTorch; Gloo ships file, hash and Redis stores but none over plain TCP).
//
// StoreServer: one per process, started by the first comm_get_unique_id
// on the address the id carries, served by one thread until
// StopStoreServer (the plugin's shutdown). Keys are namespaced by the
// caller (net_comm prefixes each id's nonce).
//
// Wire format, one request per round trip, host byte order:
//   request  u8 op (1 set, 2 get, 3 check), u32 key bytes, key,
//            [set: u64 value bytes, value]
//   reply    set: u8 1; check: u8 present; get: u8 present, u64 bytes, value
//
// TcpStore: the client side, a gloo::rendezvous::Store. get() and wait()
// poll until the keys exist or the timeout passes (then they throw
// std::runtime_error naming the keys; Gloo's callers turn that into the
// communicator's failure).
#ifndef TESSERA_PLUGINS_KIT_TCP_STORE_H_
#define TESSERA_PLUGINS_KIT_TCP_STORE_H_

#include <gloo/rendezvous/store.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "kit/status.h"

namespace tessera::plugin_kit {

// Starts this process's store server on `host` (a numeric IPv4 or IPv6
// address) unless it runs already, and returns the port it listens on. A
// server already running on another address is reused (its address is
// returned in *host).
Status EnsureStoreServer(std::string* host, uint16_t* port);
// Stops the server (idempotent); later EnsureStoreServer calls start anew.
void StopStoreServer();

class TcpStore : public gloo::rendezvous::Store {
 public:
  // Connects to host:port, retrying until `timeout` passes (the server's
  // process may start later than this one). Throws std::runtime_error.
  TcpStore(const std::string& host, uint16_t port, std::chrono::milliseconds timeout);
  ~TcpStore() override;
  TcpStore(const TcpStore&) = delete;
  TcpStore& operator=(const TcpStore&) = delete;

  void set(const std::string& key, const std::vector<char>& data) override;
  std::vector<char> get(const std::string& key) override;
  void wait(const std::vector<std::string>& keys) override { wait(keys, timeout_); }
  void wait(const std::vector<std::string>& keys,
            const std::chrono::milliseconds& timeout) override;

 private:
  bool Check(const std::string& key);
  void SendRequest(uint8_t op, const std::string& key, const std::vector<char>* value);
  void ReadExact(void* data, size_t bytes);

  std::string where_;  // "host:port", for messages
  std::chrono::milliseconds timeout_;
  int fd_ = -1;
};

}  // namespace tessera::plugin_kit

#endif  // TESSERA_PLUGINS_KIT_TCP_STORE_H_
