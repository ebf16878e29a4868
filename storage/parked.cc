#include "storage/parked.h"

namespace herdless {

void ParkedReaders::Park(std::string_view key, const WaitTicket& ticket) {
  auto it = by_key_.find(key);
  if (it == by_key_.end()) it = by_key_.emplace(std::string(key), std::vector<WaitTicket>()).first;
  for (WaitTicket& t : it->second) {
    if (t.worker == ticket.worker && t.conn_id == ticket.conn_id) {
      t = ticket;
      return;
    }
  }
  it->second.push_back(ticket);
}

size_t ParkedReaders::Wake(std::string_view key) {
  auto it = by_key_.find(key);
  if (it == by_key_.end()) return 0;
  const size_t n = it->second.size();
  woken_.insert(woken_.end(), it->second.begin(), it->second.end());
  by_key_.erase(it);
  return n;
}

void ParkedReaders::WakeAll() {
  for (auto& [key, tickets] : by_key_) woken_.insert(woken_.end(), tickets.begin(), tickets.end());
  by_key_.clear();
}

}  // namespace herdless
